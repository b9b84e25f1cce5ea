"""Turning ranked chunk ids into an evidence package with citations."""

from __future__ import annotations

from collections.abc import Sequence

from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage
from hyperfolio.retrieve.base import RetrievalContext


def cite(chunk: Chunk, titles: dict[str, str]) -> Citation:
    return Citation(
        doc_id=chunk.doc_id,
        title=titles.get(chunk.doc_id, chunk.doc_id),
        page=chunk.page,
        bbox=chunk.bbox,
        section_path=list(chunk.section_path),
        chunk_id=chunk.chunk_id,
        modality=chunk.modality,
    )


def package(
    question: str,
    strategy: str,
    ranked: Sequence[tuple[str, float]],
    ctx: RetrievalContext,
    sources: dict[str, dict[str, float]] | None = None,
) -> EvidencePackage:
    """Load the chunks behind `ranked` (already in order) and cite each one."""
    chunks = {c.chunk_id: c for c in ctx.store.get_chunks([cid for cid, _ in ranked])}
    items: list[EvidenceItem] = []
    for chunk_id, score in ranked:
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        items.append(
            EvidenceItem(
                chunk=chunk,
                score=score,
                rank=len(items) + 1,
                citation=cite(chunk, ctx.titles),
                sources=(sources or {}).get(chunk_id, {}),
            )
        )
    return EvidencePackage(question=question, strategy=strategy, items=items)
