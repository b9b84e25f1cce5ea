"""The first pages of a document as lines with their type size and place: what a person sees on a
cover. Built from the PDF reader's pass-1 pages (which keep sizes and weights), or, for other formats
and when those are gone, from the parsed chunks (sizes unknown, so the layout rules step aside). The
title rule reads it (`parse.title`), and so does a document's card (`cards/`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from hyperfolio.model import Document
from hyperfolio.parse.pdf.items import Item, PageData

COVER_PAGES = 6  # an SEC cover may follow a glossy one, and a printed contents page the cover


@dataclass(frozen=True)
class CoverLine:
    text: str
    page: int  # 1-based
    top: float  # fraction of the page height where the line starts
    bottom: float
    size: float = 0.0  # type size in points; 0 when the format does not say
    bold: bool = False
    vertical: bool = False  # rotated text (an arXiv stamp) is never a title


@dataclass
class CoverPage:
    number: int  # 1-based
    width: float = 0.0
    height: float = 0.0
    lines: list[CoverLine] = field(default_factory=list)
    ocr: bool = False
    images: int = 0

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def landscape(self) -> bool:
        return self.width > 1.15 * self.height > 0


@dataclass
class Cover:
    """A document's first pages and what the rest of it says about them."""

    pages: list[CoverPage] = field(default_factory=list)
    page_count: int = 0  # of the whole document
    metadata_title: str = ""
    outline: list[tuple[int, str]] = field(default_factory=list)  # (level, title) of the PDF outline

    @property
    def body_size(self) -> float:
        """The most common type size by characters: the yardstick for a title standing out."""
        weights: Counter[float] = Counter()
        for page in self.pages:
            for line in page.lines:
                if line.size > 0:
                    weights[round(line.size, 1)] += len(line.text)
        return weights.most_common(1)[0][0] if weights else 0.0

    @property
    def text(self) -> str:
        return "\n".join(page.text for page in self.pages)


def _item_lines(item: Item, page: int, height: float) -> list[CoverLine]:
    """What a person reads of one pass-1 item: a text segment is a line; a table, one line per row (an SEC
    cover sets the registrant's names and numbers in a table, which a reader with tables on finds as one)."""
    top, bottom = item.bbox[1] / height, item.bbox[3] / height
    if item.kind == "text" and item.text.strip():
        text = " ".join(item.text.split())
        return [CoverLine(text, page, top, bottom, item.size, item.bold, item.vertical)]
    rows = item.block.table if item.kind == "table" and item.block is not None else None
    if not rows:
        return []
    step = (bottom - top) / len(rows)
    texts = [" ".join(" ".join(cell.split()) for cell in row if cell and cell.strip()) for row in rows]
    return [CoverLine(t, page, top + i * step, top + (i + 1) * step) for i, t in enumerate(texts) if t]


def cover_from_pdf_pages(pages: Sequence[PageData], page_count: int = 0) -> Cover:
    """A cover from the PDF reader's pass-1 pages (`hyperfolio.parse.read_pages`), first pages first."""
    out = []
    for page in sorted(pages, key=lambda p: p.number):
        height = page.height or 1.0
        lines = [line for item in page.items for line in _item_lines(item, page.number, height)]
        images = page.image_count or sum(1 for item in page.items if item.kind == "image")
        out.append(CoverPage(page.number, page.width, page.height, lines, page.ocr, images))
    return Cover(out, page_count or len(out))


def cover_from_document(document: Document, first: int = COVER_PAGES) -> Cover:
    """A cover from parsed chunks: their text and place, without type sizes."""
    out = []
    for page in document.pages[:first]:
        height = page.height or 1.0
        lines = []
        for chunk in page.chunks:
            if chunk.placeholder or chunk.modality == "image" or not chunk.text.strip():
                continue
            top, bottom = (chunk.bbox[1] / height, chunk.bbox[3] / height) if chunk.bbox else (0.5, 0.5)
            for text in chunk.text.splitlines():
                if text.strip():
                    lines.append(CoverLine(" ".join(text.split()), page.number, top, bottom))
        out.append(CoverPage(page.number, page.width, page.height, lines, page.ocr))
    meta = document.meta.get("pdf_metadata") or {}
    return Cover(out, len(document.pages), str(meta.get("title") or ""))
