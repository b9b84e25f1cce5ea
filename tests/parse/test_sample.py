"""The demo report: deterministic, and parsed into the facts the demo relies on."""

from __future__ import annotations

from pathlib import Path

from hyperfolio.parse import parse_file
from hyperfolio.sample import SAMPLE_QUESTION, SAMPLE_TITLE, write_sample_report


def test_sample_report_parses(tmp_path: Path) -> None:
    path = write_sample_report(tmp_path / "northwind.pdf")
    again = write_sample_report(tmp_path / "again.pdf")
    assert path.read_bytes() == again.read_bytes()
    doc = parse_file(path)
    assert doc.title == SAMPLE_TITLE
    assert [p.number for p in doc.pages] == [1, 2, 3, 4]
    assert SAMPLE_QUESTION.endswith("?")

    summary = " ".join(c.text for c in doc.pages[0].chunks)
    for fact in ("$412.6 million", "1,240 people", "Aarhus"):
        assert fact in summary

    tables = [c for c in doc.chunks if c.modality == "table"]
    assert len(tables) == 1 and tables[0].page == 2
    table = tables[0]
    assert table.table is not None
    assert table.table[0] == ["Region", "Capacity (MW)", "Revenue ($M)"]
    assert ["North Sea", "1,850", "168.4"] in table.table
    assert len(table.table) == 5 and table.table_header_rows == 1
    assert table.caption is not None and table.caption.startswith("Table 1:")

    images = [c for c in doc.chunks if c.modality == "image"]
    assert len(images) == 1 and images[0].page == 3
    assert images[0].caption is not None and images[0].caption.startswith("Figure 1:")
    assert images[0].image

    outlook = [c for c in doc.pages[3].chunks if "Skagen" in c.text]
    assert outlook and outlook[0].section_path[-1] == "Outlook 2025"
