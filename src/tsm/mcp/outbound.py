"""What the MCP tools return goes into a model's context, as the prompt hook's XML does: every
text field (titles, paths, snippets, chunk text, sections, tags, warnings) loses its invisible
format characters, and its secrets are redacted unless `mcp.redact` is off. The index and
the CLI keep the user's text verbatim; only what leaves for a model is changed."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar

from ..models import Hit
from ..text.redaction import find_secrets, for_model, strip_format

T = TypeVar("T")
SNIPPET_CHARS = 200  # as search/snippets.py


class Outbound:
    """Cleans values for a model: `secrets` False keeps them (format characters still go)."""

    def __init__(self, secrets: bool = True) -> None:
        self.secrets = secrets

    def text(self, text: str, keep_lines: bool = False) -> str:
        return for_model(text, keep_lines) if self.secrets else strip_format(text)

    def value(self, value: T) -> T:
        """`value` with every string inside it cleaned: dataclasses, tuples, lists and dict
        values, whatever their field; numbers, booleans and dict keys (ours) stay."""
        return self._clean(value)  # type: ignore[no-any-return]

    def _clean(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Hit):
            return self._hit(value)
        if is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: self._clean(getattr(value, f.name)) for f in fields(value) if f.init}
            return replace(value, **changes)
        if isinstance(value, tuple):
            return tuple(self._clean(v) for v in value)
        if isinstance(value, list):
            return [self._clean(v) for v in value]
        if isinstance(value, dict):
            return {k: self._clean(v) for k, v in value.items()}
        return value

    def _hit(self, hit: Hit) -> Hit:
        """A hit cleaned field by field; its snippet is a window of the chunk, and a window can
        cut a key too short to match: such a snippet gives way to the cleaned chunk's start."""
        cleaned = {
            f.name: self._clean(getattr(hit, f.name))
            for f in fields(hit)
            if f.init and f.name != "snippet"
        }
        snippet = self.text(hit.snippet)
        if self.secrets and find_secrets(strip_format(hit.text)):
            core = " ".join(snippet.strip("…").split())
            if core not in " ".join(cleaned["text"].split()):
                snippet = cleaned["text"][:SNIPPET_CHARS]
        return replace(hit, snippet=snippet, **cleaned)
