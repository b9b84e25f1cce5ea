"""The SQLite store's vectors in memory, one matrix per space, kept up to date by reading only what changed.

Search is a matrix product over the vectors of every ready document. Loading a space reads every blob
(seconds at a few hundred thousand vectors), so a reader must not do it after each commit of a writer
that is ingesting: after a change it reads the rows added since it last looked (rowid above the highest
it holds) and the rows of documents that became ready, and appends them. It loads the space again only
when something it holds may have gone: a vector deleted or replaced (a trigger logs every deletion in
`vector_deletions`), or a document that was ready no longer is.

Ties in search are broken by rowid (the order vectors were stored), not by position in the matrix, so an
appended matrix ranks exactly as a freshly loaded one.

A space of `HALF_FROM` rows or more is held as float16: half the memory (6 GB of 12.5 at a million
dev-density chunks, memory the file cache then has for the tables), scores within 2^-11 (5e-4) of
float32's for unit vectors (each component rounded by at most that share of itself; typically 4e-5).
Which type follows from the rows held, so an appended matrix still scores exactly as a fresh one.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass, field

import numpy as np

from hyperfolio.store.ann import APPROXIMATE_FROM, GRAPH_FROM, SpaceIndex
from hyperfolio.store.base import STAGE_READY
from hyperfolio.store.graph_files import GraphFiles

# Part of the store's schema: every deleted vector row leaves its space here.
DELETION_LOG = """
CREATE TABLE IF NOT EXISTS vector_deletions (seq INTEGER PRIMARY KEY AUTOINCREMENT, space TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS vectors_deleted AFTER DELETE ON vectors
BEGIN INSERT INTO vector_deletions(space) VALUES (old.space); END;
"""
DELETIONS_KEPT = 10_000  # log rows kept; a reader further behind loads its spaces again
LOAD_BATCH = 50_000  # vector rows read at a time
HALF_FROM = APPROXIMATE_FROM  # rows from which a space is held as float16 (its search is approximate anyway)


def row_type(rows: int) -> type[np.floating]:
    """How a matrix of this many rows holds them."""
    return np.float16 if rows >= HALF_FROM else np.float32


_READY_ROWS = (
    "SELECT v.rowid, v.item_id, v.doc_id, v.vec FROM vectors v JOIN doc_status s ON s.doc_id = v.doc_id"
    " WHERE v.space = ? AND s.stage = ?"
)


@dataclass
class VectorMatrix:
    """One space's vectors of ready documents: ids, rows (a buffer with room to grow), rowids, rows per doc."""

    ids: list[str] = field(default_factory=list)
    buffer: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    rowids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rows_by_doc: dict[str, np.ndarray] = field(default_factory=dict)
    row_of: dict[str, int] = field(default_factory=dict)  # filled on first use
    ready: frozenset[str] = frozenset()  # the documents ready when last read
    max_rowid: int = 0
    deletions_seen: int = 0
    index: SpaceIndex | None = None  # for whole-space searches of a large space (store/ann.py)
    index_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def matrix(self) -> np.ndarray:
        return self.buffer[: len(self.ids)]

    def append(self, rows: list[tuple[int, str, str, bytes]], room: int = 0) -> None:
        """Add rows after those held; a buffer grown here holds at least `room` rows."""
        if not rows:
            return
        added = np.vstack([np.frombuffer(r[3], dtype=np.float32) for r in rows])
        start, end = len(self.ids), len(self.ids) + len(rows)
        if self.buffer.shape[1] != added.shape[1]:
            if start:  # a new width: only an emptied space takes one, and then nothing is held
                raise ValueError("vectors of another dimension in one space")
            self.buffer = np.zeros((0, added.shape[1]), dtype=np.float32)
        kind = row_type(end)
        if end > len(self.buffer) or kind != self.buffer.dtype:
            # grow by half again (n rows appended copy O(n) in all); a change of type alone keeps the size
            size = max(end, room, len(self.buffer) * 3 // 2 + 64) if end > len(self.buffer) else len(self.buffer)
            grown = np.zeros((size, added.shape[1]), dtype=kind)  # pages untouched until written
            grown[:start] = self.buffer[:start]
            self.buffer = grown
            rowids = np.zeros(size, dtype=np.int64)
            rowids[:start] = self.rowids[:start]
            self.rowids = rowids
        self.buffer[start:end] = added
        self.rowids[start:end] = [r[0] for r in rows]
        self.ids.extend(r[1] for r in rows)
        by_doc: dict[str, list[int]] = {}
        for i, r in enumerate(rows, start=start):
            by_doc.setdefault(r[2], []).append(i)
        for doc_id, ix in by_doc.items():
            new = np.asarray(ix, dtype=np.int64)
            old = self.rows_by_doc.get(doc_id)
            self.rows_by_doc[doc_id] = new if old is None else np.concatenate([old, new])
        self.row_of.clear()
        self.max_rowid = max(self.max_rowid, max(r[0] for r in rows))

    def approximate(self, turns: threading.Lock, files: GraphFiles | None = None) -> SpaceIndex | None:
        """The space's approximate index, made or brought up to every row held; none for a space small
        enough to score exactly. `turns` is held while a graph is made, `files` keeps it (`SpaceIndex`)."""
        if len(self.ids) < APPROXIMATE_FROM:
            return None
        rowids = self.rowids[: len(self.ids)]
        with self.index_lock:  # one thread makes it; the others wait for it rather than make their own
            if self.index is None:
                self.index = SpaceIndex.start(self.matrix, rowids, GRAPH_FROM, turns, files)
            else:
                self.index.update(self.matrix, rowids)
            return self.index

    def retire(self, wait: bool = False, keep: bool = False) -> None:
        """The matrix is dropped: a graph still being made for it is not wanted (`SpaceIndex.stop`); with
        `keep` (the store closing), a graph grown since it was saved is saved."""
        if self.index is not None:
            if keep:
                self.index.keep(self.rowids[: len(self.ids)])
            self.index.stop(wait)


def ready_documents(db: sqlite3.Connection) -> frozenset[str]:
    return frozenset(r[0] for r in db.execute("SELECT doc_id FROM doc_status WHERE stage = ?", (STAGE_READY,)))


def last_deletion(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM vector_deletions").fetchone()[0])


def load(db: sqlite3.Connection, space: str) -> VectorMatrix:
    """Every vector of the space's ready documents, read a batch at a time into a buffer sized once: the
    blobs of a whole space held at once would double its memory while it loads (gigabytes at 1M chunks)."""
    vm = VectorMatrix(deletions_seen=last_deletion(db), ready=ready_documents(db))
    stored = db.execute("SELECT COUNT(*) FROM vectors WHERE space = ?", (space,)).fetchone()[0]
    rows = db.execute(_READY_ROWS + " ORDER BY v.rowid", (space, STAGE_READY))
    while batch := rows.fetchmany(LOAD_BATCH):
        vm.append(batch, room=stored)
    return vm


def refresh(db: sqlite3.Connection, space: str, vm: VectorMatrix) -> VectorMatrix:
    """The matrix brought up to date: appended to when only additions happened, else loaded again."""
    latest = last_deletion(db)
    if latest > vm.deletions_seen:
        oldest = db.execute("SELECT MIN(seq) FROM vector_deletions").fetchone()[0]
        touched = db.execute(
            "SELECT 1 FROM vector_deletions WHERE seq > ? AND space = ? LIMIT 1", (vm.deletions_seen, space)
        ).fetchone()
        if touched or oldest > vm.deletions_seen + 1:  # deleted here, or the log no longer says
            return load(db, space)
        vm.deletions_seen = latest
    ready = ready_documents(db)
    if not vm.ready <= ready:
        return load(db, space)
    newly = sorted(ready - vm.ready)
    rows = db.execute(
        _READY_ROWS + " AND (v.rowid > ? OR v.doc_id IN (SELECT value FROM json_each(?))) ORDER BY v.rowid",
        (space, STAGE_READY, vm.max_rowid, json.dumps(newly)),
    ).fetchall()
    vm.append(rows)
    vm.ready = ready
    return vm


def prune_deletions(db: sqlite3.Connection) -> None:
    """Keep the deletion log short (inside a writer's transaction)."""
    db.execute(
        "DELETE FROM vector_deletions WHERE seq <= (SELECT MAX(seq) FROM vector_deletions) - ?", (DELETIONS_KEPT,)
    )
