"""A PDF's cover read for its card: the first pages by the project's own reader (pass 1 only), with the
file's metadata title and outline (the cover itself: `parse.cover`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hyperfolio.config import ParseOptions
from hyperfolio.parse.cover import COVER_PAGES, Cover, cover_from_pdf_pages
from hyperfolio.parse.pdf.items import PageData

# Reading the cover only: tables and figure OCR cost time and add nothing a card needs.
COVER_OPTIONS = ParseOptions(tables=False, ocr_images=False)


def read_cover(
    path: Path, first: int = COVER_PAGES, options: ParseOptions = COVER_OPTIONS, data: bytes | None = None
) -> Cover:
    """The first pages of a PDF read by the project's own reader (pass 1 only, so a 500-page filing
    costs a few pages), with its metadata title and outline. `data`: the file's bytes, when read already
    (or decrypted)."""
    from hyperfolio.parse import read_file, read_pages

    data = read_file(path) if data is None else data
    count = _page_count(path, data)
    part = read_pages(path, data, options, list(range(min(first, count))))
    return pdf_cover(path, data, part.pages, count)


def pdf_cover(path: Path, data: bytes, pages: Sequence[PageData], page_count: int) -> Cover:
    """A PDF's cover from pass-1 pages already read (`add` reads them anyway: only the first `COVER_PAGES`
    are kept), with the file's metadata title and outline."""
    from hyperfolio.parse.pdf import open_pdf

    doc = open_pdf(path, data)
    try:
        title = str((doc.metadata or {}).get("title") or "")
        try:
            outline = [(int(level), " ".join(str(name).split())) for level, name, _ in doc.get_toc(simple=True)]
        except Exception:  # a damaged outline: the card does without it
            outline = []
    finally:
        doc.close()
    cover = cover_from_pdf_pages([p for p in pages if p.number <= COVER_PAGES], page_count)
    cover.metadata_title = title
    cover.outline = [(level, name) for level, name in outline if name]
    return cover


def _page_count(path: Path, data: bytes) -> int:
    from hyperfolio.parse.pdf import open_pdf

    doc = open_pdf(path, data)
    try:
        return int(doc.page_count)
    finally:
        doc.close()
