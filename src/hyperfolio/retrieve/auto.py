"""`auto`: one learned ranking over the candidates and features of every other source.

The union of BM25, dense, the hypergraph paths, the concept index and the theme layer is scored by
the learned ranker (`ranker.py`); chunks come back best first, and pages are ranked by their best
chunk, since people and benchmarks cite pages. Without a ranker in the context the packaged one is
used.
"""

from __future__ import annotations

import numpy as np

from hyperfolio.model import EvidencePackage, PageScore
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.evidence import package
from hyperfolio.retrieve.features import Candidates, candidate_features
from hyperfolio.retrieve.ranker import RankerSet, layout_of, load_ranker


def rank_pages(ranking: list[tuple[str, float]], page_of: dict[str, tuple[str, int]]) -> list[PageScore]:
    """Pages by their best chunk's score (ties: the page whose chunk came first)."""
    pages: dict[tuple[str, int], PageScore] = {}
    for chunk_id, score in ranking:
        key = page_of[chunk_id]
        if key not in pages:
            pages[key] = PageScore(key[0], key[1], score)
        pages[key].chunk_ids.append(chunk_id)
    return list(pages.values())


def score_candidates(candidates: Candidates, rankers: RankerSet, ctx: RetrievalContext) -> np.ndarray:
    """Each candidate scored by the ranker of its document's layout."""
    layouts: dict[str, str] = {}
    for doc_id in {c.doc_id for c in candidates.chunks}:
        info = ctx.store.get_document(doc_id)
        layouts[doc_id] = layout_of(info.kind if info else "")
    scores = np.zeros(len(candidates.chunks))
    for layout in set(layouts.values()):
        rows = [i for i, c in enumerate(candidates.chunks) if layouts[c.doc_id] == layout]
        scores[rows] = rankers.for_layout(layout).score(candidates.matrix[rows])
    return scores


def ranked_candidates(candidates: Candidates, rankers: RankerSet, ctx: RetrievalContext) -> list[tuple[str, float]]:
    scores = score_candidates(candidates, rankers, ctx)
    order = sorted(range(len(candidates.chunks)), key=lambda i: (-scores[i], candidates.chunks[i].chunk_id))
    return [(candidates.chunks[i].chunk_id, float(scores[i])) for i in order]


class AutoStrategy:
    name = "auto"

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        rankers = ctx.ranker or load_ranker()
        candidates = candidate_features(query, ctx, rankers.exclude)
        ranking = ranked_candidates(candidates, rankers, ctx)
        sources = {c.chunk_id: s for c, s in zip(candidates.chunks, candidates.sources, strict=True)}
        evidence = package(query.text, self.name, ranking[: query.k], ctx, sources)
        evidence.ranked_pages = rank_pages(ranking, {c.chunk_id: (c.doc_id, c.page) for c in candidates.chunks})
        keywords = candidates.meta.get("keywords")
        if keywords is not None:
            evidence.meta["keywords"] = {"low": keywords.low, "high": keywords.high}
        return evidence
