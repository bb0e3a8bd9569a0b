"""The state dir and every file tsm writes in it: the dir is ours and 0700, files are 0600,
and nothing is opened through a symlink, so a repository that ships a `.tsm/` full of links
cannot make tsm write anywhere else, nor another local user read the index. Standard library
only: the thin client and the daemon's start-up use it.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import IndexCorrupt, UnsafePath

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
# What SQLite keeps beside the DB; each is opened by SQLite itself, so each is checked first.
DB_COMPANIONS = ("", "-wal", "-shm", "-journal")
_umask_lock = threading.Lock()


def private_dir(path: Path) -> Path:
    """Create `path` (0700) or vet the existing one: a real directory, not a symlink, owned
    by us. One left 0755 by an older tsm is tightened to 0700."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, PRIVATE_DIR)
    except FileExistsError:
        pass
    info = os.lstat(path)
    problem = _dir_problem(info)
    if problem:
        raise UnsafePath(
            f"refusing to use {path}: {problem}",
            "remove it, or point TSM_STATE_DIR at a folder of your own",
        )
    if info.st_mode & 0o077:
        try:
            os.chmod(path, PRIVATE_DIR)
        except OSError:
            pass  # a read-only mount: nothing can be written there anyway
    return path


def dir_problem(path: Path) -> str | None:
    """Why `path` is no safe state dir (a symlink, another user's, open to others), or None;
    a dir that does not exist yet is fine. For `doctor`, which reports and changes nothing."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return _dir_problem(info) or (
        f"mode {stat.S_IMODE(info.st_mode):o} lets other users in (tsm sets 700 on its next write)"
        if info.st_mode & 0o077
        else None
    )


def _dir_problem(info: os.stat_result) -> str | None:
    if stat.S_ISLNK(info.st_mode):
        return "it is a symlink, and tsm does not write through links"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if info.st_uid != os.getuid():
        return f"it belongs to uid {info.st_uid}, not to you (uid {os.getuid()})"
    if info.st_mode & stat.S_ISVTX:  # /tmp and the like: shared by design, never ours to close
        return "it is a shared folder (sticky bit), not a state dir of its own"
    return None


def socket_dir(path: Path) -> Path:
    """The folder of a daemon socket outside its state dir (the user's runtime folder, see
    socketpath.py): created 0700, and refused unless it is a real directory of ours that no
    one else may enter, since it may sit in a folder every user can write (/tmp)."""
    try:
        os.mkdir(path, PRIVATE_DIR)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UnsafePath(
            f"cannot create {path} for the daemon's socket: {exc.strerror}",
            "set XDG_RUNTIME_DIR to a folder of your own",
        ) from None
    info = os.lstat(path)
    problem = _dir_problem(info) or (
        f"its mode {stat.S_IMODE(info.st_mode):o} lets other users in"
        if info.st_mode & 0o077
        else None
    )
    if problem:
        raise UnsafePath(
            f"refusing to put the daemon's socket in {path}: {problem}",
            "remove that folder (tsm creates it 0700), or set XDG_RUNTIME_DIR to a folder "
            "of your own; meanwhile tsm works without its daemon",
        )
    return path


def socket_folder_checked(socket: Path, state_dir: Path) -> None:
    """Before removing or creating `socket`: a runtime-folder one only in a folder of ours
    (socket_dir), since a link planted as that folder would point the unlink elsewhere."""
    if socket.parent != state_dir:
        socket_dir(socket.parent)


def state_subdir(state_dir: Path, name: str) -> Path:
    """<state dir>/NAME (logs, cache), both vetted by `private_dir`."""
    return private_dir(private_dir(state_dir) / name)


def logs_dir(state_dir: Path) -> Path:
    return state_subdir(state_dir, "logs")


def open_private(path: Path, flags: int) -> int:
    """A descriptor for `path`, created 0600, never through a symlink (O_NOFOLLOW), and
    refused unless it is a regular file of ours with a single link (a hard link to ~/.bashrc
    planted in the state dir is refused too). Never pass O_TRUNC: check before changing."""
    assert not flags & os.O_TRUNC, "truncate after the checks, not while opening"
    # O_NONBLOCK: a FIFO planted under a log's name fails at once instead of hanging us.
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, PRIVATE_FILE)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: FreeBSD's O_NOFOLLOW error
            raise UnsafePath(
                f"refusing to open {path}: it is a symlink",
                "remove the link; tsm writes only its own files",
            ) from None
        if exc.errno == errno.ENXIO:
            raise UnsafePath(f"refusing to open {path}: it is not a regular file") from None
        raise
    problem = _file_problem(os.fstat(fd))
    if problem:
        os.close(fd)
        raise UnsafePath(
            f"refusing to open {path}: {problem}", "remove it; tsm writes only its own files"
        )
    os.set_blocking(fd, True)
    if os.fstat(fd).st_mode & 0o077:
        os.fchmod(fd, PRIVATE_FILE)
    return fd


def read_secret(path: Path, cap: int = 4096) -> bytes | None:
    """The bytes of a secret tsm keeps in the state dir (the MCP token), or None when there
    is none. UnsafePath unless it is a regular file of ours, with one link, that no other
    user may read: a secret another user could have read, or one put there by anyone but
    tsm (a symlink, a file shipped with a cloned repository under the usual umask), is no
    secret."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):
            raise UnsafePath(f"refusing to read {path}: it is a symlink or special") from None
        raise
    try:
        info = os.fstat(fd)
        problem = _file_problem(info) or (
            f"mode {stat.S_IMODE(info.st_mode):o} lets other users read it"
            if info.st_mode & 0o077
            else None
        )
        if problem:
            raise UnsafePath(f"refusing to read {path}: {problem}")
        return os.read(fd, cap)
    finally:
        os.close(fd)


def create_private(path: Path, data: bytes) -> bool:
    """Write `data` to `path` (0600) unless something is there already: False then. The
    file appears whole (a temp file linked to its name), so a reader never sees half."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def _file_problem(info: os.stat_result) -> str | None:
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != os.getuid():
        return f"it belongs to uid {info.st_uid}, not to you"
    if info.st_nlink > 1:
        return f"it has {info.st_nlink} hard links"
    return None


def append_private(path: Path) -> BinaryIO:
    """`path` opened for appending bytes, by `open_private`'s rules."""
    return os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab")


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically: a fresh 0600 temp file renamed over it, so
    whatever was there (a symlink, a hard link) is replaced, never written through."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# Opening a file to read it never blocks (a FIFO would wait for a writer), never follows a
# final symlink (ELOOP) and never makes a terminal the process's controlling one.
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)
_READ_STEP = 1024 * 1024
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class SpecialFile(Exception):
    """read_regular found something other than a regular file: `kind` says what."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class TooLarge(Exception):
    """read_regular found more than its cap: `size` is the file's, None when it grew."""

    def __init__(self, size: int | None) -> None:
        super().__init__(size)
        self.size = size


def read_regular(path: Path | str, cap: int, dir_fd: int | None = None) -> bytes:
    """A regular file whole, at most `cap` bytes, never trusting st_size (which a device or
    a growing file misreports). The one way tsm reads a file it did not write itself: notes
    (sources/files.read_capped) and what a state dir may hold (read_state_file). A final
    symlink is an OSError (ELOOP), as a missing or unreadable file is; anything but a
    regular file is SpecialFile, refused before any read; past `cap`, TooLarge. `dir_fd`:
    `path` is a name in that open folder (read_beneath)."""
    fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SpecialFile(
                next((n for test, n in _KINDS if test(info.st_mode)), "a special file")
            )
        if info.st_size > cap:
            raise TooLarge(info.st_size)
        parts: list[bytes] = []
        left = cap + 1
        while left > 0:
            block = os.read(fd, min(left, _READ_STEP))
            if not block:
                break
            parts.append(block)
            left -= len(block)
        if left <= 0:
            raise TooLarge(None)
        return b"".join(parts)
    finally:
        os.close(fd)


class Outside(Exception):
    """read_beneath found the file's real path outside every allowed root: `real` is it."""

    def __init__(self, real: str) -> None:
        super().__init__(real)
        self.real = real


_DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class LinkOnTheWay(Exception):
    """read_written_beneath met a link, or the path is not written under a root."""


def note_file(root: str | os.PathLike[str], stored: str) -> str | None:
    """The file a note's stored path names under `root`, or None when no walk of the root
    could have stored that path: empty, absolute, with a `..` part, or holding a NUL. An
    index is a file a cloned repository can ship (and `tsm import` fills), so its paths are
    never trusted to stay inside the root."""
    if not stored or "\0" in stored or os.path.isabs(stored):
        return None
    if ".." in stored.split("/"):
        return None
    return os.path.join(root, stored)


def read_written_beneath(roots: Sequence[Path], path: Path, cap: int) -> bytes:
    """read_beneath along the path as written, without resolving it first: for a path the
    walk built under a root (the common case, no link in it) this costs one open per
    folder instead of a realpath's lstat per part on top. LinkOnTheWay when the path is not
    written under a root or a link is met (a legitimate one, or a folder just swapped):
    then read_beneath, from the real path, decides."""
    for root in roots:
        if path.is_absolute() and path.is_relative_to(root):
            parts = path.relative_to(root).parts
            if parts and ".." not in parts:
                try:
                    return _read_down(root, parts, cap)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise LinkOnTheWay from None
                    raise
    raise LinkOnTheWay


def read_beneath(roots: Sequence[Path], path: Path, cap: int) -> bytes:
    """read_regular for a file that must lie inside one of `roots` (real paths): its real
    path is taken, and then the file is opened from that root down, one folder at a time,
    none through a link (O_NOFOLLOW at every step). A folder above the file swapped for a
    link out of the root after the path was checked (or between the check and the open)
    fails (ENOTDIR, or ELOOP for the file itself) instead of leading outside; an open by the
    whole path would follow it. Outside when the real path is in no root; read_regular's
    errors otherwise."""
    return _read_down(*_real_beneath(roots, path), cap)


def open_beneath(root: Path, path: Path, flags: int) -> int:
    """A descriptor of the file at `path`'s real path, which must lie inside `root` (a real
    path), opened with `flags` from `root` down as read_beneath opens: no link followed on
    the way or at the end. For a file read as a stream rather than whole (a transcript)."""
    root, parts = _real_beneath([root], path)
    *folders, name = parts or ("",)
    fd = _folder(root, folders)
    try:
        return os.open(name, flags | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
    finally:
        os.close(fd)


def _real_beneath(roots: Sequence[Path], path: Path) -> tuple[Path, tuple[str, ...]]:
    """The root `path`'s real path lies in and the parts below it; Outside when in none."""
    real = Path(os.path.realpath(path))
    root = next((r for r in roots if real.is_relative_to(r)), None)
    if root is None:
        raise Outside(str(real))
    return root, real.relative_to(root).parts


def _read_down(root: Path, parts: Sequence[str], cap: int) -> bytes:
    """The file `root`/`parts`, each folder opened in the one above with no link followed."""
    *folders, name = parts or ("",)
    fd = _folder(root, folders)
    try:
        return read_regular(name, cap, dir_fd=fd)
    finally:
        os.close(fd)


def _folder(root: Path, folders: Sequence[str]) -> int:
    """A descriptor of `root`/`folders`, each folder opened in the one above, no link."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for folder in folders:
            inner = os.open(folder, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


# The largest state-dir file tsm reads whole (synonyms.csv, user_dict.csv): far past any
# hand-written table, and a bound on what one search reads.
STATE_FILE_MAX_BYTES = 16 * 1024 * 1024


def read_state_file(path: Path, cap: int = STATE_FILE_MAX_BYTES) -> bytes | None:
    """The bytes of a file the user keeps in the state dir, or None when there is none.

    A cloned repository can ship a `.tsm/` whose synonyms.csv is a link to /dev/zero (read
    until memory runs out), to a FIFO (a search that never ends) or to a file outside the
    index root: such a file is an UnsafePath, as is one over `cap` bytes (read_regular)."""
    try:
        return read_regular(path, cap)
    except FileNotFoundError:
        return None
    except SpecialFile:
        raise UnsafePath(f"refusing to read {path}: it is not a regular file") from None
    except TooLarge:
        raise UnsafePath(f"refusing to read {path}: it is larger than {cap:,} bytes") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise UnsafePath(
                f"refusing to read {path}: it is a symlink", "put the file itself there"
            ) from None
        raise


def is_state_file(path: Path) -> bool:
    """Whether `path` is a regular file itself, not a symlink (to one or to anything else)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


@contextmanager
def private_umask() -> Iterator[None]:
    """Files and sockets made inside are born 0600/0700: for creators that take no mode
    (SQLite, bind, a child process writing its output). The umask is per process, hence
    the lock; it only ever narrows what other threads create meanwhile."""
    with _umask_lock:
        old = os.umask(0o077)
        try:
            yield
        finally:
            os.umask(old)


def check_db_files(db_path: Path) -> None:
    """Before SQLite opens the DB (it follows symlinks): the DB, WAL, SHM and journal are
    each absent or a regular file of ours with one link."""
    for suffix in DB_COMPANIONS:
        path = Path(f"{db_path}{suffix}")
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if not (stat.S_ISLNK(info.st_mode) or stat.S_ISREG(info.st_mode)):
            # A folder or FIFO in the DB's place is a broken index, not an attack on a target.
            raise IndexCorrupt(
                f"the index file {path} is not a regular file",
                "remove it, or set TSM_DB_PATH to the real file",
            )
        problem = (
            "it is a symlink, and tsm does not write through links"
            if stat.S_ISLNK(info.st_mode)
            else _file_problem(info)
        )
        if problem:
            raise UnsafePath(
                f"refusing to open {path}: {problem}",
                "remove it, or set TSM_DB_PATH to the real file",
            )


def tighten_db_files(db_path: Path) -> None:
    """DB, WAL and SHM to 0600 (an older tsm left them 0644; SQLite gives a new WAL and SHM
    the DB's mode)."""
    for suffix in DB_COMPANIONS:
        path = Path(f"{db_path}{suffix}")
        try:
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
                os.chmod(path, PRIVATE_FILE)
        except OSError:
            continue


EMBED_ROLE_FILE = "embed.lock"
# The roles this process holds: state dir -> [lock descriptor, holders]. The role belongs to
# a process: a daemon's backfill thread takes it and its writer thread embeds under it.
_roles: dict[Path, list[int]] = {}
_roles_lock = threading.Lock()


@contextmanager
def embedding_role(state_dir: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the index's embedding role while inside: one process at a time reads the chunks
    that lack a vector and embeds them, so no text is embedded by two processes (`tsm index`
    and a daemon started meanwhile). Yields False, holding nothing, when `wait` is off and
    another process holds it. The kernel drops the lock with the process, so a crash never
    leaves it held. Without a state dir no daemon runs for the index: there is no one to
    exclude."""
    import fcntl

    key = Path(state_dir)
    with _roles_lock:
        mine = _roles.get(key)
        if mine is not None:
            mine[1] += 1
    if mine is None:
        if not os.path.isdir(key):
            yield True
            return
        fd = open_private(key / EMBED_ROLE_FILE, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            yield False
            return
        except BaseException:
            os.close(fd)
            raise
        with _roles_lock:
            mine = _roles.setdefault(key, [fd, 0])
            mine[1] += 1
    try:
        yield True
    finally:
        with _roles_lock:
            mine[1] -= 1
            if mine[1] == 0:
                del _roles[key]
                os.close(mine[0])  # closing the only descriptor releases the lock
