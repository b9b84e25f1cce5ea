"""Features that read a candidate's whole document, and the flat prior every ranking starts from.

A question asked of a folder must first find its documents: a 500-page 10-K and a 20-page brochure
both put candidates in the pool, and which document holds the question's rare words, ranks best and
gathers most of the fused score decides more than any one chunk's features. Within one document these
columns are equal for every candidate, so a scoped question is ranked as before.

Position is a share of the document (page 40 of 50 and page 400 of 500 are both near the end), and
the fused BM25 + dense ranking enters as its reciprocal rank and a slowly decaying log rank, so the
learned model corrects a strong baseline instead of having to rebuild it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from hyperfolio.model import Chunk
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.feature_table import FEATURE_INDEX
from hyperfolio.retrieve.rankings import Ranking, reciprocal_rank_fusion
from hyperfolio.retrieve.routing import card_matches, card_text_scores

PageKey = tuple[str, int]
_LOG_DEPTH = math.log1p(100)  # the fused flat ranking holds at most twice a source's depth


def document_features(
    matrix: np.ndarray,
    chunks: list[Chunk],
    page_words: Mapping[PageKey, str],
    idf: Mapping[str, float],
    query: Query,
    ctx: RetrievalContext,
) -> None:
    """Fill the `document` columns and `page_pos`; `base` must be filled already (see `_page_features`),
    `page_words` hold each candidate page's words (packed, `word_sets.py`) and `idf` the question's words'
    weights over them."""
    col = FEATURE_INDEX
    base = matrix[:, col["base"]]
    rows_of: dict[str, list[int]] = defaultdict(list)
    for i, chunk in enumerate(chunks):
        rows_of[chunk.doc_id].append(i)
    pages = _page_counts(ctx, list(rows_of))
    best = {doc_id: float(base[rows].max()) for doc_id, rows in rows_of.items()}
    rank = {doc_id: r for r, doc_id in enumerate(sorted(best, key=lambda d: (-best[d], d)), start=1)}
    total_base = float(base.sum()) or 1.0
    total_idf = sum(idf.values()) or 1.0
    cards = card_matches(query, ctx)
    card_text = card_text_scores(query, ctx)
    for doc_id, rows in rows_of.items():
        held = "".join({page_words.get((chunks[i].doc_id, chunks[i].page), " ") for i in rows})
        matrix[rows, col["doc_best"]] = best[doc_id]
        matrix[rows, col["doc_rr"]] = 1.0 / rank[doc_id]
        matrix[rows, col["doc_share"]] = float(base[rows].sum()) / total_base
        matrix[rows, col["doc_idf_cover"]] = sum(w for word, w in idf.items() if f" {word} " in held) / total_idf
        matrix[rows, col["doc_pages"]] = math.log1p(pages[doc_id]) / 7.0
        matrix[rows, col["card_text"]] = card_text.get(doc_id, 0.0)
        card = cards.get(doc_id)
        if card is not None:
            matrix[rows, col["card_org"]] = card.org_match
            matrix[rows, col["card_period"]] = card.period_match
            matrix[rows, col["card_type"]] = card.type_match
        span = max(1, pages[doc_id] - 1)
        for i in rows:
            matrix[i, col["page_pos"]] = min(1.0, (chunks[i].page - 1) / span)


def flat_prior(matrix: np.ndarray, row: Mapping[str, int], rankings: Mapping[str, Ranking], rrf_k: int) -> None:
    """The fused BM25 + dense ranking (what `hybrid` returns) as two columns: 1/rank, and a log rank
    that still tells the 30th candidate from the 90th."""
    flat = {name: rankings[name] for name in ("bm25", "dense") if name in rankings}
    if not flat:
        return
    fused, _ = reciprocal_rank_fusion(flat, rrf_k)
    col = FEATURE_INDEX
    for position, (chunk_id, _) in enumerate(fused, start=1):
        i = row.get(chunk_id)
        if i is None:
            continue
        matrix[i, col["flat_rr"]] = 1.0 / position
        matrix[i, col["flat_logrank"]] = max(0.0, 1.0 - math.log(position) / _LOG_DEPTH)


def _page_counts(ctx: RetrievalContext, doc_ids: list[str]) -> dict[str, int]:
    """Page counts of the candidates' documents: one read for a scoped question, else from the ready
    documents routing has already read for this call."""
    if len(doc_ids) == 1:
        info = ctx.store.get_document(doc_ids[0])
        return {doc_ids[0]: max(1, info.num_pages) if info else 1}
    known = {d.doc_id: d.num_pages for d in ctx.ready_documents()}
    return {doc_id: max(1, known.get(doc_id, 1)) for doc_id in doc_ids}
