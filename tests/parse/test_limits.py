"""Resource limits: files made to hurt are refused before a parser opens them, with one line naming
the file, the limit and its setting; a slow page keeps its text; parsing workers are memory-bounded."""

from __future__ import annotations

import io
import resource
import struct
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path

import pymupdf
import pytest

from hyperfolio.collection import Collection
from hyperfolio.config import ParseOptions, Settings
from hyperfolio.errors import ParseError
from hyperfolio.ingest.executors import ProcessExecutor
from hyperfolio.parse import inspect_bytes, parse_file
from hyperfolio.sample import write_sample_report


def one_line_error(path: Path, options: ParseOptions) -> str:
    with pytest.raises(ParseError) as info:
        parse_file(path, options)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    return info.value.reason


def png_header(path: Path, width: int, height: int) -> Path:
    """A PNG that says it is `width` x `height` (1-bit grey) and holds almost nothing."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")
    )
    return path


def pdf_with_stream(path: Path, content: bytes) -> Path:
    """A one-page PDF whose content stream is `content`, Flate-compressed."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A page whose content stream is enormous once inflated.")
    xref = page.get_contents()[0]
    doc.update_stream(xref, doc.xref_stream(xref) + content, compress=True)  # the text, then padding
    doc.save(path)
    doc.close()
    return path


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\n" + "The osprey eats fish. " * 20_000)
    reason = one_line_error(path, ParseOptions(max_file_mb=0.1))
    assert reason == "0.4 MB; the limit is 0.1 MB per file (parse.max_file_mb)"
    assert parse_file(path, ParseOptions()).pages  # within the default it reads


def test_too_many_pages_is_refused(tmp_path):
    doc = pymupdf.open()
    for n in range(12):
        doc.new_page().insert_text((72, 72), f"Page {n + 1} of a long document.")
    path = tmp_path / "long.pdf"
    doc.save(path)
    doc.close()
    reason = one_line_error(path, ParseOptions(max_pages=10))
    assert reason == "12 pages; the limit is 10 pages per document (parse.max_pages)"
    with pytest.raises(ParseError, match="parse.max_pages"):
        inspect_bytes(path, path.read_bytes(), ParseOptions(max_pages=10))


def test_a_gigapixel_image_is_refused_from_its_header(tmp_path):
    path = png_header(tmp_path / "huge.png", 50_000, 50_000)
    reason = one_line_error(path, ParseOptions())
    assert reason == "an image of 2,500,000,000 pixels; the limit is 150,000,000 pixels (parse.max_image_pixels)"
    png_header(tmp_path / "big.png", 12_000, 13_000)  # past the limit, below Pillow's own guard
    reason = one_line_error(tmp_path / "big.png", ParseOptions())
    assert reason == "an image of 12,000 x 13,000 pixels; the limit is 150,000,000 pixels (parse.max_image_pixels)"


def test_a_zip_bomb_office_file_is_refused_from_its_directory(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        package.writestr("word/document.xml", b"\x00" * (3 * 2**20))  # 3 MB of zeros: a few kB zipped
    path = tmp_path / "bomb.docx"
    path.write_bytes(buffer.getvalue())
    assert path.stat().st_size < 20_000
    reason = one_line_error(path, ParseOptions(max_archive_mb=1))
    assert reason == "its parts inflate to 3.0 MB; the limit is 1 MB (parse.max_archive_mb)"


def test_a_pdf_page_drawing_an_image_over_the_pixel_limit_keeps_its_text_without_decoding_it(tmp_path):
    # Locating, rendering or OCR-ing the page would decode the image (a declared 25,000 x 25,000 one
    # costs 625 MB and a minute); here the limit is lowered so an ordinary image stands in for it.
    from PIL import Image

    picture = io.BytesIO()
    Image.new("L", (1200, 1000), 128).save(picture, format="PNG")
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "The harbour chart below shows the Osprey fleet berths.", fontsize=11)
    page.insert_image(pymupdf.Rect(72, 100, 500, 460), stream=picture.getvalue())
    path = tmp_path / "chart.pdf"
    doc.save(path)
    assert {c.modality for c in parse_file(path, ParseOptions()).chunks} == {"text", "image"}

    parsed = parse_file(path, ParseOptions(max_image_pixels=1_000_000))
    assert {c.modality for c in parsed.chunks} == {"text"}
    assert "Osprey fleet berths" in " ".join(c.text for c in parsed.chunks)
    warnings = parsed.meta.get("warnings", [])
    assert any("1,200 x 1,000 pixels" in w and "(parse.max_image_pixels)" in w for w in warnings), warnings


def test_a_pdf_decompression_bomb_is_refused_without_inflating_it_all(tmp_path):
    path = pdf_with_stream(tmp_path / "bomb.pdf", b"\n" * (8 * 2**20))
    assert path.stat().st_size < 100_000
    reason = one_line_error(path, ParseOptions(max_stream_mb=2))
    assert "inflates past it, a decompression bomb; the limit is 2 MB (parse.max_stream_mb)" in reason
    assert parse_file(path, ParseOptions()).pages  # within the default stream limit it reads


def test_a_slow_page_keeps_its_text_and_says_so(tmp_path, embedder):
    pdf = write_sample_report(tmp_path / "report.pdf")
    settings = Settings.load(user=False)
    settings = replace(settings, parse=replace(settings.parse, page_seconds=0.0))
    col = Collection(tmp_path / "col", settings=settings, embedder=embedder)
    result = col.add([pdf]).results[0]
    assert result.status == "added", result.reason
    chunks = list(col.store.iter_chunks(result.doc_id))
    assert chunks and {c.modality for c in chunks} == {"text"}  # tables and figures skipped
    info = col.store.get_document(result.doc_id)
    assert any("parse.page_seconds" in w for w in info.meta.get("warnings", [])), info.meta
    answer = col.ask("Which region had the highest installed capacity in 2024?")
    assert answer.citations  # still answered, from the text
    col.close()


def test_collection_add_reports_a_limit_as_the_files_reason_and_goes_on(tmp_path, embedder):
    png_header(tmp_path / "huge.png", 40_000, 40_000)
    (tmp_path / "fine.md").write_text("# Fine\n\nThe oak lives for centuries.\n")
    col = Collection(tmp_path / "col", embedder=embedder)
    results = {Path(r.path).name: r for r in col.add([tmp_path / "huge.png", tmp_path / "fine.md"]).results}
    assert results["huge.png"].status == "failed" and "parse.max_image_pixels" in results["huge.png"].reason
    assert results["fine.md"].status == "added"
    col.close()


def test_parsing_workers_run_under_the_memory_limit():
    executor = ProcessExecutor(1, memory_mb=3_000)
    try:
        soft, _ = executor.submit(resource.getrlimit, resource.RLIMIT_AS).result(timeout=120)
    finally:
        executor.close()
    assert soft == 3_000 * 2**20


@pytest.mark.parametrize("suffix", [".txt", ".md", ".html"])
def test_a_page_over_the_character_limit_keeps_its_first_characters(tmp_path, suffix):
    """One 'word' of 300,000 characters makes a page no pagination splits; it is cut, with a warning."""
    path = tmp_path / f"giant{suffix}"
    path.write_text("Harbour fees rose in March.\n\n" + "x" * 300_000 + "\n")
    doc = parse_file(path, ParseOptions(max_page_chars=50_000))
    sizes = [sum(len(c.text) for c in page.chunks) for page in doc.pages]
    assert max(sizes) <= 50_000 and "Harbour fees" in doc.pages[0].chunks[0].text
    assert any("parse.max_page_chars" in w for w in doc.meta["warnings"])
    unlimited = parse_file(path, ParseOptions(max_page_chars=1_000_000))
    assert max(sum(len(c.text) for c in p.chunks) for p in unlimited.pages) > 300_000
