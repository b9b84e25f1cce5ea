"""Word, PowerPoint, Excel/CSV and image files: structure, cells, notes, OCR, failures and cited answers.

Every fixture is generated here with the libraries the parsers read it with; nothing binary is committed.
"""

from __future__ import annotations

import io
import logging
import os
import re
from datetime import date
from pathlib import Path

import pytest

from hyperfolio import Collection
from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.model import Citation, Document
from hyperfolio.parse import inspect_bytes, page_count, parse_file, quick_page_count

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
NO_OCR = ParseOptions(ocr=False)


def text_image(lines: list[str], size: int = 48):
    """A white picture of black text, large enough for Tesseract to read."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(DEJAVU), size) if DEJAVU.exists() else ImageFont.load_default(size=size)
    img = Image.new("RGB", (1400, 60 + int(size * 1.6) * len(lines)), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((40, 30 + int(size * 1.6) * i), line, fill="black", font=font)
    return img


def png_bytes(img) -> bytes:
    buffer = io.BytesIO()
    img.save(buffer, format="PNG")
    return buffer.getvalue()


def make_docx(path: Path) -> Path:
    """Title, two headed sections; the second, after an explicit page break, holds a table and a figure."""
    import docx

    doc = docx.Document()
    doc.core_properties.title = "Harbour Fleet Review"
    doc.add_heading("Harbour Fleet Review", 0)
    doc.add_heading("Overview", 1)
    doc.add_paragraph("The harbour authority reviewed its tug fleet during the winter season.")
    doc.add_paragraph("Two older tugs were retired after inspection.", style="List Bullet")
    doc.add_page_break()
    doc.add_heading("Vessel tonnage", 1)
    doc.add_paragraph("Table 2: Gross tonnage by vessel")
    table = doc.add_table(rows=3, cols=2)
    for r, row in enumerate([("Vessel", "Gross tonnage"), ("Kestrel", "4,200"), ("Osprey", "5,917")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_picture(io.BytesIO(png_bytes(text_image(["Crane"]))))
    doc.add_paragraph("Figure 1: The quay crane")
    doc.add_paragraph("The Osprey is the heaviest vessel in the fleet.")
    doc.save(path)
    return path


def make_pptx(path: Path) -> Path:
    """Two slides; only slide 1's notes mention the pelican survey, only slide 2 holds the port table."""
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Harbour strategy"
    slide.placeholders[1].text = "Grow container traffic\nModernise the quay"
    slide.notes_slide.notes_text_frame.text = "The pelican survey counted 312 nesting pairs along the breakwater."
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Port calls"
    table = slide.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(5), Inches(1.5)).table
    for r, row in enumerate([("Port", "Ship calls"), ("Leith", "418"), ("Grimsby", "273")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(5), Inches(4), Inches(1)).text_frame.text = "Dredging finished in May"
    # the group, moved and shrunk to half size, maps its child's box onto the slide
    group.left, group.top, group.width, group.height = Inches(0.5), Inches(4), Inches(2), Inches(0.5)
    deck.save(path)
    return path


def make_xlsx(path: Path) -> Path:
    """A Summary sheet with a formula and a percentage; a Costs sheet; an empty sheet."""
    import openpyxl

    book = openpyxl.Workbook()
    summary = book.active
    summary.title = "Summary"
    summary.append(["Quarter", "Revenue", "Margin", "Closed"])
    summary.append(["Q1", 1200, 0.25, date(2024, 3, 31)])
    summary.append(["Q2", 1850.5, 0.3, date(2024, 6, 30)])
    summary.append(["Total", "=SUM(B2:B3)", None, None])
    summary["C2"].number_format = summary["C3"].number_format = "0%"
    costs = book.create_sheet("Costs")
    costs.append(["Cost item", "Amount"])
    costs.append(["Anchor chain replacement", 8450])
    costs.append(["Fender repairs", 1320])
    book.create_sheet("Blank")
    book.save(path)
    return path


def chunks_with(doc: Document, words: str) -> list:
    return [c for c in doc.chunks if words.lower() in c.text.lower()]


# ---------------------------------------------------------------- Word


def test_docx_headings_tables_lists_and_figures(tmp_path: Path) -> None:
    doc = parse_file(make_docx(tmp_path / "fleet.docx"), NO_OCR)
    assert doc.kind == "word" and doc.title == "Harbour Fleet Review"
    assert [p.number for p in doc.pages] == [1, 2]  # the explicit page break starts page 2
    overview = chunks_with(doc, "winter season")[0]
    assert overview.page == 1 and overview.section_path == ["Harbour Fleet Review", "Overview"]
    assert "• Two older tugs were retired" in chunks_with(doc, "older tugs")[0].text
    table = next(c for c in doc.chunks if c.modality == "table")
    assert table.page == 2 and table.section_path == ["Harbour Fleet Review", "Vessel tonnage"]
    assert table.table == [["Vessel", "Gross tonnage"], ["Kestrel", "4,200"], ["Osprey", "5,917"]]
    assert table.table_header_rows == 1 and table.caption == "Table 2: Gross tonnage by vessel"
    figure = next(c for c in doc.chunks if c.modality == "image")
    assert figure.image and figure.image_ext == "png" and figure.caption == "Figure 1: The quay crane"
    assert [c.modality for c in chunks_with(doc, "Figure 1")] == ["image"]  # the caption moved into the figure
    assert all("page_label" not in c.meta for c in doc.chunks)


def test_docx_content_controls_are_read_and_the_toc_is_not(tmp_path: Path) -> None:
    import docx
    from docx.oxml import parse_xml

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    toc = '<w:sdtPr><w:docPartObj><w:docPartGallery w:val="Table of Contents"/></w:docPartObj></w:sdtPr>'
    doc = docx.Document()
    doc.add_heading("Moorings", 1)
    doc.add_paragraph("Buoys are inspected every spring.")
    body = doc.element.body
    body.insert(
        0,
        parse_xml(f"<w:sdt {w}><w:sdtContent><w:p><w:r><w:t>Port of Calloway</w:t></w:r></w:p></w:sdtContent></w:sdt>"),
    )
    body.insert(
        1,
        parse_xml(f"<w:sdt {w}>{toc}<w:sdtContent><w:p><w:r><w:t>Moorings 1</w:t></w:r></w:p></w:sdtContent></w:sdt>"),
    )
    doc.save(tmp_path / "cover.docx")
    parsed = parse_file(tmp_path / "cover.docx")
    assert [c.text for c in parsed.chunks] == ["Port of Calloway", "Moorings\nBuoys are inspected every spring."]


@pytest.mark.needs("tesseract")
def test_docx_picture_text_is_read(tmp_path: Path) -> None:
    doc = parse_file(make_docx(tmp_path / "fleet.docx"))
    figure = next(c for c in doc.chunks if c.modality == "image")
    assert figure.ocr_text and "crane" in figure.ocr_text.lower()
    assert "crane" in figure.text.lower()


# ---------------------------------------------------------------- PowerPoint


def test_pptx_one_page_per_slide_with_notes(tmp_path: Path) -> None:
    path = make_pptx(tmp_path / "deck.pptx")
    doc = parse_file(path, NO_OCR)
    assert doc.kind == "slides" and doc.title == "Harbour strategy"
    assert [p.number for p in doc.pages] == [1, 2]
    assert all((p.width, p.height) == (720.0, 540.0) for p in doc.pages)  # 10 x 7.5 inches in points
    assert page_count(path, path.read_bytes()) == 2 and quick_page_count(path) == 2
    notes = chunks_with(doc, "pelican survey")
    assert len(notes) == 1 and notes[0].page == 1 and notes[0].meta["notes"] is True
    assert notes[0].section_path == ["Harbour strategy", "Speaker notes"]
    body = chunks_with(doc, "Grow container traffic")[0]
    assert body.section_path == ["Harbour strategy"] and body.bbox is not None
    table = next(c for c in doc.chunks if c.modality == "table")
    assert table.page == 2 and table.table == [["Port", "Ship calls"], ["Leith", "418"], ["Grimsby", "273"]]
    assert table.bbox == pytest.approx((72.0, 144.0, 432.0, 252.0))  # 1 in, 2 in, 5 x 1.5 in
    grouped = chunks_with(doc, "Dredging finished")[0]
    assert grouped.page == 2 and grouped.bbox == pytest.approx((36.0, 288.0, 180.0, 324.0))
    assert {c.meta["page_label"] for c in doc.pages[1].chunks} == {"slide 2"}


# ---------------------------------------------------------------- Excel and CSV


def test_xlsx_one_page_per_sheet_with_cells(tmp_path: Path) -> None:
    path = make_xlsx(tmp_path / "accounts.xlsx")
    doc = parse_file(path)
    assert doc.kind == "spreadsheet" and [p.number for p in doc.pages] == [1, 2]  # the blank sheet has no page
    summary, costs = (p.chunks[0] for p in doc.pages)
    assert summary.section_path == ["Summary"] and summary.meta["page_label"] == "sheet Summary"
    assert summary.table == [
        ["Quarter", "Revenue", "Margin", "Closed"],
        ["Q1", "1200", "25%", "2024-03-31"],
        ["Q2", "1850.5", "30%", "2024-06-30"],
        ["Total", "3050.5", "", ""],  # saved by openpyxl without a result: calculated at ingest
    ]
    assert summary.table_header_rows == 1
    assert (
        costs.meta["page_label"] == "sheet Costs"
        and costs.table
        and costs.table[1]
        == [
            "Anchor chain replacement",
            "8450",
        ]
    )
    assert quick_page_count(path) == 3  # sheets counted from the workbook part: an estimate for progress


def test_xlsx_cached_formula_values_win(tmp_path: Path) -> None:
    """A workbook Excel calculated stores each formula's result: that is what a reader sees."""
    import zipfile

    path = make_xlsx(tmp_path / "book.xlsx")
    calculated = tmp_path / "calculated.xlsx"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(calculated, "w") as out:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":  # what Excel stores once it has calculated
                data, found = re.subn(
                    rb"<f>SUM\(B2:B3\)</f>(<v></v>|<v\s*/>)?", b"<f>SUM(B2:B3)</f><v>3050.5</v>", data
                )
                assert found == 1
            out.writestr(item, data)
    table = parse_file(calculated).pages[0].chunks[0].table
    assert table is not None and table[3][:2] == ["Total", "3050.5"]


def test_xlsx_formulas_without_saved_results_are_calculated(tmp_path: Path) -> None:
    """A generated workbook never opened in Excel: its arithmetic formulas are calculated (across sheets,
    through other formulas, with the cell's number format); the others stay formula text, counted."""
    import openpyxl

    book = openpyxl.Workbook()
    sales = book.active
    sales.title = "Sales"
    sales.append(["Item", "Units", "Price", "Revenue"])
    sales.append(["Widgets", 10, 2.5, "=B2*C2"])
    sales.append(["Gadgets", 4, 12, "=B3*C3"])
    sales.append(["Total", "=SUM(B2:B3)", None, "=SUM(D2:D3)"])
    sales.append(["Widget share", None, None, "=D2/D4"])
    sales["D5"].number_format = "0.0%"
    sales.append(["Lookup", None, None, '=VLOOKUP("Widgets",A2:D3,4,FALSE)'])
    book.create_sheet("Summary").append(["Doubled total", "=Sales!D4*2", "=1/0"])
    book.save(tmp_path / "sales.xlsx")
    doc = parse_file(tmp_path / "sales.xlsx")
    sales_table, summary_table = (p.chunks[0].table for p in doc.pages)
    assert sales_table is not None and summary_table is not None
    assert [row[3] for row in sales_table[1:5]] == ["25", "48", "73", "34.2%"]
    assert sales_table[4 - 1][1] == "14"
    assert sales_table[5][3] == '=VLOOKUP("Widgets",A2:D3,4,FALSE)'  # outside the calculated subset
    assert summary_table[0][1:] == ["146", "=1/0"]
    assert doc.meta["formulas_calculated"] == 6
    assert any("2 formulas have no saved result" in w for w in doc.meta["warnings"])


def test_large_sheet_is_split_with_its_header(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Log"
    sheet.append(["Day", "Vessel", "Cargo tonnes"])
    for day in range(1, 301):
        sheet.append([f"Day {day}", f"Vessel {day % 17}", day * 13])
    book.save(tmp_path / "log.xlsx")
    doc = parse_file(tmp_path / "log.xlsx", ParseOptions(chunk_tokens=120))
    parts = doc.pages[0].chunks
    assert len(doc.pages) == 1 and len(parts) > 3
    assert all(p.table and p.table[0] == ["Day", "Vessel", "Cargo tonnes"] for p in parts)
    rows = [row for p in parts for row in (p.table or [])[1:]]
    assert len(rows) == 300 and rows[-1] == ["Day 300", "Vessel 11", "3900"]


def test_csv_is_one_sheet_named_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "moorings.csv"
    path.write_text("Berth;Length (m);Depth (m)\nNorth 1;220;14.5\nSouth 2;180;12\n")
    doc = parse_file(path)
    assert doc.kind == "csv" and len(doc.pages) == 1
    chunk = doc.pages[0].chunks[0]
    assert chunk.modality == "table" and chunk.section_path == ["moorings"]
    assert chunk.table == [["Berth", "Length (m)", "Depth (m)"], ["North 1", "220", "14.5"], ["South 2", "180", "12"]]
    assert chunk.table_header_rows == 1 and chunk.meta["page_label"] == "sheet moorings"


# ---------------------------------------------------------------- images


def test_tiff_frames_are_pages(tmp_path: Path) -> None:
    first, second = text_image(["First frame"]), text_image(["Second frame"])
    path = tmp_path / "scan.tif"
    first.save(path, save_all=True, append_images=[second], dpi=(144, 144))
    assert quick_page_count(path) == 2 and inspect_bytes(path, path.read_bytes()) == 2
    doc = parse_file(path, NO_OCR)
    assert doc.kind == "image" and [p.number for p in doc.pages] == [1, 2]
    page = doc.pages[1]
    assert (page.width, page.height) == pytest.approx((first.width / 2, first.height / 2))  # 144 dpi
    image = page.chunks[0]
    assert image.modality == "image" and image.image_ext == "png" and image.image
    assert image.image.startswith(b"\x89PNG") and image.bbox == pytest.approx((0, 0, page.width, page.height))


@pytest.mark.needs("tesseract")
def test_png_text_is_ocred_with_boxes(tmp_path: Path) -> None:
    path = tmp_path / "notice.png"
    text_image(["Berth closed for dredging", "until the ninth of June"]).save(path)
    doc = parse_file(path)
    page = doc.pages[0]
    assert page.ocr and len(page.chunks) >= 2
    assert page.chunks[0].modality == "image" and page.chunks[0].image == path.read_bytes()
    text = [c for c in page.chunks if c.modality == "text"]
    assert "dredging" in " ".join(c.text for c in text).lower()
    for chunk in text:  # boxes in points at 72 dpi: inside the picture
        assert chunk.bbox is not None and 0 <= chunk.bbox[0] < chunk.bbox[2] <= page.width
    assert "ocr" not in doc.meta


def test_image_without_tesseract_keeps_the_picture(tmp_path: Path, monkeypatch, caplog) -> None:
    import hyperfolio.parse.image as image_parser

    monkeypatch.setattr(image_parser, "tesseract_available", lambda: False)
    path = tmp_path / "photo.jpg"
    text_image(["Quay wall"]).save(path, format="JPEG")
    with caplog.at_level(logging.WARNING, logger="hyperfolio.parse.image"):
        doc = parse_file(path)
    assert [c.modality for c in doc.chunks] == ["image"] and not doc.pages[0].ocr
    assert doc.chunks[0].image_ext == "jpg" and doc.meta["ocr"] == "unavailable"
    assert any("Tesseract" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("notes.docx", "not a valid Word file: not a zip package"),
        ("deck.pptx", "not a valid PowerPoint file: not a zip package"),
        ("book.xlsx", "not a valid Excel file: not a zip package"),
        ("scan.png", "not a valid image: the file is corrupt or not a PNG image"),
        ("photo.jpg", "not a valid image"),
        ("scan.tiff", "not a valid image"),
    ],
)
def test_corrupt_files_fail_with_one_line(tmp_path: Path, name: str, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(os.urandom(4096).replace(b"PK", b"pk"))
    for attempt in (lambda: parse_file(path), lambda: inspect_bytes(path, path.read_bytes())):
        with pytest.raises(ParseError) as info:
            attempt()
        assert info.value.path == str(path)
        assert info.value.reason.startswith(reason) and "\n" not in info.value.reason


def test_wrong_or_damaged_packages_say_what_is_wrong(tmp_path: Path) -> None:
    deck = make_pptx(tmp_path / "deck.pptx")
    renamed = tmp_path / "report.docx"
    renamed.write_bytes(deck.read_bytes())
    with pytest.raises(ParseError, match="not a valid Word file: it is a PowerPoint deck"):
        parse_file(renamed)
    cut = tmp_path / "cut.xlsx"
    cut.write_bytes(make_xlsx(tmp_path / "whole.xlsx").read_bytes()[:1500])
    with pytest.raises(ParseError, match="not a valid Excel file: the zip package is truncated or damaged"):
        parse_file(cut)
    binary = tmp_path / "data.csv"
    binary.write_bytes(b"a,b\n\x00\x01\x02")
    with pytest.raises(ParseError, match="binary content under a csv name"):
        inspect_bytes(binary, binary.read_bytes())


def test_encrypted_docx_needs_a_password(tmp_path: Path) -> None:
    from msoffcrypto.format.ooxml import OOXMLFile

    plain = make_docx(tmp_path / "plain.docx")
    locked = tmp_path / "locked.docx"
    with plain.open("rb") as source, locked.open("wb") as out:
        OOXMLFile(source).encrypt("harbour-secret", out)
    for attempt in (lambda: parse_file(locked), lambda: inspect_bytes(locked, locked.read_bytes())):
        with pytest.raises(ParseError) as info:
            attempt()
        assert info.value.reason == "encrypted; a password is needed to read it"


# ---------------------------------------------------------------- citations


def test_citation_labels_name_slides_and_sheets() -> None:
    def label(page_label: str) -> str:
        return Citation("d", "Deck", 3, None, [], "d:3:0", "text", page_label=page_label).label()

    assert label("slide 3") == "Deck slide 3"
    assert label("sheet Revenue") == "Deck sheet Revenue"
    assert label("iv") == "Deck p.3 (printed iv)"
    assert label("") == "Deck p.3"


def test_mcp_citation_lines_name_slides_and_sheets() -> None:
    from hyperfolio.server.mcp import _cite

    cite = {"title": "Deck", "doc_id": "d1", "page": 2, "bbox": None}
    assert _cite(1, {**cite, "page_label": "slide 2"}) == "[1] Deck (doc d1), slide 2"
    assert _cite(1, {**cite, "page_label": "sheet Costs"}) == "[1] Deck (doc d1), sheet Costs"
    assert _cite(1, {**cite, "page_label": "5"}) == "[1] Deck (doc d1), page 2 (printed page 5)"


# ---------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def office_collection(tmp_path_factory: pytest.TempPathFactory, embedder):
    """One collection of every office kind, added together with corrupt files that must not stop it."""
    folder = tmp_path_factory.mktemp("office")
    files = [
        make_docx(folder / "fleet.docx"),
        folder / "broken.docx",
        make_pptx(folder / "deck.pptx"),
        folder / "broken.pptx",
        make_xlsx(folder / "accounts.xlsx"),
        folder / "broken.xlsx",
        folder / "moorings.csv",
        folder / "broken.png",
    ]
    for path in files:
        if path.stem == "broken":
            path.write_bytes(os.urandom(2048).replace(b"PK", b"pk"))
    (folder / "moorings.csv").write_text("Berth,Length (m),Depth (m)\nNorth 1,220,14.5\nSouth 2,180,12\n")
    col = Collection(folder / "col", embedder=embedder)
    report = col.add(files)
    yield col, {Path(r.path).name: r for r in report.results}
    col.close()


def test_add_reports_corrupt_files_and_indexes_the_rest(office_collection) -> None:
    _, results = office_collection
    for name in ("broken.docx", "broken.pptx", "broken.xlsx", "broken.png"):
        assert results[name].status == "failed", name
        assert "not a valid" in results[name].reason and "\n" not in results[name].reason
    for name in ("fleet.docx", "deck.pptx", "accounts.xlsx", "moorings.csv"):
        assert results[name].status == "added", (name, results[name].reason)


def cited(answer, words: str) -> Citation:
    """The citation whose chunk holds `words`: the answer must rest on it."""
    chunks = {item.chunk.chunk_id: item.chunk for item in answer.evidence.items}
    for citation in answer.citations:
        if words.lower() in chunks[citation.chunk_id].text.lower():
            return citation
    raise AssertionError(f"no citation holds {words!r}: {[c.label() for c in answer.citations]}")


def test_docx_table_cell_answer_cites_its_page(office_collection) -> None:
    col, _ = office_collection
    answer = col.ask("What is the gross tonnage of the Osprey?", doc="fleet.docx")
    assert answer.sufficient and "5,917" in answer.text
    citation = cited(answer, "5,917")
    assert citation.page == 2 and citation.modality == "table"
    assert citation.section_path == ["Harbour Fleet Review", "Vessel tonnage"]


def test_slide_answers_cite_their_slide(office_collection) -> None:
    col, _ = office_collection
    answer = col.ask("How many ship calls did Grimsby have?", doc="deck.pptx")
    assert answer.sufficient and "273" in answer.text
    citation = cited(answer, "273")
    assert citation.page == 2 and citation.page_label == "slide 2"
    assert citation.label().startswith("Harbour strategy slide 2")
    notes = col.ask("How many nesting pairs did the pelican survey count?", doc="deck.pptx")
    assert notes.sufficient and "312" in notes.text
    citation = cited(notes, "312 nesting pairs")
    assert citation.page == 1 and citation.label().startswith("Harbour strategy slide 1")
    assert citation.section_path == ["Harbour strategy", "Speaker notes"]


def test_sheet_answers_cite_their_sheet(office_collection) -> None:
    col, _ = office_collection
    answer = col.ask("How much did the anchor chain replacement cost?", doc="accounts.xlsx")
    assert answer.sufficient and "8450" in answer.text
    citation = cited(answer, "8450")
    assert citation.page == 2 and citation.page_label == "sheet Costs"
    assert "accounts sheet Costs" in citation.label()
    depth = col.ask("What is the depth of berth North 1?", doc="moorings.csv")
    assert depth.sufficient and "14.5" in depth.text
    assert cited(depth, "14.5").page_label == "sheet moorings"


@pytest.mark.needs("tesseract")
def test_png_answer_cites_the_image_page(tmp_path: Path, embedder) -> None:
    path = tmp_path / "notice.png"
    text_image(["Harbour notice", "The outer berth reopens on Friday", "after dredging works"]).save(path)
    col = Collection(tmp_path / "col", embedder=embedder)
    try:
        assert col.add([path]).results[0].status == "added"
        answer = col.ask("When does the outer berth reopen?")
        assert answer.sufficient and "friday" in answer.text.lower()
        citation = cited(answer, "reopens")
        assert citation.page == 1 and citation.bbox is not None and citation.page_label == ""
    finally:
        col.close()
