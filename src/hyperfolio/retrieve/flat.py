"""Flat baselines over chunks: BM25 (FTS5), dense (embeddings) and their RRF fusion."""

from __future__ import annotations

from hyperfolio.model import EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.evidence import package
from hyperfolio.store.base import CHUNK_SPACE


def bm25_ranking(query: Query, ctx: RetrievalContext, depth: int) -> list[tuple[str, float]]:
    return ctx.store.keyword_search(query.text, depth, query.doc_ids)


def dense_ranking(query: Query, ctx: RetrievalContext, depth: int) -> list[tuple[str, float]]:
    vector = ctx.embedder.embed([query.text])[0]
    return ctx.store.vector_search(CHUNK_SPACE, vector, depth, query.doc_ids)


class BM25Strategy:
    name = "bm25"

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        ranked = bm25_ranking(query, ctx, query.k)
        return package(query.text, self.name, ranked, ctx, {c: {"bm25": s} for c, s in ranked})


class DenseStrategy:
    name = "dense"

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        ranked = dense_ranking(query, ctx, query.k)
        return package(query.text, self.name, ranked, ctx, {c: {"dense": s} for c, s in ranked})


def reciprocal_rank_fusion(
    rankings: dict[str, list[tuple[str, float]]], k: int
) -> tuple[list[tuple[str, float]], dict[str, dict[str, float]]]:
    """Score each id by sum of 1/(k + rank) over the rankings it appears in (Cormack et al., 2009)."""
    fused: dict[str, float] = {}
    sources: dict[str, dict[str, float]] = {}
    for name, ranking in rankings.items():
        for rank, (item, score) in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
            sources.setdefault(item, {})[name] = score
    ordered = sorted(fused.items(), key=lambda kv: kv[1], reverse=True)
    return ordered, sources


class HybridStrategy:
    name = "hybrid"

    def __init__(self, depth_factor: int = 5, min_depth: int = 50) -> None:
        self.depth_factor = depth_factor
        self.min_depth = min_depth

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        depth = max(self.min_depth, query.k * self.depth_factor)
        fused, sources = reciprocal_rank_fusion(
            {"bm25": bm25_ranking(query, ctx, depth), "dense": dense_ranking(query, ctx, depth)},
            ctx.rrf_k,
        )
        return package(query.text, self.name, fused[: query.k], ctx, sources)
