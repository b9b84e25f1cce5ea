"""The integrity checks both backends run (store/integrity.py): written without parameters, run as they are."""

from __future__ import annotations

from hyperfolio.store.base import (
    CHUNK_SPACE,
    CONCEPT_SPACE,
    ENTITY_SPACE,
    HYPEREDGE_SPACE,
    RELATION_SPACE,
    STAGE_READY,
    THEME_SPACE,
)
from hyperfolio.store.integrity import DEFAULT_MIN_MEMBERS, MIN_MEMBERS, Dangling, SqlCheck


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
