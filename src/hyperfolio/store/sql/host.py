"""What the shared tables need of a backend: its dialect, reads, write transactions and cache hooks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from hyperfolio.store.sql.dialect import Dialect


class Cursor(Protocol):
    """The part of a DB-API connection or cursor the tables use (sqlite3's and psycopg's both fit)."""

    def execute(self, statement: Any, params: Any = ..., /) -> Any: ...

    def executemany(self, statement: Any, rows: Any, /) -> Any: ...


@dataclass
class Writer:
    """A write transaction's cursor taking shared statements, in the backend's placeholders."""

    raw: Cursor
    dialect: Dialect

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(self.dialect.sql(statement), params)

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        self.raw.executemany(self.dialect.sql(statement), list(rows))


class SqlHost:
    """The base of the table mixins; the backend class provides the connection."""

    dialect: ClassVar[Dialect]

    def transaction(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _query(self, query: Any, params: Any = ()) -> list[tuple]:
        """Rows of one read (a shared statement, or the backend's own)."""
        raise NotImplementedError

    @contextmanager
    def _write(self) -> Iterator[Writer]:
        with self.transaction() as raw:
            yield Writer(raw, self.dialect)

    def _in_query(
        self, statement: str, ids: Sequence[Any], extra: Sequence[Any] = (), size: int | None = None
    ) -> list[tuple]:
        """Rows of `statement` whose `{ids}` is a membership test over `ids` (after the `extra` parameters),
        in as many runs as the backend needs."""
        out: list[tuple] = []
        for part in self.dialect.batches(ids, size):
            test, params = self.dialect.among(part)
            out.extend(self._query(statement.format(ids=test), [*extra, *params]))
        return out

    def _count(self, query: str) -> int:
        return int(self._query(query)[0][0])

    def _counts(self, query: str) -> dict[str, int]:
        return {key: int(n) for key, n in self._query(query)}

    # What one mixin needs of another (each is defined once, in the mixin named).
    def get_meta(self, key: str) -> str | None:
        """documents.py"""
        raise NotImplementedError

    def documents_version(self) -> str:
        """documents.py"""
        raise NotImplementedError

    def _documents_changed(self, cur: Writer) -> None:
        """documents.py: within a transaction that changes the documents."""
        raise NotImplementedError

    def _graph_changed(self, cur: Writer) -> None:
        """documents.py: within a transaction that changes the hypergraph."""
        raise NotImplementedError

    def _keywords_changed(self) -> None:
        """keywords.py: after a commit that changed what keyword search may find."""
        raise NotImplementedError

    def _rebuild_keywords(self) -> int:
        """keywords.py: make the keyword index again; how many chunks it holds."""
        raise NotImplementedError

    def keyword_findings(self) -> list[Any]:
        """keywords.py: what the integrity check says of the keyword index."""
        raise NotImplementedError

    def _vectors_dropped(self) -> None:
        """Hook: vectors were deleted, so any copy of them in memory is stale."""

    def _stages_changed(self) -> None:
        """Hook: a document's stage changed, which decides what vector search may return."""
