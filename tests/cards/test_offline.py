"""Cards read from generated covers: title, type, period, organisation and contents."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperfolio.cards import DocumentCard
from hyperfolio.cards.offline import card_for, card_for_file
from hyperfolio.cards.periods import Date, calendar_quarter, find_dates, fiscal_year_of_end
from hyperfolio.parse import parse_file
from hyperfolio.parse.furniture import is_furniture, is_noise

from .conftest import write_pdf


def test_ten_k_cover_gives_type_period_registrant_and_contents(ten_k: Path):
    card = card_for_file(ten_k)
    assert card.doc_type == "10-K"
    assert card.organisation == "NORTHWIND TRADERS CORPORATION"
    assert card.fiscal_year == 2022  # a 52/53-week year ending January 1, 2023 is fiscal 2022
    assert card.quarter is None
    assert card.date == "2023-01-01"
    assert card.aliases == ["NWT"]
    assert "Item 1. Business" in card.toc and "Item 1A. Risk Factors" in card.toc
    assert not any(entry.isdigit() for entry in card.toc)
    assert card.title == "NORTHWIND TRADERS CORPORATION Form 10-K for fiscal year 2022"


def test_ten_q_cover_gives_the_quarter(ten_q: Path):
    card = card_for_file(ten_q)
    assert (card.doc_type, card.fiscal_year, card.quarter, card.date) == ("10-Q", 2023, 2, "2023-06-30")
    assert card.organisation == "Contoso Bank & Co."
    assert card.period == "Q2 2023"


def test_report_title_skips_furniture_printed_above_and_larger(report: Path):
    card = card_for_file(report)
    assert card.title == "The State of Regional Rail in Northern Europe"
    assert card.date == "2020-03-09" and card.fiscal_year == 2020
    assert card.doc_type == "report"
    assert card.organisation == "Northwind Research Institute"


def test_paper_first_page(paper: Path):
    card = card_for_file(paper)
    assert card.doc_type == "paper"
    assert card.title == "Sparse Retrieval over Page Graphs for Long Multimodal Documents"
    assert card.fiscal_year == 2024 and card.date == "2024-01-03"  # from the arXiv stamp
    assert card.organisation == ""  # affiliations are not an issuer


def test_landscape_pages_of_little_text_are_slides(deck: Path):
    card = card_for_file(deck)
    assert card.doc_type == "slide deck"
    assert card.title == "Quarterly Market Update"


def test_card_for_a_parsed_document_reads_its_cover(ten_k: Path, report: Path):
    """The ingest pipeline's call: a parsed Document in, its card out, with the document's id."""
    document = parse_file(report)
    card = card_for(document)
    assert card.doc_id == document.doc_id
    assert card.title == "The State of Regional Rail in Northern Europe"
    assert card_for(parse_file(ten_k)).doc_type == "10-K"


def test_card_for_a_document_whose_file_is_gone_uses_its_chunks(report: Path):
    document = parse_file(report)
    document.source = str(report.with_name("moved-away.pdf"))
    card = card_for(document)
    assert card.doc_type == "report" and card.date == "2020-03-09"


def test_text_holds_every_field_and_round_trips():
    card = DocumentCard(
        title="Acme Form 10-K", organisation="Acme Inc.", doc_type="10-K", fiscal_year=2021, toc=["Item 1. Business"]
    )
    text = card.text()
    for part in ("Acme Form 10-K", "Acme Inc.", "10-K", "FY2021", "Item 1. Business"):
        assert part in text
    assert DocumentCard.from_dict(card.to_dict() | {"later_field": 1}) == card
    with pytest.raises(ValueError):
        DocumentCard(doc_type="memo")


@pytest.mark.parametrize(
    ("line", "furniture"),
    [
        ("About Pew Research Center", True),
        ("Table of Contents", True),
        ("FOR RELEASE MAY 3, 2018", True),
        ("Page 3 of 16", True),
        ("Case 2:18-cv-12857 Document 1 Filed 09/13/18", True),
        ("March 2018", True),
        ("Introduction ........ 4", True),
        ("By Dr. Jane Smith", True),
        ("Americans and Germans Differ", False),
        ("Annual Report 2018", False),
    ],
)
def test_furniture(line: str, furniture: bool):
    assert is_furniture(line) is furniture


def test_noise():
    assert is_noise("SIUD=)I) GUIDE")
    assert is_noise("The The Limes Limes Residential esidential Home Home")
    assert not is_noise("HUAWEI WATCH D")


def test_dates_and_fiscal_periods():
    assert find_dates("ended 31st March 2003 and December 2, 2016") == [Date(2003, 3, 31), Date(2016, 12, 2)]
    assert fiscal_year_of_end(Date(2023, 1, 1)) == 2022
    assert fiscal_year_of_end(Date(2023, 5, 31)) == 2023
    assert calendar_quarter(Date(2023, 6, 30)) == 2
    assert calendar_quarter(Date(2023, 4, 2)) == 1  # a 13-week quarter spilling two days


def test_earnings_release_headline(tmp_path: Path):
    path = write_pdf(
        tmp_path / "release.pdf",
        [
            [
                ("FOR IMMEDIATE RELEASE", 9),
                ("Contoso Ltd. Reports Fourth Quarter", 20),
                ("and Full Year 2023 Results", 20),
            ]
        ],
    )
    card = card_for_file(path)
    assert card.doc_type == "earnings release"
    assert card.title == "Contoso Ltd. Reports Fourth Quarter and Full Year 2023 Results"
    assert (card.organisation, card.fiscal_year, card.quarter) == ("Contoso Ltd.", 2023, 4)


def test_markdown_document_card_from_its_chunks(tmp_path: Path):
    """Formats without type sizes: the parser's title, the headings as contents, the period named."""
    path = tmp_path / "notes.md"
    path.write_text(
        "# Field Manual for Pump Station 4\n\n## Installation\n\nBolt it down.\n\n## Maintenance\n\nOil it.\n"
    )
    card = card_for(parse_file(path))
    assert card.title == "Field Manual for Pump Station 4"
    assert card.doc_type == "manual"
    assert "Installation" in card.toc and "Maintenance" in card.toc


def _filing_with_a_ruled_symbol_table(path: Path) -> Path:
    """A 10-K cover whose class, trading symbol and exchange sit in a ruled table, as many SEC covers set them."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 72.0
    for text, size in [
        ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 14),
        ("FORM 10-K", 16),
        ("ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934", 8),
        ("For the fiscal year ended December 31, 2022", 8),
        ("NORTHWIND TRADERS CORPORATION", 14),
        ("(Exact name of registrant as specified in its charter)", 7),
    ]:
        page.insert_text((72, y), text, fontsize=size, fontname="helv")
        y += size * 2.2
    rows = [
        ("Title of each class", "Trading Symbol", "Name of each exchange on which registered"),
        ("Common Stock", "NWT", "New York Stock Exchange"),
    ]
    left, widths, height = 72.0, (150.0, 100.0, 218.0), 24.0
    for r, row in enumerate(rows):
        x = left
        for width, cell in zip(widths, row, strict=True):
            page.draw_rect(pymupdf.Rect(x, y + r * height, x + width, y + (r + 1) * height), width=0.8)
            page.insert_text((x + 4, y + r * height + 15), cell, fontsize=8, fontname="helv")
            x += width
    doc.save(path)
    doc.close()
    return path


def test_the_card_from_the_pages_add_parsed_is_the_card_read_from_the_file(tmp_path: Path):
    """`add` makes the cover from the pages it parsed with tables on; a ruled table's rows stay cover lines."""
    from hyperfolio.cards.cover import pdf_cover, read_cover
    from hyperfolio.cards.offline import card_from_cover
    from hyperfolio.config import ParseOptions
    from hyperfolio.parse import read_file, read_pages

    path = _filing_with_a_ruled_symbol_table(tmp_path / "filing.pdf")
    data = read_file(path)
    parsed = read_pages(path, data, ParseOptions(), [0])
    assert any(item.kind == "table" for page in parsed.pages for item in page.items)  # the table was found
    from_add = card_from_cover(pdf_cover(path, data, parsed.pages, 1), kind="pdf")
    from_file = card_from_cover(read_cover(path), kind="pdf")
    assert from_add == from_file
    assert from_add.aliases == ["NWT"] and from_add.organisation == "NORTHWIND TRADERS CORPORATION"
