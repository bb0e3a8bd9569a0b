"""An imported document brought within what indexing itself would store: an export is a file
someone can hand over, so its rows get indexing's bounds, chunker and redaction, never
trust. One 100 MB chunk made every search that hit it take 52 s (its snippet is cut from the
whole chunk), and an imported session kept the API key the transcript reader redacts."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from ..config import Settings
from ..embed import passage_text
from ..indexing import MAX_TRANSCRIPT_BYTES
from ..sources.base import MAX_ALIASES, MAX_NAME_CHARS, MAX_TAG_CHARS, MAX_TAGS, cut
from ..store.names import document_names
from ..store.portable import PortableChunk, PortableDocument, PortableName, aliases_json
from ..text.chunk import line_at, split_pieces
from ..text.redaction import redact


class TooLarge(Exception):
    """The document is over the size indexing reads: skipped, with this reason."""


def bounded(settings: Settings, doc: PortableDocument) -> PortableDocument:
    """`doc` as indexing would have stored it: under the size cap of its kind (TooLarge
    otherwise), chunks of at most `chunking.max_chars` (split by the chunker, each piece
    with the line it starts on), names and tags cut as the readers cut them, a session's
    text redacted as the transcript reader redacts it, and each chunk's vector key computed
    from its text as indexing computes it (a changed chunk then gets a vector of its own,
    not the export's)."""
    session = doc.type == "session"
    cap = MAX_TRANSCRIPT_BYTES if session else int(settings.get("index.max_file_mb") * 2**20)
    size = max(len(doc.text), sum(len(c.text) for c in doc.chunks))
    if size > cap or len(doc.text.encode("utf-8", "surrogatepass")) > cap:
        setting = "" if session else "; raise index.max_file_mb (TSM_MAX_FILE_MB) to import it"
        raise TooLarge(f"larger than {cap / 2**20:g} MB, the most indexing reads{setting}")
    clean = redact if session else _same
    aliases = [a for a in json.loads(doc.aliases) if len(a) <= MAX_NAME_CHARS][:MAX_ALIASES]
    title = cut(clean(doc.title))
    max_chars = settings.get("chunking.max_chars")
    chunks: list[PortableChunk] = []
    for chunk in sorted(doc.chunks, key=lambda c: c.chunk_index):
        section = cut(clean(chunk.section))
        text = clean(chunk.text)
        for start, piece in split_pieces(text, max_chars):
            embed_input = passage_text(title, section, piece)
            chunks.append(
                dataclasses.replace(
                    chunk,
                    chunk_index=len(chunks),
                    section=section,
                    text=piece,
                    line=line_at(text, start, chunk.line),
                    embed_hash=hashlib.sha1(embed_input.encode()).hexdigest(),
                )
            )
    return dataclasses.replace(
        doc,
        title=title,
        text=clean(doc.text),
        tags=tuple(t for t in doc.tags if len(t) <= MAX_TAG_CHARS)[:MAX_TAGS],
        aliases=aliases_json(aliases),
        names=tuple(PortableName(n, k) for n, k in document_names(doc.path, title, aliases)),
        chunks=tuple(chunks),
    )


def _same(text: str) -> str:
    return text
