"""The application core: one object (core/knowledge.py) that every interface calls, the
search request every interface builds (core/request.py), and the maintenance that runs
with or without a daemon (reindex, rebuild, doctor). Importing this package loads nothing:
the thin client imports its light modules alone."""
