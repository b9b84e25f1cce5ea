"""PostgreSQL's vectors: pgvector columns, searched exactly or (large spaces) through an HNSW index per space."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from hyperfolio.errors import StoreError
from hyperfolio.store.base import STAGE_READY, space_label
from hyperfolio.store.sql.host import SqlHost

# A space's vectors are searched exactly (a scan, as SQLite does) up to this many; a larger space gets an
# HNSW index. HNSW indexes at most 2,000 dimensions of `vector`; a wider space stays exact.
EXACT_SEARCH_MAX = 20_000
HNSW_MAX_DIM = 2_000
HNSW_MAX_EF = 1_000  # pgvector's ceiling for hnsw.ef_search; a larger k is searched exactly
INDEX_BUILD_MEMORY = "2GB"  # at least this for the session building an HNSW index; a server set higher keeps its own


def index_name(space: str) -> str:
    """A space's HNSW index: readable, and unique even for spaces whose names differ only in punctuation."""
    return f"vectors_hnsw_{space_label(space)}"


class PostgresVectors(SqlHost):
    """The vector methods of the PostgreSQL store; the store provides the connection."""

    _lock: threading.RLock
    _deferred: int  # inside bulk(): vector indexes wait for its end
    _iterative_scan: bool  # pgvector scans an HNSW index on until k rows pass the filters (0.8 and later)

    def _conn(self) -> psycopg.Connection:
        raise NotImplementedError

    def put_vectors(self, space: str, items: Sequence[tuple[str, str]], vectors: np.ndarray) -> None:
        """Store vectors for (item_id, doc_id) pairs in one transaction.

        The first vectors of a space fix its dimension. Once a space holds more than `EXACT_SEARCH_MAX`
        vectors it gets an HNSW index of its own: a partial index over `vec::vector(dim)` for that space,
        with inner-product ops (the score SQLite computes; for the L2-normalised embeddings it is the cosine
        and ranks exactly as cosine ops would). One untyped column and an index per space, rather than a
        `vector(n)` table per space, keeps one schema whatever spaces and models a collection uses, and
        small spaces never pay for an index they do not need.
        """
        if len(items) != len(vectors):
            raise ValueError("items and vectors differ in length")
        if not len(items):
            return
        data = np.asarray(vectors, dtype=np.float32)
        dim = int(data.shape[1])
        with self.transaction() as cur:
            self._claim_space(cur, space, dim)
            cur.executemany(
                "INSERT INTO vectors(space, item_id, doc_id, vec) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (space, item_id) DO UPDATE SET doc_id = excluded.doc_id, vec = excluded.vec,"
                " seq = excluded.seq",  # a replaced vector counts as new, as SQLite's INSERT OR REPLACE does
                [(space, item_id, doc_id, data[i]) for i, (item_id, doc_id) in enumerate(items)],
            )
            self._index_if_large(cur, space, dim)

    def _claim_space(self, cur: psycopg.Cursor, space: str, dim: int) -> None:
        row = cur.execute("SELECT dim FROM vector_spaces WHERE space = %s", (space,)).fetchone()
        if row is not None and row[0] == dim:
            return
        if row is not None:
            if cur.execute("SELECT 1 FROM vectors WHERE space = %s LIMIT 1", (space,)).fetchone():
                raise StoreError(f"vector space {space!r} holds {row[0]}-dimensional vectors, not {dim}-dimensional")
            cur.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index_name(space))))
        cur.execute(
            "INSERT INTO vector_spaces(space, dim, indexed) VALUES (%s, %s, FALSE)"
            " ON CONFLICT (space) DO UPDATE SET dim = excluded.dim, indexed = FALSE",
            (space, dim),
        )

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A large load: a space that outgrows exact search during the block gets its HNSW index once, at
        the end, rather than being kept up insert by insert (an index built over the loaded rows takes a
        fraction of the time); readers meanwhile search it exactly. An index that exists stays up to date."""
        with self._lock:
            self._deferred += 1
        try:
            yield
        except BaseException:  # interrupted: the next bulk load's end (or build_indexes) builds them
            with self._lock:
                self._deferred -= 1
            raise
        with self._lock:
            self._deferred -= 1
            if not self._deferred:
                self.build_indexes()

    def build_indexes(self) -> None:
        """Give every space past the exact-search limit its index (the ones a bulk load deferred)."""
        with self.transaction() as cur:
            spaces = cur.execute("SELECT space, dim FROM vector_spaces WHERE NOT indexed ORDER BY space").fetchall()
            for space, dim in spaces:
                self._index_if_large(cur, space, dim)

    def _index_if_large(self, cur: psycopg.Cursor, space: str, dim: int) -> None:
        if self._deferred:
            return
        row = cur.execute("SELECT indexed FROM vector_spaces WHERE space = %s", (space,)).fetchone()
        if row is None or row[0] or dim > HNSW_MAX_DIM or self._count_upto(cur, space, None) <= EXACT_SEARCH_MAX:
            return
        # pgvector builds fastest when the graph fits in maintenance memory (a million 384-d vectors: about 2 GB);
        # an administrator who gave the server more (for spaces of several million) is not overruled.
        cur.execute(
            "SELECT set_config('maintenance_work_mem', %s, true)"
            " WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes(%s)",
            (INDEX_BUILD_MEMORY, INDEX_BUILD_MEMORY),
        )
        cur.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON vectors USING hnsw ((vec::vector({})) vector_ip_ops) WHERE space = {}"
            ).format(sql.Identifier(index_name(space)), sql.Literal(dim), sql.Literal(space))
        )
        cur.execute("UPDATE vector_spaces SET indexed = TRUE WHERE space = %s", (space,))
        cur.execute("ANALYZE vectors")  # so the planner knows the space is large now and takes the index

    @staticmethod
    def _count_upto(cur: psycopg.Cursor, space: str, doc_ids: Sequence[str] | None) -> int:
        """How many vectors the space (within the documents) holds, counted no further than one past the limit."""
        scope, params = "", list[Any]([space])
        if doc_ids:
            scope, params = " AND doc_id = ANY(%s::text[])", [space, list(doc_ids)]
        row = cur.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM vectors WHERE space = %s{scope} LIMIT %s) AS upto",
            [*params, EXACT_SEARCH_MAX + 1],
        ).fetchone()
        return int(row[0]) if row else 0

    def iter_vectors(self, space: str) -> Iterable[tuple[str, str, np.ndarray]]:
        rows = self._query("SELECT item_id, doc_id, vec FROM vectors WHERE space = %s ORDER BY seq", (space,))
        return [(item, doc, np.asarray(vec.to_numpy(), dtype=np.float32)) for item, doc, vec in rows]

    def prune_vectors(self, space: str, doc_id: str, keep: Sequence[str]) -> int:
        with self.transaction() as cur:
            cur.execute(
                "DELETE FROM vectors WHERE space = %s AND doc_id = %s AND NOT (item_id = ANY(%s::text[]))",
                (space, doc_id, list(keep)),
            )
            return cur.rowcount

    def clear_vectors(self, space: str) -> None:
        with self.transaction() as cur:
            cur.execute("DELETE FROM vectors WHERE space = %s", (space,))
            cur.execute("DELETE FROM vector_spaces WHERE space = %s", (space,))
            cur.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index_name(space))))

    def vector_search(
        self, space: str, vector: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k items of a space most similar to `vector` (inner product, as SQLite scores), best first.

        Only documents whose stage is `ready` are searched, optionally only `doc_ids`. Exact (every
        vector scored) unless the space has an HNSW index and the search covers more than
        `EXACT_SEARCH_MAX` vectors; then approximate, with pgvector's iterative scan in strict order
        so the ready and scope filters still fill k.
        """
        return self.vector_search_many(space, np.asarray(vector, dtype=np.float32).reshape(1, -1), k, doc_ids)[0]

    def vector_search_many(
        self, space: str, vectors: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """`vector_search` for each vector, in one transaction: the space looked up, the scope counted and the
        search settings made once, then one nearest-neighbour statement per vector (a question's keywords:
        eight round trips a keyword become one)."""
        if not len(vectors):
            return []
        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        if k < 1:
            return [[] for _ in queries]
        docs = list(doc_ids) if doc_ids else None
        try:
            with self._lock:
                db = self._conn()
                with db.transaction(), db.cursor() as cur:
                    found = cur.execute("SELECT dim, indexed FROM vector_spaces WHERE space = %s", (space,)).fetchone()
                    if found is None:
                        return [[] for _ in queries]
                    dim, indexed = found
                    # An indexed space holds more than the limit; a scope may hold fewer (then exact is exact and fast).
                    approximate = (
                        indexed
                        and k <= HNSW_MAX_EF
                        and (docs is None or self._count_upto(cur, space, docs) > EXACT_SEARCH_MAX)
                    )
                    statement, params = self._nearest(cur, space, dim if approximate else None, k, docs)
                    return [
                        [(r[0], float(r[1])) for r in cur.execute(statement, params(query)).fetchall()]
                        for query in queries
                    ]
        except psycopg.DataError as exc:
            raise StoreError(f"vector search in {space!r} failed: {exc}") from exc

    def _nearest(
        self, cur: psycopg.Cursor, space: str, hnsw_dim: int | None, k: int, docs: list[str] | None
    ) -> tuple[sql.Composed, Callable[[np.ndarray], list[Any]]]:
        """The nearest-neighbour statement, an exact scan or (given the index's dimension) the HNSW index, and
        its parameters for a query vector.

        The index is a partial expression index, so the statement names the space and the cast literally
        (a parameter would hide them from the planner), and this transaction is told to take it: right
        after a bulk load the planner may still cost a scan and sort as cheaper.
        """
        ready = sql.SQL("v.doc_id IN (SELECT doc_id FROM doc_status WHERE stage = %s)")
        scope = sql.SQL(" AND v.doc_id = ANY(%s::text[])" if docs else "")
        tail: list[Any] = [STAGE_READY, *([docs] if docs else [])]
        if hnsw_dim is None:
            statement = sql.SQL(
                "SELECT v.item_id, -(v.vec <#> %s) FROM vectors v WHERE v.space = %s AND {ready}{scope}"
                " ORDER BY v.vec <#> %s, v.seq LIMIT %s"
            ).format(ready=ready, scope=scope)
            return statement, lambda query: [query, space, *tail, query, k]
        settings = [("enable_seqscan", "off"), ("enable_sort", "off")]
        if self._iterative_scan:
            settings += [("hnsw.ef_search", str(max(40, k))), ("hnsw.iterative_scan", "strict_order")]
        else:  # without iterative scans, a wider beam leaves room for the rows the filters drop
            settings += [("hnsw.ef_search", str(min(HNSW_MAX_EF, max(40, 4 * k))))]
        made = ", ".join("set_config(%s, %s, true)" for _ in settings)
        cur.execute(f"SELECT {made}", [part for setting in settings for part in setting])
        distance = sql.SQL("(v.vec::vector({dim})) <#> %s::vector({dim})").format(dim=sql.Literal(hnsw_dim))
        statement = sql.SQL(
            "SELECT v.item_id, -({distance}) FROM vectors v WHERE v.space = {space} AND {ready}{scope}"
            " ORDER BY {distance} LIMIT %s"
        ).format(distance=distance, space=sql.Literal(space), ready=ready, scope=scope)
        return statement, lambda query: [query, *tail, query, k]

    def vector_scores(self, space: str, vector: np.ndarray, item_ids: Sequence[str]) -> dict[str, float]:
        """Similarity of `vector` to the stored vectors of these items (items without one are left out)."""
        if not item_ids:
            return {}
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        try:
            rows = self._query(
                "SELECT v.item_id, -(v.vec <#> %s) FROM vectors v WHERE v.space = %s AND v.item_id = ANY(%s::text[])"
                " AND v.doc_id IN (SELECT doc_id FROM doc_status WHERE stage = %s)",
                (query, space, list(dict.fromkeys(item_ids)), STAGE_READY),
            )
        except psycopg.DataError as exc:
            raise StoreError(f"vector scores in {space!r} failed: {exc}") from exc
        found = {r[0]: float(r[1]) for r in rows}
        return {item: found[item] for item in dict.fromkeys(item_ids) if item in found}
