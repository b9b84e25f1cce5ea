"""Tables ruled only across (booktabs, as papers set them) become tables with a header and cells, and a
chart's axis rules do not; rows a grid stacks in one of its rows are read as rows."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from hyperfolio.parse import parse_file

ROWS = [
    ("Method", "Physics", "Chemistry"),
    ("Baseline", "66.4%", "70.9%"),
    ("Baseline + CoT", "65.0%", "75.3%"),
    ("Step-Back (ours)", "73.2%", "81.8%"),
    ("GPT-4", "70.3%", "79.9%"),
]
COLUMNS = (80, 250, 360)


def _booktabs(path: Path, with_chart: bool = False) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "Table 1: Accuracy of each method on two subjects.", fontsize=9)
    top, step = 100, 16
    for y, width in ((top, 1.0), (top + step + 4, 0.5), (top + step * len(ROWS) + 6, 1.0)):
        page.draw_line((72, y), (460, y), width=width)
    for i, row in enumerate(ROWS):
        y = top + 13 + i * step + (4 if i else 0)
        for x, cell in zip(COLUMNS, row, strict=True):
            page.insert_text((x, y), cell, fontsize=9)
    page.insert_text((72, 230), "The method that steps back scores best on both subjects in the table.", fontsize=10)
    if with_chart:  # an axis drawn as two long rules with tick values between them
        page.draw_line((72, 420), (460, 420))
        page.draw_line((72, 560), (460, 560))
        for i, tick in enumerate(("0.75", "0.74", "0.73", "0.72")):
            page.insert_text((74, 440 + 30 * i), tick, fontsize=8)
    doc.save(path)
    return path


def _tables(path: Path) -> list:
    """The table chunks of the file's first page, as parsed."""
    return [c for c in parse_file(path, None).pages[0].chunks if c.modality == "table"]


def test_a_table_ruled_only_across_has_its_header_and_cells(tmp_path):
    parsed = parse_file(_booktabs(tmp_path / "paper.pdf"), None)
    tables = [c for c in parsed.pages[0].chunks if c.modality == "table"]
    assert len(tables) == 1
    table = tables[0]
    assert table.table == [list(r) for r in ROWS]
    assert table.table_header_rows == 1
    assert table.caption.startswith("Table 1")
    text = " ".join(c.text for c in parsed.pages[0].chunks if c.modality == "text")
    assert "73.2%" not in text  # the cells are the table's, not run-on text beside it


def test_rules_around_a_chart_are_no_table(tmp_path):
    tables = _tables(_booktabs(tmp_path / "paper.pdf", with_chart=True))
    assert len(tables) == 1 and tables[0].table[0] == list(ROWS[0])


def _stacked(path: Path, rows: list[tuple[str, str, str]] | None = None) -> Path:
    """A grid ruled around its columns and under its header only: the three directors' rows stand in one
    grid row, as annual reports set them (or `rows`, one line each, in that one grid row)."""
    doc = pymupdf.open()
    page = doc.new_page()
    left, right, top, header, bottom = 72, 472, 100, 130, 200
    columns = (72, 222, 322, 472)
    for y in (top, header, bottom):
        page.draw_line((left, y), (right, y))
    for x in columns:
        page.draw_line((x, top), (x, bottom))
    for x, name in zip(columns, ("Director", "Meetings attended", "Other boards"), strict=False):
        page.insert_text((x + 4, top + 18), name, fontsize=9)
    rows = rows or [("Mr. R.A. Shah", "7", "14"), ("Mr. S.V. Shanbhag", "7", "5"), ("Mr. C.M. Maniar", "5", "11")]
    for i, row in enumerate(rows):
        for x, cell in zip(columns, row, strict=False):
            page.insert_text((x + 4, header + 16 + 14 * i), cell, fontsize=9)
    doc.save(path)
    return path


def test_rows_stacked_in_one_grid_row_are_read_as_rows(tmp_path):
    tables = _tables(_stacked(tmp_path / "board.pdf"))
    assert len(tables) == 1
    assert tables[0].table == [
        ["Director", "Meetings attended", "Other boards"],
        ["Mr. R.A. Shah", "7", "14"],
        ["Mr. S.V. Shanbhag", "7", "5"],
        ["Mr. C.M. Maniar", "5", "11"],
    ]


def test_a_row_whose_cells_wrap_together_stays_one_row(tmp_path):
    wrapped = [("Press", "Opens the blood", "Not during"), ("once", "pressure app.", "workouts.")]
    tables = _tables(_stacked(tmp_path / "watch.pdf", wrapped))
    assert tables[0].table[1:] == [["Press once", "Opens the blood pressure app.", "Not during workouts."]]
