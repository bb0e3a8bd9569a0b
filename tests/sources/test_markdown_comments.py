"""The Markdown reader leaves HTML comments out, as CommonMark reads them: block and inline,
on one line or many, inside quotes and lists; `<!--` in code or escaped is text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tsm.models import Document
from tsm.sources.markdown import read


def read_md(text: str) -> Document:
    return read(Path("notes/note.md"), "notes/note.md", text.encode("utf-8"))


def all_text(doc: Document) -> str:
    return "\n".join([doc.title, *(s.heading + "\n" + s.text for s in doc.sections)])


@pytest.mark.parametrize(
    "note",
    [
        "<!--\n# Hidden\n-->\n\n# Shown\n\nbody\n",
        "<!-- # Hidden -->\n# Shown\n\nbody\n",
        "# Shown\n\nbody <!-- Hidden --> body\n",
        "# Shown\n\nbody <!-- Hidden\nstill Hidden --> body\n",
        "# Shown\n\n> <!--\n> ## Hidden\n> -->\n> body\n",
        "# Shown\n\n- body <!-- Hidden -->\n- <!--\n  ## Hidden\n  -->\n  body\n",
        "# Shown <!-- Hidden -->\n\nbody\n",
        "# Shown\n\nbody\n\n<!-- never closed\n\n## Hidden\n\nHidden [[Hidden]]\n",
        "# Shown\n\n<div>\n<!-- Hidden -->\n</div>\n\nbody\n",
    ],
)
def test_nothing_comes_from_a_comment(note: str) -> None:
    doc = read_md(note)
    assert doc.title == "Shown"
    assert "Hidden" not in all_text(doc) and "<!--" not in all_text(doc)
    assert "body" in all_text(doc)
    assert doc.links == ()


@pytest.mark.parametrize(
    "note",
    [
        "# Shown\n\n```html\n<!-- Kept -->\n```\n",
        "# Shown\n\n    <!-- Kept -->\n",
        "# Shown\n\nuse `<!-- Kept -->` in HTML\n",
        "# Shown\n\n\\<!-- Kept -->\n",
        "# Shown\n\ntext <!-- Kept\n",  # in a paragraph, an unclosed `<!--` is text
    ],
)
def test_comment_syntax_in_code_or_escaped_is_text(note: str) -> None:
    assert "<!-- Kept" in all_text(read_md(note))


def test_lines_keep_their_numbers() -> None:
    doc = read_md("<!--\none\ntwo\n-->\n# Title\n\ntext\n\n## Next <!-- x -->\n<!--\n\n-->\nmore\n")
    assert [(s.heading, s.line) for s in doc.sections] == [("Title", 5), ("Title > Next", 9)]
    assert doc.text.startswith("<!--")  # the stored text is the file as written
