"""Embedded store: one SQLite database per collection directory.

WAL mode, one transaction per document step (so a crash loses at most the step in
flight), FTS5 for BM25, vectors as float32 blobs with an in-memory matrix for
brute-force search (a 100k x 384 matrix product takes milliseconds).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from hyperfolio.errors import DuplicateDocument, StoreError
from hyperfolio.lexicon import STOPWORDS
from hyperfolio.model import Chunk, Document, DocumentInfo, Entity, Hyperedge, Page
from hyperfolio.phrases import normalize_name
from hyperfolio.store.base import STAGE_PARSED, STAGE_READY, chunk_doc_page
from hyperfolio.store.common_sql import (
    CLAIM,
    CLAIM_TABLE,
    DOC_SELECT,
    DOCUMENTS_IN_ORDER,
    INTEGRITY_CHECKS,
    LIVE_CLAIMS,
    PAGE_SELECT,
    TITLES,
    UNFINISHED_SELECT,
    info_of,
    keyword_checks,
    page_of,
)
from hyperfolio.store.concept_tables import CONCEPT_SCHEMA, DOC_PROVENANCE, LAYER_TABLES, ConceptTables
from hyperfolio.store.integrity import Finding, keyword_repairs, repair_rows, run_checks
from hyperfolio.store.model_records import MODEL_SCHEMA, ModelRecords
from hyperfolio.store.sqlite_vectors import DELETION_LOG, VectorMatrix, prune_deletions
from hyperfolio.store.sqlite_vectors import load as load_vectors
from hyperfolio.store.sqlite_vectors import refresh as refresh_vectors
from hyperfolio.store.versions import newer_than_this

DB_NAME = "hyperfolio.db"
SCHEMA_VERSION = "2"

# doc_id is indexed (one token) so that a scoped search intersects posting lists instead of
# filtering every match; its BM25 weight is zero.
FTS_SCHEMA = """CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    chunk_id UNINDEXED, doc_id, text, heading, tokenize = 'porter unicode61'
)"""
# Every chunk's keyword row, made from the chunks table (a migration, a repair).
FTS_FROM_CHUNKS = (
    "INSERT INTO chunks_fts(chunk_id, doc_id, text, heading) SELECT chunk_id, doc_id, text,"
    " (SELECT group_concat(value, ' / ') FROM json_each(chunks.section_path)) FROM chunks"
)
# FTS5 finds a row by an unindexed chunk id only by a scan: the ids are read once (IN indexes them).
KEYWORD_CHECKS = keyword_checks(
    "chunks_fts", "k.chunk_id NOT IN (SELECT f.chunk_id FROM chunks_fts f WHERE f.chunk_id IS NOT NULL)"
)

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
    + CLAIM_TABLE.format(time="REAL")
    + """CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_hash TEXT NOT NULL UNIQUE,
    num_pages INTEGER NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}',
    added_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_source ON documents(source);
CREATE TABLE IF NOT EXISTS doc_status (
    doc_id TEXT PRIMARY KEY REFERENCES documents(doc_id) ON DELETE CASCADE,
    stage TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS pages (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    width REAL, height REAL,
    ocr INTEGER NOT NULL DEFAULT 0,
    vision_dominant INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (doc_id, number)
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    page INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    modality TEXT NOT NULL,
    text TEXT NOT NULL,
    bbox TEXT,
    section_path TEXT NOT NULL DEFAULT '[]',
    table_cells TEXT,
    table_header_rows INTEGER NOT NULL DEFAULT 0,
    caption TEXT,
    ocr_text TEXT,
    image_path TEXT,
    placeholder INTEGER NOT NULL DEFAULT 0,
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, page, ord);
CREATE TABLE IF NOT EXISTS vectors (
    space TEXT NOT NULL,
    item_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (space, item_id)
);
CREATE INDEX IF NOT EXISTS vectors_doc ON vectors(doc_id);

-- Hypergraph layers, filled by the build stage.
CREATE TABLE IF NOT EXISTS entities (
    entity_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    norm_name TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    modality TEXT NOT NULL DEFAULT 'text',
    aliases TEXT NOT NULL DEFAULT '[]',
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS entities_norm ON entities(norm_name);
CREATE TABLE IF NOT EXISTS hyperedges (
    edge_id TEXT PRIMARY KEY,
    level TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    keywords TEXT NOT NULL DEFAULT '[]',
    strength REAL NOT NULL DEFAULT 1.0,
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS incidence (
    edge_id TEXT NOT NULL REFERENCES hyperedges(edge_id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(entity_id) ON DELETE CASCADE,
    role TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (edge_id, entity_id, role)
);
CREATE INDEX IF NOT EXISTS incidence_entity ON incidence(entity_id);
CREATE TABLE IF NOT EXISTS provenance (
    item_kind TEXT NOT NULL CHECK (item_kind IN ('entity', 'hyperedge')),
    item_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    page INTEGER NOT NULL,
    PRIMARY KEY (item_kind, item_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS provenance_doc ON provenance(doc_id);
CREATE INDEX IF NOT EXISTS provenance_chunk ON provenance(chunk_id);
CREATE INDEX IF NOT EXISTS provenance_item ON provenance(item_kind, item_id);
CREATE TABLE IF NOT EXISTS refine_state (
    anchor_id TEXT PRIMARY KEY,
    signature TEXT NOT NULL,
    edge_ids TEXT NOT NULL DEFAULT '[]',
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS model_builds (
    doc_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    item TEXT NOT NULL,
    how TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (doc_id, stage, item)
);
CREATE TABLE IF NOT EXISTS stage_times (
    doc_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    seconds REAL NOT NULL,
    PRIMARY KEY (doc_id, stage)
);
"""
    + CONCEPT_SCHEMA
)

_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 OR-query of quoted terms (stop words dropped)."""
    terms = [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS]
    if not terms:
        terms = _WORD.findall(text.lower())
    unique = list(dict.fromkeys(terms))
    return " OR ".join(f'"{t}"' for t in unique)


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


class SQLiteStore(ConceptTables):
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
        if version == "1":
            self._upgrade(self._migrate_from_1)
        self._db.executescript(SCHEMA)
        self._db.executescript(DELETION_LOG)
        self._db.execute(FTS_SCHEMA)
        if version != SCHEMA_VERSION:
            self.set_meta("schema_version", SCHEMA_VERSION)
        self._matrices: dict[str, VectorMatrix] = {}
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

    def _upgrade(self, migrate: Callable[[], None]) -> None:
        """Run a migration with a copy of the database kept beside it until the migration has committed
        (`hyperfolio.db.before-upgrade`): a failure leaves the copy to go back to, named in the error."""
        backup = self.path.with_name(self.path.name + ".before-upgrade")
        with sqlite3.connect(backup) as copy:
            self._db.backup(copy)
        copy.close()
        try:
            migrate()
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"upgrading {self.path} failed ({exc}); its copy before the upgrade is {backup}") from exc
        backup.unlink()

    def _migrate_from_1(self) -> None:
        """Version 1 kept doc_id unindexed in the FTS table; rebuild it from the chunks."""
        self._db.execute("BEGIN IMMEDIATE")
        self._db.execute("DROP TABLE IF EXISTS chunks_fts")
        self._db.execute(FTS_SCHEMA)
        self._db.execute(FTS_FROM_CHUNKS)
        self._db.execute("COMMIT")

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

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def claim(self, key: str, owner: str, seconds: float, dead: str = "") -> str | None:
        now = time.time()
        with self.transaction() as db:
            db.execute(CLAIM, (key, owner, now + seconds, now, dead))
            holder = db.execute("SELECT owner FROM claims WHERE key = ?", (key,)).fetchone()[0]
        return None if holder == owner else holder

    def release(self, key: str, owner: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

    def claim_holders(self, keys: Sequence[str]) -> dict[str, str]:
        return dict(self._in_query(LIVE_CLAIMS, keys, [time.time()]))

    def bulk(self) -> AbstractContextManager[None]:
        """Nothing to defer: vectors are searched by a scan, FTS5 keeps itself up."""
        return nullcontext()

    def meta_items(self) -> dict[str, str]:
        return dict(self._query("SELECT key, value FROM meta ORDER BY key"))

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # ------------------------------------------------------------------ documents
    def write_document(self, doc: Document) -> None:
        try:
            self._write_document(doc)
        except sqlite3.IntegrityError as exc:
            raise DuplicateDocument(f"{doc.source}: its content is in the collection already ({exc})") from exc

    def _write_document(self, doc: Document) -> None:
        now = time.time()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO documents(doc_id, source, title, kind, content_hash, num_pages, meta, added_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc.doc_id,
                    doc.source,
                    doc.title,
                    doc.kind,
                    doc.content_hash,
                    len(doc.pages),
                    json.dumps(doc.meta, default=str),
                    doc.added_at or now,
                ),
            )
            db.executemany(
                "INSERT INTO pages(doc_id, number, width, height, ocr, vision_dominant) VALUES (?, ?, ?, ?, ?, ?)",
                [(doc.doc_id, p.number, p.width, p.height, int(p.ocr), int(p.vision_dominant)) for p in doc.pages],
            )
            rows = [_chunk_row(c) for c in doc.chunks]
            db.executemany(
                "INSERT INTO chunks(chunk_id, doc_id, page, ord, modality, text, bbox, section_path,"
                " table_cells, table_header_rows, caption, ocr_text, image_path, placeholder, meta)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            db.executemany(
                "INSERT INTO chunks_fts(chunk_id, doc_id, text, heading) VALUES (?, ?, ?, ?)",
                [(c.chunk_id, c.doc_id, c.text, " / ".join(c.section_path)) for c in doc.chunks],
            )
            db.execute(
                "INSERT INTO doc_status(doc_id, stage, updated_at) VALUES (?, ?, ?)",
                (doc.doc_id, STAGE_PARSED, now),
            )

    def set_stage(self, doc_id: str, stage: str) -> None:
        with self.transaction() as db:
            updated = db.execute(
                "UPDATE doc_status SET stage = ?, updated_at = ? WHERE doc_id = ?",
                (stage, time.time(), doc_id),
            ).rowcount
            if not updated:
                raise StoreError(f"document {doc_id} is no longer in the collection")
        with self._lock:
            self._dirty = True

    def list_documents(self) -> list[DocumentInfo]:
        return [_info(r) for r in self._query(DOCUMENTS_IN_ORDER)]

    def unfinished_documents(self) -> list[DocumentInfo]:
        return [_info(r) for r in self._query(UNFINISHED_SELECT)]

    def titles(self) -> dict[str, str]:
        return dict(self._query(TITLES))

    def get_document(self, doc_id: str) -> DocumentInfo | None:
        rows = self._query(DOC_SELECT + " WHERE d.doc_id = ?", (doc_id,))
        return _info(rows[0]) if rows else None

    def document_by_hash(self, content_hash: str) -> DocumentInfo | None:
        rows = self._query(DOC_SELECT + " WHERE d.content_hash = ?", (content_hash,))
        return _info(rows[0]) if rows else None

    def documents_by_source(self, source: str) -> list[DocumentInfo]:
        rows = self._query(DOC_SELECT + " WHERE d.source = ? ORDER BY d.added_at", (source,))
        return [_info(r) for r in rows]

    def remove_document(self, doc_id: str) -> None:
        """Delete a document, its chunks and vectors, and hypergraph items only it supported."""
        with self.transaction() as db:
            db.execute("DELETE FROM chunks_fts WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM stage_times WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM vectors WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM pages WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM doc_status WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            self._drop_graph_of(db, doc_id)
        with self._lock:
            self._matrices.clear()

    def clear_document_graph(self, doc_id: str) -> None:
        """Forget what one document contributed to the hypergraph (its chunks and their vectors stay),
        so that rebuilding it adds nothing twice and keeps nothing of the old build."""
        with self.transaction() as db:
            spaces = "('entity', 'hyperedge', 'concept', 'relation', 'theme')"
            db.execute(f"DELETE FROM vectors WHERE doc_id = ? AND space IN {spaces}", (doc_id,))
            self._drop_graph_of(db, doc_id)
        with self._lock:
            self._matrices.clear()

    @staticmethod
    def _drop_graph_of(db: sqlite3.Connection, doc_id: str) -> None:
        # Anchors of this document are refined again: edges they spread into other documents lose members.
        db.execute(
            "UPDATE refine_state SET signature = '' WHERE anchor_id IN"
            " (SELECT item_id FROM provenance WHERE item_kind = 'entity' AND doc_id = ?)",
            (doc_id,),
        )
        db.execute("DELETE FROM provenance WHERE doc_id = ?", (doc_id,))
        for table in ("concept_edges", "concept_evidence", "conflict_log", "reconcile_stats", "model_builds"):
            db.execute(f"DELETE FROM {table} WHERE doc_id = ?", (doc_id,))
        # Hypergraph items left without any provenance were supported only by this document.
        orphans = "SELECT 1 FROM provenance p WHERE p.item_kind = ? AND p.item_id = {col}"
        db.execute(
            "DELETE FROM hyperedges WHERE NOT EXISTS (" + orphans.format(col="hyperedges.edge_id") + ")",
            ("hyperedge",),
        )
        db.execute(
            "DELETE FROM entities WHERE NOT EXISTS (" + orphans.format(col="entities.entity_id") + ")",
            ("entity",),
        )
        db.execute("DELETE FROM incidence WHERE edge_id NOT IN (SELECT edge_id FROM hyperedges)")
        db.execute("DELETE FROM refine_state WHERE anchor_id NOT IN (SELECT entity_id FROM entities)")
        db.execute("DELETE FROM entity_concepts WHERE entity_id NOT IN (SELECT entity_id FROM entities)")
        db.execute("DELETE FROM concepts WHERE concept_id NOT IN (SELECT concept_id FROM entity_concepts)")

    # ------------------------------------------------------------------ chunks
    _CHUNK_SELECT = (
        "SELECT chunk_id, doc_id, page, ord, modality, text, bbox, section_path, table_cells,"
        " table_header_rows, caption, ocr_text, image_path, placeholder, meta FROM chunks"
    )

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        found: dict[str, Chunk] = {}
        ids = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for row in self._query(self._CHUNK_SELECT + f" WHERE chunk_id IN ({marks})", part):
                chunk = _row_chunk(row)
                found[chunk.chunk_id] = chunk
        return [found[i] for i in chunk_ids if i in found]

    def annotate_chunk(self, chunk_id: str, key: str, value: Any) -> None:
        """Set one key of a chunk's metadata (e.g. a vision model's description of a figure)."""
        with self.transaction() as db:
            db.execute(
                "UPDATE chunks SET meta = json_set(meta, ?, ?) WHERE chunk_id = ?", (f"$.{key}", value, chunk_id)
            )

    def iter_chunks(self, doc_id: str | None = None) -> Iterable[Chunk]:
        if doc_id is None:
            rows = self._query(self._CHUNK_SELECT + " ORDER BY doc_id, page, ord")
        else:
            rows = self._query(self._CHUNK_SELECT + " WHERE doc_id = ? ORDER BY page, ord", (doc_id,))
        return [_row_chunk(r) for r in rows]

    def page_chunk_texts(self, pages: Sequence[tuple[str, int]]) -> dict[tuple[str, int], list[tuple[str, str]]]:
        """The (chunk_id, text) of every chunk on each (doc_id, page), in reading order."""
        by_doc: dict[str, set[int]] = {}
        for doc, page in pages:
            by_doc.setdefault(doc, set()).add(page)
        out: dict[tuple[str, int], list[tuple[str, str]]] = {}
        for doc, numbers in by_doc.items():
            rows = self._in_query(
                "SELECT page, chunk_id, text FROM chunks WHERE doc_id = ? AND page IN ({marks}) ORDER BY page, ord",
                sorted(numbers),
                [doc],
            )
            for page, chunk_id, text in rows:
                out.setdefault((doc, int(page)), []).append((chunk_id, text))
        return out

    def get_pages(self, doc_id: str) -> list[Page]:
        return [page_of(r) for r in self._query(PAGE_SELECT, (doc_id,))]

    def count_chunks(self, doc_id: str | None = None) -> int:
        if doc_id is None:
            return self._query("SELECT COUNT(*) FROM chunks")[0][0]
        return self._query("SELECT COUNT(*) FROM chunks WHERE doc_id = ?", (doc_id,))[0][0]

    # ------------------------------------------------------------------ keyword search
    def keyword_search(self, query: str, k: int, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        match = fts_query(query)
        if not match:
            return []
        if k < 1:
            return []
        match = "{text heading}: (" + match + ")"
        if doc_ids:
            match += " AND doc_id: (" + " OR ".join(f'"{d}"' for d in doc_ids) + ")"
        # Only fully indexed documents are searchable: a half-ingested or superseded one is not.
        sql = (
            "SELECT chunk_id, -bm25(chunks_fts, 0.0, 0.0, 1.0, 0.5) AS score FROM chunks_fts"
            " WHERE chunks_fts MATCH ? AND doc_id IN (SELECT doc_id FROM doc_status WHERE stage = ?)"
            " ORDER BY bm25(chunks_fts, 0.0, 0.0, 1.0, 0.5) LIMIT ?"
        )
        params: list[Any] = [match, STAGE_READY, k]
        try:
            return [(r[0], float(r[1])) for r in self._query(sql, params)]
        except sqlite3.OperationalError as exc:
            raise StoreError(f"keyword search failed for {query!r}: {exc}") from exc

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

    def missing_vectors(self, space: str, doc_id: str) -> list[Chunk]:
        rows = self._query(
            self._CHUNK_SELECT
            + " WHERE doc_id = ? AND chunk_id NOT IN (SELECT item_id FROM vectors WHERE space = ? AND doc_id = ?)"
            " ORDER BY page, ord",
            (doc_id, space, doc_id),
        )
        return [_row_chunk(r) for r in rows]

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
            self._matrices.pop(space, None)

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
                cached = refresh_vectors(self._db, space, cached)
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
        if not vm.ids or k < 1:
            return [[] for _ in queries]
        stored = np.arange(len(vm.ids))
        if doc_ids:
            parts = [vm.rows_by_doc[d] for d in doc_ids if d in vm.rows_by_doc]
            if not parts:
                return [[] for _ in queries]
            stored = np.concatenate(parts)
        block = vm.matrix if not doc_ids else vm.matrix[stored]
        if len(queries) == 1:  # a matrix-vector product, as a single search always computed it
            return [top_k(vm, stored, block @ queries[0], k)]
        return [top_k(vm, stored, scores, k) for scores in (block @ queries.T).T]

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

    # ------------------------------------------------------------------ hypergraph
    def write_graph(
        self,
        entities: Sequence[tuple[Entity, Sequence[str]]],
        edges: Sequence[tuple[Hyperedge, Sequence[str]]],
        max_description_chars: int = 600,
    ) -> None:
        """Upsert entities (descriptions and aliases pooled), add hyperedges, incidence and provenance.

        Idempotent: writing the same graph twice changes nothing, so a resumed build is safe.
        """
        with self.transaction() as db:
            ids = [e.entity_id for e, _ in entities]
            existing: dict[str, tuple] = {}
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                for row in db.execute(
                    f"SELECT entity_id, description, aliases, modality FROM entities WHERE entity_id IN ({marks})", part
                ):
                    existing[row[0]] = row
            rows = []
            for entity, _ in entities:
                description, aliases, modality = entity.description, list(entity.aliases), entity.modality
                old = existing.get(entity.entity_id)
                if old is not None:
                    if description and description not in old[1] and len(old[1]) < max_description_chars:
                        description = (old[1] + " | " + description)[:max_description_chars] if old[1] else description
                    else:
                        description = old[1]
                    aliases = list(dict.fromkeys(json.loads(old[2]) + aliases))
                    modality = old[3] if old[3] != "text" else modality
                rows.append(
                    (
                        entity.entity_id,
                        entity.name,
                        entity.norm_name or normalize_name(entity.name),
                        entity.type,
                        description,
                        modality,
                        json.dumps(aliases),
                    )
                )
            db.executemany(
                "INSERT INTO entities(entity_id, name, norm_name, type, description, modality, aliases)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(entity_id) DO UPDATE SET"
                " description = excluded.description, aliases = excluded.aliases, modality = excluded.modality",
                rows,
            )
            db.executemany(
                "INSERT OR IGNORE INTO hyperedges(edge_id, level, description, keywords, strength)"
                " VALUES (?, ?, ?, ?, ?)",
                [(h.edge_id, h.level, h.description, json.dumps(h.keywords), h.strength) for h, _ in edges],
            )
            db.executemany(
                "INSERT OR IGNORE INTO incidence(edge_id, entity_id, role) VALUES (?, ?, ?)",
                [(h.edge_id, eid, role) for h, _ in edges for eid, role in h.members],
            )
            self._write_layer_rows(
                db,
                [(e.entity_id, e.concept) for e, _ in entities],
                [(h.edge_id, h.members[0][0], h.relation, h.members[1][0]) for h, _ in edges if h.relation],
            )
            prov = [("entity", e.entity_id, c) for e, chunks in entities for c in chunks]
            prov += [("hyperedge", h.edge_id, c) for h, chunks in edges for c in chunks]
            db.executemany(
                "INSERT OR IGNORE INTO provenance(item_kind, item_id, chunk_id, doc_id, page) VALUES (?, ?, ?, ?, ?)",
                [(kind, item, c, *chunk_doc_page(c)) for kind, item, c in prov],
            )

    def delete_hyperedges(self, edge_ids: Sequence[str]) -> None:
        if not edge_ids:
            return
        with self.transaction() as db:
            for start in range(0, len(edge_ids), 500):
                part = list(edge_ids[start : start + 500])
                marks = ",".join("?" * len(part))
                db.execute(f"DELETE FROM provenance WHERE item_kind = 'hyperedge' AND item_id IN ({marks})", part)
                db.execute(f"DELETE FROM incidence WHERE edge_id IN ({marks})", part)
                db.execute(f"DELETE FROM hyperedges WHERE edge_id IN ({marks})", part)
                db.execute(
                    "DELETE FROM vectors WHERE space IN ('hyperedge', 'theme')"
                    f" AND substr(item_id, 1, instr(item_id, '|') - 1) IN ({marks})",
                    part,
                )
        with self._lock:
            self._matrices.clear()

    def _in_query(self, sql: str, ids: Sequence[Any], extra: Sequence[Any] = ()) -> list[tuple]:
        """Run `sql` (with one `{marks}` placeholder) over ids in batches SQLite accepts."""
        out: list[tuple] = []
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            out.extend(self._query(sql.format(marks=",".join("?" * len(part))), [*extra, *part]))
        return out

    def get_entities(self, entity_ids: Sequence[str]) -> list[Entity]:
        rows = self._in_query(
            "SELECT e.entity_id, e.name, e.type, e.description, e.modality, e.aliases, e.norm_name, c.name"
            " FROM entities e LEFT JOIN entity_concepts ec ON ec.entity_id = e.entity_id"
            " LEFT JOIN concepts c ON c.concept_id = ec.concept_id WHERE e.entity_id IN ({marks})",
            entity_ids,
        )
        found = {r[0]: Entity(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7] or "") for r in rows}
        return [found[i] for i in entity_ids if i in found]

    def get_hyperedges(self, edge_ids: Sequence[str]) -> list[Hyperedge]:
        rows = self._in_query(
            "SELECT h.edge_id, h.level, h.description, h.keywords, h.strength, f.relation FROM hyperedges h"
            " LEFT JOIN facts f ON f.edge_id = h.edge_id WHERE h.edge_id IN ({marks})",
            edge_ids,
        )
        members: dict[str, list[tuple[str, str]]] = {}
        for edge, entity, role in self._in_query(
            "SELECT edge_id, entity_id, role FROM incidence WHERE edge_id IN ({marks}) ORDER BY rowid", edge_ids
        ):
            members.setdefault(edge, []).append((entity, role))
        found = {
            r[0]: Hyperedge(r[0], r[1], r[2], json.loads(r[3]), r[4], members.get(r[0], []), r[5] or "") for r in rows
        }
        return [found[i] for i in edge_ids if i in found]

    def hyperedge_strengths(self, edge_ids: Sequence[str]) -> dict[str, float]:
        return dict(self._in_query("SELECT edge_id, strength FROM hyperedges WHERE edge_id IN ({marks})", edge_ids))

    def incident_edges(self, entity_ids: Sequence[str], levels: Sequence[str] | None = None) -> dict[str, list[str]]:
        sql = "SELECT i.entity_id, i.edge_id FROM incidence i"
        extra: list[Any] = []
        if levels:
            sql += f" JOIN hyperedges h ON h.edge_id = i.edge_id AND h.level IN ({','.join('?' * len(levels))})"
            extra = list(levels)
        out: dict[str, list[str]] = {}
        for entity, edge in self._in_query(sql + " WHERE i.entity_id IN ({marks})", entity_ids, extra):
            out.setdefault(entity, []).append(edge)
        return out

    def provenance(self, kind: str, item_ids: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        """item -> [(chunk_id, doc_id, page)] for entities or hyperedges."""
        out: dict[str, list[tuple[str, str, int]]] = {}
        rows = self._in_query(
            "SELECT item_id, chunk_id, doc_id, page FROM provenance WHERE item_kind = ? AND item_id IN ({marks})",
            item_ids,
            [kind],
        )
        for item, chunk, doc, page in rows:
            out.setdefault(item, []).append((chunk, doc, page))
        return out

    def entities_by_norm_name(self, norm_names: Sequence[str]) -> dict[str, str]:
        rows = self._in_query("SELECT norm_name, entity_id FROM entities WHERE norm_name IN ({marks})", norm_names)
        return dict(rows)

    def chunk_entities(self, doc_id: str) -> dict[str, list[tuple[str, str]]]:
        """chunk -> [(entity id, name)] for a document's chunks."""
        out: dict[str, list[tuple[str, str]]] = {}
        for chunk, entity, name in self._query(
            f"SELECT p.chunk_id, e.entity_id, e.name FROM {DOC_PROVENANCE} JOIN entities e ON e.entity_id = p.item_id"
            " WHERE p.item_kind = 'entity' AND p.doc_id = ? ORDER BY p.chunk_id, e.name, p.rowid",
            (doc_id,),
        ):
            out.setdefault(chunk, []).append((entity, name))
        return out

    def chunk_hyperedge_members(
        self, doc_id: str, levels: Sequence[str] = ("low", "high")
    ) -> dict[str, list[list[str]]]:
        """chunk -> member lists of the hyperedges evidenced in it."""
        marks = ",".join("?" * len(levels))
        members: dict[tuple[str, str], list[str]] = {}
        for chunk, edge, entity in self._query(
            f"SELECT p.chunk_id, i.edge_id, i.entity_id FROM {DOC_PROVENANCE}"
            " JOIN hyperedges h ON h.edge_id = p.item_id JOIN incidence i ON i.edge_id = h.edge_id"
            f" WHERE p.item_kind = 'hyperedge' AND p.doc_id = ? AND h.level IN ({marks})"
            " ORDER BY p.item_id, p.rowid, i.entity_id, i.role",
            (doc_id, *levels),
        ):
            members.setdefault((chunk, edge), []).append(entity)
        out: dict[str, list[list[str]]] = {}
        for (chunk, _), ids in members.items():
            out.setdefault(chunk, []).append(ids)
        return out

    def chunk_hyperedges(self, chunk_id: str) -> list[str]:
        """Hyperedges evidenced in one chunk."""
        rows = self._query("SELECT item_id FROM provenance WHERE item_kind = 'hyperedge' AND chunk_id = ?", (chunk_id,))
        return [r[0] for r in rows]

    def hyperedges_of_level(self, doc_id: str, level: str) -> list[str]:
        return [
            r[0]
            for r in self._query(
                f"SELECT DISTINCT h.edge_id FROM {DOC_PROVENANCE} JOIN hyperedges h ON p.item_kind = 'hyperedge'"
                " AND p.item_id = h.edge_id WHERE p.doc_id = ? AND h.level = ? ORDER BY h.edge_id",
                (doc_id, level),
            )
        ]

    def entities_matching(self, name: str) -> list[str]:
        """Entities whose canonical name is this name's, or (failing that) contains it."""
        norm = normalize_name(name)
        exact = [r[0] for r in self._query("SELECT entity_id FROM entities WHERE norm_name = ?", (norm,))]
        if exact or not norm:
            return exact
        like = "%" + norm.replace("%", "").replace("_", "") + "%"
        return [r[0] for r in self._query("SELECT entity_id FROM entities WHERE norm_name LIKE ? LIMIT 20", (like,))]

    def document_entities(self, doc_id: str) -> list[str]:
        rows = self._query(
            f"SELECT DISTINCT p.item_id FROM {DOC_PROVENANCE} WHERE p.item_kind = 'entity' AND p.doc_id = ?"
            " ORDER BY p.item_id",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def document_hyperedges(self, doc_id: str) -> list[str]:
        rows = self._query(
            f"SELECT DISTINCT p.item_id FROM {DOC_PROVENANCE} WHERE p.item_kind = 'hyperedge' AND p.doc_id = ?"
            " ORDER BY p.item_id",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def entity_pages(self, entity_ids: Sequence[str]) -> dict[str, set[tuple[str, int]]]:
        """The distinct (doc_id, page) pairs each entity's provenance spans, over all documents."""
        out: dict[str, set[tuple[str, int]]] = {}
        rows = self._in_query(
            "SELECT DISTINCT item_id, doc_id, page FROM provenance WHERE item_kind = 'entity' AND item_id IN ({marks})",
            entity_ids,
        )
        for item, doc, page in rows:
            out.setdefault(item, set()).add((doc, page))
        return out

    def refine_signatures(self, anchor_ids: Sequence[str]) -> dict[str, tuple[str, list[str]]]:
        rows = self._in_query(
            "SELECT anchor_id, signature, edge_ids FROM refine_state WHERE anchor_id IN ({marks})", anchor_ids
        )
        return {r[0]: (r[1], json.loads(r[2])) for r in rows}

    def set_refine_signature(self, anchor_id: str, signature: str, edge_ids: Sequence[str]) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO refine_state(anchor_id, signature, edge_ids, updated_at) VALUES (?, ?, ?, ?)",
                (anchor_id, signature, json.dumps(list(edge_ids)), time.time()),
            )

    def copy_to(self, location: str | Path) -> SQLiteStore:
        """A consistent copy of this database in another directory (SQLite's online backup)."""
        target = SQLiteStore(location)
        with self._lock, target._lock:
            self._db.backup(target._db)
        target._matrices.clear()
        return target

    def clear_graph(self) -> None:
        """Forget the hypergraph (entities, hyperedges, refinement state and their vectors); chunks stay."""
        with self.transaction() as db:
            for table in ("provenance", *LAYER_TABLES, "incidence", "hyperedges", "entities", "refine_state"):
                db.execute(f"DELETE FROM {table}")
            db.execute("DELETE FROM vectors WHERE space IN ('entity', 'hyperedge', 'concept', 'relation', 'theme')")
        with self._lock:
            self._matrices.clear()

    def graph_stats(self) -> dict[str, Any]:
        return {
            "entities_by_modality": dict(self._query("SELECT modality, COUNT(*) FROM entities GROUP BY modality")),
            "hyperedges_by_level": dict(self._query("SELECT level, COUNT(*) FROM hyperedges GROUP BY level")),
            "anchors_refined": self._query("SELECT COUNT(*) FROM refine_state")[0][0],
            **self.layer_stats(),
        }

    # ------------------------------------------------------------------ who built what (hypergraph/ledger.py)
    def record_builds(self, doc_id: str, rows: list[tuple[str, str, str, str]]) -> None:
        """Replace a document's record of which parts the model or the offline path built.

        `rows` are (stage, item, how, reason); a rebuild writes the whole record anew.
        """
        with self.transaction() as db:
            db.execute("DELETE FROM model_builds WHERE doc_id = ?", (doc_id,))
            db.executemany(
                "INSERT OR REPLACE INTO model_builds (doc_id, stage, item, how, reason) VALUES (?, ?, ?, ?, ?)",
                [(doc_id, *row) for row in rows],
            )

    def builds(self, doc_id: str | None = None, how: str | None = None) -> list[tuple[str, str, str, str, str]]:
        """(doc_id, stage, item, how, reason) rows, optionally of one document and one kind."""
        sql, args = "SELECT doc_id, stage, item, how, reason FROM model_builds WHERE 1 = 1", list[str]()
        if doc_id is not None:
            sql, args = sql + " AND doc_id = ?", [*args, doc_id]
        if how is not None:
            sql, args = sql + " AND how = ?", [*args, how]
        return [tuple(r) for r in self._query(sql + " ORDER BY doc_id, stage, item", tuple(args))]

    def build_counts(self) -> dict[str, dict[str, int]]:
        """{stage: {how: count}} over the collection."""
        out: dict[str, dict[str, int]] = {}
        for stage, how, n in self._query("SELECT stage, how, COUNT(*) FROM model_builds GROUP BY stage, how"):
            out.setdefault(stage, {})[how] = int(n)
        return out

    # ------------------------------------------------------------------ integrity (store/integrity.py)
    def integrity(self) -> list[Finding]:
        return run_checks((*INTEGRITY_CHECKS, *KEYWORD_CHECKS), self._query)

    def repair(self, findings: Sequence[Finding]) -> dict[str, int]:
        changed = repair_rows(INTEGRITY_CHECKS, findings, self.transaction)
        stale = keyword_repairs(findings, changed)
        if stale is not None:
            with self.transaction() as db:
                db.execute("DELETE FROM chunks_fts")
                changed.update(dict.fromkeys(stale, db.execute(FTS_FROM_CHUNKS).rowcount))
        with self._lock:
            self._matrices.clear()
        return changed

    # ------------------------------------------------------------------ stats
    def add_stage_times(self, doc_id: str, seconds: dict[str, float]) -> None:
        """Add to a document's seconds per indexing stage (a resumed run adds what it spent)."""
        try:
            with self.transaction() as db:
                db.executemany(
                    "INSERT INTO stage_times (doc_id, stage, seconds) VALUES (?, ?, ?) "
                    "ON CONFLICT (doc_id, stage) DO UPDATE SET seconds = seconds + excluded.seconds",
                    [(doc_id, stage, float(s)) for stage, s in seconds.items()],
                )
        except sqlite3.Error as exc:  # e.g. busy: a caller reports it, the document's own result stands
            raise StoreError(f"stage times of {doc_id} not recorded: {exc}") from exc

    def stage_times(self, doc_id: str | None = None) -> dict[str, float]:
        """Seconds per stage of one document, or summed over the collection."""
        sql, args = "SELECT stage, SUM(seconds) FROM stage_times", tuple[str, ...]()
        if doc_id is not None:
            sql, args = sql + " WHERE doc_id = ?", (doc_id,)
        return {stage: float(total) for stage, total in self._query(sql + " GROUP BY stage", args)}

    def stats(self) -> dict[str, Any]:
        def count(sql: str) -> int:
            return int(self._query(sql)[0][0])

        by_modality = dict(self._query("SELECT modality, COUNT(*) FROM chunks GROUP BY modality"))
        by_stage = dict(self._query("SELECT stage, COUNT(*) FROM doc_status GROUP BY stage"))
        return {
            "path": str(self.path),
            "documents": count("SELECT COUNT(*) FROM documents"),
            "pages": count("SELECT COUNT(*) FROM pages"),
            "chunks": count("SELECT COUNT(*) FROM chunks"),
            "chunks_by_modality": by_modality,
            "documents_by_stage": by_stage,
            "vectors": count("SELECT COUNT(*) FROM vectors"),
            "entities": count("SELECT COUNT(*) FROM entities"),
            "hyperedges": count("SELECT COUNT(*) FROM hyperedges"),
            **self.graph_stats(),
            "built_by": self.build_counts(),
            "stage_seconds": self.stage_times(),
            "database_bytes": self.path.stat().st_size if self.path.exists() else 0,
        }


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


def _chunk_row(c: Chunk) -> tuple:
    return (
        c.chunk_id,
        c.doc_id,
        c.page,
        c.order,
        c.modality,
        c.text,
        json.dumps(list(c.bbox)) if c.bbox else None,
        json.dumps(c.section_path),
        json.dumps(c.table) if c.table is not None else None,
        c.table_header_rows,
        c.caption,
        c.ocr_text,
        c.image_path,
        int(c.placeholder),
        json.dumps(c.meta, default=str),
    )


def _row_chunk(r: tuple) -> Chunk:
    bbox = tuple(json.loads(r[6])) if r[6] else None
    return Chunk(
        chunk_id=r[0],
        doc_id=r[1],
        page=r[2],
        order=r[3],
        modality=r[4],
        text=r[5],
        bbox=bbox,
        section_path=json.loads(r[7]),
        table=json.loads(r[8]) if r[8] else None,
        table_header_rows=r[9],
        caption=r[10],
        ocr_text=r[11],
        image_path=r[12],
        placeholder=bool(r[13]),
        meta=json.loads(r[14]),
    )


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


def _info(row: Sequence[Any]) -> DocumentInfo:
    return info_of(row, json.loads(row[9] or "{}"))


def open_store(directory: str | Path) -> SQLiteStore:
    """The collection in `directory` (created when missing)."""
    return SQLiteStore(Path(directory).expanduser())


def store_exists(directory: str | Path) -> bool:
    return (Path(directory).expanduser() / DB_NAME).is_file()


def remove_store(directory: str | Path) -> None:
    """Delete the database and its write-ahead files (a closed store: a collection variant being rebuilt)."""
    for suffix in ("", "-wal", "-shm"):
        (Path(directory).expanduser() / f"{DB_NAME}{suffix}").unlink(missing_ok=True)
