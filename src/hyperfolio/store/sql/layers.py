"""Tables of the holistic view and the concept layer (HVM-GraphRAG 3.1), written once for both backends.

Facts are `fact` hyperedges; `facts` adds their head, relation and tail. Every entity has one
concept (`entity_concepts`); `concept_edges` are the schemas (concept, relation, concept) that
facts instantiate, per document; `concept_evidence` is the concept -> chunk index, the union of
the evidence of the concept's entities. Both derived tables are recomputed for the concepts a
change touches. `conflict_log` records every reconciliation decision.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hyperfolio.model import Decision, FactRow
from hyperfolio.phrases import normalize_name
from hyperfolio.store.base import RECONCILE_COUNTS, STAGE_READY
from hyperfolio.store.sql.host import SqlHost, Writer

LAYER_TABLES = (
    "facts",
    "entity_concepts",
    "concepts",
    "concept_edges",
    "concept_evidence",
    "conflict_log",
    "reconcile_stats",
)
# An entity keeps the concept it was first given (entity_concepts is keyed by entity), yet each document's
# concept namer reads that document alone and may offer another. So the link is written first, and a concept
# row only where its link holds: the concept a later document offered leaves no concept without entities.
# Parameters: (entity, concept) for the link; (name, entity, concept) for the concept.
ENTITY_CONCEPT_INSERT = "INSERT INTO entity_concepts(entity_id, concept_id) VALUES (?, ?) ON CONFLICT DO NOTHING"
CONCEPT_INSERT = (
    "INSERT INTO concepts(concept_id, name) SELECT ec.concept_id, ? FROM entity_concepts ec"
    " WHERE ec.entity_id = ? AND ec.concept_id = ? ON CONFLICT DO NOTHING"
)
DECISION_SELECT = (
    "SELECT doc_id, kind, decision, fact, other, reason, evidence, decided_by, created_at FROM conflict_log"
)
CONCEPT_BATCH = 400  # concept ids per statement in SQLite (some name them twice)


def concept_id(name: str) -> str:
    return "C" + hashlib.sha1(normalize_name(name).encode()).hexdigest()[:14]


def counts_of(counts: dict[str, Any]) -> dict[str, int]:
    """Reconciliation counts in RECONCILE_COUNTS order, any others after them by name."""
    known = [key for key in RECONCILE_COUNTS if key in counts]
    return {key: int(counts[key]) for key in [*known, *sorted(set(counts) - set(known))]}


class LayerTables(SqlHost):
    """Facts, decisions and the concept layer."""

    # ------------------------------------------------------------------ writing
    def _write_layer_rows(self, cur: Writer, concepts: Sequence[tuple[str, str]], facts: Sequence[tuple]) -> None:
        """Within write_graph's transaction: (entity_id, concept name) pairs and (edge, head, relation, tail)."""
        named = [(eid, concept_id(name), name) for eid, name in concepts if name]
        cur.executemany(ENTITY_CONCEPT_INSERT, [(e, c) for e, c, _ in named])
        cur.executemany(CONCEPT_INSERT, [(n, e, c) for e, c, n in named])
        cur.executemany(
            self.dialect.insert_ignore("facts(edge_id, head_id, relation, tail_id)", "VALUES (?, ?, ?, ?)"), facts
        )

    def _decision(self, r: Sequence[Any]) -> Decision:
        return Decision(r[0], r[1], r[2], r[3], r[4], r[5], self.dialect.from_strings(r[6]), r[7], r[8])

    def facts_about(self, entity_ids: Sequence[str]) -> list[FactRow]:
        """Accepted facts whose head is one of `entity_ids`, with their evidence chunks."""
        d = self.dialect
        rows = self._in_query(
            "SELECT f.edge_id, f.head_id, f.relation, f.tail_id, h.description FROM facts f"
            " JOIN hyperedges h ON h.edge_id = f.edge_id WHERE f.head_id {ids}"
            + d.stated(" ORDER BY f.head_id, f.seq"),
            entity_ids,
        )
        facts = {r[0]: FactRow(*r) for r in rows}
        for edge, chunk in self._in_query(
            "SELECT item_id, chunk_id FROM provenance WHERE item_kind = 'hyperedge' AND item_id {ids}"
            + d.stated(" ORDER BY item_id, chunk_id"),
            list(facts),
        ):
            facts[edge].chunks.append(chunk)
        return list(facts.values())

    def document_facts(self, doc_id: str) -> list[FactRow]:
        rows = self._query(
            "SELECT DISTINCT f.edge_id, f.head_id, f.relation, f.tail_id, h.description FROM facts f"
            " JOIN hyperedges h ON h.edge_id = f.edge_id JOIN provenance p ON p.item_kind = 'hyperedge'"
            " AND p.item_id = f.edge_id WHERE p.doc_id = ?" + self.dialect.stated(" ORDER BY f.edge_id"),
            (doc_id,),
        )
        return [FactRow(*r) for r in rows]

    def relabel_fact(self, edge_id: str, relation: str) -> None:
        with self._write() as cur:
            cur.execute("UPDATE facts SET relation = ? WHERE edge_id = ?", (relation, edge_id))

    def remove_evidence_links(self, links: Sequence[tuple[str, str]]) -> None:
        """Forget that entity e is evidenced in chunk b, for (e, b) pairs only dropped facts supported."""
        with self._write() as cur:
            cur.executemany("DELETE FROM provenance WHERE item_kind = 'entity' AND item_id = ? AND chunk_id = ?", links)
            self._graph_changed(cur)

    def log_decisions(self, decisions: Sequence[Decision]) -> None:
        now, strings = time.time(), self.dialect.strings
        with self._write() as cur:
            cur.executemany(
                "INSERT INTO conflict_log(doc_id, kind, decision, fact, other, reason, evidence, decided_by,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?[], ?, ?)",
                [
                    (
                        d.doc_id,
                        d.kind,
                        d.decision,
                        d.fact,
                        d.other,
                        d.reason,
                        strings(d.evidence),
                        d.decided_by,
                        d.created_at or now,
                    )
                    for d in decisions
                ],
            )

    def save_reconcile_counts(self, doc_id: str, counts: dict[str, int]) -> None:
        d = self.dialect
        with self._write() as cur:
            cur.execute(
                d.upsert("reconcile_stats(doc_id, counts)", "VALUES (?, ?)", ("doc_id",)), (doc_id, d.json(counts))
            )

    def reconcile_counts(self, doc_id: str) -> dict[str, int]:
        rows = self._query("SELECT counts FROM reconcile_stats WHERE doc_id = ?", (doc_id,))
        return counts_of(dict(self.dialect.from_json(rows[0][0]))) if rows else {}

    def reconcile_totals(self) -> dict[str, int]:
        totals = dict.fromkeys(RECONCILE_COUNTS, 0)
        for (counts,) in self._query("SELECT counts FROM reconcile_stats" + self.dialect.stated(" ORDER BY doc_id")):
            for key, value in self.dialect.from_json(counts).items():
                totals[key] = totals.get(key, 0) + int(value)
        return totals

    def dropped_in(self, chunk_ids: Sequence[str]) -> list[Decision]:
        """Dropped facts that were stated in any of these chunks."""
        wanted = set(chunk_ids)
        docs = sorted({c.rsplit(":", 2)[0] for c in wanted})
        rows = self._in_query(
            DECISION_SELECT
            + " WHERE decision = 'dropped' AND doc_id {ids}"
            + self.dialect.stated(" ORDER BY doc_id, id"),
            docs,
        )
        return [d for d in map(self._decision, rows) if wanted & set(d.evidence)]

    def decisions(self, doc_id: str | None = None) -> list[Decision]:
        if doc_id:
            return [
                self._decision(r) for r in self._query(DECISION_SELECT + " WHERE doc_id = ? ORDER BY id", (doc_id,))
            ]
        return [self._decision(r) for r in self._query(DECISION_SELECT + " ORDER BY id")]

    # ------------------------------------------------------------------ the concept layer
    def concepts_of(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """entity id -> concept id."""
        return dict(
            self._in_query(
                "SELECT entity_id, concept_id FROM entity_concepts WHERE entity_id {ids}"
                + self.dialect.stated(" ORDER BY entity_id"),
                entity_ids,
            )
        )

    def document_concepts(self, doc_id: str) -> list[str]:
        rows = self._query(
            f"SELECT ec.concept_id FROM {self.dialect.doc_provenance}"
            " JOIN entity_concepts ec ON ec.entity_id = p.item_id WHERE p.item_kind = 'entity' AND p.doc_id = ?"
            " GROUP BY ec.concept_id ORDER BY min(p.item_id)",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def rebuild_concepts(self, concept_ids: Sequence[str], doc_id: str | None = None) -> None:
        """Recompute the concept edges and the concept -> chunk index of these concepts; with `doc_id`, only
        their rows of that document (what adding it changes: no other document's rows)."""
        d = self.dialect
        entity_rows, fact_rows = "entity_concepts ec JOIN provenance p", "facts f JOIN provenance p"
        scope, mine, by_doc = "", "", list[str]()
        if doc_id:  # read from the document's provenance (not every member of a concept all documents share)
            entity_rows = f"{d.doc_provenance} {d.forced_join} entity_concepts ec"
            fact_rows = f"{d.doc_provenance} {d.forced_join} facts f"
            scope, mine, by_doc = " AND p.doc_id = ?", " AND doc_id = ?", [doc_id]
        batches = [d.among(part) for part in d.batches(concept_ids, CONCEPT_BATCH)]
        with self._write() as cur:
            for test, part in batches:
                cur.execute(f"DELETE FROM concept_evidence WHERE concept_id {test}{mine}", part + by_doc)
                cur.execute(
                    "INSERT INTO concept_evidence(concept_id, chunk_id, doc_id, page, entities)"
                    f" SELECT ec.concept_id, p.chunk_id, p.doc_id, p.page, COUNT(*) FROM {entity_rows}"
                    " ON p.item_kind = 'entity' AND p.item_id = ec.entity_id"
                    f" WHERE ec.concept_id {test}{scope} GROUP BY ec.concept_id, p.chunk_id, p.doc_id, p.page"
                    + d.stated(" ORDER BY ec.concept_id, p.chunk_id"),
                    part + by_doc,
                )
                cur.execute(
                    f"DELETE FROM concept_edges WHERE (head_id {test} OR tail_id {test}){mine}", part + part + by_doc
                )
                cur.execute(
                    d.upsert(
                        "concept_edges(head_id, relation, tail_id, doc_id, support)",
                        "SELECT hc.concept_id, f.relation, tc.concept_id, p.doc_id, COUNT(DISTINCT f.edge_id)"
                        f" FROM {fact_rows} ON p.item_kind = 'hyperedge' AND p.item_id = f.edge_id"
                        " JOIN entity_concepts hc ON hc.entity_id = f.head_id"
                        " JOIN entity_concepts tc ON tc.entity_id = f.tail_id"
                        f" WHERE (hc.concept_id {test} OR tc.concept_id {test}){scope}"
                        " GROUP BY hc.concept_id, f.relation, tc.concept_id, p.doc_id"
                        + d.stated(" ORDER BY 1, 2, 3, 4"),
                        ("head_id", "relation", "tail_id", "doc_id"),
                    ),
                    part + part + by_doc,
                )
            # Only these concepts: a sweep of the whole tables per document would grow with the collection.
            for test, part in batches:
                cur.execute(
                    f"DELETE FROM entity_concepts AS ec WHERE ec.concept_id {test}"
                    " AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.entity_id = ec.entity_id)",
                    part,
                )
                cur.execute(
                    f"DELETE FROM concepts AS c WHERE c.concept_id {test}"
                    " AND NOT EXISTS (SELECT 1 FROM entity_concepts ec WHERE ec.concept_id = c.concept_id)"
                    " AND NOT EXISTS (SELECT 1 FROM concept_evidence ce WHERE ce.concept_id = c.concept_id)",
                    part,
                )

    def concept_names(self, concept_ids: Sequence[str]) -> dict[str, str]:
        order = self.dialect.stated(" ORDER BY concept_id")
        return dict(self._in_query("SELECT concept_id, name FROM concepts WHERE concept_id {ids}" + order, concept_ids))

    def concepts_in(self, doc_id: str) -> list[tuple[str, str]]:
        """(concept id, name) of the concepts with evidence in a document."""
        return self._query(
            "SELECT c.concept_id, c.name FROM concepts c WHERE c.concept_id IN"
            " (SELECT DISTINCT concept_id FROM concept_evidence WHERE doc_id = ?)"
            + self.dialect.stated(" ORDER BY c.concept_id"),
            (doc_id,),
        )

    def concept_members_in(self, doc_id: str, concept_ids: Sequence[str], limit: int) -> dict[str, list[str]]:
        """Names of each concept's entities in a document, the best evidenced first."""
        rows = self._in_query(
            "SELECT ec.concept_id, e.name, COUNT(*) AS n FROM entity_concepts ec JOIN entities e"
            " ON e.entity_id = ec.entity_id JOIN provenance p ON p.item_kind = 'entity' AND p.item_id = e.entity_id"
            " AND p.doc_id = ? WHERE ec.concept_id {ids} GROUP BY ec.concept_id, e.entity_id, e.name"
            " ORDER BY ec.concept_id, n DESC, e.name" + self.dialect.stated(", e.entity_id"),
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
        """The relations of a document's concept edges, in the order they were first written."""
        rows = self._query(
            f"SELECT relation FROM concept_edges WHERE doc_id = ? GROUP BY relation ORDER BY min({self.dialect.row})",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def concept_edges_for(
        self, relations: Sequence[str], doc_ids: Sequence[str] | None = None, touching: Sequence[str] | None = None
    ) -> list[tuple[str, str, str, int]]:
        """(head concept, relation, tail concept, support) for these relations, within the documents, and -
        given `touching` - only the edges with one of those concepts at an end (found by their ends: a
        general relation joins thousands of concepts)."""
        scope, extra = self._within(doc_ids)
        if touching is not None:
            heads, at_head = self.dialect.among(list(touching))
            tails, at_tail = self.dialect.among(list(touching))
            scope += f"(head_id {heads} OR tail_id {tails}) AND "
            extra = [*extra, *at_head, *at_tail]
        rows = self._in_query(
            f"SELECT head_id, relation, tail_id, SUM(support) FROM concept_edges WHERE {scope}relation {{ids}}"
            " GROUP BY head_id, relation, tail_id" + self.dialect.stated(" ORDER BY 1, 2, 3"),
            relations,
            extra,
        )
        return [(h, r, t, int(n)) for h, r, t, n in rows]

    def concept_chunk_pairs(
        self, concept_ids: Sequence[str], doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        """(concept, chunk) rows of the concept -> chunk index for these concepts, within the documents."""
        scope, extra = self._within(doc_ids)
        order = " ORDER BY concept_id, chunk_id" if doc_ids is None else " ORDER BY doc_id, concept_id, seq"
        return self._in_query(
            f"SELECT concept_id, chunk_id FROM concept_evidence WHERE {scope}concept_id {{ids}}"
            + self.dialect.stated(order),
            concept_ids,
            extra,
        )

    def concept_top_chunks(self, levels: Mapping[str, int], limit: int) -> list[tuple[str, int]]:
        """The first `limit` chunks of ready documents that evidence these concepts, each with the best
        (lowest) level among its concepts: by that level, then its first concept's id, then its own id - the
        order of a walk over the (concept, chunk) index in id order that keeps each chunk's first place."""
        if not levels or limit < 1:
            return []
        # Every document ready (the usual case): no row needs its document's stage looked up.
        ready, params = "", [json.dumps(dict(levels))]
        if self._query("SELECT 1 FROM doc_status WHERE stage <> ? LIMIT 1", [STAGE_READY]):
            ready, params = " JOIN doc_status s ON s.doc_id = e.doc_id AND s.stage = ?", [*params, STAGE_READY]
        rows = self._query(
            f"WITH levels AS ({self.dialect.levels()})"
            " SELECT e.chunk_id, MIN(l.level) FROM levels l"
            f" {self.dialect.forced_join} concept_evidence e ON e.concept_id = l.key{ready}"
            " GROUP BY e.chunk_id ORDER BY MIN(l.level), MIN(e.concept_id), e.chunk_id LIMIT ?",
            [*params, limit],
        )
        return [(chunk, int(level)) for chunk, level in rows]

    def _within(self, doc_ids: Sequence[str] | None) -> tuple[str, list[Any]]:
        """A condition (with its parameters) keeping the rows of these documents; all rows for None."""
        if doc_ids is None:
            return "", []
        test, params = self.dialect.among(list(doc_ids))
        return f"doc_id {test} AND ", params

    def layer_stats(self) -> dict[str, Any]:
        return {
            "facts": self._count("SELECT COUNT(*) FROM facts"),
            "concepts": self._count("SELECT COUNT(*) FROM concepts"),
            "concept_edges": self._count("SELECT COUNT(DISTINCT head_id || relation || tail_id) FROM concept_edges"),
            "conflict_decisions": self._counts(
                "SELECT decision, COUNT(*) FROM conflict_log GROUP BY decision" + self.dialect.stated(" ORDER BY 1")
            ),
            "reconciliation": self.reconcile_totals(),
        }
