"""What the two SQL backends say differently, so every statement can be written once.

Shared statements are written in SQLite's words: `?` for a parameter, `?[]` for a list of text
parameter (a JSON array in SQLite, a `text[]` in PostgreSQL). The SQLite dialect is this base
class; PostgreSQL's (in `postgres.py`) overrides what its server says otherwise.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any


def postgres_sql(statement: str) -> str:
    """A shared statement with PostgreSQL's placeholders."""
    return statement.replace("?[]", "%s::text[]").replace("?", "%s")


class Dialect:
    """SQLite's words and value encodings; a subclass names another backend's."""

    row = "rowid"  # the column that keeps insertion order
    # One document's provenance rows, found by their document: left to choose, SQLite walks every row of the
    # item kind (all documents') for a query that names both, which grows with the collection.
    doc_provenance = "provenance p INDEXED BY provenance_doc"
    # Hyperedges read for their strengths: SQLite takes the key's own index and then every row; this one holds
    # the strength (a row uncached on a large collection costs a disk read).
    edge_strengths = "hyperedges INDEXED BY hyperedges_level_strength"
    forced_join = "CROSS JOIN"  # a join whose left side the planner must read first
    # A condition on a graph vector's key "<item>|<doc_id>" that compares its item (ids follow it).
    keyed_item = "substr(item_id, 1, instr(item_id, '|') - 1)"
    batch: int | None = 500  # ids per IN list (None: the whole list is one array parameter)
    error: type[Exception] = sqlite3.Error
    duplicate: type[Exception] = sqlite3.IntegrityError  # a document whose content is stored already

    def sql(self, statement: str) -> str:
        """A shared statement in this backend's placeholders."""
        return statement.replace("?[]", "?")

    def stated(self, clause: str) -> str:
        """An order SQLite's query plan gives without asking (PostgreSQL states it): nothing here."""
        return ""

    def among(self, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A membership test for these values (`column` + it) and its parameters."""
        return f"IN ({','.join('?' * len(values))})", list(values)

    def batches(self, ids: Sequence[Any], size: int | None = None) -> Iterator[list[Any]]:
        """The distinct ids in runs of `size` (or the dialect's batch) a statement accepts; none for no ids."""
        unique = list(dict.fromkeys(ids))
        step = (size or self.batch) if self.batch else max(len(unique), 1)  # no batch: one array holds them all
        for start in range(0, len(unique), step):
            yield unique[start : start + step]

    def page_table(self) -> str | None:
        """A table (doc_id, page) read from one parameter, a JSON array of [doc_id, page] pairs, where one
        statement for many pages beats one per document; none in process (SQLite), where it does not."""
        return None

    def levels(self) -> str:
        """A table (key, level) read from one parameter: a JSON object of text keys and integer levels."""
        return "SELECT key, value AS level FROM json_each(?)"

    def contains(self, column: str) -> str:
        """`column` contains the parameter's text, ASCII case ignored, no escape character (SQLite's LIKE)."""
        return f"{column} LIKE ?"

    def insert_ignore(self, into: str, rows: str) -> str:
        """Insert rows, skipping those whose key is stored already."""
        return f"INSERT OR IGNORE INTO {into} {rows}"

    def upsert(self, into: str, rows: str, key: Sequence[str]) -> str:
        """Insert rows, replacing the stored row of the same key (`into` is "table(column, ...)")."""
        return f"INSERT OR REPLACE INTO {into} {rows}"

    # ------------------------------------------------------------------ values as stored
    def text(self, value: str | None) -> str | None:
        return value

    def flag(self, value: bool) -> Any:
        return int(value)

    def json(self, value: Any) -> Any:
        return json.dumps(value, default=str)

    def from_json(self, stored: Any) -> Any:
        return json.loads(stored) if stored else None

    def strings(self, values: Sequence[str]) -> Any:
        return json.dumps(list(values))

    def from_strings(self, stored: Any) -> list[str]:
        return list(json.loads(stored))

    def numbers(self, values: Sequence[float]) -> Any:
        return json.dumps(list(values))

    def from_numbers(self, stored: Any) -> Any:
        return tuple(json.loads(stored))


SQLITE = Dialect()
