"""Small PDFs made here with PyMuPDF: covers shaped like the real ones the card reads (an SEC
filing's, a report's with furniture above its title, a paper's first page, a slide deck)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pymupdf
import pytest

Line = tuple[str, float]  # text, type size
BODY = (
    "This paragraph is body text set in the common size of the document, long enough that the body "
    "size is measured on it rather than on the headings and the title above it."
)


def write_pdf(
    path: Path, pages: Sequence[Sequence[Line]], width: float = 612, height: float = 792, body: int = 1
) -> Path:
    """One PDF page per list of (text, size) lines, set top to bottom; body text follows the lines of
    the first `body` pages."""
    doc = pymupdf.open()
    for number, lines in enumerate(pages):
        page = doc.new_page(width=width, height=height)
        y = 60.0
        for text, size in lines:
            y += size * 1.4
            page.insert_text((54, y), text, fontsize=size)
        box = pymupdf.Rect(54, y + 20, width - 54, height - 60)
        for _ in range(3 if number < body else 0):
            page.insert_textbox(box, BODY, fontsize=10)
            box.y0 += 60
    doc.save(path)
    doc.close()
    return path


@pytest.fixture
def ten_k(tmp_path: Path) -> Path:
    cover = [
        ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 14),
        ("Washington, D.C. 20549", 9),
        ("FORM 10-K", 16),
        ("ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934", 8),
        ("For the fiscal year ended January 1, 2023", 8),
        ("Commission File Number 1-1234", 8),
        ("NORTHWIND TRADERS CORPORATION", 14),
        ("(Exact name of registrant as specified in its charter)", 7),
        ("Title of each class Trading Symbol Name of each exchange on which registered", 7),
        ("Common Stock NWT New York Stock Exchange", 7),
    ]
    contents = [
        ("TABLE OF CONTENTS", 12),
        ("PART I", 10),
        ("Item 1. Business 3", 10),
        ("Item 1A. Risk Factors 12", 10),
        ("Item 2. Properties 20", 10),
        ("PART II", 10),
        ("Item 7. Management's Discussion and Analysis 31", 10),
        ("Item 8. Financial Statements and Supplementary Data 52", 10),
    ]
    return write_pdf(tmp_path / "filing.pdf", [cover, contents])


@pytest.fixture
def ten_q(tmp_path: Path) -> Path:
    cover = [
        ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 10),
        ("FORM 10-Q", 16),
        ("QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934", 8),
        ("For the quarterly period ended June 30, 2023", 8),
        ("Contoso Bank & Co.", 22),
        ("(Exact name of registrant as specified in its charter)", 7),
        ("Trading symbol: CBCO", 8),  # printed, but not in the exchange line the offline reader reads
    ]
    return write_pdf(tmp_path / "quarter.pdf", [cover])


@pytest.fixture
def report(tmp_path: Path) -> Path:
    cover = [
        ("About Northwind Research Institute", 30),  # furniture, printed larger than the title
        ("FOR RELEASE MARCH 9, 2020", 9),
        ("The State of Regional Rail", 24),
        ("in Northern Europe", 24),
        ("Northwind Research Institute", 12),
        ("Table of Contents", 28),
    ]
    return write_pdf(tmp_path / "report.pdf", [cover])


@pytest.fixture
def paper(tmp_path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((20, 500), "arXiv:2401.01234v1 [cs.CL] 3 Jan 2024", fontsize=20, rotate=90)
    y = 70.0
    for text, size in [
        ("Sparse Retrieval over Page Graphs", 17),
        ("for Long Multimodal Documents", 17),
        ("Ada Lovelace1 Alan Turing2", 12),
        ("1University of Somewhere 2Institute of Elsewhere", 11),
        ("Abstract", 12),
    ]:
        y += size * 1.5
        page.insert_text((72, y), text, fontsize=size)
    page.insert_textbox(pymupdf.Rect(72, y + 10, 520, y + 200), BODY, fontsize=10)
    page.insert_text((72, y + 230), "1 Introduction", fontsize=12)
    page.insert_textbox(pymupdf.Rect(72, y + 240, 520, y + 500), BODY, fontsize=10)
    doc.save(tmp_path / "paper.pdf")
    doc.close()
    return tmp_path / "paper.pdf"


def write_slides(path: Path, slides: list[list[tuple[str, float]]]) -> Path:
    """A landscape deck, one page per slide, each line (text, font size) under the last."""
    doc = pymupdf.open()
    for lines in slides:
        page = doc.new_page(width=720, height=405)
        y = 60.0
        for text, size in lines:
            y += size * 1.5
            page.insert_text((40, y), text, fontsize=size)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture
def deck(tmp_path: Path) -> Path:
    slides = [[("Quarterly Market Update", 40), ("Sales team, spring", 20)], [("Agenda", 36), ("Numbers", 20)]]
    return write_slides(tmp_path / "deck.pdf", slides)
