"""Congestion control (VizRAG HyperViz 3.1): keep a picture readable by pruning what matters least.

Visual cost C = sum over entities of A_v * w_v + sum over hyperedges of L_e * w_e, where A_v is the
area an entity's node and label take and L_e the outline length a hyperedge's region or star takes;
the budget is C_max = gamma * canvas area. While C > C_max the least important entity is removed
(from its hyperedges too), importance = alpha * degree centrality + beta * BM25 relevance of the
entity's name and description to the query. Hyperedges over the same members count once (they
share a region). Then, because a few dozen overlapping regions stay unreadable however the
entities are thinned, at most `max_groups` regions are kept: those whose members matter most.
What remains is scaled to the canvas by the layouts.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from hyperfolio.phrases import generic_name
from hyperfolio.viz.graph import VizEdge, VizEntity, VizGraph

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Budget:
    width: float = 1600.0  # canvas, in pixels
    height: float = 1200.0
    gamma: float = 0.3  # share of the canvas the drawing may occupy
    w_entity: float = 1.0
    w_edge: float = 1.5
    max_groups: int = 12  # regions (hyperedges over distinct member sets) drawn at most
    alpha: float = 0.5  # weight of degree centrality
    beta: float = 0.5  # weight of query relevance
    font_px: float = 13.0  # label size the cost assumes
    max_label_chars: int = 28

    @property
    def limit(self) -> float:
        return self.gamma * self.width * self.height


def entity_area(entity: VizEntity, budget: Budget) -> float:
    """A node's footprint: its marker plus its label box."""
    label = min(len(entity.name) + len(entity.vid) + 1, budget.max_label_chars)
    return (budget.font_px * 0.62 * label + 24) * (budget.font_px * 1.6 + 12)


NODE_SPACING = 60.0  # pixels between neighbouring members a region has to enclose


def edge_length(edge: VizEdge) -> float:
    """A hyperedge's outline: the perimeter of a region around k members, about 2*pi*spacing*sqrt(k)."""
    return 2 * math.pi * NODE_SPACING * math.sqrt(len(edge.members))


def visual_cost(graph: VizGraph, budget: Budget) -> float:
    """C = sum A_v * w_v + sum L_e * w_e, the outline counted with the band its stroke and tag take."""
    nodes = sum(entity_area(e, budget) * budget.w_entity for e in graph.entities.values())
    # Hyperedges over the same members share one drawn region: count the region once.
    edges = sum(edge_length(group[0]) * budget.font_px * budget.w_edge for group in graph.groups())
    return nodes + edges


def bm25_scores(query: str, documents: dict[str, str], k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    """Okapi BM25 of each text against the query (the entities form the corpus)."""
    terms = [t.lower() for t in _WORD.findall(query)]
    if not terms or not documents:
        return dict.fromkeys(documents, 0.0)
    tokens = {key: [t.lower() for t in _WORD.findall(text)] for key, text in documents.items()}
    avg = sum(len(t) for t in tokens.values()) / len(tokens) or 1.0
    df = Counter(t for toks in tokens.values() for t in set(toks))
    n = len(tokens)
    out = {}
    for key, toks in tokens.items():
        tf = Counter(toks)
        score = 0.0
        for term in terms:
            if term not in tf:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(toks) / avg))
        out[key] = score
    return out


def specificity(graph: VizGraph) -> dict[str, float]:
    """How specific each entity is, in [0, 1]: the inverse share of the graph's chunks its hyperedges
    come from (a year or the company's own name sits on nearly all of them), and near zero for a
    name generic by form (a year, a number, "Inc", a month)."""
    chunks_of: dict[str, set[str]] = {key: set() for key in graph.entities}
    every: set[str] = set()
    for edge in graph.edges.values():
        every.update(edge.chunks)
        for member in edge.members:
            if member in chunks_of:
                chunks_of[member].update(edge.chunks)
    top = math.log(len(every) + 1) or 1.0
    out = {}
    for key, entity in graph.entities.items():
        spread = math.log((len(every) + 1) / (len(chunks_of[key]) + 1)) / top if every else 1.0
        out[key] = 0.1 * spread if generic_name(entity.name) else spread
    return out


def importance(graph: VizGraph, query: str, budget: Budget) -> dict[str, float]:
    """alpha * degree centrality x specificity + beta * BM25 relevance, each scaled to [0, 1]: hubs
    that are merely generic (years, legal suffixes, the document's own subject everywhere) give way
    to the entities that tell this part of the graph apart, unless the query names them."""
    n = max(1, len(graph.entities) - 1)
    specific = specificity(graph)
    centrality = {key: graph.degree(key) / n * (0.05 + 0.95 * specific[key]) for key in graph.entities}
    relevance = bm25_scores(query, {k: f"{e.name} {e.description}" for k, e in graph.entities.items()})
    top_c = max(centrality.values(), default=0.0) or 1.0
    top_r = max(relevance.values(), default=0.0) or 1.0
    return {k: budget.alpha * centrality[k] / top_c + budget.beta * relevance[k] / top_r for k in graph.entities}


@dataclass
class PruneReport:
    cost_before: float
    cost_after: float
    limit: float
    removed: list[str]  # names of the pruned entities, least important first
    dropped_edges: int = 0  # hyperedges left out to keep the number of regions readable


def prune(graph: VizGraph, query: str = "", budget: Budget | None = None) -> PruneReport:
    """Remove the least important entities until the picture fits its budget; renumbers the ids."""
    budget = budget or Budget()
    before = cost = visual_cost(graph, budget)
    removed: list[str] = []
    if cost > budget.limit:
        scores = importance(graph, query, budget)
        for key in sorted(scores, key=lambda k: (scores[k], graph.entities[k].name)):
            if cost <= budget.limit or len(graph.entities) <= 2:
                break
            if key not in graph.entities or graph.entities[key].asked:  # gone already; or the question's
                continue
            removed.append(graph.entities[key].name)
            graph.remove_entity(key)
            # Entities left without any hyperedge carry no structure: they go with it.
            for orphan in [k for k in graph.entities if graph.degree(k) == 0]:
                graph.entities.pop(orphan)
            cost = visual_cost(graph, budget)
    groups = graph.groups()
    dropped_edges = 0
    if len(groups) > budget.max_groups:
        scores = importance(graph, query, budget)
        rank = {"refine": 0.3, "high": 0.2, "low": 0.0}

        def weight(group: list[VizEdge]) -> float:
            members = group[0].members
            asked = any(graph.entities[m].asked for m in members if m in graph.entities)
            return sum(scores.get(m, 0.0) for m in members) / len(members) + rank.get(group[0].level, 0.0) + asked

        for group in sorted(groups, key=weight)[: len(groups) - budget.max_groups]:
            for edge in group:
                graph.edges.pop(edge.key, None)
                dropped_edges += 1
        for orphan in [k for k in graph.entities if graph.degree(k) == 0]:
            removed.append(graph.entities.pop(orphan).name)
        cost = visual_cost(graph, budget)
    graph.number()
    return PruneReport(before, cost, budget.limit, removed, dropped_edges)
