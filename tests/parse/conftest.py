"""Fixture documents built on the fly, so the tests ship no binary files."""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf
import pytest

LOREM = (
    "The committee reviewed the quarterly results in detail. Operating costs fell by four percent "
    "while output rose steadily across all plants. Several members asked about maintenance schedules "
    "and the replacement of older turbines. "
)


def text_png(lines: list[str], fontsize: float = 28) -> bytes:
    """A PNG that shows text as pixels only (no text layer anywhere)."""
    doc = pymupdf.open()
    page = doc.new_page(width=500, height=60 + 45 * len(lines))
    for i, line in enumerate(lines):
        page.insert_text((20, 50 + 45 * i), line, fontsize=fontsize, fontname="helv")
    png = page.get_pixmap(dpi=150).tobytes("png")
    doc.close()
    return png


def chart_png() -> bytes:
    """A small raster bar chart, standing in for an embedded figure."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (400, 240), "white")
    draw = ImageDraw.Draw(img)
    for i, h in enumerate((60, 120, 90, 180)):
        draw.rectangle((40 + i * 85, 220 - h, 100 + i * 85, 220), fill=(40, 90, 160))
    draw.line((30, 220, 380, 220), fill="black", width=2)
    buffer = io.BytesIO()
    img.save(buffer, format="PNG")
    return buffer.getvalue()


def build_report(path: Path) -> Path:
    """Five pages: headings of three sizes, a ruled table, a raster figure, an image-only page, a vector chart."""
    doc = pymupdf.open()
    # page 1: title + section + subsection
    page = doc.new_page()
    page.insert_text((72, 90), "Harbour Logistics Review", fontsize=24, fontname="hebo")
    page.insert_text((72, 140), "1 Introduction", fontsize=16, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 150, 540, 400), LOREM * 3, fontsize=10, fontname="helv")
    page.insert_text((72, 420), "1.1 Scope of the review", fontsize=13, fontname="hebo")
    page.insert_textbox(
        pymupdf.Rect(72, 430, 540, 700),
        "The review covers the container terminal at Port Calloway and its rail links. " + LOREM * 2,
        fontsize=10,
        fontname="helv",
    )
    # page 2: a table with ruling lines and a caption above it
    page = doc.new_page()
    page.insert_text((72, 80), "2 Throughput", fontsize=16, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 90, 540, 160), LOREM, fontsize=10, fontname="helv")
    page.insert_text((72, 185), "Table 1: Throughput by terminal", fontsize=10, fontname="helv")
    rows = [("Terminal", "Containers", "Ships"), ("North Quay", "48,200", "311"), ("South Quay", "36,900", "254")]
    draw_ruled_table(page, rows, top=195.0)
    # page 3: an embedded raster figure with a caption below
    page = doc.new_page()
    page.insert_text((72, 80), "3 Fleet", fontsize=16, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 90, 540, 160), LOREM, fontsize=10, fontname="helv")
    page.insert_image(pymupdf.Rect(72, 170, 472, 410), stream=chart_png())
    page.insert_text((72, 428), "Figure 1: Vessel arrivals per quarter", fontsize=10, fontname="helv")
    # page 4: image only (a scan): text exists only as pixels
    page = doc.new_page()
    page.insert_image(
        pymupdf.Rect(50, 80, 550, 80 + 500 * 195 / 500),
        stream=text_png(["Dredging completed in March", "Berth depth now fourteen metres"]),
    )
    # page 5: a vector bar chart (drawings, no raster) with a caption
    page = doc.new_page()
    page.insert_text((72, 80), "4 Trends", fontsize=16, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 90, 540, 160), LOREM, fontsize=10, fontname="helv")
    shape = page.new_shape()
    shape.draw_line((100, 420), (500, 420))
    shape.draw_line((100, 420), (100, 200))
    shape.finish(color=(0, 0, 0), width=1)
    for i, h in enumerate((80, 140, 110, 190, 160, 120, 170, 60)):
        shape.draw_rect(pymupdf.Rect(115 + i * 47, 420 - h, 145 + i * 47, 420))
        shape.finish(color=None, fill=(0.2, 0.4, 0.7))
    shape.commit()
    for i in range(8):
        page.insert_text((118 + i * 47, 434), f"Q{i + 1}", fontsize=8, fontname="helv")
    page.insert_text((72, 460), "Figure 2: Crane moves per quarter", fontsize=10, fontname="helv")
    doc.set_metadata({"title": "Harbour Logistics Review"})
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="session")
def report_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report(tmp_path_factory.mktemp("pdf") / "harbour.pdf")


@pytest.fixture(scope="session")
def report_doc(report_pdf: Path):
    from hyperfolio.parse import parse_file

    return parse_file(report_pdf)


@pytest.fixture(scope="session")
def png_chart() -> bytes:
    """Raster chart bytes for tests that embed or reference an image."""
    return chart_png()


def draw_ruled_table(page: pymupdf.Page, rows: list[tuple[str, ...]], top: float, bold_first: bool = False) -> None:
    """A three-column table with ruling lines, the kind PyMuPDF's table finder detects."""
    shape = page.new_shape()
    row_h, xs = 22.0, [72.0, 232.0, 352.0, 452.0]
    for i in range(len(rows) + 1):
        shape.draw_line((xs[0], top + i * row_h), (xs[-1], top + i * row_h))
    for x in xs:
        shape.draw_line((x, top), (x, top + row_h * len(rows)))
    shape.finish(color=(0, 0, 0), width=0.8)
    shape.commit()
    for r, row in enumerate(rows):
        font = "hebo" if bold_first and r == 0 else "helv"
        for c, cell in enumerate(row):
            page.insert_text((xs[c] + 5, top + r * row_h + 15), cell, fontsize=10, fontname=font)


@pytest.fixture
def ruled_table_pdf():
    """Factory: a one-page PDF holding one ruled table of the given rows."""

    def build(path: Path, rows: list[tuple[str, ...]], bold_first: bool = False) -> Path:
        doc = pymupdf.open()
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 60, 540, 130), "Crew rota for the spring season. " * 4, fontsize=10)
        draw_ruled_table(page, rows, top=220.0, bold_first=bold_first)
        doc.save(path)
        doc.close()
        return path

    return build
