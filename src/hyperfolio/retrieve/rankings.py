"""Flat rankings over chunks and their fusion, shared by every strategy that mixes sources.

BM25 comes from the store's keyword index, dense from the chunk vectors; both are memoised per
question (`QueryMemo`), so strategies that fuse them with graph rankings fetch each once.
"""

from __future__ import annotations

from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.store.base import CHUNK_SPACE

Ranking = list[tuple[str, float]]


def _scope(query: Query) -> tuple[str, ...] | None:
    return tuple(query.doc_ids) if query.doc_ids else None


def query_vector(query: Query, ctx: RetrievalContext):
    """The question under the chunk embedder, once per call."""
    return ctx.memo.embed(ctx.embedder, [query.text])[0]


def graph_vectors(texts: list[str], ctx: RetrievalContext):
    """Texts (the question, its keywords) under the graph embedder, once each per call."""
    return ctx.memo.embed(ctx.graph_embedder or ctx.embedder, texts)


def bm25_ranking(query: Query, ctx: RetrievalContext, depth: int) -> Ranking:
    return ctx.memo.value(
        ("bm25", query.text, depth, _scope(query)),
        lambda: ctx.store.keyword_search(query.text, depth, query.doc_ids),
    )


def dense_ranking(query: Query, ctx: RetrievalContext, depth: int) -> Ranking:
    return ctx.memo.value(
        ("dense", query.text, depth, _scope(query)),
        lambda: ctx.store.vector_search(CHUNK_SPACE, query_vector(query, ctx), depth, query.doc_ids),
    )


def reciprocal_rank_fusion(rankings: dict[str, Ranking], k: int) -> tuple[Ranking, dict[str, dict[str, float]]]:
    """Score each id by sum of 1/(k + rank) over the rankings it appears in (Cormack et al., 2009)."""
    fused: dict[str, float] = {}
    sources: dict[str, dict[str, float]] = {}
    for name, ranking in rankings.items():
        for rank, (item, score) in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
            sources.setdefault(item, {})[name] = score
    ordered = sorted(fused.items(), key=lambda kv: kv[1], reverse=True)
    return ordered, sources


def flat_depth(k: int) -> int:
    """How deep each source is read before fusion."""
    return max(50, k * 5)


def fuse_with_flat(
    query: Query, ctx: RetrievalContext, others: dict[str, Ranking] | None = None, flat: bool = True
) -> tuple[Ranking, dict[str, dict[str, float]]]:
    """BM25 and dense (unless `flat` is off) fused with any other rankings by reciprocal rank."""
    depth = flat_depth(query.k)
    rankings = {name: ranking[:depth] for name, ranking in (others or {}).items()}
    if flat:
        rankings["bm25"] = bm25_ranking(query, ctx, depth)
        rankings["dense"] = dense_ranking(query, ctx, depth)
    return reciprocal_rank_fusion(rankings, ctx.rrf_k)
