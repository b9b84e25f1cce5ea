"""A question that works on a table's rows reads the tables on the page of its best evidence.

"Which executive directors attended more than 6 meetings?", "how many companies do A, B and C hold
directorships of, collectively?", "which region has the highest revenue?", "the top-3 shareholders'
combined share": the answer is read off a table's rows together (`answer/table_answers.py`,
`answer/arithmetic.py`, `answer/row_sums.py`), and a ranking that found the
right page may still rank that page's prose above its table. Such a question gets the tables of its best
page right after that page's first chunk, within the evidence's length.
"""

from __future__ import annotations

from dataclasses import replace

from hyperfolio.answer.arithmetic import listed_names, operation_of
from hyperfolio.answer.expected import core_question
from hyperfolio.answer.row_sums import asks_row_sum
from hyperfolio.answer.table_answers import asks_rows
from hyperfolio.model import EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.evidence import brought_in


def works_on_rows(question: str) -> bool:
    """A superlative, a threshold, rows of a kind, a sum or average over names the question lists, or a
    sum of rows it asks as one quantity (two named shares, the top N)."""
    core = core_question(question)
    listed = operation_of(core) in {"sum", "average"} and bool(listed_names(core))
    return asks_rows(core) or listed or asks_row_sum(core)


def page_tables_first(evidence: EvidencePackage, query: Query, ctx: RetrievalContext) -> EvidencePackage:
    """The evidence with the best page's tables after that page's first chunk (moved up from below the
    first `query.k` items, or added); unchanged when the question does not work on rows, or the page's
    tables are all among the first `query.k` already."""
    if not evidence.items or not works_on_rows(query.text):
        return evidence
    best = evidence.ranked_pages[0] if evidence.ranked_pages else evidence.items[0].chunk
    key = (best.doc_id, best.page)
    top, below = evidence.items[: query.k], evidence.items[query.k :]
    shown = {item.chunk.chunk_id for item in top}
    ids = [chunk_id for chunk_id, _ in ctx.store.page_chunk_texts([key]).get(key, []) if chunk_id not in shown]
    tables = sorted((c for c in ctx.store.get_chunks(ids) if c.modality == "table"), key=lambda c: c.order)
    if not tables:
        return evidence
    at = next((i + 1 for i, item in enumerate(top) if (item.chunk.doc_id, item.chunk.page) == key), 0)
    score = top[max(0, at - 1)].score
    added = brought_in(tables, below, score, ctx.titles, "page_table")
    moved = {c.chunk_id for c in tables}
    rest = [item for item in below if item.chunk.chunk_id not in moved]
    kept = [*top[:at], *added, *top[at:], *rest][: max(len(evidence.items), query.k)]
    return replace(evidence, items=[replace(item, rank=rank) for rank, item in enumerate(kept, 1)])
