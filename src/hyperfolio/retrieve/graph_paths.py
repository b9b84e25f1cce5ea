"""Paths from a question through the hypergraph to chunks, shared by `dual`, `topdown` and `auto`.

- keyword -> entity matching: similarity >= gamma, or the same canonical name;
- the entity path: matched vertices spread their score over their incident hyperedges (a hub's
  edges each count for less);
- the theme-keyword path: theme keywords matched against hyperedge vectors;
- the theme layer: the question and its theme keywords matched against chunk themes;
- graph -> chunk scoring: hyperedges and entities pass their scores to the chunks that evidence them;
- the structured part of an evidence package (entity and hyperedge hits with their pages).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from hyperfolio.model import Entity, EntityHit, Hyperedge, HyperedgeHit
from hyperfolio.phrases import normalize_name
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.rankings import graph_vectors
from hyperfolio.store.base import ENTITY_SPACE, HYPEREDGE_SPACE, THEME_SPACE, item_of

# The entity hypergraph's own levels; chunk themes are the top layer.
ENTITY_LEVELS = ("low", "high", "refine", "fact")
Provenance = dict[str, list[tuple[str, str, int]]]  # item -> [(chunk, doc, page)]


def keyword_entities(
    keywords: Sequence[str], ctx: RetrievalContext, doc_ids: Sequence[str] | None, per_keyword: int
) -> dict[str, tuple[float, str]]:
    """Vertices the entity keywords match: similarity >= gamma, or the same canonical name (1.0);
    entity -> (best score, the keyword that gave it)."""
    found: dict[str, tuple[float, str]] = {}
    if not keywords:
        return found
    keywords = list(keywords)
    exact = ctx.store.entities_by_norm_name([normalize_name(k) for k in keywords])
    searched = ctx.store.vector_search_many(ENTITY_SPACE, graph_vectors(keywords, ctx), per_keyword, doc_ids)
    for keyword, hits in zip(keywords, searched, strict=True):
        matched = {item_of(i): s for i, s in hits if s >= ctx.dual.entity_threshold}
        if normalize_name(keyword) in exact:
            matched[exact[normalize_name(keyword)]] = 1.0
        for entity, score in matched.items():
            if score > found.get(entity, (0.0, ""))[0]:
                found[entity] = (score, keyword)
    return found


def spread_to_edges(
    entity_score: dict[str, float], ctx: RetrievalContext, levels: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Each entity's score over its incident hyperedges, damped by sqrt(degree):
    hyperedge -> {entity: share} (who brought how much)."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    if not entity_score:
        return out
    for entity, edges in ctx.store.incident_edges(list(entity_score), levels=list(levels)).items():
        share = entity_score[entity] / max(1.0, len(edges) ** 0.5)
        for edge in edges:
            out[edge][entity] = share
    return out


def theme_keyword_edges(
    keywords: Sequence[str], ctx: RetrievalContext, doc_ids, per_keyword: int
) -> dict[str, tuple[float, str]]:
    """Hyperedges matching the theme keywords: hyperedge -> (summed similarity, first keyword)."""
    found: dict[str, tuple[float, str]] = {}
    keywords = list(keywords)
    if not keywords:
        return found
    searched = ctx.store.vector_search_many(HYPEREDGE_SPACE, graph_vectors(keywords, ctx), per_keyword, doc_ids)
    for keyword, hits in zip(keywords, searched, strict=True):
        for item, score in hits:
            edge = item_of(item)
            total, via = found.get(edge, (0.0, keyword))
            found[edge] = (total + score, via)
    return found


def matched_themes(query: Query, ctx: RetrievalContext, high: Sequence[str], limit: int) -> dict[str, float]:
    """Top-layer themes best matching the question or a theme keyword: theme -> best similarity."""
    score: dict[str, float] = defaultdict(float)
    probes = list(dict.fromkeys([query.text, *high]))
    docs = list(query.doc_ids) if query.doc_ids else None
    for hits in ctx.store.vector_search_many(THEME_SPACE, graph_vectors(probes, ctx), limit, docs):
        for item, s in hits:
            score[item_of(item)] = max(score[item_of(item)], s)
    return dict(sorted(score.items(), key=lambda kv: -kv[1])[:limit])


def searchable_scope(query: Query, ctx: RetrievalContext) -> set[str]:
    """The documents graph evidence may come from: the query's scope, else every fully indexed one.
    (An entity found in one document also has provenance in others, some perhaps half-indexed.)"""
    if query.doc_ids:
        return set(query.doc_ids)
    return ctx.kept(("ready-ids",), lambda: {d.doc_id for d in ctx.ready_documents()})


PUSHED_SCOPE = 64  # a scope of at most this many documents limits provenance reads in the store itself


def store_scope(scope: set[str] | None) -> list[str] | None:
    """The scope as the store's document filter when it is a few documents (a question's own): a name
    common across a large collection then costs its evidence in those documents, not in all. A wider
    scope is filtered here (`in_scope`), where the result is the same."""
    return sorted(scope) if scope is not None and len(scope) <= PUSHED_SCOPE else None


def in_scope(prov: Provenance, item: str, scope: set[str] | None) -> list[tuple[str, str, int]]:
    return [p for p in prov.get(item, []) if scope is None or p[1] in scope]


def chunk_scores(
    weights: dict[str, float], prov: Provenance, scope: set[str] | None, factor: float = 1.0
) -> dict[str, float]:
    """Graph -> chunk scoring: every item passes factor x its weight to each chunk that evidences it."""
    out: dict[str, float] = defaultdict(float)
    for item, weight in weights.items():
        for chunk, _, _ in in_scope(prov, item, scope):
            out[chunk] += factor * weight
    return out


def edge_chunk_scores(
    edge_score: dict[str, float], ctx: RetrievalContext, scope: set[str] | None, limit: int = 200
) -> tuple[dict[str, float], list[Hyperedge], Provenance]:
    """The best `limit` hyperedges pass score x strength to their chunks: (chunk scores, edges, provenance)."""
    edges = ctx.store.get_hyperedges(sorted(edge_score, key=lambda e: -edge_score[e])[:limit])
    prov = ctx.store.provenance("hyperedge", [e.edge_id for e in edges], store_scope(scope))
    return chunk_scores({e.edge_id: edge_score[e.edge_id] * e.strength for e in edges}, prov, scope), edges, prov


def edge_chunk_ranking(
    edge_score: dict[str, float], ctx: RetrievalContext, scope: set[str] | None, limit: int = 200
) -> dict[str, float]:
    """`edge_chunk_scores` without loading the hyperedges themselves: their strengths suffice."""
    chosen = sorted(edge_score, key=lambda e: -edge_score[e])[:limit]
    strength = ctx.store.hyperedge_strengths(chosen)
    prov = ctx.store.provenance("hyperedge", chosen, store_scope(scope))
    return chunk_scores({e: edge_score[e] * strength[e] for e in chosen if e in strength}, prov, scope)


def add_scores(total: dict[str, float], more: dict[str, float]) -> dict[str, float]:
    for key, value in more.items():
        total[key] = total.get(key, 0.0) + value
    return total


def ranked(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: -kv[1])


@dataclass
class GraphHits:
    """What a graph path reached, for the structured part of an evidence package."""

    entity_score: dict[str, float] = field(default_factory=dict)
    entity_via: dict[str, str] = field(default_factory=dict)
    edges: list[Hyperedge] = field(default_factory=list)
    edge_score: dict[str, float] = field(default_factory=dict)
    edge_via: dict[str, str] = field(default_factory=dict)


def entity_hits(
    ctx: RetrievalContext, hits: GraphHits, scope: set[str] | None, via: str | None = None, limit: int = 15
) -> list[EntityHit]:
    top = sorted(hits.entity_score, key=lambda e: -hits.entity_score[e])[:limit]
    pages = ctx.store.entity_pages(top)
    out: list[EntityHit] = []
    for entity in ctx.store.get_entities(top):
        where = sorted(p for p in pages.get(entity.entity_id, set()) if scope is None or p[0] in scope)
        reason = via if via is not None else hits.entity_via.get(entity.entity_id, "")
        out.append(EntityHit(entity, hits.entity_score[entity.entity_id], where, reason))
    return out


def hyperedge_hits(
    ctx: RetrievalContext, hits: GraphHits, prov: Provenance, scope: set[str] | None, limit: int = 15
) -> list[HyperedgeHit]:
    chosen = hits.edges[:limit]
    names = member_names(ctx, chosen)
    out: list[HyperedgeHit] = []
    for edge in chosen:
        pages = sorted({(d, p) for _, d, p in in_scope(prov, edge.edge_id, scope)})
        if pages:
            members = [names.get(m, m) for m, _ in edge.members]
            out.append(
                HyperedgeHit(edge, hits.edge_score[edge.edge_id], members, pages, hits.edge_via.get(edge.edge_id, ""))
            )
    return out


def member_names(ctx: RetrievalContext, edges: Sequence[Hyperedge]) -> dict[str, str]:
    entities: list[Entity] = ctx.store.get_entities(list({m for e in edges for m, _ in e.members}))
    return {e.entity_id: e.name for e in entities}
