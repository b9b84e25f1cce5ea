"""Figures on a PDF page: raster images and clusters of vector drawings (charts, diagrams), their
captions, the labels drawn on them, and the rendered, OCR'd picture that makes each searchable."""

from __future__ import annotations

from typing import Any

import pymupdf

from hyperfolio.config import ParseOptions
from hyperfolio.model import BBox
from hyperfolio.parse.chunking import Block
from hyperfolio.parse.ocr import ocr_image
from hyperfolio.parse.pdf.items import CAPTION_RE, Item, PageData, area, center_inside, inside, intersection, log

MAX_FIGURES_PER_PAGE = 8
MAX_CHARTS_PER_PAGE = 4
IMAGE_DPI = 150
MAX_IMAGE_SIDE_PX = 1600


def _render(page: pymupdf.Page, bbox: BBox) -> bytes:
    """PNG of a page region as it looks (masks, overlays and vector art included)."""
    rect = pymupdf.Rect(bbox) & page.rect
    longest = max(rect.width, rect.height, 1.0)
    dpi = max(36, min(IMAGE_DPI, int(MAX_IMAGE_SIDE_PX * 72 / longest)))
    return page.get_pixmap(clip=rect, dpi=dpi, alpha=False).tobytes("png")


def _figure(bbox: BBox, source: str) -> Item:
    return Item(kind="image", bbox=bbox, block=Block(modality="image", text="", meta={"source": source}))


def raster_images(page: pymupdf.Page, options: ParseOptions) -> list[Item]:
    page_area = page.rect.get_area() or 1.0
    seen: list[BBox] = []
    items = []
    for info in page.get_image_info(xrefs=True):
        rect = pymupdf.Rect(info["bbox"]) & page.rect
        if rect.is_empty:
            continue
        bbox: BBox = (rect.x0, rect.y0, rect.x1, rect.y1)
        if area(bbox) < options.min_image_area * page_area:
            continue
        if any(intersection(bbox, s) > 0.9 * min(area(bbox), area(s)) for s in seen):
            continue
        seen.append(bbox)
        items.append(_figure(bbox, "raster"))
    items.sort(key=lambda i: -area(i.bbox))
    return items[:MAX_FIGURES_PER_PAGE]


DISPLAY_TYPE = 18.0  # points: titles and headlines are set this large, chart labels never


def vector_charts(
    page: pymupdf.Page, drawings: list[dict[str, Any]], taken: list[BBox], options: ParseOptions
) -> list[Item]:
    """Large clusters of vector drawings that are neither tables nor raster images: charts, diagrams."""
    if len(drawings) < 8:
        return []
    page_area = page.rect.get_area() or 1.0
    try:
        clusters = page.cluster_drawings(drawings=drawings)
    except Exception:
        return []
    items = []
    for rect in clusters:
        bbox: BBox = (rect.x0, rect.y0, rect.x1, rect.y1)
        share = area(bbox) / page_area
        if share < max(options.min_image_area, 0.03) or share > 0.85:
            continue
        if any(intersection(bbox, t) > 0.3 * area(bbox) for t in taken):
            continue
        paths = sum(1 for d in drawings if inside(tuple(d["rect"]), bbox, 0.9))
        if paths < 8:
            continue
        items.append(_figure(bbox, "vector"))
    items.sort(key=lambda i: -area(i.bbox))
    return items[:MAX_CHARTS_PER_PAGE]


def _is_chart_label(seg: Item, chart: BBox, margin: float = 18.0) -> bool:
    """Short text inside a chart, or hugging its edge, that is not the caption nor set in display type
    (a cover's title over a collage of coloured panels is the page's text, not a label)."""
    if len(seg.text) >= 120 or CAPTION_RE.match(seg.text) or seg.size >= DISPLAY_TYPE:
        return False
    if inside(seg.bbox, chart, 0.8):
        return True
    grown = (chart[0] - margin, chart[1] - margin, chart[2] + margin, chart[3] + margin)
    return len(seg.text) < 60 and inside(seg.bbox, grown, 0.95)


def claim_text(segments: list[Item], tables: list[Item], charts: list[Item]) -> list[Item]:
    """The segments left to the page's text: text inside a table belongs to its cells; short labels on
    or around a vector chart (axis ticks, legends) belong to the chart, which grows to include them."""
    remaining = []
    for seg in segments:
        if any(center_inside(seg.bbox, t.bbox) for t in tables):
            continue
        chart = next((c for c in charts if _is_chart_label(seg, c.bbox)), None)
        if chart is not None:
            assert chart.block is not None
            chart.block.meta.setdefault("labels", []).append(seg.text)
            chart.block.meta.setdefault("label_boxes", []).append(seg.bbox)
            continue
        remaining.append(seg)
    for chart in charts:
        assert chart.block is not None
        for box in chart.block.meta.pop("label_boxes", []):
            chart.bbox = (
                min(chart.bbox[0], box[0]),
                min(chart.bbox[1], box[1]),
                max(chart.bbox[2], box[2]),
                max(chart.bbox[3], box[3]),
            )
    return remaining


def attach_captions(page_items: list[Item]) -> None:
    """Give each table or figure the nearest 'Table N' / 'Figure N' line just above or below it."""
    captions = [i for i in page_items if i.kind == "text" and CAPTION_RE.match(i.text) and len(i.text) < 600]
    used: set[int] = set()
    for target in [i for i in page_items if i.kind in ("table", "image")]:
        want_table = target.kind == "table"
        best: tuple[float, Item] | None = None
        for cap in captions:
            if id(cap) in used:
                continue
            is_table_cap = cap.text.lstrip().lower().startswith(("table", "tab."))
            if is_table_cap != want_table:
                continue
            overlap = min(cap.bbox[2], target.bbox[2]) - max(cap.bbox[0], target.bbox[0])
            if overlap <= 0:
                continue
            below = cap.bbox[1] - target.bbox[3]
            above = target.bbox[1] - cap.bbox[3]
            gap = min(d for d in (below, above) if d >= -4) if max(below, above) >= -4 else None
            if gap is None or gap > 40:
                continue
            if best is None or gap < best[0]:
                best = (gap, cap)
        if best is not None:
            cap = best[1]
            used.add(id(cap))
            cap.role = "caption"
            assert target.block is not None
            target.block.caption = cap.text


def fill_figure(page: pymupdf.Page, fig: Item, data: PageData, options: ParseOptions) -> None:
    """Render the figure, OCR raster ones, and compose the text that makes it searchable."""
    block = fig.block
    assert block is not None
    try:
        block.image = _render(page, fig.bbox)
    except Exception as exc:
        log.warning("page %d: cannot render figure: %s", data.number, exc)
    labels = block.meta.pop("labels", [])
    if (
        block.meta.get("source") == "raster"
        and block.image
        and options.ocr
        and options.ocr_images
        and not data.ocr
        and (fig.bbox[2] - fig.bbox[0]) > 40
        and (fig.bbox[3] - fig.bbox[1]) > 20
    ):
        with data.times.stage("figure ocr"):
            block.ocr_text = ocr_image(block.image, options.ocr_language, timeout=15) or None
    parts = [block.caption] if block.caption else []
    if labels:
        parts.append(" ".join(labels))
    if block.ocr_text:
        parts.append(block.ocr_text)
    kind = "chart or diagram" if block.meta.get("source") == "vector" else "image"
    block.text = "\n".join(parts) if parts else f"[{kind} on page {data.number}]"
    fig.textless = not parts
