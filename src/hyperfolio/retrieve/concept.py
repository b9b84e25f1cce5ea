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
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.evidence import organise_by_modality, package, scaled_limits
from hyperfolio.retrieve.flat import reciprocal_rank_fusion
from hyperfolio.store.base import CHUNK_SPACE, CONCEPT_SPACE, RELATION_SPACE, item_of


def _best(hits: list[tuple[str, float]], limit: int) -> dict[str, float]:
    """Scoped keys "<item>|<doc>" folded to items, best score each, the top `limit`."""
    best: dict[str, float] = {}
    for key, score in hits:
        item = item_of(key)
        best[item] = max(score, best.get(item, score))
    return dict(sorted(best.items(), key=lambda kv: -kv[1])[:limit])


FLAT_DEPTH = 50  # flat candidates per signal before fusion


class ChunkScorer:
    """s(q, b): embedding similarity ("dense", the paper's), BM25 ("keyword": no query embedding,
    the fast path) or their reciprocal-rank fusion ("hybrid", the default)."""

    def __init__(self, mode: str, query: Query, ctx: RetrievalContext, docs: list[str] | None) -> None:
        if mode not in ("dense", "keyword", "hybrid"):
            raise ValueError(f"unknown chunk scoring {mode!r}; choose dense, keyword or hybrid")
        self.mode, self.ctx, self.docs = mode, ctx, docs
        self.vector = ctx.embedder.embed([query.text])[0] if mode != "keyword" else None
        self.keyword = ctx.store.keyword_search(query.text, FLAT_DEPTH, docs) if mode != "dense" else []

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


class ConceptStrategy:
    name = "concept"

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        o = ctx.concept
        docs = list(query.doc_ids) if query.doc_ids else None
        scorer = ChunkScorer(o.scoring, query, ctx, docs)
        graph_vector = (ctx.graph_embedder or ctx.embedder).embed([query.text])[0]
        fan = 1 if docs and len(docs) == 1 else 4  # one vector per (item, document): fetch more when unscoped
        chosen: set[str] = set()
        sources: dict[str, dict[str, float]] = {}
        meta: dict = {}
        if o.use_graph:
            found = _best(ctx.store.vector_search(CONCEPT_SPACE, graph_vector, o.concepts * fan, docs), o.concepts)
            anchors = {c: s for c, s in found.items() if s >= o.threshold}
            relations = _best(
                ctx.store.vector_search(RELATION_SPACE, graph_vector, o.relations * fan, docs), o.relations
            )
            reached = set(anchors)
            kept_edges = []
            if anchors and relations:
                for head, relation, tail, support in ctx.store.concept_edges_for(list(relations), docs):
                    if head in anchors or tail in anchors:
                        kept_edges.append((head, relation, tail, support))
                        reached.update((head, tail))
            chunk_ids = ctx.store.concept_chunks(list(reached), docs) if reached else []
            for chunk_id, score in scorer.rank(chunk_ids)[: o.graph_chunks]:
                chosen.add(chunk_id)
                sources[chunk_id] = {"concept": score}
            names = ctx.store.concept_names(list(reached))
            meta["concepts"] = [(names.get(c, c), round(s, 3)) for c, s in anchors.items()]
            meta["expanded_concepts"] = sorted(names.get(c, c) for c in reached - set(anchors))
            meta["relations"] = [(names.get(h, h), r, names.get(t, t)) for h, r, t, _ in kept_edges]
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
