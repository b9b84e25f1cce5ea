"""Bad input through `hyperfolio add`: every failure names the file and the reason; good files still land."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont
from typer.testing import CliRunner

from hyperfolio import Collection
from hyperfolio.cli import app
from hyperfolio.parse.ocr import tesseract_available

runner = CliRunner()

ZERO_PAGE_PDF = (
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
    b"trailer << /Root 1 0 R /Size 3 >>\n%%EOF\n"
)


def text_pdf(path: Path, text: str = "Plain text page about lighthouses.") -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 720), text, fontsize=11)
    doc.save(path)
    doc.close()
    return path


def image_only_pdf(path: Path, words: str) -> Path:
    """A scanned-style page: the text exists only as pixels."""
    image = Image.new("RGB", (1400, 400), "white")
    draw = ImageDraw.Draw(image)
    try:
        font = ImageFont.truetype("DejaVuSans.ttf", 64)
    except OSError:
        font = ImageFont.load_default(size=64)
    draw.text((60, 150), words, fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(pymupdf.Rect(36, 72, 576, 226), stream=buffer.getvalue())
    doc.save(path)
    doc.close()
    return path


def add(paths: list[Path], col: Path):
    return runner.invoke(app, ["add", *map(str, paths), "--collection", str(col)])


def failure_line(output: str, name: str) -> str:
    lines = [line for line in output.splitlines() if name in line and "failed" in line]
    assert lines, f"no failure line for {name} in:\n{output}"
    return " ".join(lines)


@pytest.fixture
def good(tmp_path) -> Path:
    return text_pdf(tmp_path / "good.pdf")


def test_corrupt_pdf(tmp_path, good):
    bad = tmp_path / "corrupt.pdf"
    bad.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    result = add([bad, good], tmp_path / "col")
    assert result.exit_code == 1
    assert re.search(r"not a valid pdf|damaged|corrupt|cannot open", failure_line(result.output, "corrupt.pdf"), re.I)
    assert "1 added, 1 failed" in result.output


def test_truncated_pdf(tmp_path, good):
    source = text_pdf(tmp_path / "full.pdf", "A long text. " * 400).read_bytes()
    bad = tmp_path / "truncated.pdf"
    bad.write_bytes(source[: len(source) // 2])
    result = add([bad, good], tmp_path / "col")
    assert result.exit_code == 1
    assert re.search(r"truncated|not a valid pdf|damaged", failure_line(result.output, "truncated.pdf"), re.I)
    assert "1 added, 1 failed" in result.output


def test_encrypted_pdf(tmp_path, good):
    bad = tmp_path / "secret.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "top secret")
    doc.save(bad, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")
    doc.close()
    result = add([bad, good], tmp_path / "col")
    assert result.exit_code == 1
    assert "password" in failure_line(result.output, "secret.pdf").lower()


def test_zero_page_pdf(tmp_path):
    bad = tmp_path / "zero.pdf"
    bad.write_bytes(ZERO_PAGE_PDF)
    result = add([bad], tmp_path / "col")
    assert result.exit_code == 1
    assert re.search(r"no pages|zero|0 pages|not a valid", failure_line(result.output, "zero.pdf"), re.I)


def test_empty_file_and_unsupported_type(tmp_path):
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    sheet = tmp_path / "sheet.ods"
    sheet.write_bytes(b"PK\x03\x04 spreadsheet")
    result = add([empty, sheet], tmp_path / "col")
    assert result.exit_code == 1
    assert "empty" in failure_line(result.output, "empty.pdf").lower()
    assert "unsupported" in failure_line(result.output, "sheet.ods").lower()


def test_image_only_pdf_is_ocred_or_kept_with_placeholder(tmp_path, embedder):
    pdf = image_only_pdf(tmp_path / "scan.pdf", "Harbour tariff rises")
    col = Collection(tmp_path / "col", embedder=embedder)
    report = col.add([pdf])
    assert report.results[0].status == "added", report.results[0].reason
    text = " ".join(c.text for c in col.store.iter_chunks()).lower()
    if tesseract_available():
        assert "harbour" in text and "tariff" in text
        hits = col.retrieve("harbour tariff", mode="bm25")
        assert hits.items and hits.items[0].citation.page == 1
    else:
        assert "page 1" in text  # the placeholder keeps the page retrievable
    col.close()


def test_huge_page_is_capped_not_fatal(tmp_path, embedder):
    pdf = tmp_path / "huge.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=3000, height=30000)
    words = " ".join(f"word{i}" for i in range(60_000))
    page.insert_textbox(pymupdf.Rect(10, 10, 2990, 29990), words, fontsize=4)
    doc.save(pdf)
    doc.close()
    col = Collection(tmp_path / "col", embedder=embedder)
    report = col.add([pdf])
    assert report.results[0].status == "added", report.results[0].reason
    assert col.stats()["chunks"] > 10
    col.close()


def test_same_file_twice_in_one_command_and_again(tmp_path, good):
    col = tmp_path / "col"
    result = add([good, good], col)
    assert result.exit_code == 0, result.output
    again = add([good], col)
    assert again.exit_code == 0
    assert "skipped" in again.output and "already indexed" in again.output
    stats = runner.invoke(app, ["stats", "-c", str(col), "--json"]).output
    assert '"documents": 1' in stats
