"""One question through one strategy: the call's knobs typed and applied, then what every answer needs
added to what the strategy found (statements judged wrong while indexing, documents not searched yet,
where the time went)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from hyperfolio.errors import HyperfolioError
from hyperfolio.model import DocumentInfo, EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext, Strategy, typed_knobs, with_knobs
from hyperfolio.retrieve.evidence import regroup
from hyperfolio.retrieve.inventory import inventory_first
from hyperfolio.retrieve.named_pages import named_pages_first
from hyperfolio.retrieve.outline import outline_first
from hyperfolio.retrieve.page_tables import page_tables_first
from hyperfolio.store.base import STAGE_READY


def ready_scope(doc: str | Sequence[str] | None, resolve: Callable[[str], DocumentInfo]) -> list[str] | None:
    """The ids of the documents a question is scoped to (None: the whole collection); a document not fully
    indexed yet is refused, with what finishes it."""
    if doc is None:
        return None
    refs = [doc] if isinstance(doc, str) else list(doc)
    if not refs:
        raise HyperfolioError("the document scope is an empty list: name at least one document, or leave it out")
    infos = [resolve(r) for r in refs]
    for info in infos:
        if info.status != STAGE_READY:
            raise HyperfolioError(
                f"{info.title} ({info.doc_id}) is not fully indexed yet (stage {info.status!r}); "
                "run `add` on it again to finish"
            )
    return [info.doc_id for info in infos]


def document_first(evidence: EvidencePackage, query: Query, ctx: RetrievalContext) -> EvidencePackage:
    """What a question asks of the document itself leads its evidence, whatever the ranking: the pages
    it names ("on page 14"), the tables of its best page when it works on a table's rows, the parts it
    counts or the pages it asks a list of (the whole document read), the headings under one it names."""
    evidence = page_tables_first(named_pages_first(evidence, query, ctx), query, ctx)
    return outline_first(inventory_first(evidence, query, ctx), query, ctx)


def run_strategy(
    strategy: Strategy,
    query: Query,
    ctx: RetrievalContext,
    options: dict[str, Any] | None,
    started: float,
) -> EvidencePackage:
    """`options` are typed against this strategy (unknown or mistyped: a ConfigError naming the knob);
    `started` is when the question came in, for the seconds the evidence reports."""
    if options:
        options = typed_knobs(strategy.name, options)
        ctx = with_knobs(ctx, strategy.name, options)
    evidence = strategy.retrieve(query, ctx)
    if not strategy.groups_by_modality and (options or {}).get("by_modality"):
        c = ctx.concept  # the shared modality-aware step, for any strategy
        evidence = regroup(evidence, {"text": c.k_text, "table": c.k_table, "image": c.k_image})
    evidence = document_first(evidence, query, ctx)
    store = ctx.store
    disputed = store.dropped_in([item.chunk.chunk_id for item in evidence.items])
    if disputed:  # statements judged wrong while indexing: answerers must not repeat them
        evidence.meta["disputed"] = [
            {"fact": d.fact, "instead": d.other, "chunks": d.evidence, "reason": d.reason} for d in disputed
        ]
    if query.doc_ids is None:  # a document still being indexed (or cut off) is not searched yet: say which
        unfinished = store.unfinished_documents()
        if unfinished:
            evidence.meta["not_fully_indexed"] = [
                {"doc_id": d.doc_id, "title": d.title, "source": d.source, "status": d.status} for d in unfinished
            ]
    evidence.meta["seconds"] = time.perf_counter() - started
    if ctx.times.seconds:  # where the strategy's time went (auto: candidates, features, ranker)
        evidence.meta["stage_seconds"] = dict(ctx.times.seconds)
    return evidence
