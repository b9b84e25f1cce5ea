"""Pass 1: each page read on its own (so workers can share a document): text or OCR, tables,
figures, in reading order, within the page's time and size limits."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pymupdf

from hyperfolio.config import ParseOptions
from hyperfolio.parse.limits import keep_first_chars
from hyperfolio.parse.pdf.figures import attach_captions, claim_text, fill_figure, raster_images, vector_charts
from hyperfolio.parse.pdf.items import TEXT_FLAGS, Item, PageData, PdfPart, area, center_inside, intersection, log
from hyperfolio.parse.pdf.opening import open_pdf
from hyperfolio.parse.pdf.tables import caption_tables, find_tables
from hyperfolio.parse.pdf.text import ocr_page, reading_order, segments


def _page_label(page: pymupdf.Page) -> str:
    """The page's printed label when the PDF defines page labels; '' when it does not or it is the number."""
    try:
        label = (page.get_label() or "").strip()
    except Exception:  # a damaged label tree must not cost the page
        return ""
    return "" if label == str(page.number + 1) else label


def _read_page(page: pymupdf.Page, options: ParseOptions) -> PageData:
    """One page's items, timed by stage (text is what the other stages leave)."""
    began = time.perf_counter()
    data = PageData(number=page.number + 1, width=page.rect.width, height=page.rect.height, label=_page_label(page))
    _fill_page(page, data, options)
    data.times.add("text", time.perf_counter() - began - data.times.total)
    return data


def _overdue(started: float, data: PageData, options: ParseOptions, skipped: str) -> bool:
    """Whether the page has run past parse.page_seconds; then it keeps what it has, with a warning."""
    if time.perf_counter() - started <= options.page_seconds:
        return False
    data.warn(
        f"page {data.number} took more than {options.page_seconds:g} s; indexed without its {skipped} "
        "(parse.page_seconds)"
    )
    return True


def _oversized_image(page: pymupdf.Page, data: PageData, options: ParseOptions) -> bool:
    """Whether the page uses an image larger than parse.max_image_pixels, by the sizes its image
    dictionaries declare (nothing decoded). Locating, rendering or OCR-ing such a page would decode it
    (625 MB and a minute for one 25,000 x 25,000 image), so the page keeps its text and tables only."""
    try:
        images = page.get_images(full=True)
    except Exception:  # a damaged resource dictionary: the page's own reading copes or fails
        return False
    for image in images:
        width, height = int(image[2] or 0), int(image[3] or 0)
        if width * height > options.max_image_pixels:
            data.warn(
                f"page {data.number} draws an image of {width:,} x {height:,} pixels; the limit is "
                f"{options.max_image_pixels:,} pixels (parse.max_image_pixels): indexed without OCR and figures"
            )
            return True
    return False


def _ocr_if_scanned(
    page: pymupdf.Page, native: list[Item], data: PageData, options: ParseOptions, oversized: bool
) -> list[Item]:
    """The page's text: OCR'd when its text layer is missing or thin over a full-page image, and OCR
    reads clearly more than the layer holds (the layer's own segments kept beside OCR's); else the text
    layer's segments."""
    native_chars = sum(len(s.text) for s in native)
    # A scan with a thin text layer (a stamp, a page header) is still a scan: OCR it whole.
    scanned = (
        not oversized
        and native_chars < 300
        and any(area(pymupdf.Rect(i["bbox"]) & page.rect) >= 0.8 * page.rect.get_area() for i in page.get_image_info())
    )
    if not (options.ocr and not oversized and (native_chars < options.min_page_chars or scanned)):
        return native
    with data.times.stage("page ocr"):
        ocr_segments = ocr_page(page, options)
    ocr_chars = sum(len(s.text) for s in ocr_segments)
    needed = native_chars if native_chars < options.min_page_chars else max(native_chars * 1.5, native_chars + 40)
    if ocr_chars > needed:
        data.ocr = True
        return native + [s for s in ocr_segments if not _read_already(s, native)]
    return native


def _read_already(ocr_segment: Item, native: list[Item]) -> bool:
    """Whether most of an OCR'd segment lies on the text layer's own segments: the layer's text is exact
    (a cover's title set as text over a picture), so it is kept and OCR's reading of it dropped."""
    covered = sum(intersection(ocr_segment.bbox, seg.bbox) for seg in native)
    return covered >= 0.5 * max(area(ocr_segment.bbox), 1e-6)


def _cap_chars(text: list[Item], data: PageData, options: ParseOptions) -> list[Item]:
    """The page's text within parse.max_page_chars."""
    total = sum(len(s.text) for s in text)
    if total <= options.max_page_chars:
        return text
    data.warn(f"page {data.number} has {total} characters; keeping the first {options.max_page_chars}")
    return keep_first_chars(text, options.max_page_chars)


def _fill_page(page: pymupdf.Page, data: PageData, options: ParseOptions) -> None:
    started = time.perf_counter()
    text_dict = page.get_text("dict", flags=TEXT_FLAGS, sort=True)
    native = segments(text_dict, ocr=False)
    oversized = _oversized_image(page, data, options)
    text = _cap_chars(_ocr_if_scanned(page, native, data, options, oversized), data, options)
    if _overdue(started, data, options, "tables and figures"):
        data.items = reading_order(text, data.width, data.height)
        return
    drawings = page.get_drawings()
    with data.times.stage("tables"):
        tables = find_tables(page, drawings, options, text_dict)
    if oversized or _overdue(started, data, options, "figures"):
        text = [s for s in text if not any(center_inside(s.bbox, t.bbox) for t in tables)]
        caption_tables(tables)
        data.items = reading_order(text + tables, data.width, data.height)
        return
    _place_figures(page, data, options, text, tables, drawings)


def _place_figures(
    page: pymupdf.Page,
    data: PageData,
    options: ParseOptions,
    text: list[Item],
    tables: list[Item],
    drawings: list[dict[str, Any]],
) -> None:
    """The page's figures found, captioned and rendered; the text they and the tables claim moved to
    them; everything put in reading order."""
    figures_began = time.perf_counter()
    images = raster_images(page, options)
    text_chars = sum(len(s.text) for s in text)
    page_area = page.rect.get_area() or 1.0
    # An image over most of the page is the page scan itself, or a background behind real text.
    kept_images = [i for i in images if not (area(i.bbox) / page_area > 0.8 and (data.ocr or text_chars > 300))]
    charts = vector_charts(page, drawings, [i.bbox for i in tables + images], options)
    figures = kept_images + charts
    data.image_count = len(figures)
    covered = sum(area(i.bbox) for i in images) / page_area
    data.vision_dominant = bool(figures or images) and (
        (covered >= 0.5 and text_chars < 500) or text_chars < options.min_page_chars
    )
    items = claim_text(text, tables, charts) + tables + figures
    attach_captions(items)
    for fig in figures:
        fill_figure(page, fig, data, options)
    data.times.add("figures", time.perf_counter() - figures_began - data.times.seconds.get("figure ocr", 0.0))
    caption_tables(tables)
    data.items = reading_order(items, data.width, data.height)


def read_pdf_pages(
    path: Path,
    data: bytes,
    options: ParseOptions,
    numbers: Sequence[int] | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> PdfPart:
    """Pass 1 on the given 0-based pages (all by default): each page's items, independent of the others.

    `on_page(done, total)` is called after each page so long documents can show progress.
    """
    doc = open_pdf(path, data)
    try:
        pages: list[PageData] = []
        wanted = list(range(doc.page_count)) if numbers is None else list(numbers)
        for done, index in enumerate(wanted):
            page = doc[index]
            try:
                pages.append(_read_page(page, options))
            except Exception as exc:  # one broken page should not sink a long document
                log.warning("%s: page %d could not be read: %s", path, page.number + 1, exc)
                pages.append(PageData(number=page.number + 1, width=page.rect.width, height=page.rect.height))
            if on_page is not None:
                on_page(done + 1, len(wanted))
        return PdfPart(pages, repaired=doc.is_repaired)
    finally:
        doc.close()
