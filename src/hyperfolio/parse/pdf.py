"""PDF parsing with PyMuPDF: text blocks, headings, tables, figures and OCR per page.

Two passes. The first reads each page once (text spans with sizes and weights, or OCR
when the page has no text layer; tables on pages that have ruling lines; raster and
vector figures with captions) and orders everything for reading. The second needs the
whole document: body font size, heading levels (or the PDF outline when there is one),
running headers to drop, and then section paths and chunks.
"""

from __future__ import annotations

import logging
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.model import BBox, Modality, Page
from hyperfolio.parse.chunking import Block, blocks_to_chunks, table_text
from hyperfolio.parse.limits import keep_first_chars
from hyperfolio.parse.ocr import ocr_image, ocr_textpage, tesseract_available
from hyperfolio.parse.tree import SectionTracker, clean_heading, heading_key, level_for, rank_levels
from hyperfolio.timing import StageTimes

log = logging.getLogger(__name__)

_TEXT_FLAGS = (pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES) | pymupdf.TEXT_MEDIABOX_CLIP
CAPTION_RE = re.compile(
    r"^\s*(fig(?:ure)?\.?|table|tab\.|chart|exhibit|graph|diagram|plate|scheme|algorithm)\s*"
    r"([0-9]+[0-9.\-]*[a-z]?|[ivxlc]+\b|[a-z]\b)\s*[:.\-–—)]?",
    re.IGNORECASE,
)
_MATH_FONT = re.compile(r"CMMI|CMSY|CMEX|MSBM|MSAM|Math|Symbol|STIX|CambriaMath|rsfs|esint", re.IGNORECASE)
_MATH_CHARS = set("=+−-×÷±∓∑∏∫∮√∞∂∇≤≥≠≈≡∝∈∉⊂⊆⊃∪∩∀∃→←↔⇒⇔αβγδεζηθικλμνξπρστυφχψωΓΔΘΛΞΠΣΦΨΩ^_()[]{}|/")
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_NUMBER = re.compile(r"[-+−–(]?\s*[$€£¥]?\s*\d[\d,.'’\s]*(?:%|‰|[kKmMbB]n?)?\)?\*?")
_BAD_TITLES = {"untitled", "contents", "document", "slide 1", "powerpoint presentation", "title", "ug"}

MAX_FIGURES_PER_PAGE = 8
MAX_CHARTS_PER_PAGE = 4
IMAGE_DPI = 150
MAX_IMAGE_SIDE_PX = 1600


@dataclass
class _Item:
    """Anything placed on a page before chunking: a text segment, table or figure."""

    kind: str  # "text", "table", "image"
    bbox: BBox
    text: str = ""
    size: float = 0.0
    bold: bool = False
    n_lines: int = 1
    math: bool = False
    vertical: bool = False  # rotated text (arXiv stamps, axis titles) never heads a section
    role: str = "text"  # text | heading | caption | formula | furniture
    level: int = 0
    block: Block | None = None  # prepared payload for tables and images
    textless: bool = False  # a figure whose text is only a "[image on page N]" stand-in


@dataclass
class _PageData:
    number: int
    width: float
    height: float
    items: list[_Item] = field(default_factory=list)
    ocr: bool = False
    vision_dominant: bool = False
    image_count: int = 0
    warnings: list[str] = field(default_factory=list)
    label: str = ""  # the printed page label where the PDF defines labels ("iv", "5")
    times: StageTimes = field(default_factory=StageTimes)


# ---------------------------------------------------------------- opening


def open_pdf(path: Path, data: bytes) -> pymupdf.Document:
    """Open and validate: corrupt, truncated, encrypted and empty PDFs become ParseErrors."""
    name = str(path)
    if not data.lstrip()[:1024].startswith(b"%PDF") and b"%PDF-" not in data[:1024]:
        raise ParseError(name, "not a valid PDF: no %PDF header (the file is corrupt or not a PDF)")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise ParseError(name, f"not a valid PDF: {exc}") from exc
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise ParseError(
            name,
            "encrypted; a password is required to read this PDF "
            "(hyperfolio add --password, or Collection.add(..., password=...))",
        )
    if doc.is_repaired and b"%%EOF" not in data[-2048:]:
        doc.close()
        raise ParseError(name, "not a valid PDF: the file is truncated (no end-of-file marker)")
    if doc.page_count == 0:
        doc.close()
        raise ParseError(name, "the PDF has zero pages")
    return doc


def _ends_with_eof(data: bytes) -> bool:
    """Whether the file ends with its %%EOF marker, as a complete PDF does (trailing whitespace aside)."""
    return data[-4096:].rstrip(b"\x00\t\n\f\r ").endswith(b"%%EOF")


def meaningful_title(title: str | None) -> str | None:
    """A metadata title worth showing, or None for the filenames and boilerplate tools leave."""
    if not title:
        return None
    title = " ".join(title.split())
    low = title.lower()
    if len(title) < 4 or low in _BAD_TITLES or not any(ch.isalpha() for ch in title):
        return None
    if re.search(r"\.(pdf|docx?|pptx?|xlsx?|indd|tex|dvi|qxd|html?)$", low) or low.startswith(
        ("microsoft word", "microsoft powerpoint", "untitled")
    ):
        return None
    return title


# ---------------------------------------------------------------- text


def _is_bold(span: dict[str, Any]) -> bool:
    return bool(span["flags"] & 16) or bool(_BOLD_FONT.search(span.get("font", "")))


def _line_text(line: dict[str, Any]) -> str:
    """Join spans, adding the spaces OCR and some generators leave implicit as gaps."""
    out = ""
    prev: dict[str, Any] | None = None
    for span in line["spans"]:
        text = span["text"]
        if prev is not None and out and not out.endswith(" ") and not text.startswith(" "):
            gap = span["bbox"][0] - prev["bbox"][2]
            if gap > 0.15 * max(1.0, span["size"]):
                out += " "
        out += text
        prev = span
    return out


def _join_lines(lines: list[str]) -> str:
    """Lines of one paragraph into one string, undoing end-of-line hyphenation."""
    out = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and line[:1].islower():
            out = out[:-1] + line
        elif out:
            out += " " + line
        else:
            out = line
    return out


def _segments(text_dict: dict[str, Any], ocr: bool) -> list[_Item]:
    """Text blocks split where the line style changes, so a heading glued to its paragraph separates."""
    items: list[_Item] = []
    for block in text_dict.get("blocks", []):
        if block.get("type") != 0:
            continue
        groups: list[list[tuple[dict[str, Any], str, float, bool, int, int]]] = []
        for line in block.get("lines", []):
            spans = [s for s in line.get("spans", []) if s["text"].strip()]
            if not spans:
                continue
            text = _line_text({"spans": spans})
            weights = [len(s["text"].strip()) for s in spans]
            total = sum(weights) or 1
            if ocr:
                size = float(statistics.median(s["size"] for s in spans))
            else:
                by_size: Counter[float] = Counter()
                for s, w in zip(spans, weights, strict=True):
                    by_size[round(s["size"] * 2) / 2] += w
                size = by_size.most_common(1)[0][0]
            bold_chars = sum(w for s, w in zip(spans, weights, strict=True) if _is_bold(s))
            math_chars = sum(w for s, w in zip(spans, weights, strict=True) if _MATH_FONT.search(s.get("font", "")))
            bold = bold_chars >= 0.8 * total
            style = (size if not ocr else 0.0, bold if not ocr else False)
            entry = (line, text, size, bold, math_chars, total)
            if groups and (ocr or (round(groups[-1][-1][2] * 2) / 2, groups[-1][-1][3]) == style):
                groups[-1].append(entry)
            else:
                groups.append([entry])
        for group in groups:
            text = _join_lines([g[1] for g in group])
            if not text.strip():
                continue
            x0 = min(g[0]["bbox"][0] for g in group)
            y0 = min(g[0]["bbox"][1] for g in group)
            x1 = max(g[0]["bbox"][2] for g in group)
            y1 = max(g[0]["bbox"][3] for g in group)
            total = sum(g[5] for g in group) or 1
            sizes = [g[2] for g in group]
            size = float(statistics.median(sizes)) if ocr else max(set(sizes), key=sizes.count)
            items.append(
                _Item(
                    kind="text",
                    bbox=(x0, y0, x1, y1),
                    text=text,
                    size=round(size * 2) / 2 if ocr else size,
                    bold=all(g[3] for g in group),
                    n_lines=len(group),
                    math=not ocr and _looks_like_formula(text, sum(g[4] for g in group) / total),
                    vertical=any(abs(g[0].get("dir", (1, 0))[1]) > 0.1 for g in group),
                )
            )
    return items


def _looks_like_formula(text: str, math_font_share: float) -> bool:
    """Cheap display-math test: math fonts or symbol density, and little running prose."""
    stripped = text.replace(" ", "")
    if len(stripped) < 3 or len(text) > 600:
        return False
    words = re.findall(r"[A-Za-z]{4,}", text)
    if len(words) > 8:
        return False
    symbols = sum(ch in _MATH_CHARS for ch in stripped) / len(stripped)
    has_relation = any(ch in text for ch in "=≤≥≈∝∈→⇒")
    return (math_font_share >= 0.5 and has_relation) or (symbols >= 0.25 and has_relation)


# ---------------------------------------------------------------- geometry


def _area(b: BBox) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _intersection(a: BBox, b: BBox) -> float:
    return _area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def _inside(inner: BBox, outer: BBox, share: float = 0.6) -> bool:
    a = _area(inner)
    return a > 0 and _intersection(inner, outer) >= share * a


def _center_inside(inner: BBox, outer: BBox) -> bool:
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


def reading_order(items: list[_Item], width: float, height: float) -> list[_Item]:
    """Top-to-bottom, and column by column where the page has a two-column body.

    Wide items (titles, full-width figures) cut the page into bands; inside a band the
    left column is read before the right one.
    """
    mid = width / 2
    narrow = [
        i for i in items if (i.bbox[2] - i.bbox[0]) < 0.55 * width and not (i.bbox[0] < mid - 8 < mid + 8 < i.bbox[2])
    ]
    left_h = sum(i.bbox[3] - i.bbox[1] for i in narrow if (i.bbox[0] + i.bbox[2]) / 2 < mid)
    right_h = sum(i.bbox[3] - i.bbox[1] for i in narrow if (i.bbox[0] + i.bbox[2]) / 2 >= mid)
    by_row = sorted(items, key=lambda i: (round(i.bbox[1] / 4), i.bbox[0]))
    if left_h < 0.15 * height or right_h < 0.15 * height:
        return by_row
    narrow_ids = {id(i) for i in narrow}
    out: list[_Item] = []
    band: list[_Item] = []
    for item in sorted(items, key=lambda i: (i.bbox[1], i.bbox[0])):
        if id(item) in narrow_ids:
            band.append(item)
            continue
        out.extend(sorted(band, key=lambda i: ((i.bbox[0] + i.bbox[2]) / 2 >= mid, i.bbox[1])))
        band = []
        out.append(item)
    out.extend(sorted(band, key=lambda i: ((i.bbox[0] + i.bbox[2]) / 2 >= mid, i.bbox[1])))
    return out


# ---------------------------------------------------------------- tables and figures


def _ruling_stats(drawings: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Counts of horizontal rules, vertical rules and filled boxes: the signs of a table."""
    horizontal = vertical = boxes = 0
    for path in drawings:
        for item in path.get("items", []):
            op = item[0]
            if op == "l":
                p1, p2 = item[1], item[2]
                if abs(p1.y - p2.y) < 1 and abs(p1.x - p2.x) > 15:
                    horizontal += 1
                elif abs(p1.x - p2.x) < 1 and abs(p1.y - p2.y) > 8:
                    vertical += 1
            elif op == "re":
                r = item[1]
                if r.height < 2.5 and r.width > 15:
                    horizontal += 1
                elif r.width < 2.5 and r.height > 8:
                    vertical += 1
                elif r.width > 15 and r.height > 8:
                    boxes += 1
    return horizontal, vertical, boxes


def _clean_table(rows: list[list[str | None]]) -> list[list[str]]:
    cells = [[" ".join((c or "").split()) for c in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return []
    width = max(len(r) for r in cells)
    cells = [r + [""] * (width - len(r)) for r in cells]
    keep = [j for j in range(width) if any(r[j] for r in cells)]
    return [[r[j] for j in keep] for r in cells]


def _cell_texts(table: Any, words: list[tuple[Any, ...]]) -> list[list[str | None]]:
    """Cell strings rebuilt from the page's words: keeps spaces and decimal points that
    PyMuPDF's own table text sometimes loses."""
    rows: list[list[str | None]] = []
    for row in table.rows:
        out: list[str | None] = []
        for cell in row.cells:
            if cell is None:
                out.append(None)
                continue
            x0, y0, x1, y1 = cell
            inside = [w for w in words if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1]
            out.append(" ".join(w[4] for w in inside))
        rows.append(out)
    return rows


def _is_number(cell: str) -> bool:
    return bool(_NUMBER.fullmatch(cell.strip()))


def _row_bold(bbox: BBox, spans: list[tuple[BBox, bool]]) -> bool | None:
    """Whether all text in a table row is bold; None when the row holds no text."""
    inside = [bold for box, bold in spans if _center_inside(box, bbox)]
    return all(inside) if inside else None


def _header_rows(table: Any, rows: list[list[str]], spans: list[tuple[BBox, bool]], external: bool) -> int:
    """1 when the table's first row is a header, else 0.

    A header is one PyMuPDF found above the grid (`external`), a row of labels over a
    column of numbers, or a bold row over regular text.
    """
    if external:
        return 1
    if len(rows) < 2:
        return 0
    first, body = rows[0], rows[1:]
    labels = [c for c in first if c]
    if labels and not any(_is_number(c) for c in labels):
        for j in range(len(first)):
            column = [r[j] for r in body if r[j]]
            if column and sum(_is_number(c) for c in column) >= 0.6 * len(column):
                return 1
    weights: list[bool] = []
    for row in getattr(table, "rows", []):
        bold = _row_bold(tuple(row.bbox), spans)
        if bold is not None:
            weights.append(bold)
        if len(weights) == 2:
            break
    return 1 if len(weights) == 2 and weights[0] and not weights[1] else 0


def _tables(
    page: pymupdf.Page,
    drawings: list[dict[str, Any]],
    options: ParseOptions,
    text_dict: dict[str, Any] | None = None,
) -> list[_Item]:
    """Detected tables with cells; only on pages whose drawings could form a grid (find_tables is slow)."""
    if not options.tables:
        return []
    horizontal, vertical, boxes = _ruling_stats(drawings)
    if horizontal + vertical < 4 and boxes < 6:
        return []
    if vertical < 2 and boxes < 6:
        # The line finder needs vertical edges too: rules across the page alone (separators, booktabs)
        # gave no table on any of the 61 such dev pages, and cost a sixth of the detector's time.
        return []
    try:
        # PyMuPDF 2 gates its line-based finder by an ONNX layout model by default: ~0.6 s a page on
        # two cores, most of the indexing time. The ruling gate above does that job cheaply.
        found = page.find_tables(use_layout=options.table_layout)
    except Exception as exc:
        log.warning("page %d: table detection failed: %s", page.number + 1, exc)
        return []
    items = []
    words = page.get_text("words", flags=_TEXT_FLAGS, sort=True) if found.tables else []
    spans = [
        (tuple(span["bbox"]), _is_bold(span))
        for block in (text_dict or {}).get("blocks", [])
        for line in block.get("lines", [])
        for span in line.get("spans", [])
        if span["text"].strip()
    ]
    for table in found.tables:
        try:
            rows = _clean_table(_cell_texts(table, words))
        except Exception as exc:
            log.warning("page %d: table extraction failed: %s", page.number + 1, exc)
            continue
        filled = [c for r in rows for c in r if c]
        if len(rows) < 2 or len(rows[0]) < 2 or len(filled) < 4:
            continue
        if len(filled) < 0.2 * len(rows) * len(rows[0]) or (len(rows) <= 2 and len(rows[0]) >= 8):
            continue  # sparse or one-line "grids" come from maps and decorations
        if sum(len(c) for c in filled) / len(filled) > 150:
            continue  # boxes around prose, not a grid of values
        external = False
        header = getattr(table, "header", None)
        if header is not None and getattr(header, "external", False):
            names = [" ".join((n or "").split()) for n in header.names]
            filled_names = [n for n in names if n]
            plausible = len(filled_names) * 2 >= len(names) and not any(CAPTION_RE.match(n) for n in filled_names)
            if plausible and len(names) == len(rows[0]):
                rows = [names, *rows]
                external = True
        header_rows = _header_rows(table, rows, spans, external)
        bbox = tuple(table.bbox)
        items.append(
            _Item(
                kind="table",
                bbox=bbox,
                block=Block(modality="table", text="", table=rows, table_header_rows=header_rows),
            )
        )
    return items


def _render(page: pymupdf.Page, bbox: BBox) -> bytes:
    """PNG of a page region as it looks (masks, overlays and vector art included)."""
    rect = pymupdf.Rect(bbox) & page.rect
    longest = max(rect.width, rect.height, 1.0)
    dpi = max(36, min(IMAGE_DPI, int(MAX_IMAGE_SIDE_PX * 72 / longest)))
    return page.get_pixmap(clip=rect, dpi=dpi, alpha=False).tobytes("png")


def _raster_images(page: pymupdf.Page, options: ParseOptions) -> list[_Item]:
    page_area = page.rect.get_area() or 1.0
    seen: list[BBox] = []
    items = []
    for info in page.get_image_info(xrefs=True):
        rect = pymupdf.Rect(info["bbox"]) & page.rect
        if rect.is_empty:
            continue
        bbox: BBox = (rect.x0, rect.y0, rect.x1, rect.y1)
        if _area(bbox) < options.min_image_area * page_area:
            continue
        if any(_intersection(bbox, s) > 0.9 * min(_area(bbox), _area(s)) for s in seen):
            continue
        seen.append(bbox)
        items.append(_Item(kind="image", bbox=bbox, block=Block(modality="image", text="", meta={"source": "raster"})))
    items.sort(key=lambda i: -_area(i.bbox))
    return items[:MAX_FIGURES_PER_PAGE]


def _vector_charts(
    page: pymupdf.Page, drawings: list[dict[str, Any]], taken: list[BBox], options: ParseOptions
) -> list[_Item]:
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
        share = _area(bbox) / page_area
        if share < max(options.min_image_area, 0.03) or share > 0.85:
            continue
        if any(_intersection(bbox, t) > 0.3 * _area(bbox) for t in taken):
            continue
        paths = sum(1 for d in drawings if _inside(tuple(d["rect"]), bbox, 0.9))
        if paths < 8:
            continue
        items.append(_Item(kind="image", bbox=bbox, block=Block(modality="image", text="", meta={"source": "vector"})))
    items.sort(key=lambda i: -_area(i.bbox))
    return items[:MAX_CHARTS_PER_PAGE]


def _is_chart_label(seg: _Item, chart: BBox, margin: float = 18.0) -> bool:
    """Short text inside a chart, or hugging its edge, that is not the caption."""
    if len(seg.text) >= 120 or CAPTION_RE.match(seg.text):
        return False
    if _inside(seg.bbox, chart, 0.8):
        return True
    grown = (chart[0] - margin, chart[1] - margin, chart[2] + margin, chart[3] + margin)
    return len(seg.text) < 60 and _inside(seg.bbox, grown, 0.95)


def _attach_captions(page_items: list[_Item]) -> None:
    """Give each table or figure the nearest 'Table N' / 'Figure N' line just above or below it."""
    captions = [i for i in page_items if i.kind == "text" and CAPTION_RE.match(i.text) and len(i.text) < 600]
    used: set[int] = set()
    for target in [i for i in page_items if i.kind in ("table", "image")]:
        want_table = target.kind == "table"
        best: tuple[float, _Item] | None = None
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


# ---------------------------------------------------------------- pass 1: one page


def _page_label(page: pymupdf.Page) -> str:
    """The page's printed label when the PDF defines page labels; '' when it does not or it is the number."""
    try:
        label = (page.get_label() or "").strip()
    except Exception:  # a damaged label tree must not cost the page
        return ""
    return "" if label == str(page.number + 1) else label


def _read_page(page: pymupdf.Page, options: ParseOptions) -> _PageData:
    """One page's items, timed by stage (text is what the other stages leave)."""
    began = time.perf_counter()
    data = _PageData(number=page.number + 1, width=page.rect.width, height=page.rect.height, label=_page_label(page))
    _fill_page(page, data, options)
    data.times.add("text", time.perf_counter() - began - data.times.total)
    return data


def _caption_tables(tables: list[_Item]) -> None:
    """Each table's indexed text, once captions are attached: the caption, then its rows."""
    for tab in tables:
        assert tab.block is not None and tab.block.table is not None
        tab.block.text = table_text(tab.block.table, tab.block.caption)


def _overdue(started: float, data: _PageData, options: ParseOptions, skipped: str) -> bool:
    """Whether the page has run past parse.page_seconds; then it keeps what it has, with a warning."""
    if time.perf_counter() - started <= options.page_seconds:
        return False
    message = (
        f"page {data.number} took more than {options.page_seconds:g} s; indexed without its {skipped} "
        "(parse.page_seconds)"
    )
    log.warning(message)
    data.warnings.append(message)
    return True


def _oversized_image(page: pymupdf.Page, data: _PageData, options: ParseOptions) -> bool:
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
            message = (
                f"page {data.number} draws an image of {width:,} x {height:,} pixels; the limit is "
                f"{options.max_image_pixels:,} pixels (parse.max_image_pixels): indexed without OCR and figures"
            )
            log.warning(message)
            data.warnings.append(message)
            return True
    return False


def _fill_page(page: pymupdf.Page, data: _PageData, options: ParseOptions) -> None:
    started = time.perf_counter()
    number = data.number
    text_dict = page.get_text("dict", flags=_TEXT_FLAGS, sort=True)
    segments = _segments(text_dict, ocr=False)
    native_chars = sum(len(s.text) for s in segments)
    oversized = _oversized_image(page, data, options)
    # A scan with a thin text layer (a stamp, a page header) is still a scan: OCR it whole.
    scanned = (
        not oversized
        and native_chars < 300
        and any(_area(pymupdf.Rect(i["bbox"]) & page.rect) >= 0.8 * page.rect.get_area() for i in page.get_image_info())
    )
    if options.ocr and not oversized and (native_chars < options.min_page_chars or scanned):
        with data.times.stage("page ocr"):
            ocr_segments = _ocr_page(page, options)
        ocr_chars = sum(len(s.text) for s in ocr_segments)
        needed = native_chars if native_chars < options.min_page_chars else max(native_chars * 1.5, native_chars + 40)
        if ocr_chars > needed:
            segments = ocr_segments
            data.ocr = True
    total = sum(len(s.text) for s in segments)
    if total > options.max_page_chars:
        message = f"page {number} has {total} characters; keeping the first {options.max_page_chars}"
        log.warning(message)
        data.warnings.append(message)
        segments = keep_first_chars(segments, options.max_page_chars)
    if _overdue(started, data, options, "tables and figures"):
        data.items = reading_order(segments, data.width, data.height)
        return

    drawings = page.get_drawings()
    with data.times.stage("tables"):
        tables = _tables(page, drawings, options, text_dict)
    if oversized or _overdue(started, data, options, "figures"):
        segments = [s for s in segments if not any(_center_inside(s.bbox, t.bbox) for t in tables)]
        _caption_tables(tables)
        data.items = reading_order(segments + tables, data.width, data.height)
        return
    figures_began = time.perf_counter()
    images = _raster_images(page, options)
    text_chars = sum(len(s.text) for s in segments)
    page_area = page.rect.get_area() or 1.0
    kept_images = []
    for img in images:
        share = _area(img.bbox) / page_area
        if share > 0.8 and (data.ocr or text_chars > 300):
            continue  # the page scan itself, or a background behind real text
        kept_images.append(img)
    charts = _vector_charts(page, drawings, [i.bbox for i in tables + images], options)
    figures = kept_images + charts
    data.image_count = len(figures)
    covered = sum(_area(i.bbox) for i in images) / page_area
    data.vision_dominant = bool(figures or images) and (
        (covered >= 0.5 and text_chars < 500) or text_chars < options.min_page_chars
    )

    # Text inside a table belongs to its cells; short labels on or around a vector chart
    # (axis ticks, legends) belong to the chart, which grows to include them.
    remaining = []
    for seg in segments:
        if any(_center_inside(seg.bbox, t.bbox) for t in tables):
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
    items = remaining + tables + figures
    _attach_captions(items)
    for fig in figures:
        _fill_figure(page, fig, data, options)
    data.times.add("figures", time.perf_counter() - figures_began - data.times.seconds.get("figure ocr", 0.0))
    _caption_tables(tables)
    data.items = reading_order(items, data.width, data.height)


def _ocr_page(page: pymupdf.Page, options: ParseOptions) -> list[_Item]:
    """OCR a page without a text layer, keeping layout when MuPDF's Tesseract is usable."""
    if not tesseract_available():
        return []
    textpage = ocr_textpage(page, options.ocr_dpi, options.ocr_language)
    if textpage is not None:
        return _segments(page.get_text("dict", textpage=textpage, flags=_TEXT_FLAGS, sort=True), ocr=True)
    png = page.get_pixmap(dpi=options.ocr_dpi, alpha=False).tobytes("png")
    text = ocr_image(png, options.ocr_language)
    rect = page.rect
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    return [
        _Item(kind="text", bbox=(rect.x0, rect.y0, rect.x1, rect.y1), text=" ".join(p.split()), size=0.0)
        for p in paragraphs
    ]


def _fill_figure(page: pymupdf.Page, fig: _Item, data: _PageData, options: ParseOptions) -> None:
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


# ---------------------------------------------------------------- pass 2: document


def _body_size(pages: list[_PageData], include_ocr: bool = False) -> float:
    """The most common text size by characters: the yardstick for headings."""
    weights: Counter[float] = Counter()
    for page in pages:
        if page.ocr and not include_ocr:
            continue
        for item in page.items:
            if item.kind == "text":
                weights[item.size] += len(item.text)
    if not weights:
        for page in pages:
            for item in page.items:
                if item.kind == "text":
                    weights[item.size] += len(item.text)
    return weights.most_common(1)[0][0] if weights else 10.0


def _mark_furniture(pages: list[_PageData]) -> None:
    """Drop running headers, footers and page numbers: text repeated in the margins of many pages."""
    keys: Counter[str] = Counter()
    margin_items: list[tuple[_Item, str]] = []
    for page in pages:
        seen = set()
        for item in page.items:
            if item.kind != "text" or len(item.text) > 120:
                continue
            in_margin = item.bbox[3] < 0.08 * page.height or item.bbox[1] > 0.92 * page.height
            if not in_margin:
                continue
            key = re.sub(r"\d+", "#", heading_key(item.text))
            margin_items.append((item, key))
            if re.fullmatch(r"(page)?#?(of#)?|[ivxlc]+", key):
                item.role = "furniture"
            elif key not in seen:
                seen.add(key)
                keys[key] += 1
    threshold = max(3, int(0.3 * len(pages)))
    for item, key in margin_items:
        if keys[key] >= threshold:
            item.role = "furniture"


def _heading_candidate(item: _Item, body: float, factor: float = 1.15) -> float | None:
    """The size rank key of a heading-looking text segment, else None."""
    if item.kind != "text" or item.role != "text" or item.math or item.vertical:
        return None
    text = item.text.strip()
    words = text.split()
    if not words or len(words) > 18 or len(text) > 150 or item.n_lines > 3:
        return None
    letters = sum(ch.isalpha() for ch in text)
    if letters < 2 or letters < 0.5 * len(text.replace(" ", "")) or CAPTION_RE.match(text):
        return None
    if item.size >= body * factor and item.size >= body + 1.0:
        return item.size
    if item.bold and item.size >= body - 0.6 and len(words) <= 12 and not text.endswith((".", ",", ";")):
        return body + 0.05  # bold at body size: the lowest heading level
    return None


def _assign_font_headings(pages: list[_PageData], body: float) -> None:
    """Headings from type size and weight on born-digital pages.

    OCR'd pages only get headings when they are most of the document (slide decks,
    scans), ranked against their own body size: OCR size estimates are too coarse to
    compare with real font sizes.
    """
    digital = [p for p in pages if not p.ocr]
    scanned = [p for p in pages if p.ocr]
    _headings_from_sizes(digital, body)
    if len(scanned) > len(digital):
        _headings_from_sizes(scanned, _body_size(scanned, include_ocr=True), factor=1.3)


def _headings_from_sizes(pages: list[_PageData], body: float, factor: float = 1.15) -> None:
    candidates = [
        (item, key) for page in pages for item in page.items if (key := _heading_candidate(item, body, factor))
    ]
    if not candidates:
        return
    total_text = sum(1 for page in pages for item in page.items if item.kind == "text")
    # If "headings" are most of the text, the styling is decorative (slides, posters): keep the largest only.
    if len(candidates) > 0.6 * total_text and total_text > 10:
        top = max(key for _, key in candidates)
        candidates = [(i, k) for i, k in candidates if k >= top - 0.6]
    levels = rank_levels([k for _, k in candidates], max_levels=4)
    for item, key in candidates:
        item.role = "heading"
        item.level = level_for(key, levels)


def _toc_events(doc: pymupdf.Document, pages: list[_PageData]) -> dict[int, list[tuple[int, int, str]]] | None:
    """Outline entries placed at the text segment they name: {page: [(item index, level, title)]}."""
    try:
        toc = doc.get_toc(simple=True)
    except Exception:
        return None
    entries = [(lvl, clean_heading(title), pno) for lvl, title, pno in toc if 1 <= pno <= len(pages) and title.strip()]
    if len(entries) < 3:
        return None
    events: dict[int, list[tuple[int, int, str]]] = {}
    cursor: dict[int, int] = {}
    for level, title, pno in entries:
        page = pages[pno - 1]
        key = heading_key(title)
        start = cursor.get(pno, 0)
        found = None
        for idx in range(start, len(page.items)):
            item = page.items[idx]
            if item.kind != "text" or len(item.text) > 300:
                continue
            ikey = heading_key(item.text)
            if not ikey:
                continue
            if ikey == key or (len(ikey) >= 4 and key.startswith(ikey)) or (len(key) >= 6 and ikey.startswith(key)):
                found = idx
                break
        index = found if found is not None else start
        if found is not None:
            page.items[found].role = "heading"
            cursor[pno] = found + 1
        events.setdefault(pno, []).append((index, level, title))
    return events


def _title_from_first_page(pages: list[_PageData], body: float) -> str | None:
    """The largest type on the first born-digital page, when it stands out from the body text."""
    for page in pages[:2]:
        texts = [i for i in page.items if i.kind == "text" and i.role != "furniture" and 3 <= len(i.text) <= 200]
        texts = [i for i in texts if sum(ch.isalpha() for ch in i.text) >= 3 and not i.vertical]
        if page.ocr:  # OCR sizes are rough and short fragments are usually noise
            texts = [
                i for i in texts if len(i.text) >= 8 and len(i.text.split()) >= 2 and i.bbox[1] < 0.5 * page.height
            ]
            body = _body_size(pages, include_ocr=True)
        if not texts:
            continue
        top = max(i.size for i in texts)
        if top < body * 1.2:
            continue
        parts = [i.text for i in texts if abs(i.size - top) < 0.6][:3]
        return clean_heading(" ".join(parts)) or None
    return None


@dataclass
class PdfPart:
    """Some pages of a PDF read on their own (a worker's share); `assemble_pdf` joins the parts."""

    pages: list[_PageData]
    repaired: bool = False  # MuPDF repaired the file while reading these pages

    @property
    def times(self) -> StageTimes:
        total = StageTimes()
        for page in self.pages:
            total.merge(page.times)
        return total


def pdf_page_count(path: Path, data: bytes) -> int:
    doc = open_pdf(path, data)
    try:
        return doc.page_count
    finally:
        doc.close()


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
        pages: list[_PageData] = []
        wanted = list(range(doc.page_count)) if numbers is None else list(numbers)
        for done, index in enumerate(wanted):
            page = doc[index]
            try:
                pages.append(_read_page(page, options))
            except Exception as exc:  # one broken page should not sink a long document
                log.warning("%s: page %d could not be read: %s", path, page.number + 1, exc)
                pages.append(_PageData(number=page.number + 1, width=page.rect.width, height=page.rect.height))
            if on_page is not None:
                on_page(done + 1, len(wanted))
        return PdfPart(pages, repaired=doc.is_repaired)
    finally:
        doc.close()


def assemble_pdf(
    path: Path, data: bytes, parts: Sequence[PdfPart], options: ParseOptions
) -> tuple[list[Page], str | None, dict[str, Any]]:
    """Pass 2 over all pages, in order: furniture, headings, sections, chunks, title, metadata."""
    pages = sorted((p for part in parts for p in part.pages), key=lambda p: p.number)
    doc = open_pdf(path, data)
    try:
        metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
        events = _toc_events(doc, pages)
        # MuPDF may repair lazily, on first use
        damaged = any(part.repaired for part in parts) or doc.is_repaired or not _ends_with_eof(data)
    finally:
        doc.close()

    _mark_furniture(pages)
    body = _body_size(pages)
    if events is None:
        _assign_font_headings(pages, body)

    title = meaningful_title(metadata.get("title")) or _title_from_first_page(pages, body)

    tracker = SectionTracker()
    out: list[Page] = []
    warnings: list[str] = []
    for page in pages:
        warnings.extend(page.warnings)
        page_events = sorted((events or {}).get(page.number, []), key=lambda e: e[0])
        blocks: list[Block] = []
        has_text = False  # judged on the items: a page of "[1] Smith ..." references is text too
        for index, item in enumerate(page.items):
            while page_events and page_events[0][0] <= index:
                _, level, heading = page_events.pop(0)
                tracker.enter(level, heading)
            if item.role == "furniture" or (item.kind == "text" and item.role == "caption"):
                continue
            if events is None and item.role == "heading":
                tracker.enter(item.level, item.text)
            path_now = tracker.path
            has_text = has_text or (bool(item.text.strip()) if item.kind == "text" else not item.textless)
            if item.kind == "text":
                modality: Modality = "formula" if item.math else "text"
                blocks.append(Block(modality=modality, text=item.text, bbox=item.bbox, section_path=path_now))
            else:
                assert item.block is not None
                item.block.bbox = item.bbox
                item.block.section_path = path_now
                blocks.append(item.block)
        for _, level, heading in page_events:
            tracker.enter(level, heading)
        chunks = blocks_to_chunks(page.number, blocks, options)
        if not has_text:
            what = "image-only page" if page.image_count else "page"
            figures = (
                f" with {page.image_count} figure{'s' if page.image_count != 1 else ''}" if page.image_count else ""
            )
            placeholder = Block(
                modality="text",
                text=f"[Page {page.number}: {what}{figures}; no text recognised]",
                section_path=tracker.path,
                placeholder=True,
            )
            chunks = blocks_to_chunks(page.number, [*blocks, placeholder], options)
        if page.label:
            for chunk in chunks:
                chunk.meta["page_label"] = page.label
        out.append(
            Page(
                number=page.number,
                chunks=chunks,
                width=page.width,
                height=page.height,
                ocr=page.ocr,
                vision_dominant=page.vision_dominant,
            )
        )
    if damaged and not any((c.text.strip() and not c.placeholder) or c.image for p in out for c in p.chunks):
        raise ParseError(str(path), "not a valid PDF: the file is truncated or damaged; no content could be recovered")
    meta: dict[str, Any] = {"pdf_metadata": metadata, "body_font_size": body, "outline": events is not None}
    if warnings:
        meta["warnings"] = warnings
    return out, title, meta
