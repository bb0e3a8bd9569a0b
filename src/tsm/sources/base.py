"""What every reader shares: the SkipFile it raises, the Reader signature, and decoding text.
Apart from the package's __init__, so readers import it without importing the package that
dispatches to them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..models import Document


class SkipFile(Exception):
    """A file that cannot be indexed; the message says why. Reported as a warning, never fatal.

    `transient` marks failures that say nothing about the content (permissions, I/O), so an
    earlier indexed version is kept rather than dropped.
    """

    def __init__(self, reason: str, transient: bool = False) -> None:
        super().__init__(reason)
        self.transient = transient

    def __reduce__(self) -> tuple[type[SkipFile], tuple[str, bool]]:
        # Pickled with `transient`: a worker process hands its skips back to the writer.
        return (type(self), (str(self), self.transient))


# A document's names are stored with every one of its chunks (the title and aliases in each
# chunk's keyword row, the heading path in its section, the tags beside it), so their size
# multiplies by the document's length: a 830 kB note whose first heading was 270 kB long
# made a 685 MB index. A reader bounds them; the words of a longer heading stay in the text.
# 500 keeps real titles whole: a paper's runs to 300 characters (the longest in SciFact), and
# cutting one changes what is searched and embedded.
MAX_NAME_CHARS = 500  # a title, a heading, an alias
MAX_ALIASES = 50
MAX_TAGS = 100
MAX_TAG_CHARS = 100


def cut(text: str, limit: int = MAX_NAME_CHARS) -> str:
    """`text` at most `limit` characters, ending with … when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# A reader gets the file's path, its path relative to the index root, and its bytes.
Reader = Callable[[Path, str, bytes], Document]


def decode_text(data: bytes) -> str:
    """Decode UTF-8 text (BOM allowed), refusing binary, non-UTF-8 and empty content. A NUL
    past the first 8 KiB is dropped: it means nothing in text, and PostgreSQL cannot store it."""
    if b"\x00" in data[:8192]:
        raise SkipFile("binary file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SkipFile("not valid UTF-8") from None
    if not text.strip():
        raise SkipFile("empty file")
    return text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
