"""Tables of the holistic view and the concept layer (HVM-GraphRAG 3.1), mixed into the SQLite store.

Facts are `fact` hyperedges; `facts` adds their head, relation and tail. Every entity has one
concept (`entity_concepts`); `concept_edges` are the schemas (concept, relation, concept) that
facts instantiate, per document; `concept_evidence` is the concept -> chunk index, the union of
the evidence of the concept's entities. Both derived tables are recomputed for the concepts a
change touches. `conflict_log` records every reconciliation decision.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from hyperfolio.model import Decision, FactRow
from hyperfolio.phrases import normalize_name
from hyperfolio.store.base import RECONCILE_COUNTS
from hyperfolio.store.common_sql import CONCEPT_INSERT, ENTITY_CONCEPT_INSERT, counts_of, decision_row

CONCEPT_SCHEMA = """
CREATE TABLE IF NOT EXISTS facts (
    edge_id TEXT PRIMARY KEY REFERENCES hyperedges(edge_id) ON DELETE CASCADE,
    head_id TEXT NOT NULL,
    relation TEXT NOT NULL,
    tail_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_head ON facts(head_id);
CREATE INDEX IF NOT EXISTS facts_tail ON facts(tail_id);
CREATE TABLE IF NOT EXISTS concepts (concept_id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entity_concepts (
    entity_id TEXT PRIMARY KEY REFERENCES entities(entity_id) ON DELETE CASCADE,
    concept_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_concepts_concept ON entity_concepts(concept_id);
CREATE TABLE IF NOT EXISTS concept_edges (
    head_id TEXT NOT NULL,
    relation TEXT NOT NULL,
    tail_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    support INTEGER NOT NULL,
    PRIMARY KEY (head_id, relation, tail_id, doc_id)
);
CREATE INDEX IF NOT EXISTS concept_edges_tail ON concept_edges(tail_id);
CREATE INDEX IF NOT EXISTS concept_edges_doc ON concept_edges(doc_id);
CREATE TABLE IF NOT EXISTS concept_evidence (
    concept_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    entities INTEGER NOT NULL,
    PRIMARY KEY (concept_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS concept_evidence_doc ON concept_evidence(doc_id, concept_id);
CREATE TABLE IF NOT EXISTS conflict_log (
    id INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    decision TEXT NOT NULL,
    fact TEXT NOT NULL,
    other TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT '[]',
    decided_by TEXT NOT NULL DEFAULT 'offline',
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS conflict_log_doc ON conflict_log(doc_id);
CREATE TABLE IF NOT EXISTS reconcile_stats (doc_id TEXT PRIMARY KEY, counts TEXT NOT NULL);
"""

LAYER_TABLES = (
    "facts",
    "entity_concepts",
    "concepts",
    "concept_edges",
    "concept_evidence",
    "conflict_log",
    "reconcile_stats",
)
# One document's provenance rows, found by their document: left to choose, SQLite walks every row of the
# item kind (all documents') for a query that names both, which grows with the collection.
DOC_PROVENANCE = "provenance p INDEXED BY provenance_doc"


def concept_id(name: str) -> str:
    return "C" + hashlib.sha1(normalize_name(name).encode()).hexdigest()[:14]


class ConceptTables:
    """Methods over the concept-layer tables; the host class provides the connection helpers."""

    # Provided by SQLiteStore, the host class.
    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        raise NotImplementedError

    def _in_query(self, sql: str, ids: Sequence[Any], extra: Sequence[Any] = ()) -> list[tuple]:
        raise NotImplementedError

    # ------------------------------------------------------------------ writing
    @staticmethod
    def _write_layer_rows(db: sqlite3.Connection, concepts: Sequence[tuple[str, str]], facts: Sequence[tuple]) -> None:
        """Within write_graph's transaction: (entity_id, concept name) pairs and (edge, head, relation, tail)."""
        named = [(eid, concept_id(name), name) for eid, name in concepts if name]
        db.executemany(ENTITY_CONCEPT_INSERT, [(e, c) for e, c, _ in named])
        db.executemany(CONCEPT_INSERT, [(n, e, c) for e, c, n in named])
        db.executemany("INSERT OR IGNORE INTO facts(edge_id, head_id, relation, tail_id) VALUES (?, ?, ?, ?)", facts)

    def facts_about(self, entity_ids: Sequence[str]) -> list[FactRow]:
        """Accepted facts whose head is one of `entity_ids`, with their evidence chunks."""
        rows = self._in_query(
            "SELECT f.edge_id, f.head_id, f.relation, f.tail_id, h.description FROM facts f"
            " JOIN hyperedges h ON h.edge_id = f.edge_id WHERE f.head_id IN ({marks})",
            entity_ids,
        )
        facts = {r[0]: FactRow(*r) for r in rows}
        for edge, chunk in self._in_query(
            "SELECT item_id, chunk_id FROM provenance WHERE item_kind = 'hyperedge' AND item_id IN ({marks})",
            list(facts),
        ):
            facts[edge].chunks.append(chunk)
        return list(facts.values())

    def document_facts(self, doc_id: str) -> list[FactRow]:
        rows = self._query(
            "SELECT DISTINCT f.edge_id, f.head_id, f.relation, f.tail_id, h.description FROM facts f"
            " JOIN hyperedges h ON h.edge_id = f.edge_id JOIN provenance p ON p.item_kind = 'hyperedge'"
            " AND p.item_id = f.edge_id WHERE p.doc_id = ?",
            (doc_id,),
        )
        return [FactRow(*r) for r in rows]

    def relabel_fact(self, edge_id: str, relation: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE facts SET relation = ? WHERE edge_id = ?", (relation, edge_id))

    def remove_evidence_links(self, links: Sequence[tuple[str, str]]) -> None:
        """Forget that entity e is evidenced in chunk b, for (e, b) pairs only dropped facts supported."""
        with self.transaction() as db:
            db.executemany("DELETE FROM provenance WHERE item_kind = 'entity' AND item_id = ? AND chunk_id = ?", links)

    def log_decisions(self, decisions: Sequence[Decision]) -> None:
        now = time.time()
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO conflict_log(doc_id, kind, decision, fact, other, reason, evidence, decided_by,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [decision_row(d, json.dumps(d.evidence), now) for d in decisions],
            )

    def save_reconcile_counts(self, doc_id: str, counts: dict[str, int]) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO reconcile_stats(doc_id, counts) VALUES (?, ?)", (doc_id, json.dumps(counts))
            )

    def reconcile_counts(self, doc_id: str) -> dict[str, int]:
        rows = self._query("SELECT counts FROM reconcile_stats WHERE doc_id = ?", (doc_id,))
        return counts_of(json.loads(rows[0][0])) if rows else {}

    def reconcile_totals(self) -> dict[str, int]:
        totals = dict.fromkeys(RECONCILE_COUNTS, 0)
        for (counts,) in self._query("SELECT counts FROM reconcile_stats"):
            for key, value in json.loads(counts).items():
                totals[key] = totals.get(key, 0) + int(value)
        return totals

    def dropped_in(self, chunk_ids: Sequence[str]) -> list[Decision]:
        """Dropped facts that were stated in any of these chunks."""
        wanted = set(chunk_ids)
        docs = sorted({c.rsplit(":", 2)[0] for c in wanted})
        rows = self._in_query(
            "SELECT doc_id, kind, decision, fact, other, reason, evidence, decided_by, created_at FROM conflict_log"
            " WHERE decision = 'dropped' AND doc_id IN ({marks})",
            docs,
        )
        found = [Decision(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7], r[8]) for r in rows]
        return [d for d in found if wanted & set(d.evidence)]

    def decisions(self, doc_id: str | None = None) -> list[Decision]:
        sql = "SELECT doc_id, kind, decision, fact, other, reason, evidence, decided_by, created_at FROM conflict_log"
        rows = self._query(
            sql + (" WHERE doc_id = ? ORDER BY id" if doc_id else " ORDER BY id"), (doc_id,) if doc_id else ()
        )
        return [Decision(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7], r[8]) for r in rows]

    # ------------------------------------------------------------------ the concept layer
    def concepts_of(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """entity id -> concept id."""
        return dict(
            self._in_query("SELECT entity_id, concept_id FROM entity_concepts WHERE entity_id IN ({marks})", entity_ids)
        )

    def document_concepts(self, doc_id: str) -> list[str]:
        rows = self._query(
            f"SELECT ec.concept_id FROM {DOC_PROVENANCE} JOIN entity_concepts ec ON ec.entity_id = p.item_id"
            " WHERE p.item_kind = 'entity' AND p.doc_id = ? GROUP BY ec.concept_id ORDER BY min(p.item_id)",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def rebuild_concepts(self, concept_ids: Sequence[str], doc_id: str | None = None) -> None:
        """Recompute the concept edges and the concept -> chunk index of these concepts; with `doc_id`, only
        their rows of that document (what adding it changes: no other document's rows)."""
        ids = list(dict.fromkeys(concept_ids))
        entity_rows, fact_rows = "entity_concepts ec JOIN provenance p", "facts f JOIN provenance p"
        scope, mine, by_doc = "", "", []
        if doc_id:  # read from the document's provenance (not every member of a concept all documents share)
            entity_rows = f"{DOC_PROVENANCE} CROSS JOIN entity_concepts ec"
            fact_rows = f"{DOC_PROVENANCE} CROSS JOIN facts f"
            scope, mine, by_doc = " AND p.doc_id = ?", " AND doc_id = ?", [doc_id]
        with self.transaction() as db:
            for start in range(0, len(ids), 400):
                part = ids[start : start + 400]
                marks = ",".join("?" * len(part))
                db.execute(f"DELETE FROM concept_evidence WHERE concept_id IN ({marks}){mine}", part + by_doc)
                db.execute(
                    "INSERT INTO concept_evidence(concept_id, chunk_id, doc_id, page, entities)"
                    f" SELECT ec.concept_id, p.chunk_id, p.doc_id, p.page, COUNT(*) FROM {entity_rows}"
                    " ON p.item_kind = 'entity' AND p.item_id = ec.entity_id"
                    f" WHERE ec.concept_id IN ({marks}){scope} GROUP BY ec.concept_id, p.chunk_id",
                    part + by_doc,
                )
                db.execute(
                    f"DELETE FROM concept_edges WHERE (head_id IN ({marks}) OR tail_id IN ({marks})){mine}",
                    part + part + by_doc,
                )
                db.execute(
                    "INSERT OR REPLACE INTO concept_edges(head_id, relation, tail_id, doc_id, support)"
                    " SELECT hc.concept_id, f.relation, tc.concept_id, p.doc_id, COUNT(DISTINCT f.edge_id)"
                    f" FROM {fact_rows} ON p.item_kind = 'hyperedge' AND p.item_id = f.edge_id"
                    " JOIN entity_concepts hc ON hc.entity_id = f.head_id"
                    " JOIN entity_concepts tc ON tc.entity_id = f.tail_id"
                    f" WHERE (hc.concept_id IN ({marks}) OR tc.concept_id IN ({marks})){scope}"
                    " GROUP BY hc.concept_id, f.relation, tc.concept_id, p.doc_id",
                    part + part + by_doc,
                )
            # Only these concepts: a sweep of the whole tables per document would grow with the collection.
            for start in range(0, len(ids), 400):
                part = ids[start : start + 400]
                marks = ",".join("?" * len(part))
                db.execute(
                    f"DELETE FROM entity_concepts AS ec WHERE ec.concept_id IN ({marks})"
                    " AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.entity_id = ec.entity_id)",
                    part,
                )
                db.execute(
                    f"DELETE FROM concepts AS c WHERE c.concept_id IN ({marks})"
                    " AND NOT EXISTS (SELECT 1 FROM entity_concepts ec WHERE ec.concept_id = c.concept_id)"
                    " AND NOT EXISTS (SELECT 1 FROM concept_evidence ce WHERE ce.concept_id = c.concept_id)",
                    part,
                )

    def concept_names(self, concept_ids: Sequence[str]) -> dict[str, str]:
        return dict(self._in_query("SELECT concept_id, name FROM concepts WHERE concept_id IN ({marks})", concept_ids))

    def concepts_in(self, doc_id: str) -> list[tuple[str, str]]:
        """(concept id, name) of the concepts with evidence in a document."""
        return self._query(
            "SELECT c.concept_id, c.name FROM concepts c WHERE c.concept_id IN"
            " (SELECT DISTINCT concept_id FROM concept_evidence WHERE doc_id = ?)",
            (doc_id,),
        )

    def concept_members_in(self, doc_id: str, concept_ids: Sequence[str], limit: int) -> dict[str, list[str]]:
        """Names of each concept's entities in a document, the best evidenced first."""
        rows = self._in_query(
            "SELECT ec.concept_id, e.name, COUNT(*) AS n FROM entity_concepts ec JOIN entities e"
            " ON e.entity_id = ec.entity_id JOIN provenance p ON p.item_kind = 'entity' AND p.item_id = e.entity_id"
            " AND p.doc_id = ? WHERE ec.concept_id IN ({marks}) GROUP BY ec.concept_id, e.entity_id"
            " ORDER BY ec.concept_id, n DESC, e.name",
            concept_ids,
            [doc_id],
        )
        out: dict[str, list[str]] = {}
        for concept, name, _ in rows:
            names = out.setdefault(concept, [])
            if len(names) < limit:
                names.append(name)
        return out

    def relations_in(self, doc_id: str) -> list[str]:
        return [r[0] for r in self._query("SELECT DISTINCT relation FROM concept_edges WHERE doc_id = ?", (doc_id,))]

    def concept_edges_for(
        self, relations: Sequence[str], doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str, str, int]]:
        """(head concept, relation, tail concept, support) for these relations, within the documents."""
        sql = "SELECT head_id, relation, tail_id, SUM(support) FROM concept_edges WHERE relation IN ({marks})"
        extra: list[Any] = []
        if doc_ids is not None:
            sql = sql.replace("WHERE", f"WHERE doc_id IN ({','.join('?' * len(doc_ids))}) AND", 1)
            extra = list(doc_ids)
        return self._in_query(sql + " GROUP BY head_id, relation, tail_id", relations, extra)

    def concept_chunk_pairs(
        self, concept_ids: Sequence[str], doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        """(concept, chunk) rows of the concept -> chunk index for these concepts, within the documents."""
        sql = "SELECT DISTINCT concept_id, chunk_id FROM concept_evidence WHERE concept_id IN ({marks})"
        extra: list[Any] = []
        if doc_ids is not None:
            sql = sql.replace("WHERE", f"WHERE doc_id IN ({','.join('?' * len(doc_ids))}) AND", 1)
            extra = list(doc_ids)
        return self._in_query(sql, concept_ids, extra)

    def layer_stats(self) -> dict[str, Any]:
        decided = dict(self._query("SELECT decision, COUNT(*) FROM conflict_log GROUP BY decision"))
        return {
            "facts": self._query("SELECT COUNT(*) FROM facts")[0][0],
            "concepts": self._query("SELECT COUNT(*) FROM concepts")[0][0],
            "concept_edges": self._query("SELECT COUNT(DISTINCT head_id || relation || tail_id) FROM concept_edges")[0][
                0
            ],
            "conflict_decisions": decided,
            "reconciliation": self.reconcile_totals(),
        }
