"""Issue 14 items 4-7: files that are not what they seem. Links out of the vault (to a 0600
file, to a folder, to /dev/zero), a FIFO, an undecodable file name, a line of brackets, a
YAML alias bomb and a backtracking .tsmignore, each run through the real `tsm index` (and
`get`/`search`) as a user would."""

from __future__ import annotations

import json
import os
import resource
from typing import Any

from . import Lab, Outcome

SECRET = "marmoraptor"  # a word only the files outside the vault hold
OUTSIDE_LINK = "links outside the index root"


def _note(lab: Lab, name: str = "notes/plain.md", word: str = "everydayword") -> None:
    path = lab.vault / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Plain\n\n{word}\n", encoding="utf-8")


def _index(lab: Lab, *args: str, timeout: float = 60) -> tuple[int, dict[str, Any]]:
    proc = lab.tsm("index", "-f", "json", "--no-embed", *args, timeout=timeout)
    try:
        return proc.returncode, json.loads(proc.stdout or b"{}")
    except json.JSONDecodeError:
        return proc.returncode, {"stderr": proc.stderr.decode(errors="replace")[-200:]}


def _costly_index(lab: Lab) -> tuple[int, dict[str, Any], float]:
    """Index, and return the CPU seconds it took: a blow-up shows in CPU time whatever
    the machine's load, where a wall-time bound fails on a busy machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code, data = _index(lab)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return code, data, cpu


def _reasons(data: dict[str, Any]) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in data.get("skipped", [])}


def _found(lab: Lab, word: str) -> list[str]:
    out = lab.tsm("search", word, "--fts-only", "-f", "json", TSM_EMBEDDER="none").stdout
    return [r["source"]["path"] for r in json.loads(out or b"{}").get("results", [])]


def _secret_file(lab: Lab) -> os.PathLike[str]:
    private = lab.home / "private"
    private.mkdir(parents=True, exist_ok=True)
    secret = private / "id_notes.md"
    secret.write_text(f"# Keys\n\n{SECRET}\n", encoding="utf-8")
    secret.chmod(0o600)
    return secret


def symlink_to_private_file(lab: Lab) -> Outcome:
    """links/secret.md -> a 0600 file outside the vault; index, then get and search it."""
    _note(lab)
    (lab.vault / "links").mkdir()
    (lab.vault / "links" / "secret.md").symlink_to(_secret_file(lab))
    code, data = _index(lab)
    get = lab.tsm("get", "links/secret.md", "-f", "json")
    leaked = SECRET.encode() in get.stdout or bool(_found(lab, SECRET))
    reason = _reasons(data).get("links/secret.md", "")
    return Outcome(
        code == 0 and not leaked and reason.startswith(OUTSIDE_LINK),
        f"exit {code}; skipped: {reason or 'not skipped'}; leaked: {leaked}",
    )


def symlinked_folder_outside(lab: Lab) -> Outcome:
    """elsewhere -> a folder outside the vault; walk it, and name files in it explicitly."""
    _note(lab)
    _secret_file(lab)
    (lab.vault / "elsewhere").symlink_to(lab.home / "private", target_is_directory=True)
    code, _ = _index(lab)
    code2, data = _index(lab, "--", "elsewhere/id_notes.md")
    leaked = bool(_found(lab, SECRET))
    reason = _reasons(data).get("elsewhere/id_notes.md", "")
    return Outcome(
        code == code2 == 0 and not leaked and reason.startswith(OUTSIDE_LINK),
        f"exit {code}/{code2}; named file: {reason or 'not skipped'}; leaked: {leaked}",
    )


def fifo_note(lab: Lab) -> Outcome:
    """notes/pipe.md is a FIFO nobody writes to (reading it blocked tsm index for ever)."""
    _note(lab, "notes/z-after.md", "afterfifo")
    os.mkfifo(lab.vault / "notes" / "pipe.md")
    code, data = _index(lab, timeout=30)
    reason = _reasons(data).get("notes/pipe.md", "")
    after = _found(lab, "afterfifo") == ["notes/z-after.md"]
    return Outcome(
        code == 0 and reason.startswith("not a regular file") and after,
        f"exit {code}; skipped: {reason or 'not skipped'}; later file indexed: {after}",
    )


def dev_zero_link(lab: Lab) -> Outcome:
    """dev/zero.md -> /dev/zero (read until MemoryError before)."""
    _note(lab)
    (lab.vault / "dev").mkdir()
    (lab.vault / "dev" / "zero.md").symlink_to("/dev/zero")
    code, data, took = _costly_index(lab)
    reason = _reasons(data).get("dev/zero.md", "")
    return Outcome(
        code == 0 and bool(reason),
        f"exit {code} in {took:.1f} s CPU; skipped: {reason or 'not skipped'}",
    )


def undecodable_file_name(lab: Lab) -> Outcome:
    """notes/x-\\xff\\xfe.md (aborted every run: later files unindexed, deletions unapplied)."""
    _note(lab, "notes/a.md", "firstnote")
    _note(lab, "notes/gone.md", "gonenote")
    _index(lab)
    with open(os.path.join(os.fsencode(lab.vault / "notes"), b"x-\xff\xfe.md"), "wb") as fh:
        fh.write(b"# Odd\n\noddname\n")
    _note(lab, "notes/z-later.md", "laternote")
    (lab.vault / "notes" / "gone.md").unlink()
    code, data = _index(lab)
    reason = _reasons(data).get("notes/x-\\xff\\xfe.md", "")
    later = _found(lab, "laternote") == ["notes/z-later.md"]
    gone = _found(lab, "gonenote") == []
    return Outcome(
        code == 0 and bool(reason) and later and gone,
        f"exit {code}; skipped: {reason or 'not skipped'}; later file indexed: "
        f"{later}; deletion applied: {gone}",
    )


def bracket_line(lab: Lab) -> Outcome:
    """A note holding one 200 KB line of `[` (a 40 KB one took 78.6 s)."""
    _note(lab)
    (lab.vault / "notes" / "brackets.md").write_text("# Brackets\n\n" + "[" * 200_000 + "\n")
    code, data, took = _costly_index(lab)
    indexed = data.get("indexed", 0) == 2
    return Outcome(
        code == 0 and indexed and took < 20,
        f"exit {code}; indexed both notes: {indexed}; {took:.1f} s CPU",
    )


def yaml_alias_bomb(lab: Lab) -> Outcome:
    """A 400-byte frontmatter whose `tags:` expands to 9^9 items (ran ~60 s to MemoryError)."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append("tags: {bomb: *i}")
    (lab.vault / "notes").mkdir()
    (lab.vault / "notes" / "bomb.md").write_text(
        "---\n" + "\n".join(lines) + "\n---\n# Bomb\n\nbombbody\n", encoding="utf-8"
    )
    code, _, took = _costly_index(lab)
    body = _found(lab, "bombbody") == ["notes/bomb.md"]
    return Outcome(
        code == 0 and body and took < 20,
        f"exit {code} in {took:.1f} s CPU; body indexed without the metadata: {body}",
    )


def backtracking_tsmignore(lab: Lab) -> Outcome:
    """.tsmignore `*a*a*a*a*a*a*a*a` and a note named a…ab (5 s per match at four stars)."""
    _note(lab)
    (lab.vault / ".tsmignore").write_text("*a" * 8 + "\n")
    (lab.vault / "notes" / ("a" * 200 + "b.md")).write_text("# Long\n\nlongname\n")
    code, data, took = _costly_index(lab)
    warned = any("not used" in w for w in data.get("warnings", []))
    return Outcome(
        code == 0 and warned and took < 20,
        f"exit {code} in {took:.1f} s CPU; the line refused with a warning: {warned}",
    )


ATTACKS = [
    symlink_to_private_file,
    symlinked_folder_outside,
    fifo_note,
    dev_zero_link,
    undecodable_file_name,
    bracket_line,
    yaml_alias_bomb,
    backtracking_tsmignore,
]
