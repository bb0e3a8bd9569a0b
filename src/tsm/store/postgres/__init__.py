"""The index on a PostgreSQL server (the team store): the connection, the keyword index and
pgvector's vectors."""
