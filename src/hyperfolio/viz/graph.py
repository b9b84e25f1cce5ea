"""The part of the hypergraph to draw, with stable display ids (VizRAG HyperViz, section 3).

Entities are numbered E1, E2, ... and hyperedges H1, H2, ... in a deterministic order (by
degree, then name), and `mapping()` exports what each id stands for - name, description,
members, source chunks and pages - so a picture and the text beside it name the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hyperfolio.store.base import HypergraphStore

DRAWN_LEVELS = ("low", "high", "refine")  # facts are the concept layer's; draw them by asking for them


@dataclass
class VizEntity:
    key: str  # entity id in the store
    name: str
    type: str = ""
    description: str = ""
    modality: str = "text"
    vid: str = ""  # display id: E1, E2, ...
    asked: bool = False  # one of the question's entities: marked, never pruned
    aliases: list[str] = field(default_factory=list)  # near-duplicate names drawn as this one


@dataclass
class VizEdge:
    key: str  # hyperedge id in the store
    level: str
    description: str
    members: list[str]  # entity keys
    pages: list[tuple[str, int]] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    vid: str = ""  # display id: H1, H2, ...
    rank: tuple[int, ...] = ()  # drawn and numbered in this order first (the evidence picture's)


@dataclass
class VizGraph:
    entities: dict[str, VizEntity] = field(default_factory=dict)
    edges: dict[str, VizEdge] = field(default_factory=dict)
    title: str = ""

    def degree(self, key: str) -> int:
        return sum(1 for e in self.edges.values() if key in e.members)

    def number(self) -> VizGraph:
        """Give display ids: the most connected first, ties by name, so ids are stable across runs."""
        order = sorted(self.entities.values(), key=lambda e: (-self.degree(e.key), e.name.lower(), e.key))
        for i, entity in enumerate(order, 1):
            entity.vid = f"E{i}"
        edges = sorted(self.edges.values(), key=lambda e: (e.rank, -len(e.members), e.level, e.description, e.key))
        for i, edge in enumerate(edges, 1):
            edge.vid = f"H{i}"
        return self

    def groups(self) -> list[list[VizEdge]]:
        """Hyperedges over the same members, together: one region (or one node) draws them all."""
        by_members: dict[frozenset[str], list[VizEdge]] = {}
        for edge in sorted(self.edges.values(), key=lambda e: int(e.vid[1:] or 0)):
            by_members.setdefault(frozenset(edge.members), []).append(edge)
        return list(by_members.values())

    def remove_entity(self, key: str) -> None:
        """Drop an entity from the picture and from its hyperedges; edges left with < 2 members go."""
        self.entities.pop(key, None)
        for edge_key in list(self.edges):
            edge = self.edges[edge_key]
            edge.members = [m for m in edge.members if m != key]
            if len(edge.members) < 2:
                del self.edges[edge_key]

    def mapping(self) -> dict[str, Any]:
        """What every display id stands for."""
        by_key = {e.key: e for e in self.entities.values()}
        return {
            "entities": {
                e.vid: {
                    "name": e.name,
                    "type": e.type,
                    "modality": e.modality,
                    "description": e.description,
                    **({"asked": True} if e.asked else {}),
                    **({"also": e.aliases} if e.aliases else {}),
                }
                for e in sorted(self.entities.values(), key=lambda e: int(e.vid[1:] or 0))
            },
            "hyperedges": {
                h.vid: {
                    "level": h.level,
                    "description": h.description,
                    "members": [f"{by_key[m].vid} {by_key[m].name}" for m in h.members if m in by_key],
                    "chunks": h.chunks,
                    "pages": [f"{doc} p.{page}" for doc, page in h.pages],
                }
                for h in sorted(self.edges.values(), key=lambda h: int(h.vid[1:] or 0))
            },
        }


def from_store(store: HypergraphStore, edge_ids: Sequence[str], title: str = "", levels=DRAWN_LEVELS) -> VizGraph:
    """A drawable graph of these hyperedges and their members."""
    edges = [e for e in store.get_hyperedges(list(dict.fromkeys(edge_ids))) if e.level in levels]
    members = list(dict.fromkeys(m for e in edges for m, _ in e.members))
    entities = {e.entity_id: e for e in store.get_entities(members)}
    prov = store.provenance("hyperedge", [e.edge_id for e in edges])
    graph = VizGraph(title=title)
    for entity in entities.values():
        graph.entities[entity.entity_id] = VizEntity(
            entity.entity_id, entity.name, entity.type, entity.description, entity.modality
        )
    for edge in edges:
        keep = [m for m, _ in edge.members if m in entities]
        if len(keep) < 2:
            continue
        rows = sorted(prov.get(edge.edge_id, []))
        graph.edges[edge.edge_id] = VizEdge(
            edge.edge_id,
            edge.level,
            edge.description,
            keep,
            sorted({(doc, page) for _, doc, page in rows}),
            [chunk for chunk, _, _ in rows],
        )
    return graph.number()


def document_graph(store: HypergraphStore, doc_id: str, title: str = "") -> VizGraph:
    return from_store(store, store.document_hyperedges(doc_id), title or doc_id)


def entity_graph(store: HypergraphStore, entity_ids: Sequence[str], title: str = "") -> VizGraph:
    """An entity's neighbourhood: its incident hyperedges and their members."""
    incident = store.incident_edges(list(entity_ids))
    return from_store(store, [e for edges in incident.values() for e in edges], title)
