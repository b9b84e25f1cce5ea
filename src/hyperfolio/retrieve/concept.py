"""Concept-anchor retrieval (HVM-GraphRAG 3.2, Algorithm 2): no entity-graph traversal at query time.

1. Concept anchors: the top-k_c concepts by similarity to the question, at least theta.
2. Propagation: the top-k_r relations by similarity, kept only when a concept edge with that
   relation touches an anchor; its endpoint concepts join the anchors.
3. Graph-guided evidence: the anchors' chunks from the concept -> chunk index, ranked by their
   similarity to the question, top K; plus the top-k_b chunks by direct similarity. See
   `ChunkScorer` for what similarity means: on the dev sets BM25 beats embeddings alone, so the
   default fuses both; the paper's embedding-only ranking and a BM25-only fast path are options.
4. Modality-aware organisation: text, table and image groups, each ranked and cut to its k_m, in
   that order. No language-model call is made before answering.
"""

from __future__ import annotations

from hyperfolio.model import EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext, Traits
from hyperfolio.retrieve.concept_paths import concept_reach
from hyperfolio.retrieve.evidence import organise_by_modality, package, scaled_limits
from hyperfolio.retrieve.rankings import bm25_ranking, query_vector, reciprocal_rank_fusion
from hyperfolio.store.base import CHUNK_SPACE

FLAT_DEPTH = 50  # flat candidates per signal before fusion


class ChunkScorer:
    """s(q, b): embedding similarity ("dense", the paper's), BM25 ("keyword": no query embedding,
    the fast path) or their reciprocal-rank fusion ("hybrid", the default)."""

    def __init__(self, mode: str, query: Query, ctx: RetrievalContext, docs: list[str] | None) -> None:
        if mode not in ("dense", "keyword", "hybrid"):
            raise ValueError(f"unknown chunk scoring {mode!r}; choose dense, keyword or hybrid")
        self.mode, self.ctx, self.docs = mode, ctx, docs
        self.vector = query_vector(query, ctx) if mode != "keyword" else None
        self.keyword = bm25_ranking(query, ctx, FLAT_DEPTH) if mode != "dense" else []

    def _fuse(self, dense: list[tuple[str, float]], keyword: list[tuple[str, float]]) -> list[tuple[str, float]]:
        if self.mode == "dense":
            return dense
        if self.mode == "keyword":
            return keyword
        fused, _ = reciprocal_rank_fusion({"dense": dense, "bm25": keyword}, self.ctx.rrf_k)
        return fused

    def rank(self, chunk_ids: list[str]) -> list[tuple[str, float]]:
        """These chunks, best first (under keyword scoring, only those BM25 matches at all)."""
        wanted = set(chunk_ids)
        dense: list[tuple[str, float]] = []
        if self.vector is not None:
            scores = self.ctx.store.vector_scores(CHUNK_SPACE, self.vector, chunk_ids)
            dense = sorted(scores.items(), key=lambda kv: -kv[1])
        return self._fuse(dense, [(c, s) for c, s in self.keyword if c in wanted])

    def top(self, k: int) -> list[tuple[str, float]]:
        """The best k chunks of the scope by direct similarity (the flat supplement)."""
        dense: list[tuple[str, float]] = []
        if self.vector is not None:
            dense = self.ctx.store.vector_search(CHUNK_SPACE, self.vector, max(k, FLAT_DEPTH), self.docs)
        return self._fuse(dense, self.keyword)[:k]


class ConceptStrategy(Traits):
    name = "concept"
    groups_by_modality = True

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        o = ctx.concept
        docs = list(query.doc_ids) if query.doc_ids else None
        scorer = ChunkScorer(o.scoring, query, ctx, docs)
        chosen: set[str] = set()
        sources: dict[str, dict[str, float]] = {}
        meta: dict = {}
        if o.use_graph:
            reach = concept_reach(query, ctx)
            for chunk_id, score in scorer.rank(sorted(reach.chunk_anchor))[: o.graph_chunks]:
                chosen.add(chunk_id)
                sources[chunk_id] = {"concept": score}
            meta.update(reach.describe(ctx))
        flat_k = o.flat_chunks if o.use_graph else o.flat_chunks + o.graph_chunks
        for chunk_id, score in scorer.top(flat_k):
            chosen.add(chunk_id)
            sources.setdefault(chunk_id, {})["flat"] = score
        ranked = scorer.rank(sorted(chosen))  # one ordering for the union, by the same measure
        ranked += [(c, 0.0) for c in sorted(chosen - {c for c, _ in ranked})]  # keyword scoring: unmatched last
        limits = scaled_limits({"text": o.k_text, "table": o.k_table, "image": o.k_image}, query.k)
        if o.by_modality:
            modality = {c.chunk_id: c.modality for c in ctx.store.get_chunks([c for c, _ in ranked])}
            ranked = organise_by_modality(ranked, modality, limits)
        else:
            ranked = ranked[: sum(limits.values())]
        evidence = package(query.text, self.name, ranked, ctx, sources)
        evidence.meta.update(meta)
        return evidence
