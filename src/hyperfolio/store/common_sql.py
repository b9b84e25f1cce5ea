"""Statements both backends run as they are (written with `?`; PostgreSQL's take `%s` in its place)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperfolio.model import Decision, DocumentInfo, Page
from hyperfolio.store.base import (
    CHUNK_SPACE,
    CONCEPT_SPACE,
    ENTITY_SPACE,
    HYPEREDGE_SPACE,
    RECONCILE_COUNTS,
    RELATION_SPACE,
    STAGE_READY,
    THEME_SPACE,
)
from hyperfolio.store.integrity import DEFAULT_MIN_MEMBERS, MIN_MEMBERS, Dangling, SqlCheck

# Take a free or lapsed claim (or one whose holder is known dead), renew one's own; a live claim of
# another owner stays. Parameters: key, owner, expiry, now, the dead holder ('' for none).
CLAIM = (
    "INSERT INTO claims (key, owner, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE"
    " SET owner = excluded.owner, expires_at = excluded.expires_at"
    " WHERE claims.owner = excluded.owner OR claims.expires_at < ? OR claims.owner = ?"
)
# The live claims among some keys (content hashes): who is indexing those documents now. Parameters: now.
LIVE_CLAIMS = "SELECT key, owner FROM claims WHERE expires_at >= ? AND key IN ({marks})"
CLAIM_TABLE = (
    "-- Who is indexing a document (by content hash) until when: workers sharing a collection take turns.\n"
    "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at {time} NOT NULL);\n"
)

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

# An entity keeps the concept it was first given (entity_concepts is keyed by entity), yet each document's
# concept namer reads that document alone and may offer another. So the link is written first, and a concept
# row only where its link holds: the concept a later document offered leaves no concept without entities.
# Parameters: (entity, concept) for the link; (name, entity, concept) for the concept.
ENTITY_CONCEPT_INSERT = "INSERT INTO entity_concepts(entity_id, concept_id) VALUES (?, ?) ON CONFLICT DO NOTHING"
CONCEPT_INSERT = (
    "INSERT INTO concepts(concept_id, name) SELECT ec.concept_id, ? FROM entity_concepts ec"
    " WHERE ec.entity_id = ? AND ec.concept_id = ? ON CONFLICT DO NOTHING"
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


def counts_of(counts: dict[str, Any]) -> dict[str, int]:
    """Reconciliation counts in RECONCILE_COUNTS order, any others after them by name."""
    known = [key for key in RECONCILE_COUNTS if key in counts]
    return {key: int(counts[key]) for key in [*known, *sorted(set(counts) - set(known))]}


def decision_row(d: Decision, evidence: Any, now: float) -> tuple:
    """A decision as conflict_log's row (evidence as the backend stores a list; a given time kept)."""
    return (d.doc_id, d.kind, d.decision, d.fact, d.other, d.reason, evidence, d.decided_by, d.created_at or now)


def pg(statement: str) -> str:
    """A statement with PostgreSQL's placeholders."""
    return statement.replace("?", "%s")


# --------------------------------------------------------------------------- integrity (store/integrity.py)
# Written without parameters, so both backends run them as they are.


def _missing(table: str, column: str, value: str) -> str:
    return f"NOT EXISTS (SELECT 1 FROM {table} WHERE {column} = {value})"


_NO_DOC = "NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = {}.doc_id)"
_NO_CHUNK = _missing("chunks c", "c.chunk_id", "{}.chunk_id")
_NO_ENTITY = _missing("entities e", "e.entity_id", "{}")
_NO_EDGE = _missing("hyperedges h", "h.edge_id", "{}")
_NO_CONCEPT = _missing("concepts c", "c.concept_id", "{}")
_UNSUPPORTED = "NOT EXISTS (SELECT 1 FROM provenance p WHERE p.item_kind = '{kind}' AND p.item_id = {id})"
# A graph item's vector is keyed "<item>|<doc_id>" (base.scoped_key); the item is what precedes "|<doc_id>".
_VECTOR_ITEM = (
    "CASE WHEN length(v.item_id) > length(v.doc_id)"
    " THEN substr(v.item_id, 1, length(v.item_id) - length(v.doc_id) - 1) ELSE '' END"
)
_MIN_MEMBERS = (
    "CASE h.level "
    + " ".join(f"WHEN '{level}' THEN {int(n)}" for level, n in sorted(MIN_MEMBERS.items()))
    + f" ELSE {int(DEFAULT_MIN_MEMBERS)} END"
)
# Hyperedges with fewer members (entities that exist) than their level is written with.
_UNDERSIZED = (
    "SELECT h.edge_id FROM hyperedges h WHERE (SELECT COUNT(DISTINCT i.entity_id) FROM incidence i"
    f" JOIN entities e ON e.entity_id = i.entity_id WHERE i.edge_id = h.edge_id) < {_MIN_MEMBERS}"
)
_SCOPED = (
    (ENTITY_SPACE, _NO_ENTITY),
    (HYPEREDGE_SPACE, _NO_EDGE),
    (THEME_SPACE, _NO_EDGE),
    (CONCEPT_SPACE, _NO_CONCEPT),
)
_VECTOR_DANGLES = " OR ".join(
    [
        _NO_DOC.format("v"),
        f"(v.space = '{CHUNK_SPACE}' AND NOT EXISTS"
        " (SELECT 1 FROM chunks c WHERE c.chunk_id = v.item_id AND c.doc_id = v.doc_id))",
        *(f"(v.space = '{space}' AND {test.format(_VECTOR_ITEM)})" for space, test in _SCOPED),
        f"(v.space = '{RELATION_SPACE}' AND NOT EXISTS (SELECT 1 FROM concept_edges ce"
        f" WHERE ce.relation = {_VECTOR_ITEM} AND ce.doc_id = v.doc_id))",
    ]
)
_DOCUMENT_RECORDS = ("doc_status", "stage_times", "conflict_log", "reconcile_stats", "model_builds")

# The checks both backends run, in store/integrity.KINDS order (the keyword index is each backend's own).
INTEGRITY_CHECKS = (
    SqlCheck("orphan_pages", (Dangling("pages AS p", "p.doc_id || ' page ' || p.number", _NO_DOC.format("p")),)),
    SqlCheck("orphan_chunks", (Dangling("chunks AS k", "k.chunk_id", _NO_DOC.format("k")),)),
    SqlCheck(
        "provenance_missing_chunk",
        (Dangling("provenance AS p", "p.item_id || ' -> ' || p.chunk_id", _NO_CHUNK.format("p")),),
    ),
    SqlCheck(
        "provenance_missing_item",
        (
            Dangling(
                "provenance AS p",
                "p.item_id || ' -> ' || p.chunk_id",
                f"(p.item_kind = 'entity' AND {_NO_ENTITY.format('p.item_id')})"
                f" OR (p.item_kind = 'hyperedge' AND {_NO_EDGE.format('p.item_id')})",
            ),
        ),
    ),
    SqlCheck(
        "unsupported_items",
        (
            Dangling("hyperedges AS x", "x.edge_id", _UNSUPPORTED.format(kind="hyperedge", id="x.edge_id")),
            Dangling("entities AS x", "x.entity_id", _UNSUPPORTED.format(kind="entity", id="x.entity_id")),
        ),
    ),
    SqlCheck(
        "orphan_incidence",
        (
            Dangling(
                "incidence AS i",
                "i.edge_id || ' -> ' || i.entity_id",
                f"{_NO_EDGE.format('i.edge_id')} OR {_NO_ENTITY.format('i.entity_id')}",
            ),
        ),
    ),
    SqlCheck(
        "orphan_facts",
        (
            Dangling(
                "facts AS f",
                "f.edge_id",
                " OR ".join(
                    [_NO_EDGE.format("f.edge_id"), _NO_ENTITY.format("f.head_id"), _NO_ENTITY.format("f.tail_id")]
                ),
            ),
        ),
    ),
    SqlCheck(
        "too_few_members",
        (Dangling("hyperedges AS x", "x.edge_id || ' (' || x.level || ')'", f"x.edge_id IN ({_UNDERSIZED})"),),
        repair=(
            f"DELETE FROM provenance WHERE item_kind = 'hyperedge' AND item_id IN ({_UNDERSIZED})",
            f"DELETE FROM facts WHERE edge_id IN ({_UNDERSIZED})",
            f"DELETE FROM incidence WHERE edge_id IN ({_UNDERSIZED})",
            f"DELETE FROM hyperedges WHERE edge_id IN ({_UNDERSIZED})",
        ),
    ),
    SqlCheck(
        "orphan_entity_concepts",
        (
            Dangling(
                "entity_concepts AS ec",
                "ec.entity_id || ' -> ' || ec.concept_id",
                f"{_NO_ENTITY.format('ec.entity_id')} OR {_NO_CONCEPT.format('ec.concept_id')}",
            ),
        ),
    ),
    SqlCheck(
        "orphan_concepts",
        (
            Dangling(
                "concepts AS x",
                "x.concept_id",
                "NOT EXISTS (SELECT 1 FROM entity_concepts ec WHERE ec.concept_id = x.concept_id)",
            ),
        ),
    ),
    SqlCheck(
        "orphan_concept_evidence",
        (
            Dangling(
                "concept_evidence AS ev",
                "ev.concept_id || ' -> ' || ev.chunk_id",
                f"{_NO_CHUNK.format('ev')} OR {_NO_CONCEPT.format('ev.concept_id')}",
            ),
        ),
    ),
    SqlCheck(
        "orphan_concept_edges",
        (
            Dangling(
                "concept_edges AS ce",
                "ce.head_id || ' ' || ce.relation || ' ' || ce.tail_id || ' in ' || ce.doc_id",
                " OR ".join([_NO_CONCEPT.format("ce.head_id"), _NO_CONCEPT.format("ce.tail_id"), _NO_DOC.format("ce")]),
            ),
        ),
    ),
    SqlCheck(
        "orphan_records",
        (
            *(Dangling(f"{table} AS r", f"'{table} ' || r.doc_id", _NO_DOC.format("r")) for table in _DOCUMENT_RECORDS),
            Dangling("refine_state AS r", "'refine_state ' || r.anchor_id", _NO_ENTITY.format("r.anchor_id")),
        ),
    ),
    SqlCheck("orphan_vectors", (Dangling("vectors AS v", "v.space || ' ' || v.item_id", _VECTOR_DANGLES),)),
    SqlCheck(
        "chunks_without_vector",
        (
            Dangling(
                "chunks AS k",
                "k.chunk_id",
                f"k.doc_id IN (SELECT s.doc_id FROM doc_status s WHERE s.stage = '{STAGE_READY}') AND NOT EXISTS"
                f" (SELECT 1 FROM vectors v WHERE v.space = '{CHUNK_SPACE}' AND v.item_id = k.chunk_id"
                " AND v.doc_id = k.doc_id)",
            ),
        ),
        repair=(),  # embedding needs the collection's embedder: Collection.check does it
    ),
)


def keyword_checks(fts: str, missing: str) -> tuple[SqlCheck, SqlCheck]:
    """A backend's keyword-index checks: its FTS table (`fts`) and how a chunk is missing from it (`missing`,
    a condition on chunks AS k: each backend's table is searched best its own way). Repaired by a rebuild."""
    extra = "NOT EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = f.chunk_id AND c.doc_id = f.doc_id)"
    twice = f"f.chunk_id IN (SELECT t.chunk_id FROM {fts} t GROUP BY t.chunk_id HAVING COUNT(*) > 1)"
    return (
        SqlCheck("keyword_missing", (Dangling("chunks AS k", "k.chunk_id", missing),), repair=()),
        SqlCheck("keyword_extra", (Dangling(f"{fts} AS f", "f.chunk_id", f"{extra} OR {twice}"),), repair=()),
    )
