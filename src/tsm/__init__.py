"""The Space Memory: local-first hybrid search over Markdown notes, PDFs and Claude Code
sessions, in English and Japanese."""

__version__ = "0.1.0"
