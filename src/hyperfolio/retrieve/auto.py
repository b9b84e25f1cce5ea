"""`auto`: one learned ranking over the candidates and features of every other source.

The union of BM25, dense, the hypergraph paths, the concept index and the theme layer is scored by
the learned ranker (`ranker.py`); chunks come back best first, and pages are ranked by their best
chunk, since people and benchmarks cite pages. Without a ranker in the context the packaged one is
used.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hyperfolio.answer.conflicts import cross_document_decisions
from hyperfolio.model import EvidenceItem, EvidencePackage, PageScore
from hyperfolio.retrieve.base import Query, Rankers, RetrievalContext, Traits
from hyperfolio.retrieve.evidence import cite
from hyperfolio.retrieve.features import Candidates, candidate_features, source_rankings
from hyperfolio.retrieve.ranker import layout_of, load_ranker
from hyperfolio.retrieve.routing import Route, collection_cards, quota_order, routed


def rank_pages(ranking: list[tuple[str, float]], page_of: dict[str, tuple[str, int]]) -> list[PageScore]:
    """Pages by their best chunk's score (ties: the page whose chunk came first)."""
    pages: dict[tuple[str, int], PageScore] = {}
    for chunk_id, score in ranking:
        key = page_of[chunk_id]
        if key not in pages:
            pages[key] = PageScore(key[0], key[1], score)
        pages[key].chunk_ids.append(chunk_id)
    return list(pages.values())


def score_candidates(candidates: Candidates, rankers: Rankers, ctx: RetrievalContext) -> np.ndarray:
    """Each candidate scored by the ranker of its document's layout."""
    docs = {c.doc_id for c in candidates.chunks}
    kinds = {d.doc_id: d.kind for d in ctx.ready_documents() if d.doc_id in docs} if len(docs) > 1 else {}
    layouts: dict[str, str] = {}
    for doc_id in docs:  # the kinds of ready documents are at hand; any other is read
        if doc_id not in kinds:
            info = ctx.store.get_document(doc_id)
            kinds[doc_id] = info.kind if info else ""
        layouts[doc_id] = layout_of(kinds[doc_id])
    scores = np.zeros(len(candidates.chunks))
    for layout in set(layouts.values()):
        rows = [i for i, c in enumerate(candidates.chunks) if layouts[c.doc_id] == layout]
        scores[rows] = rankers.for_layout(layout).score(candidates.matrix[rows])
    return scores


def order_rows(candidates: Candidates, scores: np.ndarray) -> list[tuple[int, float]]:
    """Candidate rows best first (ties by chunk id, so the order is deterministic)."""
    order = sorted(range(len(candidates.chunks)), key=lambda i: (-scores[i], candidates.chunks[i].chunk_id))
    return [(i, float(scores[i])) for i in order]


def candidate_package(
    question: str,
    strategy: str,
    candidates: Candidates,
    order: Sequence[tuple[int, float]],
    titles: dict[str, str],
    k: int | None = None,
) -> EvidencePackage:
    """The package of the first k ranked candidates — their chunks are at hand, so none is read again —
    with every candidate page ranked by its best chunk."""
    evidence = EvidencePackage(question, strategy)
    for rank, (i, score) in enumerate(order[:k], 1):
        chunk = candidates.chunks[i]
        evidence.items.append(EvidenceItem(chunk, score, rank, cite(chunk, titles), candidates.sources[i]))
    evidence.ranked_pages = rank_pages(
        [(candidates.chunks[i].chunk_id, score) for i, score in order],
        {c.chunk_id: (c.doc_id, c.page) for c in candidates.chunks},
    )
    return evidence


class AutoStrategy(Traits):
    name = "auto"
    needs_ranker = True

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        rankers = ctx.ranker or load_ranker()
        query, found = routed(query, ctx)  # a question naming its documents ranks their pages only
        with ctx.times.stage("candidates"):
            source_rankings(query, ctx)  # every source's ranking, kept in the call's memo for the features
        with ctx.times.stage("features"):
            candidates = candidate_features(query, ctx, rankers.exclude)
        with ctx.times.stage("ranker"):
            order = order_rows(candidates, score_candidates(candidates, rankers, ctx))
            if found is not None and found.across:
                doc_of = [c.doc_id for c in candidates.chunks]
                order = quota_order(order, doc_of, found.doc_ids, query.k)
            evidence = candidate_package(query.text, self.name, candidates, order, ctx.titles, query.k)
        keywords = candidates.meta.get("keywords")
        if keywords is not None:
            evidence.meta["keywords"] = {"low": keywords.low, "high": keywords.high}
        if found is not None:
            routed_meta(evidence, found, ctx)
        return evidence


def routed_meta(evidence: EvidencePackage, found: Route, ctx: RetrievalContext) -> None:
    """Where routing sent the question: each document with its title, organisation and period (from its
    card; an answer across documents reads them to tell a disagreement from two organisations or two
    periods), and - across documents - the stored reconciliation decisions between two of them that the
    evidence holds both sides of."""
    cards = {card.doc_id: card for card in collection_cards(ctx, found.doc_ids)}
    evidence.meta["routed_to"] = [
        {
            "doc_id": d,
            "title": ctx.titles.get(d, d),
            "organisation": cards[d].organisation if d in cards else "",
            "period": cards[d].period if d in cards else "",
        }
        for d in found.doc_ids
    ]
    evidence.meta["across_documents"] = found.across
    if found.across:
        chunk_ids = {item.chunk.chunk_id for item in evidence.items}
        decisions = cross_document_decisions(ctx.store, found.doc_ids, chunk_ids)
        if decisions:
            evidence.meta["cross_decisions"] = decisions
