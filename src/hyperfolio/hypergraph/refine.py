"""Anchor-driven incremental refinement (Hyper-M2RAG section 4.2).

An anchor is an entity whose provenance spans at least tau pages. Its star expansion
(incident low/high hyperedges and their members) is re-examined to produce refined
cross-page hyperedges (`refine`), merged back into the index. Each anchor's star has
a signature (its incident edge ids); only anchors whose signature changed since their
last refinement are refined again, so adding pages or documents touches only what
they change. A star is read up to `MAX_STAR` edges, so an anchor that every document
of a collection mentions costs no more with each one. `refine_pages` is the cost
baseline: every page re-examined with its neighbours' context. A `Refiner` does the re-examining:
the offline one in `refine_offline`, the model one in `refine_model`.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from hyperfolio.hypergraph.extract import HIGH, LOW, REFINE, ExtractedEdge
from hyperfolio.hypergraph.merge import edge_id
from hyperfolio.model import Entity, Hyperedge
from hyperfolio.store.base import GraphStore, HypergraphStore


@dataclass
class StarEdge:
    edge: Hyperedge
    names: dict[str, str]  # member entity id -> name
    chunks: list[tuple[str, str, int]]  # (chunk_id, doc_id, page)

    @property
    def pages(self) -> set[tuple[str, int]]:
        return {(doc, page) for _, doc, page in self.chunks}


@dataclass
class PageContext:
    doc_id: str
    page: int
    edges: list[StarEdge]  # the page's own edges
    neighbour_edges: list[StarEdge]  # edges of the pages just before and after


class Refiner(Protocol):
    name: str

    def refine_anchor(self, anchor: Entity, star: list[StarEdge]) -> list[ExtractedEdge]:
        """Refined cross-page edges for one anchor; members are entity ids."""

    def refine_group(self, group: list[tuple[Entity, list[StarEdge]]]) -> dict[str, list[ExtractedEdge]]:
        """Several anchors at once (their stars overlap); refined edges by anchor id."""

    def refine_page(self, context: PageContext) -> list[ExtractedEdge]:
        """Refined edges for one page seen with its neighbours (the full-page baseline)."""


def load_star(store: HypergraphStore, edge_ids: list[str]) -> list[StarEdge]:
    edges = store.get_hyperedges(edge_ids)
    members = list({m for e in edges for m, _ in e.members})
    names = {e.entity_id: e.name for e in store.get_entities(members)}
    prov = store.provenance("hyperedge", [e.edge_id for e in edges])
    return [StarEdge(e, {m: names.get(m, m) for m, _ in e.members}, sorted(prov.get(e.edge_id, []))) for e in edges]


STAR_EDGES = 16  # the most hyperedges of one anchor's star a refiner is shown
# The most hyperedges of one anchor's star that refinement reads: those with the lowest ids, which (being
# hashes) are a sample spread at random over the documents and pages the anchor is on. "The Company" of
# a library of filings then costs the same in the 25th filing as in the second, and is refined again only
# when a new edge enters that sample; what is given up is the rest of a star past this size.
MAX_STAR = 256


def spread_over_pages(star: list[StarEdge], cap: int = STAR_EDGES) -> list[StarEdge]:
    """At most `cap` edges of a star, taken page by page in turn (strongest first on each), so a refiner
    sees how the anchor appears across pages rather than everything on one page; a long-running
    anchor costs the same as a short one."""
    by_page: dict[tuple[str, int], list[StarEdge]] = {}
    for edge in sorted(star, key=lambda s: (-s.edge.strength, -len(s.names), s.edge.edge_id)):
        by_page.setdefault(min(edge.pages) if edge.pages else ("", 0), []).append(edge)
    chosen: list[StarEdge] = []
    queues = [by_page[page] for page in sorted(by_page)]
    while queues and len(chosen) < cap:
        for queue in queues:
            if queue and len(chosen) < cap:
                chosen.append(queue.pop(0))
        queues = [q for q in queues if q]
    return chosen


def group_anchors(
    anchors: list[str],
    stars: dict[str, list[StarEdge]],
    max_anchors: int,
    max_edges: int,
    star_edges: int = STAR_EDGES,
) -> list[list[str]]:
    """Anchors in page order, cut into groups of at most `max_anchors` whose stars (as shown: at most
    `star_edges` each) together hold at most `max_edges` distinct hyperedges: neighbouring anchors
    share edges, so a group lists each once."""

    def first_page(anchor: str) -> tuple:
        pages = [p for s in stars[anchor] for p in s.pages]
        return (min(pages) if pages else ("", 0), anchor)

    groups: list[list[str]] = []
    current: list[str] = []
    edges: set[str] = set()
    for anchor in sorted(anchors, key=first_page):
        mine = {s.edge.edge_id for s in spread_over_pages(stars[anchor], star_edges)}
        if current and (len(current) >= max_anchors or len(edges | mine) > max_edges):
            groups.append(current)
            current, edges = [], set()
        current.append(anchor)
        edges |= mine
    if current:
        groups.append(current)
    return groups


@dataclass
class RefineReport:
    anchors: int = 0  # anchors found among the candidates
    refined: int = 0  # anchors whose star changed and were re-examined
    unchanged: int = 0
    edges_added: int = 0
    edges_removed: int = 0
    added_edge_ids: list[str] = field(default_factory=list)


def _to_hyperedge(edge: ExtractedEdge) -> Hyperedge:
    members = [(m, edge.roles.get(m, "member")) for m in dict.fromkeys(edge.members)]
    hid = edge_id(edge.level, [m for m, _ in members], edge.description)
    return Hyperedge(hid, edge.level, edge.description, edge.keywords, edge.strength, members)


# Values recur on many pages without being one thing discussed across them ("2024", "10%"): not anchors.
NOT_ANCHORS = frozenset({"date", "quantity"})

Break = tuple[str, str, int | str]  # ("page", doc, page before the break) or ("docs", doc, next doc)


def page_breaks(pages: set[tuple[str, int]]) -> set[Break]:
    """The boundaries an entity crosses: from a page to the next one of the same document, and from one
    document to the next it appears in."""
    breaks: set[Break] = {("page", doc, page) for doc, page in pages if (doc, page + 1) in pages}
    docs = sorted({doc for doc, _ in pages})
    breaks.update(("docs", a, b) for a, b in zip(docs, docs[1:], strict=False))
    return breaks


def select_anchors(pages: dict[str, set[tuple[str, int]]], names: dict[str, str], cover: int) -> list[str]:
    """The boundary-crossing anchors worth refining: greedily, the entity that bridges the most page
    breaks not yet bridged `cover` times, ties to the entity on more pages. Topic entities that run
    through a document bridge many breaks at once, so the anchor count grows more slowly than the
    page count; an entity that only repeats where others already bridge adds nothing and is skipped.
    `cover` 0 keeps every candidate."""
    crossing = {e: page_breaks(p) for e, p in pages.items()}
    if cover <= 0:
        return sorted(pages)
    bridged: Counter[Break] = Counter()
    heap = [(-len(b), -len(pages[e]), names.get(e, e), e) for e, b in crossing.items() if b]
    heapq.heapify(heap)
    chosen: list[str] = []
    while heap:
        neg_gain, neg_span, name, entity = heapq.heappop(heap)
        gain = sum(1 for b in crossing[entity] if bridged[b] < cover)
        if gain == 0:
            continue
        if gain < -neg_gain:  # stale priority: push back with the current gain (lazy greedy)
            heapq.heappush(heap, (-gain, neg_span, name, entity))
            continue
        chosen.append(entity)
        bridged.update(crossing[entity])
    return sorted(chosen)


def refine_anchors(
    store: GraphStore,
    refiner: Refiner,
    candidates: list[str],
    min_pages: int,
    exclude_types: frozenset[str] = NOT_ANCHORS,
    max_anchors: int = 8,
    max_edges: int = 32,
    cover: int = 2,
    max_star: int = MAX_STAR,
) -> RefineReport:
    """Refine the anchors among `candidates` whose star (up to `max_star` edges) changed since they were
    last refined.

    Anchors are entities on at least `min_pages` pages that cross a page (or document) boundary,
    selected by `select_anchors` to bridge each boundary at most `cover` times. What changes is written
    at the end, in one transaction."""
    report = RefineReport()
    pages = {e: p for e, p in store.entity_pages(candidates).items() if len(p) >= min_pages}
    entities = {e.entity_id: e for e in store.get_entities(list(pages)) if e.type not in exclude_types}
    names = {e: entity.name for e, entity in entities.items()}
    anchors = select_anchors({e: pages[e] for e in entities}, names, cover)
    report.anchors = len(anchors)
    incident = store.incident_edges(anchors, levels=[LOW, HIGH])
    previous = store.refine_signatures(anchors)
    changed: list[tuple[str, str, list[str], list[str]]] = []  # anchor, signature, old refined edges, star
    for anchor_id in anchors:
        edges = sorted(incident.get(anchor_id, []))[:max_star]
        signature = hashlib.sha1("|".join(edges).encode()).hexdigest()
        old_signature, old_edges = previous.get(anchor_id, ("", []))
        if signature == old_signature:
            report.unchanged += 1
        else:
            changed.append((anchor_id, signature, old_edges, edges))
    stars = {anchor_id: load_star(store, edges) for anchor_id, _, _, edges in changed}
    refined: dict[str, tuple[Hyperedge, list[str]]] = {}
    stale: list[str] = []
    signatures: list[tuple[str, str, list[str]]] = []
    for group in group_anchors([a for a, _, _, _ in changed], stars, max_anchors, max_edges):
        results = refiner.refine_group([(entities[a], stars[a]) for a in group])
        for anchor_id, signature, old_edges, _ in (c for c in changed if c[0] in group):
            report.refined += 1
            made = [(_to_hyperedge(e), e.chunks) for e in results.get(anchor_id, []) if len(set(e.members)) >= 2]
            new_ids = [h.edge_id for h, _ in made]
            refined.update((h.edge_id, (h, chunks)) for h, chunks in made)
            stale += [e for e in old_edges if e not in new_ids]
            signatures.append((anchor_id, signature, new_ids))
            report.edges_added += len([h for h in new_ids if h not in old_edges])
            report.added_edge_ids.extend(new_ids)
    gone = list(dict.fromkeys(e for e in stale if e not in refined))
    report.edges_removed = len(stale)
    if signatures:
        with store.atomic():  # one delete: each sweeps the vectors of every hyperedge
            store.delete_hyperedges(gone)
            store.write_graph([], list(refined.values()))
            for anchor_id, signature, new_ids in signatures:
                store.set_refine_signature(anchor_id, signature, new_ids)
    return report


def refine_pages(store: HypergraphStore, refiner: Refiner, doc_id: str) -> RefineReport:
    """The cost baseline: every page of a document re-examined with its neighbours' edges."""
    report = RefineReport()
    by_page: dict[int, list[str]] = {}
    for edge in store.document_hyperedges(doc_id):
        for _, doc, page in store.provenance("hyperedge", [edge]).get(edge, []):
            if doc == doc_id:
                by_page.setdefault(page, []).append(edge)
    stars = {page: load_star(store, sorted(set(edges))) for page, edges in by_page.items()}
    for page in sorted(stars):
        own = [s for s in stars[page] if s.edge.level != REFINE]
        around = [s for p in (page - 1, page + 1) for s in stars.get(p, []) if s.edge.level != REFINE]
        report.refined += 1
        extracted = refiner.refine_page(PageContext(doc_id, page, own, around))
        refined = [(_to_hyperedge(e), e.chunks) for e in extracted if len(set(e.members)) >= 2 and e.chunks]
        store.write_graph([], refined)
        report.edges_added += len(refined)
        report.added_edge_ids.extend(h.edge_id for h, _ in refined)
    return report
