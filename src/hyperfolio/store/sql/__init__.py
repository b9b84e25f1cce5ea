"""SQL written once for both backends: a dialect object for what they say differently (`dialect.py`),
table mixins for the rest, and the integrity checks (`checks.py`)."""

from __future__ import annotations

from hyperfolio.store.sql.conversations import ConversationTables
from hyperfolio.store.sql.documents import DocumentTables
from hyperfolio.store.sql.graph import GraphTables
from hyperfolio.store.sql.keywords import KeywordTables
from hyperfolio.store.sql.records import RecordTables


class SqlTables(KeywordTables, DocumentTables, GraphTables, RecordTables, ConversationTables):
    """Every shared table and the keyword search; a backend class adds its connection, schema and vectors,
    and where its keyword index lives."""


__all__ = ["SqlTables"]
