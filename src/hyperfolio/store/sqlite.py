"""Embedded store: one SQLite database per collection directory.

WAL mode, one transaction per document step (so a crash loses at most the step in
flight), vectors as float32 blobs with an in-memory matrix per space: scored whole up to 250k rows (a
100k x 384 matrix product takes milliseconds), beyond that held as float16 and searched through an
approximate index (`ann.py`) that picks the rows to score. The tables' SQL and the keyword search are shared with
PostgreSQL (`store/sql/`); this module holds the connection, the schema and the vectors, and
puts the keyword index beside the database.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from hyperfolio.errors import StoreError
from hyperfolio.store.ann import SpaceIndex
from hyperfolio.store.base import SPACES
from hyperfolio.store.graph_files import GraphFiles
from hyperfolio.store.model_records import MODEL_SCHEMA, ModelRecords
from hyperfolio.store.sql import SqlTables
from hyperfolio.store.sql.checks import INTEGRITY_CHECKS
from hyperfolio.store.sql.dialect import SQLITE
from hyperfolio.store.sql.schema import SQLITE_WORDS, announce_new_indexes, shared_tables
from hyperfolio.store.sqlite_vectors import DELETION_LOG, VectorMatrix, prune_deletions
from hyperfolio.store.sqlite_vectors import load as load_vectors
from hyperfolio.store.sqlite_vectors import refresh as refresh_vectors
from hyperfolio.store.versions import newer_than_this

DB_NAME = "hyperfolio.db"
KEYWORD_FOLDER = "keywords"  # the keyword index, beside the database (store/sql/keywords.py)
GRAPH_FOLDER = "graphs"  # the large spaces' graphs, beside the database (store/graph_files.py)
SCHEMA_VERSION = "3"  # 3: keywords in the keyword index beside the database, not in FTS5

# The shared tables, and this backend's own: vectors as float32 blobs (searched in memory).
SCHEMA = (
    shared_tables(SQLITE_WORDS)
    + """CREATE TABLE IF NOT EXISTS vectors (
    space TEXT NOT NULL,
    item_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (space, item_id)
);
CREATE INDEX IF NOT EXISTS vectors_doc ON vectors(doc_id);
"""
)

BUSY_SECONDS = 30.0


def connect_wal(path: Path, wait: float = BUSY_SECONDS) -> sqlite3.Connection:
    """Open a database in WAL mode, waiting out other processes rather than failing.

    Another process may hold the write lock for a document step, which the busy timeout waits for.
    Switching a new file to WAL is different: while a second process creates the same database,
    SQLite answers "locked" at once (it will not wait where waiting could deadlock), so the switch
    is retried until the same deadline.
    """
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=wait)
    deadline = time.monotonic() + wait
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(0.05)
    db.execute("PRAGMA synchronous=NORMAL")
    return db


class SQLiteStore(SqlTables):
    """A collection's store in one SQLite file: the shared tables, plus in-memory vectors."""

    dialect = SQLITE
    checks = INTEGRITY_CHECKS

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.location = str(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / DB_NAME
        try:
            self._db = connect_wal(self.path)
        except sqlite3.Error as exc:  # pragma: no cover - depends on the file system
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        self._lock = threading.RLock()
        self._depth = 0  # transactions open on this connection (nested ones join the outermost)
        self._db.execute("PRAGMA foreign_keys=ON")
        version = self._existing_schema_version()
        try:
            newer_than_this(version, SCHEMA_VERSION, str(self.path))
        except StoreError:
            self._db.close()
            raise
        if version in ("1", "2"):
            self._db.execute("DROP TABLE IF EXISTS chunks_fts")  # derived: the keyword index is made from the chunks
        if version is not None:
            indexes = self._db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
            announce_new_indexes(SCHEMA, [r[0] for r in indexes], str(self.path))
        self._db.executescript(SCHEMA)
        self._db.executescript(DELETION_LOG)
        if version != SCHEMA_VERSION:
            self.set_meta("schema_version", SCHEMA_VERSION)
        self._matrices: dict[str, VectorMatrix] = {}
        self._graph_turns = threading.Lock()  # the spaces' graphs are made one at a time (store/ann.py)
        self._stale: set[str] = set()  # spaces to bring up to date before their next search
        self._dirty = False  # this connection wrote vectors or stages (data_version counts only others' writes)
        self._data_version = -1

    # ------------------------------------------------------------------ plumbing
    def _existing_schema_version(self) -> str | None:
        has_meta = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        if not has_meta:
            return None
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return row[0] if row else None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; a transaction begun inside another (same thread) joins it."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._db
                finally:
                    self._depth -= 1
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                prune_deletions(self._db)
                self._db.execute("COMMIT")
            finally:
                self._depth = 0

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self.transaction():
            yield

    def _query(self, query: Any, params: Any = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(self.dialect.sql(query), params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._forget_matrices(wait=True, keep=True)
            self._db.close()

    def _forget_matrices(self, space: str | None = None, wait: bool = False, keep: bool = False) -> None:
        """Drop one space's matrix (or every one), and any index still being made for it; with `keep`, a graph
        grown since it was saved is saved again (under its own rows' fingerprint: safe whatever changed since)."""
        for name in [space] if space is not None else list(self._matrices):
            dropped = self._matrices.pop(name, None)
            if dropped is not None:
                dropped.retire(wait, keep)

    def bulk(self) -> AbstractContextManager[None]:
        """Nothing to defer: vectors are searched by a scan, the keyword index keeps itself up."""
        return nullcontext()

    def _vectors_dropped(self) -> None:
        with self._lock:
            self._forget_matrices()

    def _stages_changed(self) -> None:
        with self._lock:
            self._dirty = True

    def _location(self) -> str:
        return str(self.path)

    def _database_bytes(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def annotate_chunk(self, chunk_id: str, key: str, value: Any) -> None:
        """Set one key of a chunk's metadata (e.g. a vision model's description of a figure)."""
        with self.transaction() as db:
            db.execute(
                "UPDATE chunks SET meta = json_set(meta, ?, ?) WHERE chunk_id = ?", (f"$.{key}", value, chunk_id)
            )

    def _keyword_folder(self, owner: str) -> Path:
        return self.directory / KEYWORD_FOLDER

    # ------------------------------------------------------------------ vectors
    def put_vectors(self, space: str, items: Sequence[tuple[str, str]], vectors: np.ndarray) -> None:
        if len(items) != len(vectors):
            raise ValueError("items and vectors differ in length")
        data = np.asarray(vectors, dtype=np.float32)
        with self.transaction() as db:
            # Replacing deletes first: REPLACE's own deletions would not reach the deletion log's trigger.
            db.executemany("DELETE FROM vectors WHERE space = ? AND item_id = ?", [(space, i) for i, _ in items])
            db.executemany(
                "INSERT INTO vectors(space, item_id, doc_id, vec) VALUES (?, ?, ?, ?)",
                [(space, item_id, doc_id, data[i].tobytes()) for i, (item_id, doc_id) in enumerate(items)],
            )
        with self._lock:
            self._dirty = True

    def iter_vectors(self, space: str) -> Iterable[tuple[str, str, np.ndarray]]:
        rows = self._query("SELECT item_id, doc_id, vec FROM vectors WHERE space = ? ORDER BY rowid", (space,))
        return [(item, doc, np.frombuffer(vec, dtype=np.float32)) for item, doc, vec in rows]

    def prune_vectors(self, space: str, doc_id: str, keep: Sequence[str]) -> int:
        kept = set(keep)
        with self.transaction() as db:
            rows = db.execute("SELECT item_id FROM vectors WHERE space = ? AND doc_id = ?", (space, doc_id)).fetchall()
            gone = [(space, r[0]) for r in rows if r[0] not in kept]
            db.executemany("DELETE FROM vectors WHERE space = ? AND item_id = ?", gone)
        if gone:
            with self._lock:
                self._dirty = True
        return len(gone)

    def clear_vectors(self, space: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM vectors WHERE space = ?", (space,))
        with self._lock:
            self._forget_matrices(space)

    def _matrix(self, space: str) -> VectorMatrix:
        """The space's vectors in memory, brought up to date when any connection (another process too)
        changed the file: appended to when vectors were only added, loaded again otherwise."""
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if version != self._data_version or self._dirty:
                self._data_version, self._dirty = version, False
                self._stale = set(self._matrices)
            cached = self._matrices.get(space)
            if cached is None:
                cached = load_vectors(self._db, space)
            elif space in self._stale:
                refreshed = refresh_vectors(self._db, space, cached)
                if refreshed is not cached:  # loaded again: its index goes with the old rows
                    cached.retire()
                cached = refreshed
            self._stale.discard(space)
            self._matrices[space] = cached
            return cached

    def vector_search(
        self, space: str, vector: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        return self.vector_search_many(space, np.asarray(vector, dtype=np.float32).reshape(1, -1), k, doc_ids)[0]

    def vector_search_many(
        self, space: str, vectors: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """`vector_search` for each row of `vectors`, in one pass over the space's matrix (a question's
        keywords, up to eight, each searched the whole entity space: reading it is what a search costs)."""
        if not len(vectors):
            return []
        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        vm = self._matrix(space)
        # Rows are counted once: another thread's question may append to this matrix meanwhile (its first
        # `held` rows stay as they are, in whichever buffer), and rows counted later would outrun `stored`.
        held = len(vm.ids)
        if not held or k < 1:
            return [[] for _ in queries]
        stored = np.arange(held)
        if doc_ids:
            parts = [vm.rows_by_doc[d] for d in doc_ids if d in vm.rows_by_doc]
            if not parts:
                return [[] for _ in queries]
            stored = np.concatenate(parts)
        near_rows = None if doc_ids else self._approximate(space, vm)
        if near_rows is not None:  # the rows near each query, scored exactly
            near = near_rows.search(queries, k)
            return [top_k(vm, rows, vm.matrix[rows] @ q, k) for q, rows in zip(queries, near, strict=True)]
        block = vm.buffer[:held] if not doc_ids else vm.buffer[stored]
        if len(queries) == 1:  # a matrix-vector product, as a single search always computed it
            return [top_k(vm, stored, block @ queries[0], k)]
        return [top_k(vm, stored, scores, k) for scores in (block @ queries.T).T]

    def warm(self, wait: bool = False) -> None:
        """Load every space's matrix and start its approximate index (a saved graph is taken up; one still to
        be made is made in the background, or here with `wait`, then put to use)."""
        for space in SPACES:
            vm = self._matrix(space)
            index = self._approximate(space, vm)
            if index is not None and wait:
                index.wait()
                self._approximate(space, vm)  # the graph made takes over

    def _approximate(self, space: str, vm: VectorMatrix) -> SpaceIndex | None:
        """The space's approximate index brought up to date (graphs made one at a time, kept beside the db)."""
        return vm.approximate(self._graph_turns, GraphFiles(self.directory / GRAPH_FOLDER, space))

    def vector_scores(self, space: str, vector: np.ndarray, item_ids: Sequence[str]) -> dict[str, float]:
        """Similarity of `vector` to the stored vectors of these items (items without one are left out)."""
        vm = self._matrix(space)
        if not vm.ids or not item_ids:
            return {}
        if len(vm.row_of) != len(vm.ids):
            vm.row_of = {item: i for i, item in enumerate(vm.ids)}
        found = [(item, vm.row_of[item]) for item in dict.fromkeys(item_ids) if item in vm.row_of]
        if not found:
            return {}
        scores = vm.matrix[[r for _, r in found]] @ np.asarray(vector, dtype=np.float32).reshape(-1)
        return {item: float(score) for (item, _), score in zip(found, scores, strict=True)}

    def copy_to(self, location: str | Path) -> SQLiteStore:
        """A consistent copy of this database in another directory (SQLite's online backup)."""
        target = SQLiteStore(location)
        with self._lock, target._lock:
            self._db.backup(target._db)
        target._matrices.clear()
        return target


def top_k(vm: VectorMatrix, stored: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k best of `scores` (row i scores the matrix row `stored[i]`), best first; equal scores in
    the order the vectors were stored, as every backend breaks ties."""
    if k < len(scores):  # every item scoring at least the k-th best, ties at the boundary included
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(len(scores))
    top = candidates[np.lexsort((vm.rowids[stored[candidates]], -scores[candidates]))][:k]
    return [(vm.ids[int(stored[t])], float(scores[t])) for t in top]


def open_model_records(directory: str | Path) -> ModelRecords:
    """The model-call records in a collection directory's database (created when missing)."""
    path = Path(directory) / DB_NAME

    def connect() -> sqlite3.Connection:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = connect_wal(path)
        for statement in MODEL_SCHEMA:
            db.execute(statement)
        return db

    try:
        return ModelRecords(connect, where=str(path))
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the model records in {path}: {exc}") from exc


def open_store(directory: str | Path) -> SQLiteStore:
    """The collection in `directory` (created when missing)."""
    return SQLiteStore(Path(directory).expanduser())


def store_exists(directory: str | Path) -> bool:
    return (Path(directory).expanduser() / DB_NAME).is_file()


def remove_store(directory: str | Path) -> None:
    """Delete the database and its write-ahead files (a closed store: a collection variant being rebuilt)."""
    for suffix in ("", "-wal", "-shm"):
        (Path(directory).expanduser() / f"{DB_NAME}{suffix}").unlink(missing_ok=True)
