"""The index in an SQLite file (the local store)."""
