"""PDF parsing on generated fixtures: structure, modalities, OCR, and failure modes."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pymupdf
import pytest

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError, UnsupportedFileError
from hyperfolio.parse import SUPPORTED_SUFFIXES, parse_file

needs_ocr = pytest.mark.needs("tesseract")


def test_identity_and_pages(report_pdf: Path, report_doc) -> None:
    digest = hashlib.sha256(report_pdf.read_bytes()).hexdigest()
    assert report_doc.kind == "pdf"
    assert report_doc.content_hash == digest
    assert report_doc.doc_id == digest[:16]
    assert report_doc.source == str(report_pdf.resolve())
    assert report_doc.title == "Harbour Logistics Review"
    assert [p.number for p in report_doc.pages] == [1, 2, 3, 4, 5]
    for page in report_doc.pages:
        assert page.width > 0 and page.height > 0
        assert [c.order for c in page.chunks] == list(range(len(page.chunks)))
        for chunk in page.chunks:
            assert chunk.page == page.number
            assert chunk.chunk_id == "" and chunk.doc_id == ""


def test_section_paths_follow_heading_sizes(report_doc) -> None:
    page1 = report_doc.pages[0].chunks
    scope = next(c for c in page1 if "Port Calloway" in c.text)
    assert scope.section_path == ["Harbour Logistics Review", "1 Introduction", "1.1 Scope of the review"]
    throughput = next(c for c in report_doc.pages[1].chunks if c.modality == "text")
    assert throughput.section_path == ["Harbour Logistics Review", "2 Throughput"]


def test_ruled_table_has_cells_header_and_caption(report_doc) -> None:
    tables = [c for c in report_doc.chunks if c.modality == "table"]
    assert len(tables) == 1
    table = tables[0]
    assert table.page == 2
    assert table.table == [
        ["Terminal", "Containers", "Ships"],
        ["North Quay", "48,200", "311"],
        ["South Quay", "36,900", "254"],
    ]
    assert table.table_header_rows == 1
    assert table.caption == "Table 1: Throughput by terminal"
    assert table.text.splitlines()[0] == "Table 1: Throughput by terminal"
    assert "North Quay | 48,200 | 311" in table.text
    # cell text is not repeated as prose
    page_text = " ".join(c.text for c in report_doc.pages[1].chunks if c.modality == "text")
    assert "48,200" not in page_text and "Table 1" not in page_text


def test_raster_figure_with_caption(report_doc) -> None:
    images = [c for c in report_doc.pages[2].chunks if c.modality == "image"]
    assert len(images) == 1
    fig = images[0]
    assert fig.caption == "Figure 1: Vessel arrivals per quarter"
    assert fig.image and fig.image.startswith(b"\x89PNG")
    assert fig.bbox is not None and fig.bbox[2] - fig.bbox[0] > 300
    assert fig.text.startswith("Figure 1")


@needs_ocr
def test_image_only_page_is_ocred(report_doc) -> None:
    page = report_doc.pages[3]
    assert page.ocr
    text = " ".join(c.text for c in page.chunks if c.modality == "text").lower()
    for word in ("dredging", "march", "berth", "fourteen"):
        assert word in text
    # OCR text on a mostly digital document must not become headings for later pages
    later = report_doc.pages[4].chunks[0]
    assert later.section_path == ["Harbour Logistics Review", "4 Trends"]


def test_vector_chart_becomes_image(report_doc) -> None:
    page = report_doc.pages[4]
    charts = [c for c in page.chunks if c.modality == "image"]
    assert len(charts) == 1
    chart = charts[0]
    assert chart.meta.get("source") == "vector"
    assert chart.caption == "Figure 2: Crane moves per quarter"
    assert "Q3" in chart.text and chart.image
    assert not any(c.modality == "table" for c in page.chunks)
    assert not any("Q3" in c.text for c in page.chunks if c.modality == "text")


def test_no_text_lost_or_duplicated(report_doc) -> None:
    texts = [c.text for c in report_doc.chunks if c.modality == "text"]
    joined = "\n".join(texts)
    assert joined.count("Port Calloway") == 1
    assert "Harbour Logistics Review" in joined


def test_placeholder_for_page_without_text(tmp_path: Path, png_chart: bytes) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A short cover note about the photo that follows on the next page.")
    page = doc.new_page()
    page.insert_image(pymupdf.Rect(50, 50, 550, 750), stream=png_chart)
    path = tmp_path / "photo.pdf"
    doc.save(path)
    parsed = parse_file(path, ParseOptions(ocr=False))
    second = parsed.pages[1]
    placeholders = [c for c in second.chunks if c.placeholder]
    assert len(placeholders) == 1
    assert placeholders[0].text == "[Page 2: image-only page with 1 figure; no text recognised]"
    assert second.vision_dominant
    assert any(c.modality == "image" and c.image for c in second.chunks)


def test_tables_can_be_switched_off(report_pdf: Path) -> None:
    parsed = parse_file(report_pdf, ParseOptions(tables=False, ocr=False))
    assert not any(c.modality == "table" for c in parsed.chunks)
    assert "48,200" in " ".join(c.text for c in parsed.pages[1].chunks)


def test_huge_page_is_capped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=3000, height=3000)
    line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod " * 6
    text = "\n".join(line for _ in range(700))  # ~300k characters
    page.insert_text((5, 8), text, fontsize=3)
    path = tmp_path / "huge.pdf"
    doc.save(path)
    options = ParseOptions(max_page_chars=50_000, ocr=False)
    with caplog.at_level(logging.WARNING):
        parsed = parse_file(path, options)
    total = sum(len(c.text) for c in parsed.chunks)
    assert 0 < total <= 50_000 * 1.2
    assert any("keeping the first 50000" in r.getMessage() for r in caplog.records)
    assert parsed.meta.get("warnings")


# ---------------------------------------------------------------- bad input


def _valid_pdf_bytes() -> bytes:
    doc = pymupdf.open()
    for i in range(3):
        page = doc.new_page()
        page.insert_text((72, 72), f"Page {i} text " * 20)
    data = doc.tobytes()
    doc.close()
    return data


def _assert_parse_error(path: Path, fragment: str, kind: type[ParseError] = ParseError) -> None:
    with pytest.raises(kind) as info:
        parse_file(path)
    message = str(info.value)
    assert str(path) in message
    assert fragment in message
    assert info.value.path == str(path)


def test_missing_file(tmp_path: Path) -> None:
    _assert_parse_error(tmp_path / "nope.pdf", "file not found")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.pdf"
    path.write_bytes(b"")
    _assert_parse_error(path, "empty (0 bytes)")


def test_corrupt_pdf(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.pdf"
    path.write_bytes(b"this is not a pdf at all \x00\x01\x02" * 50)
    _assert_parse_error(path, "not a valid PDF")


def test_truncated_pdf(tmp_path: Path) -> None:
    data = _valid_pdf_bytes()
    path = tmp_path / "truncated.pdf"
    path.write_bytes(data[: len(data) // 2])
    _assert_parse_error(path, "not a valid PDF")


def test_encrypted_pdf(tmp_path: Path) -> None:
    doc = pymupdf.open("pdf", _valid_pdf_bytes())
    path = tmp_path / "locked.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    _assert_parse_error(path, "encrypted; a password is required")


def test_zero_page_pdf(tmp_path: Path) -> None:
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path = tmp_path / "zero.pdf"
    path.write_bytes(bytes(out))
    _assert_parse_error(path, "zero pages")


def test_pdf_without_content(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page()
    doc.new_page()
    path = tmp_path / "blank.pdf"
    doc.save(path)
    _assert_parse_error(path, "no extractable content")


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "letter.odt"
    path.write_bytes(b"PK\x03\x04 not really a docx")
    _assert_parse_error(path, "unsupported file type '.odt'", UnsupportedFileError)
    assert ".pdf" in SUPPORTED_SUFFIXES and ".md" in SUPPORTED_SUFFIXES


# ---------------------------------------------------------------- review fixes


def _only_table(path: Path):
    tables = [c for c in parse_file(path, ParseOptions(ocr=False)).chunks if c.modality == "table"]
    assert len(tables) == 1
    return tables[0]


def test_pdf_table_without_header_row(tmp_path: Path, ruled_table_pdf) -> None:
    rows = [("North Quay", "48,200", "311"), ("South Quay", "36,900", "254"), ("East Quay", "12,100", "97")]
    table = _only_table(ruled_table_pdf(tmp_path / "data.pdf", rows))
    assert table.table == [list(r) for r in rows]
    assert table.table_header_rows == 0


def test_pdf_table_header_from_bold_or_numbers(tmp_path: Path, ruled_table_pdf) -> None:
    words = [("Name", "Role", "Shift"), ("Alice", "Pilot", "Early"), ("Bob", "Engineer", "Late")]
    assert _only_table(ruled_table_pdf(tmp_path / "plain.pdf", words)).table_header_rows == 0
    assert _only_table(ruled_table_pdf(tmp_path / "bold.pdf", words, bold_first=True)).table_header_rows == 1
    numbers = [("Terminal", "Containers", "Ships"), ("North Quay", "48,200", "311"), ("South Quay", "36,900", "254")]
    assert _only_table(ruled_table_pdf(tmp_path / "numbers.pdf", numbers)).table_header_rows == 1


def test_references_page_gets_no_placeholder(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(
        pymupdf.Rect(72, 72, 540, 400),
        "[1] Smith, J. Dredging the outer harbour. Port Studies 12, 2019.\n"
        "[2] Jones, K. Tidal windows for deep-draught vessels. Marine Review 4, 2021.",
        fontsize=10,
    )
    path = tmp_path / "references.pdf"
    doc.save(path)
    doc.close()
    parsed = parse_file(path, ParseOptions(ocr=False))
    assert not any(c.placeholder for c in parsed.chunks)
    assert parsed.chunks[0].text.startswith("[1] Smith")


def test_pdf_truncated_near_the_end_is_reported_as_truncated(tmp_path: Path) -> None:
    base = tmp_path / "revised.pdf"
    doc = pymupdf.open()
    doc.new_page()
    doc.save(base)
    doc.close()
    doc = pymupdf.open(base)  # the text arrives in an incremental update at the end of the file
    doc[0].insert_text((72, 72), "Quarterly harbour figures " * 3)
    doc.saveIncr()
    doc.close()
    data = base.read_bytes()
    path = tmp_path / "cut.pdf"
    path.write_bytes(data[: int(len(data) * 0.99)])
    _assert_parse_error(path, "not a valid PDF: the file is truncated or damaged")


def test_printed_page_labels_reach_the_citation(tmp_path: Path) -> None:
    from hyperfolio.retrieve.evidence import cite

    doc = pymupdf.open()
    for text in ("Cover", "Contents", "Chapter one: the harbour opened in 1901.", "Chapter two"):
        doc.new_page().insert_text((72, 72), text)
    doc.set_page_labels(
        [{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},  # i, ii
         {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1}]  # 1, 2
    )  # fmt: skip
    doc.save(tmp_path / "labelled.pdf")
    parsed = parse_file(tmp_path / "labelled.pdf")
    labels = [{c.meta.get("page_label") for c in p.chunks} for p in parsed.pages]
    assert labels == [{"i"}, {"ii"}, {"1"}, {"2"}]
    chunk = parsed.pages[2].chunks[0]
    citation = cite(chunk, {chunk.doc_id: "Harbour"})
    assert citation.page == 3 and citation.page_label == "1"
    assert "p.3 (printed 1)" in citation.label()
