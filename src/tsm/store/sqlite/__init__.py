"""The index in an SQLite file (the local store): the Store protocol's SQLite side
(store/protocol.py), one module per group."""

from ..protocol import Store
from . import catalog, changes, dialect, documents, keywords, schema, vectors

STORE = Store(
    name="sqlite",
    keywords=keywords,
    vectors=vectors,
    nearest=None,
    changes=changes,
    documents=documents,
    dialect=dialect,
    catalog=catalog,
    schema=schema,
)
