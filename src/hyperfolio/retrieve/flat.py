"""Flat baselines over chunks: BM25 (FTS5), dense (embeddings) and their RRF fusion."""

from __future__ import annotations

from hyperfolio.model import EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext, Traits
from hyperfolio.retrieve.evidence import package
from hyperfolio.retrieve.rankings import bm25_ranking, dense_ranking, fuse_with_flat


class BM25Strategy(Traits):
    name = "bm25"
    lexical = True

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        ranked = bm25_ranking(query, ctx, query.k)
        return package(query.text, self.name, ranked, ctx, {c: {"bm25": s} for c, s in ranked})


class DenseStrategy(Traits):
    name = "dense"

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        ranked = dense_ranking(query, ctx, query.k)
        return package(query.text, self.name, ranked, ctx, {c: {"dense": s} for c, s in ranked})


class HybridStrategy(Traits):
    name = "hybrid"

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        fused, sources = fuse_with_flat(query, ctx)
        return package(query.text, self.name, fused[: query.k], ctx, sources)
