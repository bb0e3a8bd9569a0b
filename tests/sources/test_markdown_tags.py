"""Inline #tags come from prose only: `tsm tags` on the Claude Code docs
listed 45 CSS colours (`d97757`, `fff`) taken from code, inline HTML and MDX. Each way a `#`
can sit outside prose is tried with a real tag beside it, so a test fails as well when the
reader loses the real one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tsm.sources.markdown import TAGS_MAX_CHARS, read


def tags(text: str) -> tuple[str, ...]:
    return read(Path("docs/page.md"), "docs/page.md", text.encode("utf-8")).tags


@pytest.mark.parametrize(
    "text",
    [
        "```css\n.brand { color: #d97757; }\n```\n",
        "~~~\n#fff\n~~~\n",
        "Intro:\n\n    color: #fff;\n    border: 1px solid #d97757;\n",
        "Use `color: #fff` here.\n",
        'A <span style="color:#fff">word</span> here.\n',
        '<img src="x.png" alt=" #fff" />\n',
        '<div style="color:#fff">\n  background: #d97757\n</div>\n',
        "<!-- #todo later -->\n",
        "<style>\n.a {\n  color: #fff;\n}\n\n.b { color: #d97757; }\n</style>\n",
        "<Card color={{ primary: #d97757 }} />\n",
        "<div style={{\n  color: '#fff',\n  border: #d97757\n}}>\n  Hi\n</div>\n",
        "Colour {theme.dark ? #fff : #d97757} inline.\n",
        "See https://example.com/guide#section and https://example.com/#top\n",
        "See <https://example.com/guide#section> too.\n",
        "Jump to [setup](#setup) or [x](page.md#install).\n",
        "Entities &#123; &#x7B; &#35;fff and an escaped \\#fff\n",
        "Tokens like C#, F#fff and issue#12 are not tags.\n",
    ],
    ids=[
        "fenced",
        "tilde-fence",
        "indented",
        "inline-code",
        "inline-html-attribute",
        "inline-html-alt",
        "html-block",
        "html-comment",
        "style-block-with-blank-line",
        "jsx-attribute-expression",
        "jsx-over-lines",
        "mdx-expression",
        "url-fragments",
        "autolink",
        "link-anchors",
        "entities-and-escape",
        "inside-words",
    ],
)
def test_no_tags_outside_prose(text: str) -> None:
    assert tags(text + "\nProse with a #real tag.\n") == ("real",)


def test_no_tags_from_mdx_import_and_export_blocks() -> None:
    """The shape of the docs pages: an ESM block whose function spans blank lines (so its
    paragraphs after the first are no Markdown to skip) and holds comments and CSS in a
    template string, before the prose."""
    page = (
        "---\ntitle: Quickstart\n---\n\n"
        "import { Tabs, Tab } from '/snippets/tabs.mdx'\n\n"
        "export const InstallConfigurator = () => {\n"
        "  const [os, setOs] = useState('mac');\n\n"
        "  // clay #d97757 on ink #fff, as in the brand guide\n"
        "  const pick = (dark) => dark ? 'ink' : 'clay';\n\n"
        "  const css = `\n"
        "  .cc-box { color: #d97757; background: #fff; }\n\n"
        "  .cc-tab { border-color: #e5e5e5; }\n"
        "  `;\n\n"
        '  return <div className="cc-box">#nope</div>;\n'
        "};\n\n"
        "# Quickstart\n\n"
        "<InstallConfigurator />\n\n"
        "Install it, then tag your notes like #project/alpha.\n"
    )
    assert tags(page) == ("project/alpha",)


def test_prose_starting_with_export_or_import_is_prose() -> None:
    text = "Export the notes to PDF first. #howto\n\nimport them later #later\n"
    assert tags(text) == ("howto", "later")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Working on #project/alpha today.\n", ("project/alpha",)),
        ("今日は本を読んだ #読書\n", ("読書",)),
        ("今日は本を読んだ。#読書\n", ("読書",)),
        ("「本」#読書、#メモ\n", ("読書", "メモ")),
        ("#start at a line start\n", ("start",)),
        ("Line one\n#second on a continuation line\n", ("second",)),
        ("Done. #next, then #after!\n", ("next", "after")),
        ("**#bold** and *#em*\n", ("bold", "em")),
        ("- item #listed\n  - nested #deeper\n", ("listed", "deeper")),
        ("> quoted #quoted\n", ("quoted",)),
        ("`code` then #after-code\n", ("after-code",)),
        ("A { lone brace #still\n", ("still",)),
    ],
)
def test_real_tags(text: str, expected: tuple[str, ...]) -> None:
    assert tags(text) == expected


def test_frontmatter_tags_are_kept_over_the_size_cap() -> None:
    """Past TAGS_MAX_CHARS the body is not parsed for tags (a hostile note of a million
    one-token lines costs seconds); frontmatter tags still count."""
    body = "lorem ipsum #inline\n" * (TAGS_MAX_CHARS // 20 + 1)
    assert tags("---\ntags: [kept]\n---\n" + body) == ("kept",)
    assert tags("---\ntags: [kept]\n---\n" + body[: TAGS_MAX_CHARS // 2]) == ("kept", "inline")


def test_tsm_tags_lists_only_prose_tags(tmp_path: Path, tsm: Any) -> None:
    """Through the real CLI, as the issue saw it: a docs page full of colours, a note with
    real tags."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "theme.md").write_text(
        "export const Swatch = ({ c }) => <span style={{ color: c }} />;\n\n"
        "# Theme\n\n"
        '<div style="background:#d97757">\n  #fff on clay\n</div>\n\n'
        "```css\n:root { --clay: #d97757; --ink: #fff; }\n```\n\n"
        "    --accent: #abc123;\n\n"
        "Brand colours, see `#d97757`, <Swatch c={'#fff'} /> and https://x.dev/t#fff.\n",
        encoding="utf-8",
    )
    (root / "journal.md").write_text(
        "---\ntags: [journal]\n---\n# Day\n\n今日は本を読んだ。#読書\n\n#project/alpha moved on.\n",
        encoding="utf-8",
    )
    env = {"TSM_INDEX_ROOT": str(root), "TSM_EMBEDDER": "none"}
    result = tsm("index", "--no-embed", "-f", "json", env=env)
    assert result.code == 0, result.err
    assert result.json()["indexed"] == 2
    listed = tsm("tags", "-f", "json", env=env)
    assert listed.code == 0, listed.err
    assert sorted(t["name"] for t in listed.json()) == ["journal", "project/alpha", "読書"]
