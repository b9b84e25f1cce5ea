"""Turning ranked chunk ids into an evidence package with citations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext


def cite(chunk: Chunk, titles: dict[str, str]) -> Citation:
    return Citation(
        doc_id=chunk.doc_id,
        title=titles.get(chunk.doc_id, chunk.doc_id),
        page=chunk.page,
        bbox=chunk.bbox,
        section_path=list(chunk.section_path),
        chunk_id=chunk.chunk_id,
        modality=chunk.modality,
        page_label=str(chunk.meta.get("page_label", "")),
    )


def brought_in(
    chunks: Sequence[Chunk], among: Sequence[EvidenceItem], score: float, titles: dict[str, str], source: str
) -> list[EvidenceItem]:
    """`chunks` as evidence items, each as ranked where `among` has it, else new at `score` and marked by
    the rule that brought it (`source`, say "named_page"): a chunk a question's own words call for."""
    ranked = {item.chunk.chunk_id: item for item in among}
    unique = {chunk.chunk_id: chunk for chunk in chunks}.values()
    return [ranked.get(c.chunk_id) or EvidenceItem(c, score, 0, cite(c, titles), {source: 1.0}) for c in unique]


def led_by(items: Sequence[EvidenceItem], first: Sequence[EvidenceItem], limit: int) -> list[EvidenceItem]:
    """`first`, then the other items as ranked, at most `limit`, ranked anew: what a question asks of the
    document itself (a page it names, the parts it counts) leads whatever the ranking found."""
    leading = {item.chunk.chunk_id for item in first}
    kept = [*first, *(item for item in items if item.chunk.chunk_id not in leading)][:limit]
    return [replace(item, rank=rank) for rank, item in enumerate(kept, 1)]


def reading_order(ctx: RetrievalContext, doc_id: str) -> list[Chunk]:
    """A document's chunks as it is read: page by page, each page's in order."""
    return sorted(ctx.store.iter_chunks(doc_id), key=lambda c: (c.page, c.order))


def asked_document(evidence: EvidencePackage, query: Query) -> str | None:
    """The document a question about a whole document reads: the one it is scoped to, else that of its
    best evidence; None with neither."""
    if query.doc_ids:
        return query.doc_ids[0]
    return evidence.items[0].chunk.doc_id if evidence.items else None


def read_whole_first(
    evidence: EvidencePackage, query: Query, ctx: RetrievalContext, chunks: Sequence[Chunk], found: dict, source: str
) -> EvidencePackage:
    """The evidence with what reading the whole document found (`found`, for the answerer, in
    `meta["inventory"]`) and the chunks that show it first, within the evidence's length."""
    limit = max(len(evidence.items), query.k)
    top = max((item.score for item in evidence.items), default=1.0)
    leading = brought_in(chunks, evidence.items, top, ctx.titles, source)[:limit]
    items = led_by(evidence.items, leading, limit)
    return replace(evidence, items=items, meta={**evidence.meta, "inventory": found})


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


MODALITY_ORDER = ("text", "table", "image")


def modality_group(modality: str) -> str:
    """Chunk modality -> evidence group: formulas read as text."""
    return modality if modality in ("table", "image") else "text"


def organise_by_modality(
    ranked: Sequence[tuple[str, float]], modality_of: Mapping[str, str], limits: dict[str, int], fill: bool = True
) -> list[tuple[str, float]]:
    """Modality-aware organisation (HVM-GraphRAG 3.2.3): the candidates split into text, table and
    image groups, each ranked by score and cut to its limit, then laid out in that fixed order so an
    answerer reads like with like. With `fill`, slots a modality leaves empty (a document without
    figures) go to the next best candidates of the other modalities instead of being wasted."""
    groups: dict[str, list[tuple[str, float]]] = {m: [] for m in MODALITY_ORDER}
    rest: list[tuple[str, float]] = []
    for chunk_id, score in sorted(ranked, key=lambda r: -r[1]):
        group = modality_group(modality_of.get(chunk_id, "text"))
        if len(groups[group]) < limits.get(group, 0):
            groups[group].append((chunk_id, score))
        else:
            rest.append((chunk_id, score))
    if fill:
        room = sum(limits.values()) - sum(len(g) for g in groups.values())
        for chunk_id, score in rest[: max(0, room)]:
            groups[modality_group(modality_of.get(chunk_id, "text"))].append((chunk_id, score))
    return [item for m in MODALITY_ORDER for item in groups[m]]


def scaled_limits(limits: dict[str, int], k: int) -> dict[str, int]:
    """Per-modality limits rescaled to a total of k (each at least 1 when it was positive)."""
    total = sum(limits.values())
    if total == k or total == 0:
        return dict(limits)
    scaled = {m: max(1, round(n * k / total)) if n else 0 for m, n in limits.items()}
    while sum(scaled.values()) > k:  # rounding up can overshoot: trim the largest group
        largest = max(scaled, key=lambda m: scaled[m])
        scaled[largest] -= 1
    return scaled


def regroup(evidence: EvidencePackage, limits: dict[str, int]) -> EvidencePackage:
    """Any strategy's package laid out by modality (the shared step of `organise_by_modality`)."""
    by_id = {item.chunk.chunk_id: item for item in evidence.items}
    ranked = organise_by_modality(
        [(cid, item.score) for cid, item in by_id.items()],
        {cid: item.chunk.modality for cid, item in by_id.items()},
        scaled_limits(limits, len(by_id)) if sum(limits.values()) > len(by_id) else limits,
    )
    evidence.items = [by_id[cid] for cid, _ in ranked]
    for rank, item in enumerate(evidence.items, 1):
        item.rank = rank
    evidence.meta["by_modality"] = True
    return evidence
