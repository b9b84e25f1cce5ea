"""Page text that reaches answers and citations: one title rule, headings only from type that fits its
box, a cover's title over coloured panels kept as text, a page's text layer kept beside its OCR, and
figure OCR kept only where it is shaped like writing."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from hyperfolio.cards.offline import card_for_file
from hyperfolio.parse import parse_file
from hyperfolio.parse.file_titles import file_title, meaningful_title
from hyperfolio.parse.ocr import clean_ocr_text
from hyperfolio.parse.pdf.items import Item
from hyperfolio.parse.pdf.structure import _heading_candidate, reads_as_heading

from .conftest import LOREM, text_png

TITLE = "Division of Quality Assurance Strategic Plan"


# Overlapping panels of many sizes (no grid, so no table), the title's band among them.
_PANELS = [
    (60, 110, 300, 130), (340, 90, 90, 90), (420, 160, 120, 70), (60, 250, 420, 110), (470, 240, 80, 150),
    (90, 370, 140, 120), (220, 380, 90, 60), (300, 350, 160, 140), (150, 480, 70, 70), (400, 470, 110, 60),
]  # fmt: skip


def _panel_cover(path: Path, metadata_title: str = "") -> Path:
    """A cover whose title is set in 26 pt over a collage of coloured panels (vector drawings MuPDF
    clusters into one figure), then a page of body text."""
    doc = pymupdf.open()
    page = doc.new_page()
    shape = page.new_shape()
    for i, (x, y, w, h) in enumerate(_PANELS):
        shape.draw_rect(pymupdf.Rect(x, y, x + w, y + h))
        shape.finish(fill=((i * 53 % 255) / 255, 0.6, (i * 97 % 255) / 255), color=None)
    shape.commit()
    page.insert_text((80, 300), "Division of Quality", fontsize=26)
    page.insert_text((80, 332), "Assurance Strategic Plan", fontsize=26)
    page.insert_text((80, 620), "Prepared for the board", fontsize=11)
    body = doc.new_page()
    body.insert_textbox(pymupdf.Rect(72, 72, 520, 700), LOREM * 6, fontsize=10)
    if metadata_title:
        doc.set_metadata({"title": metadata_title})
    doc.save(path)
    return path


def test_a_title_in_display_type_over_panels_is_text_and_names_the_document(tmp_path: Path) -> None:
    parsed = parse_file(_panel_cover(tmp_path / "plan.pdf"), None)
    cover_text = " ".join(c.text for c in parsed.pages[0].chunks if c.modality == "text")
    assert "Assurance Strategic Plan" in cover_text
    assert parsed.title == TITLE


def test_the_parser_and_the_card_name_a_pdf_by_one_rule(tmp_path: Path) -> None:
    path = _panel_cover(tmp_path / "plan.pdf", metadata_title="Plan_final_v3_4.30.20")
    assert parse_file(path, None).title == card_for_file(path).title == TITLE


def test_a_file_name_is_the_last_resort_title() -> None:
    assert file_title("/data/ISEP_student_handbook_2020.pdf") == "ISEP student handbook 2020"
    assert file_title("7c3f6204b3241f142f0f8eb8e1fefe7a.pdf") == "7c3f6204b3241f142f0f8eb8e1fefe7a"


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("4K UHD Display User Manual", True),
        ("Business Management and Entrepreneurship_Cajon_4.30.20", False),
        ("report.pdf", False),
        ("Microsoft Word - draft", False),
        ("Untitled", False),
        ("PowerPoint Presentation", False),
    ],
)
def test_a_metadata_title_is_kept_only_when_it_reads_as_a_title(raw: str, kept: bool) -> None:
    assert (meaningful_title(raw) == raw) is kept


def _segment(text: str, size: float, width: float) -> Item:
    return Item(kind="text", bbox=(67.0, 92.0, 67.0 + width, 92.0 + size), text=text, size=size)


def test_a_heading_needs_type_that_fits_its_box() -> None:
    # A graphic's lettering: 47 pt declared, drawn 13 pt wide ("In dependents' views of").
    assert _heading_candidate(_segment("In dependents views of", 47.0, 13.0), body=11.0) is None
    assert _heading_candidate(_segment("Independents views of the border", 16.0, 250.0), body=11.0) == 16.0


@pytest.mark.needs("tesseract")
def test_an_ocr_page_keeps_its_text_layer(tmp_path: Path) -> None:
    """A cover scanned as a picture, its title in the text layer only (drawn invisible here, as OCR
    misses a stylised title): OCR reads the picture, and the title stays, once."""
    doc = pymupdf.open()
    page = doc.new_page()
    lines = ["The harbour authority approved", "the dredging plan in March", "after fourteen months of study"]
    page.insert_image(page.rect, stream=text_png(lines * 3, fontsize=24))
    page.insert_text((60, 40), "Harbour Review", fontsize=30, render_mode=3)
    path = tmp_path / "scanned.pdf"
    doc.save(path)
    parsed = parse_file(path, None)
    text = " ".join(c.text for c in parsed.pages[0].chunks)
    assert parsed.pages[0].ocr
    assert "dredging" in text.lower()
    assert text.count("Harbour Review") == 1


def test_figure_ocr_keeps_words_and_numbers_and_drops_marks() -> None:
    noisy = "Lea hs) Dem |i 17] Independents | yo |can] 9 NET NET 33"
    assert clean_ocr_text(noisy) == "Lea Dem 17 Independents can 9 NET NET 33"
    prose = "Revenue grew 12.5% in FY2023 (see Table 3). I think it's the U.S. and COVID-19: 1,234 ($5.6bn)."
    assert clean_ocr_text(prose) == prose
    assert clean_ocr_text("e-mail www.pewresearch.org 09/13/18 2016-2018 5G iPhone") == (
        "e-mail www.pewresearch.org 09/13/18 2016-2018 5G iPhone"
    )
    assert clean_ocr_text("| |: ] i y y |") == ""  # a chart's gridlines: nothing legible, no text


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("3.2 Program-Guided Reasoning", True),
        ("iii) Board Meetings held during the year", True),
        ("Is the service safe?", True),
        ("iPhone sales by region", True),
        ("About Pew Research Center", False),  # the page's furniture
        ("believe that all pens are made in Hamburg, Germany. The", False),  # a sentence's broken line
        ("s in Germany, while German", False),  # a graphic's lettering
        ("Liangming Pan1,2 Xiaobao Wu3 Xinyuan Lu4", False),  # authors with affiliation marks
        ("A A A", False),  # OCR debris
        ("● (German: Gestalt)", False),  # a bullet
        (":", False),
    ],
)
def test_what_reads_as_a_heading(line: str, heading: bool) -> None:
    assert reads_as_heading(line) is heading


def test_a_heading_set_on_two_lines_is_one_section(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "HAMILTON", fontsize=30)
    page.insert_text((72, 134), "COUNTY", fontsize=30)
    page.insert_textbox(pymupdf.Rect(72, 160, 520, 400), LOREM * 2, fontsize=10)
    page.insert_text((72, 430), "Settlement History", fontsize=16)
    page.insert_textbox(pymupdf.Rect(72, 445, 520, 700), LOREM * 2, fontsize=10)
    path = tmp_path / "county.pdf"
    doc.save(path)
    paths = {tuple(c.section_path) for c in parse_file(path, None).pages[0].chunks}
    assert ("HAMILTON COUNTY", "Settlement History") in paths
    assert not any(p[:1] == ("HAMILTON",) for p in paths)


def test_a_contents_page_opens_no_sections(tmp_path: Path) -> None:
    doc = pymupdf.open()
    contents = doc.new_page()
    for i, line in enumerate(["Executive Summary i", "Chapter 1: Settlement 3", "Chapter 2: Survey Results 23"]):
        contents.insert_text((72, 100 + 30 * i), line, fontsize=16)
    body = doc.new_page()
    body.insert_text((72, 80), "Settlement", fontsize=16)
    body.insert_textbox(pymupdf.Rect(72, 100, 520, 700), LOREM * 4, fontsize=10)
    path = tmp_path / "contents.pdf"
    doc.save(path)
    parsed = parse_file(path, None)
    headings = {h for page in parsed.pages for c in page.chunks for h in c.section_path}
    assert headings == {"Settlement"}


def test_a_numbered_heading_is_not_run_into_the_heading_below_it(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "A.2 Prompts for Question Generation", fontsize=14)
    page.insert_text((72, 118), "Prompts for the initial question", fontsize=14, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 130, 520, 700), LOREM * 4, fontsize=10)
    path = tmp_path / "numbered.pdf"
    doc.save(path)
    headings = {h for c in parse_file(path, None).pages[0].chunks for h in c.section_path}
    assert "A.2 Prompts for Question Generation Prompts for the initial question" not in headings
    assert "Prompts for the initial question" in headings


def test_a_court_filing_without_display_type_is_named_by_its_caption(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    lines = [
        "UNITED STATES DISTRICT COURT EASTERN DISTRICT OF MICHIGAN",
        "United States of America, Plaintiff,",
        "Defendant in rem.",
        "Complaint For Forfeiture",
        "Plaintiff, the United States of America, by and through its attorney, states the following.",
    ]
    for i, line in enumerate(lines):
        page.insert_text((72, 100 + 24 * i), line, fontsize=12)
    page.insert_textbox(pymupdf.Rect(72, 240, 520, 700), LOREM * 4, fontsize=12)
    path = tmp_path / "3276a5b991c49cf5f9a4af0f7d6fce67.pdf"
    doc.save(path)
    assert parse_file(path, None).title == "Complaint For Forfeiture"
