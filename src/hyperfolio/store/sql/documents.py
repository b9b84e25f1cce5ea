"""Documents, pages, chunks, meta and claims: their statements, written once for both backends."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from hyperfolio.errors import DuplicateDocument, StoreError
from hyperfolio.model import Chunk, Document, DocumentInfo, Page
from hyperfolio.store.base import STAGE_PARSED, STAGE_READY
from hyperfolio.store.sql.dialect import Dialect
from hyperfolio.store.sql.host import SqlHost, Writer

# Take a free or lapsed claim (or one whose holder is known dead), renew one's own; a live claim of
# another owner stays. Parameters: key, owner, expiry, now, the dead holder ('' for none).
CLAIM = (
    "INSERT INTO claims (key, owner, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE"
    " SET owner = excluded.owner, expires_at = excluded.expires_at"
    " WHERE claims.owner = excluded.owner OR claims.expires_at < ? OR claims.owner = ?"
)
# The live claims among some keys (content hashes): who is indexing those documents now. Parameters: now.
LIVE_CLAIMS = "SELECT key, owner FROM claims WHERE expires_at >= ? AND key {ids}"

# A document's row as `DocumentInfo` takes it (meta last, as each backend stores JSON).
DOC_SELECT = (
    "SELECT d.doc_id, d.source, d.title, d.kind, d.content_hash, d.num_pages,"
    " (SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id), COALESCE(s.stage, ''), d.added_at, d.meta"
    " FROM documents d LEFT JOIN doc_status s ON s.doc_id = d.doc_id"
)
# Every document, and every title, oldest first (ties by id): both backends list them in one order.
DOCUMENTS_IN_ORDER = DOC_SELECT + " ORDER BY d.added_at, d.doc_id"
TITLES = "SELECT doc_id, title FROM documents ORDER BY added_at, doc_id"
# Documents whose indexing has not finished: the chunk counts are taken for these rows only, so a
# question can name them without counting every chunk of the collection.
UNFINISHED_SELECT = DOC_SELECT + f" WHERE COALESCE(s.stage, '') <> '{STAGE_READY}' ORDER BY d.added_at, d.doc_id"
PAGE_SELECT = "SELECT number, width, height, ocr, vision_dominant FROM pages WHERE doc_id = ? ORDER BY number"
CHUNK_COLUMNS = (
    "chunk_id, doc_id, page, ord, modality, text, bbox, section_path, table_cells,"
    " table_header_rows, caption, ocr_text, image_path, placeholder, meta"
)
CHUNK_SELECT = f"SELECT {CHUNK_COLUMNS} FROM chunks"
# The graph's vector spaces (the chunk space stays when the graph is rebuilt).
GRAPH_SPACES = ("entity", "hyperedge", "concept", "relation", "theme")
GRAPH_VECTORS = "vectors WHERE space IN (" + ", ".join(f"'{space}'" for space in GRAPH_SPACES) + ")"
# Per-document rows of the graph's bookkeeping, gone with the document's part of the graph.
_DOCUMENT_GRAPH_ROWS = ("concept_edges", "concept_evidence", "conflict_log", "reconcile_stats", "model_builds")
# Hypergraph items left without any provenance (supported only by a document just dropped).
_UNSUPPORTED = (
    "DELETE FROM {table} WHERE NOT EXISTS"
    " (SELECT 1 FROM provenance p WHERE p.item_kind = '{kind}' AND p.item_id = {table}.{column})"
)


def page_of(row: Sequence[Any]) -> Page:
    """A page row (PAGE_SELECT's columns), without its chunks."""
    number, width, height, ocr, vision = row
    return Page(
        int(number), width=float(width or 0.0), height=float(height or 0.0), ocr=bool(ocr), vision_dominant=bool(vision)
    )


def info_of(row: Sequence[Any], meta: dict[str, Any]) -> DocumentInfo:
    """A DOC_SELECT row as `DocumentInfo`, its meta decoded by the backend (keys sorted: JSONB keeps no order)."""
    doc_id, source, title, kind, content_hash, pages, chunks, status, added_at = row[:9]
    ordered = dict(sorted(meta.items()))
    return DocumentInfo(doc_id, source, title, kind, content_hash, int(pages), int(chunks), status, added_at, ordered)


def chunk_row(d: Dialect, c: Chunk) -> tuple:
    """A chunk as its row (CHUNK_COLUMNS), values as the backend stores them."""
    return (
        c.chunk_id,
        c.doc_id,
        c.page,
        c.order,
        c.modality,
        d.text(c.text),
        d.numbers(c.bbox) if c.bbox else None,
        d.strings([d.text(s) or "" for s in c.section_path]),
        d.json(c.table) if c.table is not None else None,
        c.table_header_rows,
        d.text(c.caption),
        d.text(c.ocr_text),
        c.image_path,
        d.flag(c.placeholder),
        d.json(c.meta),
    )


def row_chunk(d: Dialect, r: Sequence[Any]) -> Chunk:
    """A chunk row (CHUNK_COLUMNS) as the chunk."""
    return Chunk(
        chunk_id=r[0],
        doc_id=r[1],
        page=r[2],
        order=r[3],
        modality=r[4],
        text=r[5],
        bbox=d.from_numbers(r[6]) if r[6] else None,
        section_path=d.from_strings(r[7]),
        table=d.from_json(r[8]) if r[8] is not None else None,
        table_header_rows=r[9],
        caption=r[10],
        ocr_text=r[11],
        image_path=r[12],
        placeholder=bool(r[13]),
        meta=d.from_json(r[14]),
    )


# A new random token at every change of the documents (one written, a stage set, one removed, its meta or
# title changed), written in the change's transaction: what is derived from them (the keyword index, the
# cards a question is routed by, the chunk count) is up to date while it holds the same token.
DOCUMENTS_EPOCH = "documents_epoch"
GRAPH_EPOCH = "graph_epoch"


class DocumentTables(SqlHost):
    """Meta, claims, documents, pages and chunks."""

    def documents_version(self) -> str:
        """The collection's documents epoch (changes with every document written, stage set, removal, meta
        or title change)."""
        return self.get_meta(DOCUMENTS_EPOCH) or ""

    def _documents_changed(self, cur: Writer) -> None:
        """Within a transaction that changes a document's stage, meta or title, or removes it."""
        self._put_meta(cur, DOCUMENTS_EPOCH, uuid.uuid4().hex)

    def graph_version(self) -> str:
        """The hypergraph's epoch (changes with every write or removal of entities, hyperedges or their
        provenance): what is derived from the whole graph is up to date while it and the documents' are."""
        return self.get_meta(GRAPH_EPOCH) or ""

    def _graph_changed(self, cur: Writer) -> None:
        """Within a transaction that writes or removes part of the hypergraph."""
        self._put_meta(cur, GRAPH_EPOCH, uuid.uuid4().hex)

    def _put_meta(self, cur: Writer, key: str, value: str) -> None:
        cur.execute(self.dialect.upsert("meta(key, value)", "VALUES (?, ?)", ("key",)), (key, value))

    def _now(self) -> float:
        """The time claims are measured by."""
        return time.time()

    # ------------------------------------------------------------------ meta and claims
    def meta_items(self) -> dict[str, str]:
        return dict(self._query("SELECT key, value FROM meta ORDER BY key"))

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as cur:
            self._put_meta(cur, key, value)

    def claim(self, key: str, owner: str, seconds: float, dead: str = "") -> str | None:
        with self._write() as cur:
            now = self._now()
            cur.execute(CLAIM, (key, owner, now + seconds, now, dead))
            (holder,) = cur.execute("SELECT owner FROM claims WHERE key = ?", (key,)).fetchone() or (owner,)
        return None if holder == owner else holder

    def release(self, key: str, owner: str) -> None:
        with self._write() as cur:
            cur.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

    def claim_holders(self, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        return dict(self._in_query(LIVE_CLAIMS, keys, [self._now()]))

    # ------------------------------------------------------------------ documents
    def write_document(self, doc: Document) -> None:
        try:
            self._write_document(doc)
        except self.dialect.duplicate as exc:
            raise DuplicateDocument(f"{doc.source}: its content is in the collection already ({exc})") from exc

    def _write_document(self, doc: Document) -> None:
        d, now = self.dialect, time.time()
        with self._write() as cur:
            cur.execute(
                "INSERT INTO documents(doc_id, source, title, kind, content_hash, num_pages, meta, added_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc.doc_id,
                    doc.source,
                    d.text(doc.title),
                    doc.kind,
                    doc.content_hash,
                    len(doc.pages),
                    d.json(doc.meta),
                    doc.added_at or now,
                ),
            )
            cur.executemany(
                "INSERT INTO pages(doc_id, number, width, height, ocr, vision_dominant) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (doc.doc_id, p.number, p.width, p.height, d.flag(p.ocr), d.flag(p.vision_dominant))
                    for p in doc.pages
                ],
            )
            chunks = doc.chunks
            cur.executemany(
                f"INSERT INTO chunks({CHUNK_COLUMNS}) VALUES ({', '.join('?' * 15)})", [chunk_row(d, c) for c in chunks]
            )
            cur.execute(
                "INSERT INTO doc_status(doc_id, stage, updated_at) VALUES (?, ?, ?)", (doc.doc_id, STAGE_PARSED, now)
            )
            self._documents_changed(cur)  # its chunks count among the collection's

    def set_stage(self, doc_id: str, stage: str) -> None:
        with self._write() as cur:
            updated = cur.execute(
                "UPDATE doc_status SET stage = ?, updated_at = ? WHERE doc_id = ?", (stage, time.time(), doc_id)
            ).rowcount
            if not updated:
                raise StoreError(f"document {doc_id} is no longer in the collection")
            self._documents_changed(cur)
        self._stages_changed()
        self._keywords_changed()

    def update_document_meta(self, doc_id: str, changes: dict[str, Any]) -> None:
        with self._write() as cur:
            found = cur.execute("SELECT meta FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
            if found is None:
                raise StoreError(f"document {doc_id} is no longer in the collection")
            meta = dict(self.dialect.from_json(found[0]) or {}) | changes
            cur.execute("UPDATE documents SET meta = ? WHERE doc_id = ?", (self.dialect.json(meta), doc_id))
            self._documents_changed(cur)

    def set_document_title(self, doc_id: str, title: str) -> None:
        with self._write() as cur:
            updated = cur.execute(
                "UPDATE documents SET title = ? WHERE doc_id = ?", (self.dialect.text(title), doc_id)
            ).rowcount
            if not updated:
                raise StoreError(f"document {doc_id} is no longer in the collection")
            self._documents_changed(cur)

    def _info(self, row: Sequence[Any]) -> DocumentInfo:
        return info_of(row, dict(self.dialect.from_json(row[9]) or {}))

    def list_documents(self) -> list[DocumentInfo]:
        return [self._info(r) for r in self._query(DOCUMENTS_IN_ORDER)]

    def unfinished_documents(self) -> list[DocumentInfo]:
        return [self._info(r) for r in self._query(UNFINISHED_SELECT)]

    def titles(self) -> dict[str, str]:
        return dict(self._query(TITLES))

    def get_document(self, doc_id: str) -> DocumentInfo | None:
        rows = self._query(DOC_SELECT + " WHERE d.doc_id = ?", (doc_id,))
        return self._info(rows[0]) if rows else None

    def document_by_hash(self, content_hash: str) -> DocumentInfo | None:
        rows = self._query(DOC_SELECT + " WHERE d.content_hash = ?", (content_hash,))
        return self._info(rows[0]) if rows else None

    def documents_by_source(self, source: str) -> list[DocumentInfo]:
        order = " ORDER BY d.added_at" + self.dialect.stated(", d.doc_id")
        return [self._info(r) for r in self._query(DOC_SELECT + " WHERE d.source = ?" + order, (source,))]

    def remove_document(self, doc_id: str) -> None:
        """Delete a document, its chunks and vectors, and hypergraph items only it supported."""
        with self._write() as cur:
            for table in ("stage_times", "vectors", "chunks", "pages", "doc_status", "documents"):
                cur.execute(f"DELETE FROM {table} WHERE doc_id = ?", (doc_id,))
            self._drop_graph_of(cur, doc_id)
            self._documents_changed(cur)
        self._vectors_dropped()
        self._keywords_changed()

    def clear_document_graph(self, doc_id: str) -> None:
        """Forget what one document contributed to the hypergraph (its chunks and their vectors stay),
        so that rebuilding it adds nothing twice and keeps nothing of the old build."""
        with self._write() as cur:
            cur.execute(f"DELETE FROM {GRAPH_VECTORS} AND doc_id = ?", (doc_id,))
            self._drop_graph_of(cur, doc_id)
            self._graph_changed(cur)
        self._vectors_dropped()

    @staticmethod
    def _drop_graph_of(cur: Writer, doc_id: str) -> None:
        # Anchors of this document are refined again: edges they spread into other documents lose members.
        cur.execute(
            "UPDATE refine_state SET signature = '' WHERE anchor_id IN"
            " (SELECT item_id FROM provenance WHERE item_kind = 'entity' AND doc_id = ?)",
            (doc_id,),
        )
        cur.execute("DELETE FROM provenance WHERE doc_id = ?", (doc_id,))
        for table in _DOCUMENT_GRAPH_ROWS:
            cur.execute(f"DELETE FROM {table} WHERE doc_id = ?", (doc_id,))
        cur.execute(_UNSUPPORTED.format(table="hyperedges", kind="hyperedge", column="edge_id"))
        cur.execute(_UNSUPPORTED.format(table="entities", kind="entity", column="entity_id"))
        # Incidence and entity_concepts rows go with their entities and hyperedges (ON DELETE CASCADE).
        cur.execute(
            "DELETE FROM refine_state WHERE NOT EXISTS"
            " (SELECT 1 FROM entities e WHERE e.entity_id = refine_state.anchor_id)"
        )
        cur.execute(
            "DELETE FROM concepts WHERE NOT EXISTS"
            " (SELECT 1 FROM entity_concepts ec WHERE ec.concept_id = concepts.concept_id)"
        )

    # ------------------------------------------------------------------ chunks
    def _chunks(self, rows: Iterable[Sequence[Any]]) -> list[Chunk]:
        return [row_chunk(self.dialect, r) for r in rows]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        found = {c.chunk_id: c for c in self._chunks(self._in_query(CHUNK_SELECT + " WHERE chunk_id {ids}", chunk_ids))}
        return [found[i] for i in chunk_ids if i in found]

    def iter_chunks(self, doc_id: str | None = None) -> Iterable[Chunk]:
        if doc_id is None:
            return self._chunks(self._query(CHUNK_SELECT + " ORDER BY doc_id, page, ord"))
        return self._chunks(self._query(CHUNK_SELECT + " WHERE doc_id = ? ORDER BY page, ord", (doc_id,)))

    def page_chunk_texts(self, pages: Sequence[tuple[str, int]]) -> dict[tuple[str, int], list[tuple[str, str]]]:
        """The (chunk_id, text) of every chunk on each (doc_id, page), in reading order."""
        out: dict[tuple[str, int], list[tuple[str, str]]] = {}
        table = self.dialect.page_table()
        if table is not None and pages:
            for doc, page, chunk_id, text in self._query(
                f"SELECT c.doc_id, c.page, c.chunk_id, c.text FROM ({table}) p"
                " JOIN chunks c ON c.doc_id = p.doc_id AND c.page = p.page ORDER BY c.doc_id, c.page, c.ord",
                [json.dumps(sorted(set(pages)))],
            ):
                out.setdefault((doc, int(page)), []).append((chunk_id, text))
            first = {doc: i for i, doc in enumerate(dict.fromkeys(doc for doc, _ in pages))}
            return dict(sorted(out.items(), key=lambda kv: (first[kv[0][0]], kv[0][1])))  # as below, by document
        by_doc: dict[str, set[int]] = {}
        for doc, page in pages:
            by_doc.setdefault(doc, set()).add(page)
        for doc, numbers in by_doc.items():
            rows = self._in_query(
                "SELECT page, chunk_id, text FROM chunks WHERE doc_id = ? AND page {ids} ORDER BY page, ord",
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
            return self._count("SELECT COUNT(*) FROM chunks")
        return int(self._query("SELECT COUNT(*) FROM chunks WHERE doc_id = ?", (doc_id,))[0][0])

    def missing_vectors(self, space: str, doc_id: str) -> list[Chunk]:
        rows = self._query(
            CHUNK_SELECT + " c WHERE c.doc_id = ? AND NOT EXISTS (SELECT 1 FROM vectors v"
            " WHERE v.space = ? AND v.doc_id = ? AND v.item_id = c.chunk_id) ORDER BY c.page, c.ord",
            (doc_id, space, doc_id),
        )
        return self._chunks(rows)
