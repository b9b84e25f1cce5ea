"""Excel .xlsx via openpyxl and .csv via the csv module: one page per sheet, cells kept.

A sheet is what a reader names ("the Revenue sheet"), so it is the page and its name heads
the section path. The used range becomes one table (chunking splits a long one into parts
that each repeat the header row). Formulas show their cached results, as Excel displays
them; a workbook saved by a program that never calculated it has none, and then the
formula text is the best there is.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import warnings
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.model import Page
from hyperfolio.parse.chunking import MAX_TABLE_CELLS, blocks_to_chunks
from hyperfolio.parse.file_titles import meaningful_title
from hyperfolio.parse.formulas import NotCalculable, Workbook
from hyperfolio.parse.office_common import check_package, one_line, reading, table_block
from hyperfolio.parse.text import decode_text

log = logging.getLogger(__name__)

MAX_ROWS = 50_000  # per sheet; beyond this a sheet is data for a database, not a document to cite
MAX_COLUMNS = 500
_SHEET_TAG = re.compile(rb"<(?:\w+:)?sheet\b[^>]*>")
_FORMULA_TAG = re.compile(rb"<(?:\w+:)?f[\s>/]")
_DECIMALS = re.compile(r"0\.(0+)")
_CURRENCY = re.compile(r"[$€£¥]")


@dataclass
class _Sheet:
    """A sheet's non-empty cells by (row, column), 1-based, rendered as text."""

    name: str
    cells: dict[tuple[int, int], str] = field(default_factory=dict)
    numbers: dict[tuple[int, int], float] = field(default_factory=dict)  # stored numbers, for formulas
    bold_rows: dict[int, bool] = field(default_factory=dict)  # row -> every filled cell is bold
    hidden: bool = False
    truncated: bool = False
    rows_cut: int = 0  # rows past MAX_TABLE_CELLS: a sparse sheet whose used range is huge


def _render_number(value: float, number_format: str) -> str:
    """A number as its cell format shows it, for the formats that matter to a reader: %, decimals, thousands."""
    fmt = (number_format or "General").split(";")[0]
    decimals = _DECIMALS.search(fmt)
    places = len(decimals.group(1)) if decimals else 0
    if "%" in fmt:
        return f"{value * 100:.{places}f}%"
    if fmt == "General" or not any(ch in fmt for ch in "0#"):
        if isinstance(value, int) or value.is_integer():
            return str(int(value))
        return f"{value:.10g}"
    symbol = _CURRENCY.search(fmt)
    grouped = f"{value:,.{places}f}" if "," in fmt.split(".")[0] else f"{value:.{places}f}"
    return f"{symbol.group(0)}{grouped}" if symbol else grouped


def render_value(value: Any, number_format: str = "General") -> str:
    """A cell value as text a reader would recognise: dates in ISO form, numbers as formatted, booleans as Excel."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime):
        if value.time() == time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds" if value.second else "minutes")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, time):
        return value.isoformat(timespec="seconds" if value.second else "minutes")
    if isinstance(value, timedelta):
        return str(value)
    if isinstance(value, int | float):
        return _render_number(value, number_format)
    text = getattr(value, "text", None)  # array and data-table formulas carry their formula as .text
    if isinstance(text, str) and not isinstance(value, str):
        return text if text.startswith("=") else f"={text}"
    return " ".join(str(value).split())


def _load(data: bytes, data_only: bool) -> Any:
    import openpyxl

    with warnings.catch_warnings():  # openpyxl warns about every extension it skips; none matter here
        warnings.simplefilter("ignore")
        return openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=data_only)


def open_workbook(path: Path, data: bytes, data_only: bool = True) -> Any:
    """The workbook in read-only (streaming) mode, or a ParseError saying why it is not a readable .xlsx."""
    check_package(path, data, "Excel")
    with reading(path, "Excel"):
        return _load(data, data_only)


def check_spreadsheet(path: Path, data: bytes) -> int:
    """Validate an upload; its pages are its sheets."""
    book = open_workbook(path, data)
    try:
        return max(sum(ws.sheet_state != "veryHidden" for ws in book.worksheets), 1)
    finally:
        book.close()


def count_sheets(source: Path | io.BytesIO) -> int:
    """Sheets counted from the workbook part alone (for progress); 1 when unreadable."""
    try:
        with zipfile.ZipFile(source) as package:
            workbook = package.read("xl/workbook.xml")
        tags = _SHEET_TAG.findall(workbook)
        return max(sum(b"veryHidden" not in tag for tag in tags), 1)
    except Exception:
        return 1


def _has_formulas(data: bytes) -> bool:
    """Whether any worksheet holds a formula: only then is a second, formula-text pass worth its time."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        for name in package.namelist():
            if name.startswith("xl/worksheets/") and name.endswith(".xml"):
                with package.open(name) as part:
                    tail = b""
                    while block := part.read(1 << 20):
                        if _FORMULA_TAG.search(tail + block):
                            return True
                        tail = block[-16:]  # a tag cut between two reads is still found
    return False


def _cells(ws: Any) -> Iterator[tuple[int, int, Any]]:
    """(row, column, cell) of the cells a sheet stores; the first cell past MAX_ROWS ends it (callers see it)."""
    ws.reset_dimensions()  # a wrong stored dimension (A1:XFD1048576) would otherwise pad with empty cells
    for row in ws.iter_rows():
        for cell in row:
            r, c = getattr(cell, "row", None), getattr(cell, "column", None)
            if r is None or c is None:
                continue
            yield r, c, cell
            if r > MAX_ROWS:
                return


def _read_sheet(ws: Any, formulas: dict[tuple[int, int], tuple[str, str]] | None) -> _Sheet:
    """The cells of one worksheet; `formulas` fills cells whose formula has no cached value."""
    sheet = _Sheet(name=str(ws.title), hidden=ws.sheet_state == "hidden")
    for r, c, cell in _cells(ws):
        if r > MAX_ROWS or c > MAX_COLUMNS:
            sheet.truncated = True
            continue
        text = render_value(cell.value, cell.number_format)
        if not text and formulas is not None:
            text = formulas.get((r, c), ("", ""))[0]
        if not text:
            continue
        if isinstance(cell.value, int | float) and not isinstance(cell.value, bool):
            sheet.numbers[(r, c)] = float(cell.value)
        sheet.cells[(r, c)] = text
        if len(sheet.bold_rows) < 8 or r in sheet.bold_rows:
            font = getattr(cell, "font", None)
            sheet.bold_rows[r] = sheet.bold_rows.get(r, True) and bool(font is not None and font.b)
    return sheet


def _formula_cells(data: bytes) -> dict[str, dict[tuple[int, int], tuple[str, str]]]:
    """Formula text and number format by sheet and cell, for the cells a values pass finds empty."""
    book = _load(data, data_only=False)
    try:
        found: dict[str, dict[tuple[int, int], tuple[str, str]]] = {}
        for ws in book.worksheets:
            cells: dict[tuple[int, int], tuple[str, str]] = {}
            for r, c, cell in _cells(ws):
                value = cell.value
                if r > MAX_ROWS or c > MAX_COLUMNS or value is None:
                    continue
                if isinstance(value, str) and value.startswith("="):
                    cells[(r, c)] = (value, cell.number_format)
                elif not isinstance(value, str | int | float | bool | date | time):
                    cells[(r, c)] = (render_value(value), "")  # an array or data-table formula object
            found[str(ws.title)] = cells
        return found
    finally:
        book.close()


def _grid(sheet: _Sheet) -> tuple[list[list[str]], list[int], str]:
    """The used range as rows of cells (empty rows and columns around and between dropped),
    the source row number of each kept row, and the range in A1 notation. The grid is dense, so a
    sparse sheet (one wide row over thousands of short ones) keeps only the rows MAX_TABLE_CELLS allows."""
    rows = sorted({r for r, _ in sheet.cells})
    columns = sorted({c for _, c in sheet.cells})
    keep = max(1, MAX_TABLE_CELLS // len(columns))
    sheet.rows_cut = max(0, len(rows) - keep)
    rows = rows[:keep]
    grid = [[sheet.cells.get((r, c), "") for c in columns] for r in rows]
    first, last = (rows[0], columns[0]), (rows[-1], columns[-1])
    used = f"{_column_name(first[1])}{first[0]}:{_column_name(last[1])}{last[0]}"
    return grid, rows, used


def _column_name(index: int) -> str:
    name = ""
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(65 + rest) + name
    return name


def _title_rows(grid: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """Leading rows with a single filled cell over a wider table are its title, not data."""
    titles: list[str] = []
    width = len(grid[0]) if grid else 0
    while (
        len(titles) < 2
        and len(grid) > 2
        and width > 1
        and sum(1 for cell in grid[0] if cell) == 1
        and sum(1 for cell in grid[1] if cell) > 1
    ):
        titles.append(next(cell for cell in grid[0] if cell))
        grid = grid[1:]
    return titles, grid


def _sheet_page(number: int, sheet: _Sheet, options: ParseOptions) -> Page | None:
    """One sheet as one page holding its table; None for a sheet with no content."""
    if not sheet.cells:
        return None
    grid, row_numbers, used = _grid(sheet)
    titles, body = _title_rows(grid)
    start = row_numbers[len(titles)]
    marked = sheet.bold_rows.get(start, False) and len(body) > 1
    caption = " — ".join(titles) or None
    block = table_block(body, [sheet.name], marked_header=marked, caption=caption)
    if block is None:
        return None
    block.meta["range"] = used
    chunks = blocks_to_chunks(number, [block], options)
    for chunk in chunks:
        chunk.meta["page_label"] = f"sheet {sheet.name}"
        if sheet.hidden:
            chunk.meta["hidden_sheet"] = True
    return Page(number=number, chunks=chunks)


def _pages(sheets: Iterable[_Sheet], options: ParseOptions) -> tuple[list[Page], dict[str, Any]]:
    pages: list[Page] = []
    names: list[str] = []
    notes: list[str] = []
    for sheet in sheets:
        page = _sheet_page(len(pages) + 1, sheet, options)
        if sheet.truncated:
            notes.append(f"sheet {sheet.name}: only the first {MAX_ROWS} rows and {MAX_COLUMNS} columns were read")
        if sheet.rows_cut:
            notes.append(
                f"sheet {sheet.name}: {sheet.rows_cut} rows were not indexed: the table would pass "
                f"{MAX_TABLE_CELLS:,} cells"
            )
        if page is not None:
            pages.append(page)
            names.append(sheet.name)
    meta: dict[str, Any] = {"sheets": names}
    if notes:
        for note in notes:
            log.warning("%s", note)
        meta["warnings"] = notes
    return pages, meta


def parse_spreadsheet(path: Path, data: bytes, options: ParseOptions) -> tuple[list[Page], str | None, dict[str, Any]]:
    """One page per sheet with content, in tab order.

    Hidden sheets are kept (marked): they often hold the data a visible chart or summary is
    built from, and the citation names the sheet so a reader can unhide it. "Very hidden"
    sheets are skipped: only macros can show them, and they hold a program's state, not content.
    """
    book = open_workbook(path, data)
    try:
        with reading(path, "Excel", "cannot read the"):
            formulas = _formula_cells(data) if _has_formulas(data) else {}
            sheets = [
                _read_sheet(ws, formulas.get(str(ws.title))) for ws in book.worksheets if ws.sheet_state != "veryHidden"
            ]
            title = meaningful_title(book.properties.title if book.properties else None)
    finally:
        book.close()
    calculated, left = _calculate(sheets, formulas)
    pages, meta = _pages(sheets, options)
    if calculated:
        meta["formulas_calculated"] = calculated
    if left:
        note = (
            f"{left} formula{' has' if left == 1 else 's have'} no saved result and could not be calculated "
            "(indexed as formula text; open and save the workbook in Excel or LibreOffice to store the results)"
        )
        log.warning("%s: %s", path.name, note)
        meta.setdefault("warnings", []).append(note)
    return pages, title, meta


def _calculate(sheets: list[_Sheet], formulas: dict[str, dict[tuple[int, int], tuple[str, str]]]) -> tuple[int, int]:
    """Each formula cell shown as formula text (no saved result) gets its calculated value where the
    formula is within what `formulas.py` calculates; (calculated, left as text)."""
    pending = {
        sheet.name: {cell: formulas[sheet.name][cell] for cell, text in sheet.cells.items() if text.startswith("=")}
        for sheet in sheets
        if sheet.name in formulas
    }
    if not any(pending.values()):
        return 0, 0
    book = Workbook(
        numbers={sheet.name: sheet.numbers for sheet in sheets},
        formulas={name: {cell: text for cell, (text, _) in cells.items()} for name, cells in formulas.items()},
    )
    calculated = left = 0
    for sheet in sheets:
        for cell, (text, number_format) in pending.get(sheet.name, {}).items():
            try:
                value = book.calculate(sheet.name, cell, text)
            except NotCalculable:
                left += 1
                continue
            sheet.cells[cell] = _render_number(value, number_format or "General")
            calculated += 1
    return calculated, left


def parse_csv(path: Path, data: bytes, options: ParseOptions) -> tuple[list[Page], str | None, dict[str, Any]]:
    """A .csv as a one-sheet workbook named after the file; the delimiter is sniffed (, ; tab |)."""
    text = decode_text(data)
    sample = text[:16384].rsplit("\n", 1)[0]  # whole lines; the sniffer's regexes slow down on long samples
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:  # one column, or too little to tell: the standard comma form
        dialect = csv.excel
    sheet = _Sheet(name=path.stem)
    try:
        for r, row in enumerate(csv.reader(io.StringIO(text, newline=""), dialect), 1):
            if r > MAX_ROWS:
                sheet.truncated = True
                break
            for c, value in enumerate(row[:MAX_COLUMNS], 1):
                cell = " ".join(value.split())
                if cell:
                    sheet.cells[(r, c)] = cell
            sheet.truncated = sheet.truncated or len(row) > MAX_COLUMNS
    except csv.Error as exc:
        raise ParseError(str(path), f"not a valid CSV file: {one_line(exc)}") from exc
    pages, meta = _pages([sheet], options)
    return pages, None, meta
