"""A newcomer's questions of Word, PowerPoint and Excel files, answered offline with the short answer first.

The files are generated: an approval table whose second row is the one asked about, a slide whose
speaker notes explain its claim, and a workbook saved by a program (no formula results stored).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperfolio import Collection


def approval_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Travel policy", level=1)
    document.add_paragraph("This policy sets the rules for business travel booked by staff.")
    document.add_heading("Approval record", level=2)
    table = document.add_table(rows=3, cols=4)
    rows = [
        ["Version", "Approved by", "Role", "Date"],
        ["1.0", "Anna Berg", "Head of Finance", "2023-01-10"],
        ["2.0", "Tom Hale", "Chief Operating Officer", "2024-03-02"],
    ]
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    document.save(path)
    return path


def results_pptx(path: Path) -> Path:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Results 2024"
    slide.placeholders[1].text = "Revenue grew 18% in 2024\nMargins were stable in every region"
    slide.notes_slide.notes_text_frame.text = (
        "Revenue grew because two new offshore parks came online in the North Sea during the spring."
    )
    other = deck.slides.add_slide(deck.slide_layouts[1])
    other.shapes.title.text = "Outlook"
    other.placeholders[1].text = "We expect steady growth in 2025"
    deck.save(path)
    return path


def sales_xlsx(path: Path) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sales"
    sheet.append(["Item", "Units", "Price", "Revenue"])
    sheet.append(["Widgets", 10, 2.5, "=B2*C2"])
    sheet.append(["Gadgets", 4, 12, "=B3*C3"])
    book.save(path)
    return path


@pytest.fixture(scope="module")
def office(tmp_path_factory, embedder):
    folder = tmp_path_factory.mktemp("office-answers")
    files = [
        approval_docx(folder / "policy.docx"),
        results_pptx(folder / "results.pptx"),
        sales_xlsx(folder / "sales.xlsx"),
    ]
    col = Collection(folder / "col", embedder=embedder)
    report = col.add(files)
    assert [r.status for r in report.results] == ["added"] * 3
    yield col
    col.close()


def test_the_approval_row_asked_about_not_both(office):
    answer = office.ask("Who approved version 2.0 of the travel policy?", doc="policy.docx")
    assert answer.short == "Tom Hale"
    assert answer.text.startswith("Tom Hale [1]")
    assert "Anna Berg" not in answer.text.split("\u2014")[0]


def test_why_is_answered_from_the_speaker_notes(office):
    answer = office.ask("Why did revenue grow in 2024?", doc="results.pptx")
    assert "two new offshore parks came online" in answer.short
    assert answer.citations[0].section_path[-1] == "Speaker notes"


def test_a_formula_cell_answers_with_its_value(office):
    answer = office.ask("What was the revenue of Widgets?", doc="sales.xlsx")
    assert answer.short == "25"
    assert "=B2*C2" not in answer.text
