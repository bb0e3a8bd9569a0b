"""Stage 4: SQLite. The only package that knows table names."""
