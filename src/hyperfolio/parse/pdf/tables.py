"""Tables on a PDF page: grids found only where ruling lines could form one (detection is slow), tables
ruled only across (`rule_tables.py`), cells rebuilt from the page's words, header rows recognised, grids
that are not tables dropped."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pymupdf

from hyperfolio.config import ParseOptions
from hyperfolio.model import BBox
from hyperfolio.parse.chunking import Block, table_text
from hyperfolio.parse.pdf.items import (
    CAPTION_RE,
    LINE_TOLERANCE,
    TEXT_FLAGS,
    Item,
    center_inside,
    intersection,
    log,
    word_lines,
)
from hyperfolio.parse.pdf.rule_tables import ruled_tables
from hyperfolio.parse.pdf.text import is_bold

_NUMBER = re.compile(r"[-+−–(]?\s*[$€£¥]?\s*\d[\d,.'’\s]*(?:%|‰|[kKmMbB]n?)?\)?\*?")


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


HEADER_SLACK = 2.0  # points: a grid starting this far above a table's header rule holds its header


def _cell_lines(cell: Any, words: list[tuple[Any, ...]]) -> list[tuple[float, str]]:
    """A cell's text as lines (top y, words), from the page's words inside it."""
    x0, y0, x1, y1 = cell
    inside = [w for w in words if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1]
    return [(line[0][1], " ".join(w[4] for w in line)) for line in word_lines(inside)]


def _opens(line: str) -> bool:
    """Whether a cell's line could open an entry: a wrapped line goes on in lower case ("Press" / "once")."""
    return not line[:1].islower()


def _unstacked(cells: list[list[tuple[float, str]] | None]) -> list[list[str | None]]:
    """One grid row that holds several table rows stacked (no rule between them, so the line finder saw
    one row: nine directors' names in one cell, their nine counts in the next) as those rows. A row
    starts at each line of the first cell that lines of most of the other filled cells (two at least)
    start beside, none of them going on in lower case; a line that starts no row (a wrapped cell) joins
    the row above it. Rows that would lack a key or a value, or repeat, mean the cell was no stack of
    rows (a chart's legend): then it is the one row it looks."""
    whole: list[list[str | None]] = [[None if c is None else " ".join(t for _, t in c) for c in cells]]
    first = cells[0] or []
    others = [c for c in cells[1:] if c]
    starts = [
        y
        for i, (y, text) in enumerate(first)
        if i == 0
        or _opens(text)
        and sum(any(abs(y - oy) <= LINE_TOLERANCE and _opens(t) for oy, t in c) for c in others) > len(others) / 2
    ]
    if len(starts) < 2 or len(others) < 2:
        return whole
    rows: list[list[str | None]] = [[None if c is None else "" for c in cells] for _ in starts]
    for j, cell in enumerate(cells):
        for y, text in cell or []:
            at = max((i for i, start in enumerate(starts) if start <= y + LINE_TOLERANCE), default=0)
            rows[at][j] = f"{rows[at][j] or ''} {text}".strip()
    unkeyed = any(not row[0] or sum(bool(c) for c in row) < 2 for row in rows)
    return whole if unkeyed or len({tuple(r) for r in rows}) < len(rows) else rows


def _cell_texts(table: Any, words: list[tuple[Any, ...]]) -> list[list[str | None]]:
    """Cell strings rebuilt from the page's words: keeps spaces and decimal points that PyMuPDF's own
    table text sometimes loses, and parts rows stacked in one grid row."""
    rows: list[list[str | None]] = []
    for row in table.rows:
        rows += _unstacked([None if cell is None else _cell_lines(cell, words) for cell in row.cells])
    return rows


def _is_number(cell: str) -> bool:
    return bool(_NUMBER.fullmatch(cell.strip()))


def _row_bold(bbox: BBox, spans: list[tuple[BBox, bool]]) -> bool | None:
    """Whether all text in a table row is bold; None when the row holds no text."""
    inside = [bold for box, bold in spans if center_inside(box, bbox)]
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


def _may_hold_table(drawings: list[dict[str, Any]]) -> bool:
    """Whether the page's ruling lines could form a grid at all."""
    horizontal, vertical, boxes = _ruling_stats(drawings)
    if horizontal + vertical < 4 and boxes < 6:
        return False
    # The line finder needs vertical edges too: rules across the page alone (separators, booktabs)
    # gave no table on any of the 61 such dev pages, and cost a sixth of the detector's time.
    return not (vertical < 2 and boxes < 6)


def _is_grid_of_values(rows: list[list[str]]) -> bool:
    """Whether cleaned cells look like a table rather than a map, a decoration or boxed prose."""
    filled = [c for r in rows for c in r if c]
    if len(rows) < 2 or len(rows[0]) < 2 or len(filled) < 4:
        return False
    if len(filled) < 0.2 * len(rows) * len(rows[0]) or (len(rows) <= 2 and len(rows[0]) >= 8):
        return False  # sparse or one-line "grids" come from maps and decorations
    return sum(len(c) for c in filled) / len(filled) <= 150  # else boxes around prose, not a grid of values


def _with_external_header(table: Any, rows: list[list[str]]) -> tuple[list[list[str]], bool]:
    """The rows with the header PyMuPDF found above the grid put first, when it is plausible."""
    header = getattr(table, "header", None)
    if header is None or not getattr(header, "external", False):
        return rows, False
    names = [" ".join((n or "").split()) for n in header.names]
    filled_names = [n for n in names if n]
    plausible = len(filled_names) * 2 >= len(names) and not any(CAPTION_RE.match(n) for n in filled_names)
    if plausible and len(names) == len(rows[0]):
        return [names, *rows], True
    return rows, False


def find_tables(
    page: pymupdf.Page,
    drawings: list[dict[str, Any]],
    options: ParseOptions,
    text_dict: dict[str, Any] | None = None,
) -> list[Item]:
    """Detected tables with cells: grids of ruling lines (only on pages whose drawings could form one:
    find_tables is slow), then tables ruled only across (`rule_tables.py`)."""
    if not options.tables:
        return []
    words: list[tuple[Any, ...]] | None = None

    def read_words() -> list[tuple[Any, ...]]:
        nonlocal words
        words = words if words is not None else page.get_text("words", flags=TEXT_FLAGS, sort=True)
        return words

    items = _grid_tables(page, options, text_dict, read_words) if _may_hold_table(drawings) else []
    for found in ruled_tables(drawings, read_words, page.rect.height):
        if not _is_grid_of_values(found.rows):
            continue
        # Where the line finder read the same table, its cells stand, unless it saw only the body: a
        # booktabs table's rows between its middle and bottom rules, the header above left out.
        same = [i for i in items if intersection(i.bbox, found.bbox) > 0]
        if same and (not found.header_rows or any(i.bbox[1] < found.body_top - HEADER_SLACK for i in same)):
            continue
        block = Block(modality="table", text="", table=found.rows, table_header_rows=found.header_rows)
        items = [i for i in items if i not in same] + [Item(kind="table", bbox=found.bbox, block=block)]
    return items


def _grid_tables(
    page: pymupdf.Page,
    options: ParseOptions,
    text_dict: dict[str, Any] | None,
    read_words: Callable[[], list[tuple[Any, ...]]],
) -> list[Item]:
    """Tables PyMuPDF's line finder sees in the page's ruling lines."""
    try:
        # PyMuPDF 2 gates its line-based finder by an ONNX layout model by default: ~0.6 s a page on
        # two cores, most of the indexing time. The ruling gate above does that job cheaply.
        found = page.find_tables(use_layout=options.table_layout)
    except Exception as exc:
        log.warning("page %d: table detection failed: %s", page.number + 1, exc)
        return []
    items = []
    words = read_words() if found.tables else []
    spans = [
        (tuple(span["bbox"]), is_bold(span))
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
        if not _is_grid_of_values(rows):
            continue
        rows, external = _with_external_header(table, rows)
        header_rows = _header_rows(table, rows, spans, external)
        items.append(
            Item(
                kind="table",
                bbox=tuple(table.bbox),
                block=Block(modality="table", text="", table=rows, table_header_rows=header_rows),
            )
        )
    return items


def caption_tables(tables: list[Item]) -> None:
    """Each table's indexed text, once captions are attached: the caption, then its rows."""
    for tab in tables:
        assert tab.block is not None and tab.block.table is not None
        tab.block.text = table_text(tab.block.table, tab.block.caption)
