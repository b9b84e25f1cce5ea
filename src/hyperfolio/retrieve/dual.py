"""Dual-path hypergraph retrieval (Hyper-M2RAG section 4.3, after Hyper-RAG's dual levels).

The question is decomposed into entity keywords (K_low) and theme keywords (K_high).
Path I matches K_low against vertices (similarity >= gamma, or the same canonical name)
and expands them to their incident hyperedges; path II matches K_high against
hyperedges and back-traces their member vertices and source chunks. Chunks reached by
either path are ranked by the evidence that reached them and fused with the flat
rankings, so the graph adds what the words alone miss. The package carries the
entities and hyperedges too (low, high and refined), not only chunks.
"""

from __future__ import annotations

from collections import defaultdict

from hyperfolio.model import EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext, Traits
from hyperfolio.retrieve.evidence import package
from hyperfolio.retrieve.graph_paths import (
    ENTITY_LEVELS,
    GraphHits,
    add_scores,
    chunk_scores,
    edge_chunk_scores,
    entity_hits,
    hyperedge_hits,
    keyword_entities,
    ranked,
    searchable_scope,
    spread_to_edges,
    store_scope,
    theme_keyword_edges,
)
from hyperfolio.retrieve.rankings import fuse_with_flat


def dual_paths(query: Query, ctx: RetrievalContext) -> tuple[dict[str, float], GraphHits, dict, set[str] | None]:
    """Both paths: chunk -> graph score, what was reached, the hyperedges' provenance, the scope."""
    options, store = ctx.dual, ctx.store
    keywords = ctx.keywords(query.text)
    hits = GraphHits()
    edge_score: dict[str, float] = defaultdict(float)
    # Path I: entity keywords -> vertices -> incident hyperedges.
    for entity, (score, keyword) in keyword_entities(
        keywords.low, ctx, query.doc_ids, options.entities_per_keyword
    ).items():
        hits.entity_score[entity], hits.entity_via[entity] = score, keyword
    for edge, shares in spread_to_edges(hits.entity_score, ctx, ENTITY_LEVELS).items():
        edge_score[edge] += sum(shares.values())
        hits.edge_via.setdefault(edge, hits.entity_via[next(iter(shares))])
    # Path II: theme keywords -> hyperedges -> member vertices and source chunks.
    for edge, (score, keyword) in theme_keyword_edges(
        keywords.high, ctx, query.doc_ids, options.hyperedges_per_keyword
    ).items():
        edge_score[edge] += score
        hits.edge_via.setdefault(edge, keyword)

    scope = searchable_scope(query, ctx)
    scores, edges, prov = edge_chunk_scores(edge_score, ctx, scope)
    entity_prov = store.provenance("entity", list(hits.entity_score), store_scope(scope))
    add_scores(scores, chunk_scores(hits.entity_score, entity_prov, scope, factor=0.5))
    hits.edge_score = dict(edge_score)
    hits.edges = sorted(edges, key=lambda e: -edge_score[e.edge_id] * e.strength)
    return scores, hits, prov, scope


class DualStrategy(Traits):
    name = "dual"

    def __init__(self, with_flat: bool = True) -> None:
        self.with_flat = with_flat

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        scores, hits, prov, scope = dual_paths(query, ctx)
        fused, sources = fuse_with_flat(query, ctx, {"graph": ranked(scores)}, flat=self.with_flat)
        evidence = package(query.text, self.name, fused[: query.k], ctx, sources)
        keywords = ctx.keywords(query.text)
        evidence.meta["keywords"] = {"low": keywords.low, "high": keywords.high}
        # The structured part of the package: the entities and hyperedges that led to the chunks.
        evidence.entities = entity_hits(ctx, hits, scope)
        evidence.hyperedges = hyperedge_hits(ctx, hits, prov, scope)
        return evidence
