"""The Markdown reader on hostile shapes: each shape is timed through `sources.markdown.read`
against plain text of the same size, and the ratio printed. A linear reader keeps the ratio
flat as the size grows; a backtracking regex shows up as a ratio that grows with it (a 40 KB
line of `[` took 78.6 s before the patterns were fixed).

    python bench/markdown_adversarial.py                 # 40 KB and 1 MB
    python bench/markdown_adversarial.py --sizes 100000  # one size
    python bench/markdown_adversarial.py --markdown-it   # also time markdown-it-py's parser
    python bench/markdown_adversarial.py --with-tag      # each shape ends in " #tag", so
                                                         # the #tag parser reads it too
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from tsm.sources import SkipFile
from tsm.sources.markdown import read


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _nested_list(n: int) -> str:
    lines, depth = [], 0
    while sum(map(len, lines)) < n:
        lines.append("  " * (depth % 40) + "- item [x](y) `z` *w*\n")
        depth += 1
    return "".join(lines)[:n]


def _backtick_runs(n: int) -> str:
    runs = "".join("`" * k + "a" for k in range(1, 300))
    return _repeat(runs)(n)


# name → (what it is, builder of a body of n characters)
SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "brackets": ("one line of [", _repeat("[")),
    "closing brackets": ("one line of ]", _repeat("]")),
    "wikilink openers": ("one line of [[", _repeat("[[")),
    "wikilink pipes": ("[[a| repeated, never closed", _repeat("[[a|")),
    "link openers": ("[]( repeated", _repeat("[](")),
    "link titles": ('[a](b " repeated, never closed', _repeat('[a](b "')),
    "angle targets": ("[a](< repeated", _repeat("[a](<")),
    "angles": ("one line of <", _repeat("<")),
    "backticks": ("one line of `", _repeat("`")),
    "code spans": ("`a repeated", _repeat("`a")),
    "backtick runs": ("runs of 1..299 backticks", _backtick_runs),
    "hashes": ("one line of #", _repeat("#")),
    "heading spaces": ("# x, spaces, y", lambda n: "# x" + " " * max(0, n - 4) + "y"),
    "heading hashes": ("# then #s then x", lambda n: "# " + "#" * max(0, n - 4) + " x"),
    "tag chain": ("#a repeated", _repeat("#a")),
    "tag digits": (" # then digits", lambda n: " #" + "1" * max(0, n - 2)),
    "stars": ("one line of *", _repeat("*")),
    "underscores": ("one line of _", _repeat("_")),
    "nested lists": ("list items 0..40 levels deep", _nested_list),
    "spaces": ("one line of spaces", _repeat(" ")),
    "heading lines": ("a heading per line", _repeat("# h\n")),
    # HTML comments (sources/comments.py parses a body that holds `<!--`)
    "comment openers": ("a <!-- repeated, never closed", _repeat("a <!--")),
    "inline comments": ("a <!-- b --> repeated", _repeat("a <!-- b --> ")),
    "comment lines": ("<!-- x --> per line", _repeat("<!-- x -->\n")),
    "commented paragraphs": ("x <!-- c --> per paragraph", _repeat("x <!-- c -->\n\n")),
    "brackets, a comment": ("one line of [ then <!-- c -->", lambda n: "[" * n + "<!-- c -->"),
    "unclosed block": ("<!-- then lines of # h", lambda n: "<!--\n" + _repeat("# h\n")(n)),
}


def plain(n: int) -> str:
    return _repeat("lorem ipsum dolor sit amet ")(n)


def time_read(body: str, repeat: int = 3, suffix: str = "") -> float:
    """Best of `repeat` runs of the reader on `body` (after a line of prose), in seconds."""
    data = ("plain first line\n" + body + suffix).encode()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            read(Path("bench.md"), "bench.md", data)
        except SkipFile:
            pass
        best = min(best, time.perf_counter() - started)
    return best


def time_markdown_it(body: str) -> float | None:
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        return None
    parser = MarkdownIt("commonmark")
    started = time.perf_counter()
    parser.parse(body)
    return time.perf_counter() - started


def frontmatter_rows() -> list[tuple[str, float]]:
    """Frontmatter: an alias bomb under tags:, and frontmatter at and beyond the size cap."""
    bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        bomb.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    bomb.append("tags: {k: *i}")  # a mapping: the reader turns it into one string
    big_list = "tags: [" + ", ".join(f"t{i}" for i in range(9000)) + "]"
    rows = []
    bomb_text = "\n".join(bomb)
    for name, yaml_text in (
        (f"alias bomb ({len(bomb_text)} bytes)", bomb_text),
        ("60 KB flow list", big_list[:60_000] + "]"),
        ("1 MB frontmatter (over the cap)", "title: " + "x" * 1_000_000),
    ):
        started = time.perf_counter()
        try:
            read(Path("fm.md"), "fm.md", f"---\n{yaml_text}\n---\n# body\ntext\n".encode())
        except SkipFile:
            pass
        rows.append((name, time.perf_counter() - started))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[40_000, 1_000_000], help="body sizes in characters"
    )
    parser.add_argument(
        "--markdown-it",
        action="store_true",
        help="also time markdown-it-py's CommonMark parser on each shape",
    )
    parser.add_argument(
        "--with-tag",
        action="store_true",
        help="end each body (and the plain text) with ' #tag' on its last line: without a "
        "'#' before a word the reader skips the #tag parser (markdown-it-py) altogether",
    )
    args = parser.parse_args()
    suffix = " #tag" if args.with_tag else ""
    for size in args.sizes:
        base = time_read(plain(size), suffix=suffix)
        print(f"\n## {size:,} characters (plain text: {base * 1000:.1f} ms)\n")
        header = "| shape | what | ms | ratio to plain |"
        rule = "|---|---|---:|---:|"
        if args.markdown_it:
            header += " markdown-it-py ms |"
            rule += "---:|"
        print(header + "\n" + rule)
        worst = 0.0
        for name, (what, build) in SHAPES.items():
            body = build(size)
            took = time_read(body, suffix=suffix)
            worst = max(worst, took / base)
            row = f"| {name} | {what} | {took * 1000:.1f} | {took / base:.2f} |"
            if args.markdown_it:
                other = time_markdown_it(body)
                row += f" {other * 1000:.0f} |" if other is not None else " n/a |"
            print(row, flush=True)
        print(f"\nworst ratio at {size:,}: {worst:.2f}")
    print("\n## Frontmatter\n\n| input | ms |\n|---|---:|")
    for name, took in frontmatter_rows():
        print(f"| {name} | {took * 1000:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
