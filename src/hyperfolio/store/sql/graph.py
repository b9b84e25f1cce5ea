"""The hypergraph's tables (entities, hyperedges, incidence, provenance, refinement state), written once."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from hyperfolio.model import VALUE_TYPES, Entity, Hyperedge
from hyperfolio.phrases import normalize_name
from hyperfolio.store.base import chunk_doc_page
from hyperfolio.store.sql.documents import GRAPH_VECTORS
from hyperfolio.store.sql.layers import LAYER_TABLES, LayerTables

ENTITY_UPSERT = (
    "INSERT INTO entities(entity_id, name, norm_name, type, description, modality, aliases)"
    " VALUES (?, ?, ?, ?, ?, ?, ?[]) ON CONFLICT (entity_id) DO UPDATE SET"
    " description = excluded.description, aliases = excluded.aliases, modality = excluded.modality"
)


def pooled(entity: Entity, old: Sequence[Any] | None, aliases: list[str], max_chars: int) -> tuple:
    """An entity's row with what is stored of it already (`old`: description, aliases, modality): a new
    description appended while there is room, aliases pooled, a non-text modality kept."""
    description, modality = entity.description, entity.modality
    if old is not None:
        if description and description not in old[0] and len(old[0]) < max_chars:
            description = (old[0] + " | " + description)[:max_chars] if old[0] else description
        else:
            description = old[0]
        aliases = list(dict.fromkeys(old[1] + aliases))
        modality = old[2] if old[2] != "text" else modality
    norm = entity.norm_name or normalize_name(entity.name)
    return (entity.entity_id, entity.name, norm, entity.type, description, modality, aliases)


class GraphTables(LayerTables):
    """Reads and writes of the hypergraph; the concept layer comes with it."""

    def write_graph(
        self,
        entities: Sequence[tuple[Entity, Sequence[str]]],
        edges: Sequence[tuple[Hyperedge, Sequence[str]]],
        max_description_chars: int = 600,
    ) -> None:
        """Upsert entities (descriptions and aliases pooled), add hyperedges, incidence and provenance.

        Idempotent: writing the same graph twice changes nothing, so a resumed build is safe.
        """
        d = self.dialect
        with self._write() as cur:
            existing: dict[str, tuple] = {}
            for part in d.batches([e.entity_id for e, _ in entities]):
                test, params = d.among(part)
                for row in cur.execute(
                    f"SELECT entity_id, description, aliases, modality FROM entities WHERE entity_id {test}", params
                ).fetchall():
                    existing[row[0]] = (row[1], d.from_strings(row[2]), row[3])
            rows = [pooled(e, existing.get(e.entity_id), list(e.aliases), max_description_chars) for e, _ in entities]
            cur.executemany(ENTITY_UPSERT, [(*row[:6], d.strings(row[6])) for row in rows])
            cur.executemany(
                d.insert_ignore(
                    "hyperedges(edge_id, level, description, keywords, strength)", "VALUES (?, ?, ?, ?[], ?)"
                ),
                [(h.edge_id, h.level, h.description, d.strings(h.keywords), h.strength) for h, _ in edges],
            )
            cur.executemany(
                d.insert_ignore("incidence(edge_id, entity_id, role)", "VALUES (?, ?, ?)"),
                [(h.edge_id, eid, role) for h, _ in edges for eid, role in h.members],
            )
            self._write_layer_rows(
                cur,
                [(e.entity_id, e.concept) for e, _ in entities],
                [(h.edge_id, h.members[0][0], h.relation, h.members[1][0]) for h, _ in edges if h.relation],
            )
            prov = [("entity", e.entity_id, c) for e, chunks in entities for c in chunks]
            prov += [("hyperedge", h.edge_id, c) for h, chunks in edges for c in chunks]
            cur.executemany(
                d.insert_ignore("provenance(item_kind, item_id, chunk_id, doc_id, page)", "VALUES (?, ?, ?, ?, ?)"),
                [(kind, item, c, *chunk_doc_page(c)) for kind, item, c in prov],
            )
            self._graph_changed(cur)

    def delete_hyperedges(self, edge_ids: Sequence[str]) -> None:
        if not edge_ids:
            return
        d = self.dialect
        with self._write() as cur:
            for part in d.batches(edge_ids):
                test, params = d.among(part)
                cur.execute(f"DELETE FROM provenance WHERE item_kind = 'hyperedge' AND item_id {test}", params)
                cur.execute(f"DELETE FROM incidence WHERE edge_id {test}", params)
                cur.execute(f"DELETE FROM hyperedges WHERE edge_id {test}", params)  # facts cascade
                cur.execute(
                    f"DELETE FROM vectors WHERE space IN ('hyperedge', 'theme') AND {d.keyed_item} {test}", params
                )
            self._graph_changed(cur)
        self._vectors_dropped()

    def get_entities(self, entity_ids: Sequence[str]) -> list[Entity]:
        rows = self._in_query(
            "SELECT e.entity_id, e.name, e.type, e.description, e.modality, e.aliases, e.norm_name, c.name"
            " FROM entities e LEFT JOIN entity_concepts ec ON ec.entity_id = e.entity_id"
            " LEFT JOIN concepts c ON c.concept_id = ec.concept_id WHERE e.entity_id {ids}",
            entity_ids,
        )
        strings = self.dialect.from_strings
        found = {r[0]: Entity(r[0], r[1], r[2], r[3], r[4], strings(r[5]), r[6], r[7] or "") for r in rows}
        return [found[i] for i in entity_ids if i in found]

    def get_hyperedges(self, edge_ids: Sequence[str]) -> list[Hyperedge]:
        d = self.dialect
        rows = self._in_query(
            "SELECT h.edge_id, h.level, h.description, h.keywords, h.strength, f.relation FROM hyperedges h"
            " LEFT JOIN facts f ON f.edge_id = h.edge_id WHERE h.edge_id {ids}",
            edge_ids,
        )
        members: dict[str, list[tuple[str, str]]] = {}
        for edge, entity, role in self._in_query(
            f"SELECT edge_id, entity_id, role FROM incidence WHERE edge_id {{ids}} ORDER BY {d.row}", edge_ids
        ):
            members.setdefault(edge, []).append((entity, role))
        found = {
            r[0]: Hyperedge(r[0], r[1], r[2], d.from_strings(r[3]), r[4], members.get(r[0], []), r[5] or "")
            for r in rows
        }
        return [found[i] for i in edge_ids if i in found]

    def hyperedge_strengths(self, edge_ids: Sequence[str]) -> dict[str, float]:
        order = self.dialect.stated(" ORDER BY edge_id")
        statement = f"SELECT edge_id, strength FROM {self.dialect.edge_strengths} WHERE edge_id {{ids}}" + order
        return dict(self._in_query(statement, edge_ids))

    def incident_edges(self, entity_ids: Sequence[str], levels: Sequence[str] | None = None) -> dict[str, list[str]]:
        """entity -> its edges (of these levels) in the order they were stored. Ordered here rather than in
        SQL: both backends then read only the index on (entity, edge, insertion order)."""
        statement, extra = f"SELECT i.entity_id, i.edge_id, i.{self.dialect.row} FROM incidence i", list[Any]()
        if levels:
            test, extra = self.dialect.among(list(levels))
            statement += f" JOIN hyperedges h ON h.edge_id = i.edge_id AND h.level {test}"
        out: dict[str, list[str]] = {}
        rows = self._in_query(statement + " WHERE i.entity_id {ids}", entity_ids, extra)
        for entity, edge, _ in sorted(rows, key=lambda r: (r[0], r[2])):
            out.setdefault(entity, []).append(edge)
        return out

    def provenance(
        self, kind: str, item_ids: Sequence[str], doc_ids: Sequence[str] | None = None
    ) -> dict[str, list[tuple[str, str, int]]]:
        """item -> [(chunk_id, doc_id, page)] for entities or hyperedges; only in `doc_ids` when given (a name
        common across a large collection has evidence in thousands of documents, a question asks of a few)."""
        out: dict[str, list[tuple[str, str, int]]] = {}
        scope, extra = "", list[Any]([kind])
        if doc_ids is not None:
            test, docs = self.dialect.among(list(doc_ids))
            scope, extra = f" AND doc_id {test}", [kind, *docs]
        rows = self._in_query(
            f"SELECT item_id, chunk_id, doc_id, page, {self.dialect.row} FROM provenance WHERE item_kind = ?"
            + scope
            + " AND item_id {ids}",
            item_ids,
            extra,
        )
        # In insertion order, sorted here so that both backends read only the index that holds every column.
        for item, chunk, doc, page, _ in sorted(rows, key=lambda r: (r[0], r[4])):
            out.setdefault(item, []).append((chunk, doc, page))
        return out

    def entities_by_norm_name(self, norm_names: Sequence[str]) -> dict[str, str]:
        order = self.dialect.stated(" ORDER BY norm_name, seq")
        return dict(
            self._in_query("SELECT norm_name, entity_id FROM entities WHERE norm_name {ids}" + order, norm_names)
        )

    def chunk_entities(self, doc_id: str) -> dict[str, list[tuple[str, str]]]:
        """chunk -> [(entity id, name)] for a document's chunks: the entities that link chunks (values,
        `VALUE_TYPES`, are left out)."""
        d = self.dialect
        test, params = d.among(sorted(VALUE_TYPES))
        out: dict[str, list[tuple[str, str]]] = {}
        for chunk, entity, name in self._query(
            f"SELECT p.chunk_id, e.entity_id, e.name FROM {d.doc_provenance} JOIN entities e ON e.entity_id = p.item_id"
            f" WHERE p.item_kind = 'entity' AND p.doc_id = ? AND NOT (e.type {test})"
            f" ORDER BY p.chunk_id, e.name, p.{d.row}",
            (doc_id, *params),
        ):
            out.setdefault(chunk, []).append((entity, name))
        return out

    def hyperedge_incidence(self, doc_id: str, levels: Sequence[str] = ("low", "high")) -> list[tuple[str, str, str]]:
        """(chunk, hyperedge, member entity) for the hyperedges of these levels evidenced in a document's
        chunks, each hyperedge's members in order."""
        d = self.dialect
        test, params = d.among(list(levels))
        return [
            (chunk, edge, entity)
            for chunk, edge, entity in self._query(
                f"SELECT p.chunk_id, i.edge_id, i.entity_id FROM {d.doc_provenance}"
                " JOIN hyperedges h ON h.edge_id = p.item_id JOIN incidence i ON i.edge_id = h.edge_id"
                f" WHERE p.item_kind = 'hyperedge' AND p.doc_id = ? AND h.level {test}"
                f" ORDER BY p.item_id, p.{d.row}, i.entity_id, i.role",
                (doc_id, *params),
            )
        ]

    def chunk_hyperedge_members(
        self, doc_id: str, levels: Sequence[str] = ("low", "high")
    ) -> dict[str, list[list[str]]]:
        """chunk -> member lists of the hyperedges evidenced in it."""
        members: dict[tuple[str, str], list[str]] = {}
        for chunk, edge, entity in self.hyperedge_incidence(doc_id, levels):
            members.setdefault((chunk, edge), []).append(entity)
        out: dict[str, list[list[str]]] = {}
        for (chunk, _), ids in members.items():
            out.setdefault(chunk, []).append(ids)
        return out

    def chunk_hyperedges(self, chunk_id: str) -> list[str]:
        """Hyperedges evidenced in one chunk."""
        rows = self._query(
            "SELECT item_id FROM provenance WHERE item_kind = 'hyperedge' AND chunk_id = ?"
            + self.dialect.stated(" ORDER BY item_id"),
            (chunk_id,),
        )
        return [r[0] for r in rows]

    def hyperedges_of_level(self, doc_id: str, level: str) -> list[str]:
        rows = self._query(
            f"SELECT DISTINCT h.edge_id FROM {self.dialect.doc_provenance} JOIN hyperedges h"
            " ON p.item_kind = 'hyperedge' AND p.item_id = h.edge_id WHERE p.doc_id = ? AND h.level = ?"
            " ORDER BY h.edge_id",
            (doc_id, level),
        )
        return [r[0] for r in rows]

    def entities_matching(self, name: str) -> list[str]:
        """Entities whose canonical name is this name's, or (failing that) contains it."""
        d, norm = self.dialect, normalize_name(name)
        exact = self._query("SELECT entity_id FROM entities WHERE norm_name = ?" + d.stated(" ORDER BY seq"), (norm,))
        if exact or not norm:
            return [r[0] for r in exact]
        like = "%" + norm.replace("%", "").replace("_", "") + "%"
        rows = self._query(
            f"SELECT entity_id FROM entities WHERE {d.contains('norm_name')}" + d.stated(" ORDER BY seq") + " LIMIT 20",
            (like,),
        )
        return [r[0] for r in rows]

    def _document_items(self, kind: str, doc_id: str) -> list[str]:
        rows = self._query(
            f"SELECT DISTINCT p.item_id FROM {self.dialect.doc_provenance} WHERE p.item_kind = '{kind}'"
            " AND p.doc_id = ? ORDER BY p.item_id",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def document_entities(self, doc_id: str) -> list[str]:
        return self._document_items("entity", doc_id)

    def document_hyperedges(self, doc_id: str) -> list[str]:
        return self._document_items("hyperedge", doc_id)

    def entity_pages(self, entity_ids: Sequence[str]) -> dict[str, set[tuple[str, int]]]:
        """The distinct (doc_id, page) pairs each entity's provenance spans, over all documents."""
        out: dict[str, set[tuple[str, int]]] = {}
        for item, doc, page in self._in_query(
            "SELECT DISTINCT item_id, doc_id, page FROM provenance WHERE item_kind = 'entity' AND item_id {ids}"
            + self.dialect.stated(" ORDER BY item_id"),
            entity_ids,
        ):
            out.setdefault(item, set()).add((doc, page))
        return out

    def refine_signatures(self, anchor_ids: Sequence[str]) -> dict[str, tuple[str, list[str]]]:
        rows = self._in_query(
            "SELECT anchor_id, signature, edge_ids FROM refine_state WHERE anchor_id {ids}"
            + self.dialect.stated(" ORDER BY anchor_id"),
            anchor_ids,
        )
        return {r[0]: (r[1], self.dialect.from_strings(r[2])) for r in rows}

    def set_refine_signature(self, anchor_id: str, signature: str, edge_ids: Sequence[str]) -> None:
        d = self.dialect
        with self._write() as cur:
            cur.execute(
                d.upsert(
                    "refine_state(anchor_id, signature, edge_ids, updated_at)", "VALUES (?, ?, ?[], ?)", ("anchor_id",)
                ),
                (anchor_id, signature, d.strings(list(edge_ids)), time.time()),
            )

    def clear_graph(self) -> None:
        """Forget the hypergraph (entities, hyperedges, refinement state and their vectors); chunks stay."""
        with self._write() as cur:
            for table in ("provenance", *LAYER_TABLES, "incidence", "hyperedges", "entities", "refine_state"):
                cur.execute(f"DELETE FROM {table}")
            cur.execute(f"DELETE FROM {GRAPH_VECTORS}")
            self._graph_changed(cur)
        self._vectors_dropped()

    def graph_stats(self) -> dict[str, Any]:
        order = self.dialect.stated(" ORDER BY 1")
        return {
            "entities_by_modality": self._counts("SELECT modality, COUNT(*) FROM entities GROUP BY modality" + order),
            "hyperedges_by_level": self._counts("SELECT level, COUNT(*) FROM hyperedges GROUP BY level" + order),
            "anchors_refined": self._count("SELECT COUNT(*) FROM refine_state"),
            **self.layer_stats(),
        }
