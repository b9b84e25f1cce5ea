"""The evidence picture (issue 31, item 4): the question's entities and the hyperedges that tie them to the
passages the answer stands on, without boilerplate or near-duplicates.

- **what is drawn**: the hyperedges evidenced in the evidence's best passages, and the graph path's own
  hits in those passages' documents; those with one of the question's entities first (they are what ties
  the question to the answer);
- **the question's entities** (the vertices its words matched) are marked and never pruned;
- **boilerplate** leaves the picture: a name generic by its form (a year, "Inc") and a name on more than
  half of a long document's pages (a running header, the publisher's name in every footer), unless the
  question asks for it;
- the same two cleanings (`tidy`) serve the pictures of a document and of an entity's neighbourhood;
- **near-duplicates** become one vertex: a name whose words all sit in another drawn name ("ethical
  standards" in "high ethical standards") is drawn as that one.
"""

from __future__ import annotations

from hyperfolio.model import EvidencePackage
from hyperfolio.phrases import generic_name, normalize_name
from hyperfolio.store.base import GraphStore
from hyperfolio.viz.graph import VizGraph, from_store

PASSAGES = 5  # the best passages whose hyperedges are drawn
RUNNING_SHARE = 0.5  # a name on more than this share of a document's pages is its furniture ...
RUNNING_MIN_PAGES = 6  # ... in a document this long


def evidence_graph(store: GraphStore, evidence: EvidencePackage, passages: int = PASSAGES) -> VizGraph:
    """The structure behind one answer (see the module)."""
    items = evidence.items[:passages]
    docs = {item.chunk.doc_id for item in items}
    chunks = {item.chunk.chunk_id for item in items}
    edge_ids = [e for item in items for e in store.chunk_hyperedges(item.chunk.chunk_id)]
    edge_ids += [hit.hyperedge.edge_id for hit in evidence.hyperedges if not docs or {d for d, _ in hit.pages} & docs]
    graph = from_store(store, edge_ids, f"evidence: {evidence.question}")
    asked = {hit.entity.entity_id for hit in evidence.entities} & set(graph.entities)
    for key in asked:
        graph.entities[key].asked = True
    tidy(store, graph, asked)
    for edge in graph.edges.values():  # what ties the question to the answer is drawn first
        edge.rank = (0 if asked & set(edge.members) else 1, 0 if chunks & set(edge.chunks) else 1)
    return graph.number()


def tidy(store: GraphStore, graph: VizGraph, keep: set[str] | frozenset[str] = frozenset()) -> VizGraph:
    """Any picture without boilerplate and near-duplicate names (see the module); `keep` (the question's
    entities) stays whatever it is. Display ids are the caller's to give (`VizGraph.number`)."""
    for key in _boilerplate(store, graph, set(keep)):
        graph.remove_entity(key)
    _fold_near_duplicates(graph, set(keep))
    for orphan in [k for k in graph.entities if graph.degree(k) == 0]:
        graph.entities.pop(orphan)
    return graph


def _boilerplate(store: GraphStore, graph: VizGraph, asked: set[str]) -> list[str]:
    candidates = [key for key in graph.entities if key not in asked]
    pages = store.entity_pages(candidates)
    lengths: dict[str, int] = {}
    out = []
    for key in candidates:
        if generic_name(graph.entities[key].name):
            out.append(key)
            continue
        by_doc: dict[str, int] = {}
        for doc, _ in pages.get(key, ()):
            by_doc[doc] = by_doc.get(doc, 0) + 1
        for doc, count in by_doc.items():
            if doc not in lengths:
                info = store.get_document(doc)
                lengths[doc] = info.num_pages if info is not None else 0
            if lengths[doc] >= RUNNING_MIN_PAGES and count > RUNNING_SHARE * lengths[doc]:
                out.append(key)
                break
    return out


def _fold_near_duplicates(graph: VizGraph, asked: set[str]) -> None:
    """Draw a name whose words all sit in another drawn name as that one (the longer; a question's entity
    only as another of the question's)."""
    words = {key: frozenset(normalize_name(e.name).split()) for key, e in graph.entities.items()}
    for key in sorted(graph.entities, key=lambda k: (len(words[k]), graph.entities[k].name)):
        if not words[key]:
            continue
        into = [
            other
            for other in graph.entities
            if other != key and words[key] < words[other] and (key not in asked or other in asked)
        ]
        if len(into) != 1:
            continue  # in none, or in several: which one is unsaid
        target = into[0]
        for edge in graph.edges.values():
            if key in edge.members:
                edge.members = list(dict.fromkeys(target if m == key else m for m in edge.members))
        graph.entities[target].aliases.append(graph.entities.pop(key).name)
    for edge_key in [k for k, e in graph.edges.items() if len(e.members) < 2]:
        del graph.edges[edge_key]
