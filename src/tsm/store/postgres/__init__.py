"""The index on a PostgreSQL server (the team store): the Store protocol's PostgreSQL side
(store/protocol.py), one module per group, and the connection that speaks the store's SQL
(connection.py)."""

from ..protocol import Store
from . import catalog, changes, dialect, documents, keywords, schema, vectors

STORE = Store(
    name="postgresql",
    keywords=keywords,
    vectors=vectors,
    nearest=vectors,
    changes=changes,
    documents=documents,
    dialect=dialect,
    catalog=catalog,
    schema=schema,
)
