"""Stage 5: Query → SearchResult (FTS5 BM25 + vectors, fused by RRF, then adjusted)."""
