"""Pass 2: all pages of a PDF, in order, made into the document's pages of chunks, with section paths,
a title and the file's metadata."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.model import Modality, Page
from hyperfolio.parse.chunking import Block, blocks_to_chunks
from hyperfolio.parse.pdf.folios import label_folios
from hyperfolio.parse.pdf.items import Item, PageData, PdfPart
from hyperfolio.parse.pdf.opening import ends_with_eof, open_pdf
from hyperfolio.parse.pdf.structure import (
    NUMBERED_HEADING,
    assign_font_headings,
    body_size,
    mark_furniture,
    toc_events,
)
from hyperfolio.parse.tree import SectionTracker

Events = dict[int, list[tuple[int, int, str]]]  # page -> [(item index, level, title)] from the outline


def _block(item: Item, section_path: list[str]) -> Block:
    """The chunking block of a page item under its section."""
    if item.kind == "text":
        modality: Modality = "formula" if item.math else "text"
        return Block(modality=modality, text=item.text, bbox=item.bbox, section_path=section_path)
    assert item.block is not None
    item.block.bbox = item.bbox
    item.block.section_path = section_path
    return item.block


def _continues(upper: Item, lower: Item) -> bool:
    """Whether a heading line continues the heading just above it: same level, set tight below it, and
    neither a numbered heading of its own nor after one that has ended ("A.2 Prompts" / "Prompts for the
    initial question" are two headings)."""
    gap = lower.bbox[1] - upper.bbox[3]
    overlap = min(upper.bbox[2], lower.bbox[2]) - max(upper.bbox[0], lower.bbox[0])
    numbered = NUMBERED_HEADING.match(upper.text) or NUMBERED_HEADING.match(lower.text)
    ended = upper.text.rstrip().endswith((":", "?", "!", "."))
    tight = -2.0 <= gap <= 0.5 * max(upper.size, lower.size)
    return upper.level == lower.level and tight and overlap > 0 and not numbered and not ended


def _page_blocks(
    page: PageData, events: list[tuple[int, int, str]], font_headings: bool, tracker: SectionTracker
) -> tuple[list[Block], bool]:
    """A page's blocks, the tracker entering sections as outline entries or headings pass, and whether
    the page holds text (judged on the items: a page of "[1] Smith ..." references is text too)."""
    pending = sorted(events, key=lambda e: e[0])
    blocks: list[Block] = []
    has_text = False
    previous: Item | None = None  # the item before, when it was a heading
    for index, item in enumerate(page.items):
        while pending and pending[0][0] <= index:
            _, level, heading = pending.pop(0)
            tracker.enter(level, heading)
        if item.role == "furniture" or (item.kind == "text" and item.role == "caption"):
            continue
        if font_headings and item.role == "heading":
            if previous is not None and _continues(previous, item):
                tracker.extend(item.text)  # "HAMILTON" / "COUNTY": one heading set on two lines
            else:
                tracker.enter(item.level, item.text)
        previous = item if item.role == "heading" else None
        has_text = has_text or (bool(item.text.strip()) if item.kind == "text" else not item.textless)
        blocks.append(_block(item, tracker.path))
    for _, level, heading in pending:
        tracker.enter(level, heading)
    return blocks, has_text


def _placeholder(page: PageData, section_path: list[str]) -> Block:
    """The stand-in text of a page without any: it still gets a unit, saying what it shows."""
    what = "image-only page" if page.image_count else "page"
    figures = f" with {page.image_count} figure{'s' if page.image_count != 1 else ''}" if page.image_count else ""
    return Block(
        modality="text",
        text=f"[Page {page.number}: {what}{figures}; no text recognised]",
        section_path=section_path,
        placeholder=True,
    )


def _page(page: PageData, events: Events | None, tracker: SectionTracker, options: ParseOptions) -> Page:
    """One page of the document, its sections continuing those of the pages before."""
    blocks, has_text = _page_blocks(page, (events or {}).get(page.number, []), events is None, tracker)
    if not has_text:
        blocks = [*blocks, _placeholder(page, tracker.path)]
    chunks = blocks_to_chunks(page.number, blocks, options)
    if page.label:
        for chunk in chunks:
            chunk.meta["page_label"] = page.label
    return Page(
        number=page.number,
        chunks=chunks,
        width=page.width,
        height=page.height,
        ocr=page.ocr,
        vision_dominant=page.vision_dominant,
    )


def _document_facts(
    path: Path, data: bytes, parts: Sequence[PdfPart], pages: list[PageData]
) -> tuple[dict[str, Any], Events | None, bool]:
    """The file's metadata, its outline placed on the pages, and whether it is damaged."""
    doc = open_pdf(path, data)
    try:
        metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
        events = toc_events(doc, pages)
        # MuPDF may repair lazily, on first use
        damaged = any(part.repaired for part in parts) or doc.is_repaired or not ends_with_eof(data)
    finally:
        doc.close()
    return metadata, events, damaged


def _title(pages: list[PageData], metadata: dict[str, Any]) -> str | None:
    """The document's title by the one title rule, the cover's layout and the file's metadata (imported
    here: the rule reads `parse.pdf.items`, whose package opens with this module)."""
    from hyperfolio.parse.title import pdf_title

    return pdf_title(pages, str(metadata.get("title") or "")) or None


def assemble_pdf(
    path: Path, data: bytes, parts: Sequence[PdfPart], options: ParseOptions
) -> tuple[list[Page], str | None, dict[str, Any]]:
    """Pass 2 over all pages, in order: furniture, headings, sections, chunks, title, metadata."""
    pages = sorted((p for part in parts for p in part.pages), key=lambda p: p.number)
    metadata, events, damaged = _document_facts(path, data, parts, pages)
    label_folios(pages)
    mark_furniture(pages)
    body = body_size(pages)
    if events is None:
        assign_font_headings(pages, body)
    title = _title(pages, metadata)
    tracker = SectionTracker()
    out = [_page(page, events, tracker, options) for page in pages]
    if damaged and not any((c.text.strip() and not c.placeholder) or c.image for p in out for c in p.chunks):
        raise ParseError(str(path), "not a valid PDF: the file is truncated or damaged; no content could be recovered")
    meta: dict[str, Any] = {"pdf_metadata": metadata, "body_font_size": body, "outline": events is not None}
    warnings = [warning for page in pages for warning in page.warnings]
    if warnings:
        meta["warnings"] = warnings
    return out, title, meta
