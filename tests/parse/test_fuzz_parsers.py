"""Fuzzing every parser: a parser may return a Document or raise a one-line ParseError, nothing else.

Seeds are small valid files of every kind, generated here (nothing binary is committed), plus real
MMLongBench-Doc PDFs from ../shared/data when present. Mutators damage them the ways real files are
damaged and attackers damage them on purpose: flipped, inserted, deleted and duplicated bytes,
truncation, absurd numbers where sizes are declared, zip members rewritten with damaged bytes (the
zip itself kept valid so the damage reaches the XML), PDF objects and streams corrupted, deep nesting
(HTML, Markdown, XML, PDF arrays) and XML entity tricks, image headers declaring huge dimensions.

Each input goes the way an upload goes: `is_encrypted`, `inspect_bytes`, `page_count`,
`quick_page_count`, then `read_pages` + `finish_document` (PDF) or `parse_file` (the others). Any
exception other than ParseError, a ParseError that is not one short line naming the file, or a run
past `HANG_SECONDS` fails. Hypothesis draws the seed, the mutators and their random seed, with a
fixed derandomised search and no example database, so CI runs the same inputs every time.

`benchmarks/fuzz_parsers.py` runs the same seeds and mutators for longer, each input in a child
process with a time and memory limit, and counts distinct crashes. The regression tests at the end
are the crashes fuzzing found, each rebuilt from a tiny generated input.
"""

from __future__ import annotations

import functools
import io
import os
import random
import re
import signal
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.model import Document
from hyperfolio.parse import finish_document, inspect_bytes, page_count, parse_file, quick_page_count, read_pages
from hyperfolio.parse.unlock import is_encrypted

# Pillow warns of every damaged TIFF tag it skips: thousands of lines that say nothing about the outcome.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:PIL.*")

OPTIONS = ParseOptions(ocr=False)  # Tesseract is a separate process with its own timeout; fuzz the parsers
HANG_SECONDS = 30.0  # one input's whole pipeline; the slowest valid seed takes about a second
MAX_MESSAGE = 300  # characters of a ParseError beyond the file name: one line a user reads
DATA = Path(os.environ.get("HYPERFOLIO_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
DATA = DATA / "mmlongbench_dev" / "documents"
ZIP_TIME = (2024, 1, 1, 0, 0, 0)
# inputs per parser in the test: about 2 minutes for the whole file on two cores (4,200 inputs)
EXAMPLES = {
    "pdf": 300,
    "markdown": 400,
    "html": 600,
    "text": 600,
    "csv": 400,
    "word": 500,
    "slides": 400,
    "spreadsheet": 500,
    "image": 500,
}
PARSERS = tuple(EXAMPLES)
OFFICE = ("word", "slides", "spreadsheet")
TEXTUAL = ("markdown", "html", "text", "csv")


# ---------------------------------------------------------------- seeds: small valid files of every kind


def _pdf_bytes(doc: pymupdf.Document, compressed: bool) -> bytes:
    """Deterministic bytes; uncompressed ones keep objects and content streams readable for the PDF mutators."""
    if compressed:
        data = doc.tobytes(garbage=3, deflate=True, use_objstms=1, no_new_id=True)
    else:
        data = doc.tobytes(garbage=1, deflate=False, expand=255, no_new_id=True)
    doc.close()
    return bytes(data)


def _pdf_text() -> pymupdf.Document:
    """Two pages of headings and prose with an outline, page labels and a title."""
    doc = pymupdf.open()
    for number in range(2):
        page = doc.new_page()
        page.insert_text((72, 80), f"{number + 1} Harbour operations", fontsize=18, fontname="hebo")
        body = "The quay cranes moved 48,200 containers in the spring season. " * 6
        page.insert_textbox(pymupdf.Rect(72, 100, 520, 300), body, fontsize=10, fontname="helv")
        page.insert_text((72, 330), "Figure 1: Berth occupancy", fontsize=9)
        page.insert_text((280, 800), f"Page {number + 1}", fontsize=8)
    doc.set_toc([[1, "Harbour operations", 1], [2, "Cranes", 1], [1, "Harbour operations", 2]])
    doc.set_page_labels([{"startpage": 0, "prefix": "A-", "style": "D", "firstpagenum": 1}])
    doc.set_metadata({"title": "Harbour Operations Review", "creationDate": "D:20240101000000Z"})
    return doc


def _pdf_table_and_figure() -> pymupdf.Document:
    """A ruled table (the table finder runs), a raster figure and a vector chart on one page."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "Table 1: Ship calls", fontsize=10)
    shape = page.new_shape()
    for i in range(4):
        shape.draw_line((72, 70 + 22 * i), (452, 70 + 22 * i))
    for x in (72, 232, 352, 452):
        shape.draw_line((x, 70), (x, 136))
    shape.finish(color=(0, 0, 0), width=0.8)
    for i, h in enumerate((40, 90, 60, 120, 70, 100, 50, 80)):
        shape.draw_rect(pymupdf.Rect(100 + 40 * i, 700 - h, 130 + 40 * i, 700))
        shape.finish(color=None, fill=(0.2, 0.4, 0.7))
    shape.commit()
    for r, row in enumerate([("Port", "Calls", "Tonnage"), ("Leith", "418", "3.1"), ("Grimsby", "273", "2.4")]):
        for c, cell in enumerate(row):
            page.insert_text(((72, 232, 352)[c] + 5, 85 + 22 * r), cell, fontsize=10)
    page.insert_image(pymupdf.Rect(72, 200, 272, 330), stream=_png("RGB", (40, 26)))
    page.insert_text((72, 345), "Figure 2: A berth", fontsize=9)
    return doc


def _pdf_scan() -> pymupdf.Document:
    """A page that is one full-page picture: the scanned-page path (OCR is off, so a placeholder)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(page.rect, stream=_png("L", (60, 80)))
    return doc


_HAND_PDF = b"""%PDF-1.4
1 0 obj << /Type /Catalog /Pages 2 0 R /Outlines 6 0 R /PageLabels << /Nums [0 << /S /r >>] >> >> endobj
2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj
3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Resources << /Font << /F1 5 0 R >> >>
/Contents 4 0 R >> endobj
4 0 obj << /Length 94 >>
stream
BT /F1 14 Tf 20 150 Td (Quarterly tonnage report) Tj 0 -30 Td /F1 9 Tf [(Up 4 per) -250 (cent)] TJ ET
endstream
endobj
5 0 obj << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> endobj
6 0 obj << /Type /Outlines /First 7 0 R /Last 7 0 R /Count 1 >> endobj
7 0 obj << /Title (Tonnage) /Parent 6 0 R /Dest [3 0 R /XYZ 0 200 0] >> endobj
trailer << /Root 1 0 R /Size 8 >>
%%EOF
"""  # no xref table: MuPDF rebuilds it, the way it reads many damaged real files


def _real_pdfs(limit: int) -> dict[str, tuple[str, bytes]]:
    """The smallest MMLongBench-Doc PDFs, when the shared data is there (else none: see `test_real_pdfs_...`)."""
    if not DATA.is_dir():
        return {}
    files = sorted(DATA.glob("*.pdf"), key=lambda p: p.stat().st_size)[:limit]
    return {f"real:{p.name}": (".pdf", p.read_bytes()) for p in files}


def _png(mode: str, size: tuple[int, int], **save: object) -> bytes:
    """A small picture with some structure (a gradient and a bar), so codecs have real work."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    for x in range(size[0]):
        draw.line((x, 0, x, size[1] // 2), fill=(x * 5 % 256, 90, 160))
    draw.rectangle((2, size[1] - 6, size[0] - 3, size[1] - 2), fill="black")
    fmt = str(save.pop("format", "PNG"))
    converted = img.convert(mode)
    if mode == "P":
        converted.info["transparency"] = 0
    buffer = io.BytesIO()
    converted.save(buffer, format=fmt, **save)
    return buffer.getvalue()


def _tiff_frames() -> bytes:
    from PIL import Image

    frames = [Image.new("L", (24, 16), shade) for shade in (30, 200, 120)]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="TIFF", save_all=True, append_images=frames[1:], dpi=(200, 200))
    return buffer.getvalue()


def _jpeg_rotated() -> bytes:
    """A JPEG with an EXIF orientation, as phones write them."""
    from PIL import Image

    exif = Image.Exif()
    exif[0x0112] = 6
    return _png("RGB", (32, 20), format="JPEG", quality=70, exif=exif.tobytes())


def _canonical_zip(data: bytes) -> bytes:
    """The same package with fixed timestamps, so a seed has the same bytes on every run."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = re.sub(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*", rb"\g<1>2024-01-01T00:00:00Z", body)
            dst.writestr(zipfile.ZipInfo(info.filename, ZIP_TIME), body, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _docx() -> bytes:
    import docx

    doc = docx.Document()
    doc.core_properties.title = "Harbour Fleet Review"
    doc.add_heading("Harbour Fleet Review", 0)
    doc.add_heading("Overview", 1)
    doc.add_paragraph("The harbour authority reviewed its tug fleet during the winter season.")
    doc.add_paragraph("Two older tugs were retired after inspection.", style="List Bullet")
    doc.add_page_break()
    doc.add_paragraph("Table 2: Gross tonnage by vessel")
    table = doc.add_table(rows=3, cols=3)
    for r, row in enumerate([("Vessel", "Gross tonnage", "Built"), ("Kestrel", "4,200", "1998"), ("Osprey", "", "")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(2, 1).merge(table.cell(2, 2)).text = "5,917 (refitted)"
    doc.add_picture(io.BytesIO(_png("RGB", (30, 20))))
    doc.add_paragraph("Figure 1: The quay crane")
    out = io.BytesIO()
    doc.save(out)
    return _canonical_zip(out.getvalue())


def _pptx() -> bytes:
    import pptx
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Harbour strategy"
    slide.placeholders[1].text = "Grow container traffic\vModernise the quay"
    slide.notes_slide.notes_text_frame.text = "The pelican survey counted 312 nesting pairs."
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Port calls"
    table = slide.shapes.add_table(3, 2, Inches(1), Inches(1.5), Inches(4), Inches(1)).table
    for r, row in enumerate([("Port", "Ship calls"), ("Leith", "418"), ("Grimsby", "273")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    chart_data = CategoryChartData()
    chart_data.categories = ["Q1", "Q2", "Q3"]
    chart_data.add_series("Calls", (120, 135.5, 98))
    slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(5), Inches(1.5), Inches(4), Inches(3), chart_data)
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(5), Inches(3), Inches(1)).text_frame.text = "Dredging finished"
    group.shapes.add_picture(io.BytesIO(_png("RGB", (20, 20))), Inches(4), Inches(5), Inches(1), Inches(1))
    out = io.BytesIO()
    deck.save(out)
    return _canonical_zip(out.getvalue())


def _xlsx() -> bytes:
    import openpyxl
    from openpyxl.styles import Font

    book = openpyxl.Workbook()
    summary = book.active
    summary.title = "Summary"
    summary.append(["Harbour dues 2024"])
    summary.append(["Quarter", "Revenue", "Margin", "Closed"])
    summary.append(["Q1", 1200, 0.25, date(2024, 3, 31)])
    summary.append(["Q2", 1850.5, 0.3, date(2024, 6, 30)])
    summary.append(["Total", "=SUM(B3:B4)", None, True])
    for cell in summary[2]:
        cell.font = Font(bold=True)
    summary["C3"].number_format = summary["C4"].number_format = "0.0%"
    summary["B3"].number_format = "$#,##0.00"
    summary.merge_cells("A1:D1")
    costs = book.create_sheet("Costs")
    costs.append(["Cost item", "Amount"])
    costs.append(["Anchor chain", 8450])
    costs.sheet_state = "hidden"
    book.create_sheet("Blank")
    out = io.BytesIO()
    book.save(out)
    return _canonical_zip(out.getvalue())


_MARKDOWN = """# Harbour report

Intro paragraph with *emphasis*, `code`, a [link](http://example.com) and an ![crane](crane.png "The crane").

## Cranes

- first item
  - nested item
    1. deeper item
- second item

> A quote
> > nested quote

| Port | Calls |
|:-----|------:|
| Leith | 418 |
| Grimsby | 273 |

Table 3: Ship calls

```python
print("code")
```

$$E = mc^2$$

<div>inline <b>html</b></div>

Setext heading
--------------
\f
# After a form feed
Text on the second page.
"""

_HTML = """<!doctype html><html><head><title>Harbour Report</title><style>p{}</style>
<script>var a = "<p>not text</p>";</script></head>
<body><nav>Home | About</nav><h1>Harbour report</h1><p>Intro with <b>bold</b> &amp; &#x2603; entities.</p>
<h2>Cranes</h2><ul><li>first</li><li>second<ul><li>nested</li></ul></li></ul>
<table><caption>Table 1: Ship calls</caption><thead><tr><th>Port</th><th>Calls</th></tr></thead>
<tr><td>Leith</td><td>418<table><tr><td>inner</td></tr></table></td></tr><tr><td>Grimsby<td>273</tr></table>
<figure><img src="crane.png" alt="A crane"><figcaption>Figure 1: The crane</figcaption></figure>
<pre>  preformatted
    text</pre><math><mi>x</mi><mo>=</mo><mn>2</mn></math><svg><title>tooltip</title></svg>
<p>After\fthe form feed.</p></body></html>
"""

_TEXT = """HARBOUR REPORT

Chapter 1 Introduction

The harbour authority reviewed its fleet.  Two tugs were retired.

1.1 Scope
=========

The review covers the container terminal.\f2 Results

Throughput rose by four percent.\r\nCRLF line.\r\n\r\nAnother paragraph.
"""

_CSV = 'Port,Calls,Note\nLeith,418,"quoted, with comma"\nGrimsby,273,"multi\nline"\n'


@functools.cache
def seeds(kind: str) -> dict[str, tuple[str, bytes]]:
    """{seed name: (suffix, bytes)} for one parser; generated once per process."""
    from hyperfolio.sample import write_sample_report

    if kind == "pdf":
        made = {
            "text": _pdf_bytes(_pdf_text(), compressed=False),
            "text-objstm": _pdf_bytes(_pdf_text(), compressed=True),
            "table-figure": _pdf_bytes(_pdf_table_and_figure(), compressed=False),
            "scan": _pdf_bytes(_pdf_scan(), compressed=True),
            "hand-written": _HAND_PDF,
        }
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            made["sample-report"] = write_sample_report(Path(folder) / "sample.pdf").read_bytes()
        return {name: (".pdf", data) for name, data in made.items()}
    if kind == "markdown":
        return {"doc": (".md", _MARKDOWN.encode()), "bom": (".markdown", b"\xef\xbb\xbf# Title\n\nBody text here.\n")}
    if kind == "html":
        return {"doc": (".html", _HTML.encode()), "latin1": (".htm", "<p>Caf\xe9 cr\xe8me</p>".encode("cp1252"))}
    if kind == "text":
        return {"doc": (".txt", _TEXT.encode()), "utf16": (".text", _TEXT.encode("utf-16"))}
    if kind == "csv":
        return {
            "comma": (".csv", _CSV.encode()),
            "semicolon": (".csv", b"Name;Value\nA;1,5\nB;2,25\n"),
            "tabs": (".csv", b"a\tb\tc\n1\t2\t3\n4\t5\t6\n"),
        }
    if kind == "word":
        return {"doc": (".docx", _docx())}
    if kind == "slides":
        return {"deck": (".pptx", _pptx())}
    if kind == "spreadsheet":
        return {"book": (".xlsx", _xlsx())}
    if kind == "image":
        return {
            "png-rgb": (".png", _png("RGB", (40, 30))),
            "png-rgba": (".png", _png("RGBA", (24, 24))),
            "png-palette": (".png", _png("P", (24, 24))),
            "png-16bit": (".png", _png("I;16", (16, 16))),
            "jpeg-exif": (".jpg", _jpeg_rotated()),
            "tiff-frames": (".tiff", _tiff_frames()),
        }
    raise ValueError(f"unknown parser {kind!r}")


# ---------------------------------------------------------------- mutators

Mutator = Callable[[random.Random, bytes], bytes]
ABSURD = (b"0", b"-1", b"2147483647", b"4294967296", b"9223372036854775808", b"99999999999999999999999999", b"1e308")
ABSURD += (b"-2147483648", b"NaN", b"0.0000001")


def _span(rng: random.Random, data: bytes, most: int = 4096) -> tuple[int, int]:
    start = rng.randrange(len(data) + 1)
    return start, min(len(data), start + rng.randint(1, most))


def flip_bits(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def set_bytes(rng: random.Random, data: bytes) -> bytes:
    """A few bytes set to boundary values: 0x00, 0x7f, 0x80, 0xff, or a random one."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if out:
            out[rng.randrange(len(out))] = rng.choice((0, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(1, max(2, len(data)))]


def insert_bytes(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.randbytes(rng.randint(1, 64)) + data[at:]


def delete_range(rng: random.Random, data: bytes) -> bytes:
    start, end = _span(rng, data)
    return (data[:start] + data[end:]) or data[:1]


def duplicate_range(rng: random.Random, data: bytes) -> bytes:
    """A range copied elsewhere, or repeated in place up to 64 times (repeated tags, rows, objects)."""
    start, end = _span(rng, data, 2048)
    piece = data[start:end]
    if rng.random() < 0.5:
        return data[:end] + piece * rng.randint(1, 64) + data[end:]
    at = rng.randrange(len(data) + 1)
    return data[:at] + piece + data[at:]


def absurd_number(rng: random.Random, data: bytes) -> bytes:
    """A declared size, count, offset or coordinate replaced by an absurd value."""
    numbers = list(re.finditer(rb"-?\d+(?:\.\d+)?", data))
    if not numbers:
        return insert_bytes(rng, data)
    out = data
    for match in sorted(rng.sample(numbers, min(len(numbers), rng.randint(1, 3))), key=lambda m: -m.start()):
        out = out[: match.start()] + rng.choice(ABSURD) + out[match.end() :]
    return out


GENERIC: dict[str, Mutator] = {
    "flip-bits": flip_bits,
    "set-bytes": set_bytes,
    "truncate": truncate,
    "insert-bytes": insert_bytes,
    "delete-range": delete_range,
    "duplicate-range": duplicate_range,
    "absurd-number": absurd_number,
}


# -- zip packages (Office): damage one member, keep the zip valid so the damage reaches the parser


def _rewrite_zip(data: bytes, change: Callable[[list[zipfile.ZipInfo], dict[str, bytes]], None]) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as src:
            infos = src.infolist()
            bodies = {info.filename: src.read(info.filename) for info in infos}
    except Exception:  # an earlier mutation broke the zip: nothing to rewrite
        return data
    change(infos, bodies)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in infos:
            if info.filename in bodies:
                dst.writestr(zipfile.ZipInfo(info.filename, ZIP_TIME), bodies[info.filename], zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _xml_members(bodies: dict[str, bytes]) -> list[str]:
    return sorted(n for n in bodies if n.endswith((".xml", ".rels")))


def zip_member(rng: random.Random, data: bytes) -> bytes:
    """One member (XML parts mostly, pictures too) rewritten with a generic mutation."""

    def change(infos: list[zipfile.ZipInfo], bodies: dict[str, bytes]) -> None:
        names = _xml_members(bodies) if rng.random() < 0.8 else sorted(bodies)
        if names:
            name = rng.choice(names)
            mutate = GENERIC[rng.choice(sorted(GENERIC))]
            bodies[name] = mutate(rng, bodies[name] or b" ")

    return _rewrite_zip(data, change)


def zip_drop_member(rng: random.Random, data: bytes) -> bytes:
    """A part the package's relationships still point at goes missing (styles, a slide, a picture)."""

    def change(infos: list[zipfile.ZipInfo], bodies: dict[str, bytes]) -> None:
        names = [n for n in sorted(bodies) if n != "[Content_Types].xml"]
        if names:
            del bodies[rng.choice(names)]

    return _rewrite_zip(data, change)


def xml_nesting(rng: random.Random, data: bytes) -> bytes:
    """Thousands of nested elements inside an element of an XML part (a run, a cell, a shape tree)."""

    def change(infos: list[zipfile.ZipInfo], bodies: dict[str, bytes]) -> None:
        names = _xml_members(bodies)
        if not names:
            return
        name = rng.choice(names)
        opens = list(re.finditer(rb"<([A-Za-z][\w.-]*(?::[\w.-]+)?)\b[^>]*(?<!/)>", bodies[name]))
        if not opens:
            return
        match = rng.choice(opens)
        tag = rng.choice((match.group(1), b"w:r", b"p:grpSp", b"x:c", b"a:p", b"w:tbl", b"w:p"))
        depth = rng.choice((50, 300, 3000, 30000))
        payload = (b"<" + tag + b">") * depth + b"deep" + (b"</" + tag + b">") * depth
        body = bodies[name]
        bodies[name] = body[: match.end()] + payload + body[match.end() :]

    return _rewrite_zip(data, change)


def xml_entities(rng: random.Random, data: bytes) -> bytes:
    """A DOCTYPE with an exponential entity (billion laughs) or an external one, used in the text."""
    laughs = b'<!ENTITY l0 "lol">' + b"".join(
        b'<!ENTITY l%d "%s">' % (i, b"&l%d;" % (i - 1) * 10) for i in range(1, 10)
    )
    external = b'<!ENTITY l9 SYSTEM "file:///etc/hostname">'
    declared = laughs if rng.random() < 0.5 else external

    def change(infos: list[zipfile.ZipInfo], bodies: dict[str, bytes]) -> None:
        names = [n for n in _xml_members(bodies) if b"<" in bodies[n]]
        if not names:
            return
        name = rng.choice(names)
        body = bodies[name]
        root = re.search(rb"<([A-Za-z][\w.-]*(?::[\w.-]+)?)[\s>]", body)
        if root is None:
            return
        body = re.sub(rb"<!DOCTYPE[^>]*>", b"", body)
        decl = body.find(b"?>") + 2 if body.startswith(b"<?xml") else 0
        body = body[:decl] + b"<!DOCTYPE " + root.group(1) + b" [" + declared + b"]>" + body[decl:]
        texts = list(re.finditer(rb">([^<>]+)</", body))
        if texts:
            spot = rng.choice(texts)
            body = body[: spot.start(1)] + b"&l9;" + body[spot.start(1) :]
        bodies[name] = body

    return _rewrite_zip(data, change)


def zip_header(rng: random.Random, data: bytes) -> bytes:
    """A central-directory entry declaring an absurd size, offset or name length."""
    entries = [m.start() for m in re.finditer(rb"PK\x01\x02", data)]
    if not entries:
        return set_bytes(rng, data)
    at = rng.choice(entries)
    field = rng.choice(((20, 4), (24, 4), (28, 2), (30, 2), (42, 4)))  # csize, usize, name, extra, offset
    value = rng.choice((0, 1, 0xFFFF, 0xFFFFFFFF, 0x7FFFFFFF))
    packed = struct.pack("<I" if field[1] == 4 else "<H", value & (0xFFFFFFFF if field[1] == 4 else 0xFFFF))
    offset = at + field[0]
    return data[:offset] + packed + data[offset + field[1] :]


# -- PDF: objects, streams, the xref, nesting


def _objects(data: bytes) -> list[re.Match[bytes]]:
    return list(re.finditer(rb"\d+ \d+ obj\b(.*?)endobj", data, re.DOTALL))


def pdf_object(rng: random.Random, data: bytes) -> bytes:
    """One object's body damaged: a reference that dangles or points back, a key dropped, a wrong type."""
    objects = _objects(data)
    if not objects:
        return absurd_number(rng, data)
    match = rng.choice(objects)
    body = match.group(1)
    choice = rng.randrange(5)
    if choice == 0:  # dangling, self and root references
        body = re.sub(rb"\d+ 0 R", rng.choice((b"99999 0 R", b"1 0 R", b"2 0 R", b"0 0 R")), body, count=1)
    elif choice == 1:  # a value of the wrong type
        body = re.sub(
            rb"(/\w+)\s*(\[[^\]]*\]|\d+ 0 R|/\w+|\d+)",
            rb"\1 " + rng.choice((b"(x)", b"null", b"<<>>", b"[]", b"-1")),
            body,
            count=1,
        )  # noqa: E501
    elif choice == 2:  # a key dropped
        body = re.sub(
            rb"/(Type|Kids|Count|Parent|Contents|Resources|MediaBox|Length|Root|Pages)\b", b"/Xx", body, count=1
        )
    elif choice == 3:  # the page tree made a cycle
        body = re.sub(rb"/Kids\s*\[[^\]]*\]", b"/Kids [2 0 R 2 0 R]", body)
        body = re.sub(rb"/Parent \d+ 0 R", b"/Parent 4 0 R", body)
    else:  # absurd numbers inside this object only
        body = absurd_number(rng, body)
    return data[: match.start(1)] + body + data[match.end(1) :]


def pdf_stream(rng: random.Random, data: bytes) -> bytes:
    """A content stream given hostile operators, garbage, or a filter its bytes do not match."""
    streams = list(re.finditer(rb"stream\r?\n(.*?)endstream", data, re.DOTALL))
    if not streams:
        return pdf_object(rng, data)
    match = rng.choice(streams)
    hostile = rng.choice(
        (
            b"q " * 5000 + b"BT /F1 12 Tf (deep) Tj ET",
            b"1e30 0 0 1e30 0 0 cm 0 0 1 1 re f",
            b"BT /F1 1e9 Tf 0 0 Td (huge) Tj ET",
            b"BT /helv 10 Tf 3 Tr 1 0 0 1 1e38 -1e38 Tm (far) Tj ET",
            b"BI /W 99999 /H 99999 /BPC 8 /CS /RGB ID \x00\x01\x02 EI",
            b"/Fm0 Do /Im0 Do /NoSuch Do",
            b"[" * 4000 + b"]" * 4000 + b" TJ",
            b"0 0 m " + b"1 1 l " * 20000 + b"S",
            rng.randbytes(200),
        )
    )
    body = match.group(1)
    at = rng.randrange(len(body) + 1)
    if rng.random() < 0.3:  # claim a compression the bytes do not have
        prefix = data[: match.start()]
        dict_start = prefix.rfind(b"<<")
        prefix = (
            prefix[:dict_start]
            + b"<< /Filter /FlateDecode /DecodeParms << /Predictor 15 /Columns 99999 >> "
            + prefix[dict_start + 2 :]
        )
        return prefix + data[match.start() :]
    return data[: match.start(1) + at] + b"\n" + hostile + b"\n" + data[match.start(1) + at :]


def pdf_nesting(rng: random.Random, data: bytes) -> bytes:
    """Arrays and dictionaries nested thousands deep where the parser expects a value."""
    depth = rng.choice((40, 400, 4000, 40000))
    nest = rng.choice(((b"[", b"]"), (b"<</A ", b">>")))
    value = nest[0] * depth + b"1" + nest[1] * depth
    objects = _objects(data)
    if not objects:
        return data + value
    match = rng.choice(objects)
    key = rng.choice((b"/MediaBox", b"/Kids", b"/Annots", b"/Resources", b"/Names", b"/Count", b"/Dest"))
    insert = match.start(1) + (match.group(1).find(b"<<") + 2 if b"<<" in match.group(1) else 0)
    return data[:insert] + b" " + key + b" " + value + b" " + data[insert:]


def pdf_xref(rng: random.Random, data: bytes) -> bytes:
    """The cross-reference table or startxref pointing to the wrong place."""
    startxref = data.rfind(b"startxref")
    if startxref >= 0 and rng.random() < 0.5:
        end = data.find(b"%%EOF", startxref)
        return data[: startxref + 9] + b"\n" + rng.choice(ABSURD) + b"\n" + data[end if end >= 0 else len(data) :]
    xref = data.find(b"\nxref")
    if xref < 0:
        return pdf_object(rng, data)
    table_end = data.find(b"trailer", xref)
    table = absurd_number(rng, data[xref:table_end]) if table_end > 0 else b""
    return data[:xref] + table + data[table_end:] if table_end > 0 else data


# -- images: headers declaring huge dimensions, chunks and frames that loop


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def image_dimensions(rng: random.Random, data: bytes) -> bytes:
    """Width and height set to huge values in the header, checksums fixed so the decoder believes them."""
    width, height = rng.choice(((0xFFFF, 0xFFFF), (0x7FFFFFFF, 1), (1, 0x7FFFFFFF), (100000, 100000), (0, 0)))
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
        body = struct.pack(">II", width, height) + data[24:29]
        if rng.random() < 0.3:  # bit depth and colour type too
            body = body[:8] + bytes([rng.choice((1, 2, 4, 8, 16, 3, 255)), rng.choice((0, 2, 3, 4, 6, 7))]) + body[10:]
        return data[:8] + _png_chunk(b"IHDR", body) + data[33:]
    sof = re.search(rb"\xff[\xc0-\xc3]", data)
    if data.startswith(b"\xff\xd8") and sof:
        at = sof.start() + 5
        return data[:at] + struct.pack(">HH", min(height, 0xFFFF), min(width, 0xFFFF)) + data[at + 4 :]
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return _tiff_tags(rng, data, {256: width, 257: height})
    return absurd_number(rng, data)


def _tiff_tags(rng: random.Random, data: bytes, values: dict[int, int]) -> bytes:
    """Set LONG values of some tags in the first IFD of a little-endian TIFF."""
    if not data.startswith(b"II*\x00") or len(data) < 8:  # an earlier mutator may have cut the header short
        return data
    out = bytearray(data)
    ifd = struct.unpack_from("<I", out, 4)[0]
    if ifd + 2 > len(out):
        return data
    count = struct.unpack_from("<H", out, ifd)[0]
    for i in range(count):
        entry = ifd + 2 + 12 * i
        if entry + 12 > len(out):
            break
        tag = struct.unpack_from("<H", out, entry)[0]
        if tag in values:
            struct.pack_into("<HII", out, entry + 2, 4, 1, values[tag] & 0xFFFFFFFF)
    return bytes(out)


def image_structure(rng: random.Random, data: bytes) -> bytes:
    """Chunks and frames that lie: a PNG text chunk that inflates hugely, a TIFF whose IFD chain loops."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        bomb = zlib.compress(b"\x00" * rng.choice((10**5, 10**7)), 9)
        chunk = rng.choice(
            (
                _png_chunk(b"zTXt", b"Comment\x00\x00" + bomb),
                _png_chunk(b"iCCP", b"icc\x00\x00" + bomb),
                _png_chunk(b"acTL", struct.pack(">II", 0x7FFFFFFF, 0)),
                _png_chunk(b"pHYs", struct.pack(">IIB", 0xFFFFFFFF, 1, 1)),
            )
        )
        return data[:33] + chunk + data[33:]
    if data.startswith(b"II*\x00"):
        out = bytearray(data)
        first = struct.unpack_from("<I", out, 4)[0]
        if first + 2 <= len(out):
            count = struct.unpack_from("<H", out, first)[0]
            next_at = first + 2 + 12 * count
            if next_at + 4 <= len(out):
                struct.pack_into("<I", out, next_at, rng.choice((first, 8, 0xFFFFFFF0)))  # a loop, or far away
        return bytes(out)
    return image_dimensions(rng, data)


# -- text formats: deep nesting and the syntax that drives each parser


_TOKENS = {
    "markdown": [
        b"#",
        b"\n# ",
        b"|",
        b"\n|-|-|\n",
        b"```",
        b"$$",
        b"![x](",
        b"](",
        b"\f",
        b"\n- ",
        b"\n> ",
        b"<div>",
        b"&#0;",
        b"\n======\n",
        b"\\",
        b"*",
        b"_",
        b"[^1]",
        b"\n    code",
        b"\r",
        b"\x00",
    ],
    "html": [
        b"<table>",
        b"</table>",
        b"<tr>",
        b"<td>",
        b"</td>",
        b"<th>",
        b"<caption>",
        b"<math>",
        b"</math>",
        b"<pre>",
        b"</pre>",
        b"<title>",
        b"</title>",
        b"<h1>",
        b"</h3>",
        b"<figure>",
        b"</figure>",
        b"<figcaption>",
        b'<img src="../../etc/passwd.png">',
        b"&#x10ffff;",
        b"&#99999999;",
        b"<svg>",
        b"</head>",
        b"<body>",
        b"<!--",
        b"<![CDATA[",
        b"\f",
        b"<script>",
        b"</script>",
        b"&",
        b"<",
    ],
    "text": [
        b"\n\n",
        b"\f",
        b"\r\n",
        b"\n====\n",
        b"\n# ",
        b"CHAPTER 1",
        b"1.2.3 Title",
        b"\x00",
        b"\xff\xfe",
        b"\t",
        b"  ",
    ],
    "csv": [b",", b";", b"\t", b"|", b'"', b'""', b"\n", b"\r", b"\r\n", b"\x00", b'"\n"', b",,,,,,,,"],
}


def tokens(kind: str) -> Mutator:
    def insert_tokens(rng: random.Random, data: bytes) -> bytes:
        out = data
        for _ in range(rng.randint(1, 12)):
            at = rng.randrange(len(out) + 1)
            out = out[:at] + rng.choice(_TOKENS[kind]) * rng.choice((1, 1, 2, 50)) + out[at:]
        return out

    insert_tokens.__doc__ = f"Pieces of {kind} syntax inserted where they break the structure."
    return insert_tokens


def nesting(kind: str) -> Mutator:
    def deep(rng: random.Random, data: bytes) -> bytes:
        depth = rng.choice((30, 300, 3000, 30000))
        if kind == "markdown":
            piece = rng.choice(
                (
                    b"> " * depth + b"quote\n",
                    b"".join(b"  " * i + b"- item\n" for i in range(min(depth, 3000))),
                    b"*" * depth + b"x" + b"*" * depth + b"\n",
                    b"[" * depth + b"x" + b"](y)" * depth + b"\n",
                    b"|" + b"c|" * depth + b"\n|" + b"-|" * depth + b"\n|" + b"1|" * depth + b"\n",
                    b"<div>" * depth + b"x" + b"</div>" * depth + b"\n",
                )
            )
        elif kind == "html":
            piece = rng.choice(
                (
                    b"<div>" * depth + b"deep" + b"</div>" * depth,
                    b"<table><tr><td>" * depth + b"cell" + b"</td></tr></table>" * depth,
                    b"<ul><li>" * depth + b"item",
                    b"<svg><title>" * depth,
                    b"<h1>" * depth + b"head",
                    b"<table>" * depth + b"<caption>" * depth,
                    b"<math>" * depth + b"x" + b"</math>" * (depth // 2),
                    b"<figure>" * depth + b"<img src=a.png>" * 10,
                )
            )
        elif kind == "csv":
            piece = rng.choice(
                (
                    b",".join([b"c"] * depth) + b"\n",
                    b'"' + b"x" * depth * 10 + b"\n",
                    b"a,b\n" * depth,
                    (b"1;2,3|4\t5\n" * depth),
                )
            )
        else:
            piece = rng.choice((b"x" * depth * 10, b"\n" * depth, b"\f" * depth, b"# " * depth + b"\n", b"A " * depth))
        at = rng.randrange(len(data) + 1)
        return data[:at] + piece + data[at:]

    deep.__doc__ = f"Structures of {kind} nested or repeated thousands deep."
    return deep


@functools.cache
def mutators(kind: str) -> dict[str, Mutator]:
    """The generic byte mutators plus those that know the parser's format."""
    found = dict(GENERIC)
    if kind in OFFICE:
        found |= {
            "zip-member": zip_member,
            "zip-drop-member": zip_drop_member,
            "zip-header": zip_header,
            "xml-nesting": xml_nesting,
            "xml-entities": xml_entities,
        }
    elif kind == "pdf":
        found |= {"pdf-object": pdf_object, "pdf-stream": pdf_stream, "pdf-nesting": pdf_nesting, "pdf-xref": pdf_xref}
    elif kind == "image":
        found |= {"image-dimensions": image_dimensions, "image-structure": image_structure}
    else:
        found |= {"tokens": tokens(kind), "nesting": nesting(kind)}
    return found


def mutate(kind: str, data: bytes, names: list[str], seed: int) -> bytes:
    """`data` through the named mutators in turn, all driven by one seeded generator (reproducible)."""
    rng = random.Random(seed)
    table = mutators(kind)
    for name in names:
        try:
            data = table[name](rng, data) or data[:1]
        except struct.error:  # a structure an earlier mutator cut short: this one has nothing to change
            continue
    return data


# ---------------------------------------------------------------- the property


class Hang(BaseException):  # a BaseException, so no parser's `except Exception` can swallow it
    """An input ran past its time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt Python code running longer than `seconds` (a loop in C returns first, then stops)."""

    def expire(signum: int, frame: object) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_error(path: Path, exc: ParseError) -> None:
    """A ParseError a user can act on: one line, starting with the file's name, a short reason."""
    message = str(exc)
    problem = None
    if "\n" in message or "\r" in message:
        problem = "a multi-line message"
    elif not message.startswith(f"{path}: ") or not exc.reason.strip():
        problem = "a message that does not name the file and a reason"
    elif len(message) - len(str(path)) > MAX_MESSAGE:
        problem = f"a message of {len(message)} characters"
    if problem:  # chained, so the fuzzing benchmark can tell where the ParseError was raised
        raise AssertionError(f"{problem}: {message[:300]!r}") from exc


def exercise(path: Path, data: bytes) -> list[ParseError | None]:
    """Run `data` through every entry point an upload meets; returns what each step did (None: no error).

    Raises whatever a parser raises other than ParseError, and AssertionError for a bad ParseError
    or result: both are crashes.
    """
    path.write_bytes(data)
    outcomes: list[ParseError | None] = []

    def step(run: Callable[[], object]) -> object:
        try:
            result = run()
        except ParseError as exc:
            check_error(path, exc)
            outcomes.append(exc)
            return None
        outcomes.append(None)
        return result

    encrypted = step(lambda: is_encrypted(path, data))
    assert encrypted is None or isinstance(encrypted, bool)
    pages = step(lambda: page_count(path, data))
    for counted in (step(lambda: inspect_bytes(path, data)), pages):
        assert counted is None or (isinstance(counted, int) and counted >= 1), counted
    assert isinstance(quick_page_count(path), int)
    if path.suffix == ".pdf":
        parts = step(lambda: read_pages(path, data, OPTIONS, range(int(pages or 1))))  # type: ignore[call-overload]
        if parts is not None:
            doc = step(lambda: finish_document(path, data, OPTIONS, parts=[parts]))
        else:
            doc = step(lambda: finish_document(path, data, OPTIONS))
    else:
        doc = step(lambda: parse_file(path, OPTIONS))
    assert doc is None or (isinstance(doc, Document) and doc.pages), doc
    return outcomes


# ---------------------------------------------------------------- the fuzz tests


@pytest.mark.long
@pytest.mark.parametrize("kind", PARSERS)
def test_parser_survives_mutated_inputs(kind: str, tmp_path: Path) -> None:
    names = sorted(seeds(kind))
    mutator_names = sorted(mutators(kind))

    @settings(
        max_examples=EXAMPLES[kind],
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        seed_name=st.sampled_from(names),
        chain=st.lists(st.sampled_from(mutator_names), min_size=1, max_size=3),
        seed=st.integers(0, 2**32 - 1),
    )
    def run(seed_name: str, chain: list[str], seed: int) -> None:
        suffix, data = seeds(kind)[seed_name]
        with time_limit(HANG_SECONDS):
            exercise(tmp_path / f"fuzz{suffix}", mutate(kind, data, chain, seed))

    run()


def test_seeds_are_valid_documents(tmp_path: Path) -> None:
    """Every seed parses unharmed: mutations start from real, working files of each kind."""
    for kind in PARSERS:
        for name, (suffix, data) in seeds(kind).items():
            outcomes = exercise(tmp_path / f"seed{suffix}", data)
            if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # inspect_bytes takes UTF-16's NULs for binary
                outcomes = [e for e in outcomes if e is None or "binary content" not in e.reason]
            assert outcomes == [None] * len(outcomes), (kind, name, outcomes)


@pytest.mark.long
def test_real_pdfs_survive_mutated_inputs(tmp_path: Path) -> None:
    """Real MMLongBench-Doc PDFs (xref streams, fonts, images real tools wrote), mutated a few times."""
    real = _real_pdfs(2)
    if not real:
        pytest.skip(f"no MMLongBench-Doc PDFs at {DATA} (the shared dev data): real-file seeds not fuzzed")
    names = sorted(real)
    mutator_names = sorted(mutators("pdf"))

    @settings(max_examples=6, deadline=None, derandomize=True, database=None)
    @given(
        st.sampled_from(names),
        st.lists(st.sampled_from(mutator_names), min_size=1, max_size=2),
        st.integers(0, 2**32 - 1),
    )  # noqa: E501
    def run(seed_name: str, chain: list[str], seed: int) -> None:
        with time_limit(HANG_SECONDS * 2):
            exercise(tmp_path / "real.pdf", mutate("pdf", real[seed_name][1], chain, seed))

    run()


# ---------------------------------------------------------------- regressions: what fuzzing found, rebuilt small


def _refused_in_one_line(path: Path, data: bytes) -> None:
    """Every entry point either reads the file or refuses it with a one-line ParseError; none crashes."""
    with time_limit(HANG_SECONDS):
        exercise(path, data)
    with pytest.raises(ParseError) as refused:
        inspect_bytes(path, data)
    check_error(path, refused.value)


@pytest.mark.parametrize("section", ["<![CDA x>", "<![ 1 ", "<![CDATA[kept out]]>", "<![if mso]>x<![endif]>"])
def test_html_marked_sections_are_bogus_comments(tmp_path: Path, section: str) -> None:
    """`<![` before an unknown keyword made the standard library's HTMLParser raise AssertionError."""
    path = tmp_path / "page.html"
    path.write_text(f"<p>Before the section</p>{section}<p>After the section</p>")
    text = " ".join(c.text for c in parse_file(path, OPTIONS).chunks)
    assert "Before the section" in text and "After the section" in text


def _damage_member(data: bytes, name: str) -> bytes:
    """The package with `name`'s deflated bytes replaced by an invalid deflate block (zlib.error on
    reading), its directory entry intact: the zip opens, the member does not inflate."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        info = package.getinfo(name)
    name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_length + extra_length
    return data[:start] + b"\xff" * info.compress_size + data[start + info.compress_size :]


@pytest.mark.parametrize("kind", OFFICE)
def test_office_package_with_a_member_that_does_not_inflate(tmp_path: Path, kind: str) -> None:
    """zlib.error escaped the zip checks (check_package catches zip and OS errors, not zlib's)."""
    suffix, data = next(iter(seeds(kind).values()))
    _refused_in_one_line(tmp_path / f"damaged{suffix}", _damage_member(data, "[Content_Types].xml"))


@pytest.mark.parametrize("kind", OFFICE)
def test_office_package_needing_a_newer_zip_version(tmp_path: Path, kind: str) -> None:
    """A directory entry asking for zip version 14.8: zipfile raises NotImplementedError on opening."""
    suffix, data = next(iter(seeds(kind).values()))
    entry = data.rfind(b"PK\x01\x02")
    damaged = data[: entry + 6] + struct.pack("<H", 148) + data[entry + 8 :]
    _refused_in_one_line(tmp_path / f"newer{suffix}", damaged)


@pytest.mark.parametrize(
    ("part", "pattern", "replacement"),
    [
        ("ppt/_rels/presentation.xml.rels", rb'<Relationship [^>]*Target="slides/slide1\.xml"/>', b""),
        ("ppt/presentation.xml", rb'(<p:sldId [^>]*?) r:id="[^"]*"', rb"\1"),
    ],
    ids=["slide relationship missing", "slide id without r:id"],
)
def test_deck_whose_slide_list_does_not_resolve(tmp_path: Path, part: str, pattern: bytes, replacement: bytes) -> None:
    """Listing a deck's slides raised KeyError / InvalidXmlError outside the checks of `check_slides`."""

    def change(infos: list[zipfile.ZipInfo], bodies: dict[str, bytes]) -> None:
        changed = re.sub(pattern, replacement, bodies[part], count=1)
        assert changed != bodies[part]
        bodies[part] = changed

    _refused_in_one_line(tmp_path / "deck.pptx", _rewrite_zip(seeds("slides")["deck"][1], change))


def test_tiff_frame_without_dimensions(tmp_path: Path) -> None:
    """A TIFF whose second frame lacks ImageLength (tag 257): walking the frames for their sizes raised
    TypeError ("Missing dimensions") from Pillow."""
    data = seeds("image")["tiff-frames"][1]
    first = struct.unpack_from("<I", data, 4)[0]
    ifd = struct.unpack_from("<I", data, first + 2 + 12 * struct.unpack_from("<H", data, first)[0])[0]
    entries = [ifd + 2 + 12 * i for i in range(struct.unpack_from("<H", data, ifd)[0])]
    at = next(e for e in entries if struct.unpack_from("<H", data, e)[0] == 257)
    _refused_in_one_line(tmp_path / "scan.tiff", data[:at] + struct.pack("<H", 999) + data[at + 2 :])


def test_png_animation_running_into_garbage(tmp_path: Path) -> None:
    """An acTL chunk promising frames, then chunks repeated after IEND: seeking frame 2 raised SyntaxError."""
    png = _png("P", (8, 8))
    data = png[:33] + _png_chunk(b"acTL", struct.pack(">II", 3, 0)) + png[33:] + png[33:]
    path = tmp_path / "frames.png"
    with time_limit(HANG_SECONDS):
        exercise(path, data)


def test_csv_with_one_wide_row_stays_small(tmp_path: Path) -> None:
    """One 500-column row over 20,000 short ones padded to a 10-million-cell grid (45 MB of chunk text
    from 360 KB, for half a minute); now the grid keeps the rows a million cells allow, with a warning."""
    from hyperfolio.parse.chunking import MAX_TABLE_CELLS

    path = tmp_path / "wide.csv"
    path.write_bytes(b",".join(b"c%d" % i for i in range(500)) + b"\n" + b"x\n" * 20_000)
    with time_limit(HANG_SECONDS):
        doc = parse_file(path, OPTIONS)
    cells = sum(len(row) for c in doc.chunks for row in c.table or [])
    assert cells <= 2 * MAX_TABLE_CELLS  # each part repeats the header row
    assert any("not indexed" in w for w in doc.meta.get("warnings", []))


def test_html_table_with_one_wide_row_stays_small(tmp_path: Path) -> None:
    """70 KB of `<td>` made a 5,000 x 5,000 grid: 21 s and 75 MB of chunk text."""
    from hyperfolio.parse.chunking import MAX_TABLE_CELLS

    path = tmp_path / "wide.html"
    path.write_bytes(b"<table><tr>" + b"<td>h" * 5000 + b"</tr>" + b"<tr><td>v" * 5000 + b"</table>")
    with time_limit(HANG_SECONDS):
        doc = parse_file(path, OPTIONS)
    assert sum(len(row) for c in doc.chunks for row in c.table or []) <= 2 * MAX_TABLE_CELLS


def _docx_table(edit: Callable[[object], None], rows: int = 2) -> bytes:
    """A document with a two-column table, its XML changed by `edit` (given the python-docx table)."""
    import docx

    doc = docx.Document()
    doc.add_paragraph("Berth allocation")
    table = doc.add_table(rows=rows, cols=2)
    table.cell(0, 0).text = "Quay"
    table.cell(rows - 1, 1).text = "North"
    edit(table)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def _set_property(element: object, parent: str, name: str, value: str) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    holder = getattr(element, f"get_or_add_{parent}")()
    child = OxmlElement(name)
    child.set(qn("w:val"), value)
    holder.insert(0, child)


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: _set_property(t._tbl.tr_lst[0].tc_lst[0], "tcPr", "w:gridSpan", "50000000"),
        lambda t: _set_property(t._tbl.tr_lst[0], "trPr", "w:gridBefore", "50000000"),
    ],
    ids=["gridSpan", "gridBefore"],
)
def test_word_table_declaring_absurd_spans(tmp_path: Path, edit: Callable[[object], None]) -> None:
    """python-docx's `row.cells` built a tuple as long as a declared span (gridSpan 2,000,000,000: 26 s and
    gigabytes); the grid is now read from the XML, at most MAX_GRID_COLUMNS wide."""
    from hyperfolio.parse.word import MAX_GRID_COLUMNS

    path = tmp_path / "spans.docx"
    path.write_bytes(_docx_table(edit))
    with time_limit(HANG_SECONDS):
        doc = parse_file(path, OPTIONS)
    tables = [c for c in doc.chunks if c.table]
    assert tables and all(len(row) <= MAX_GRID_COLUMNS for c in tables for row in c.table or [])
    assert "North" in " ".join(c.text for c in doc.chunks)


def test_word_table_with_a_long_vertical_merge(tmp_path: Path) -> None:
    """python-docx finds the cell above a merge by walking up from each row: 3,000 merged rows took 38 s."""

    def merge(table: object) -> None:
        for i, tr in enumerate(table._tbl.tr_lst):  # type: ignore[attr-defined]
            _set_property(tr.tc_lst[0], "tcPr", "w:vMerge", "restart" if i == 0 else "continue")

    path = tmp_path / "merged.docx"
    path.write_bytes(_docx_table(merge, rows=3000))
    with time_limit(10):
        doc = parse_file(path, OPTIONS)
    rows = [row for c in doc.chunks for row in c.table or []]
    assert rows[0][0] == "Quay" and rows[-1] == ["Quay", "North"]  # the merged cell's text on every row


@pytest.mark.parametrize("kind", OFFICE)
@pytest.mark.parametrize("entity", ["external", "billion laughs"])
def test_office_xml_entities_are_never_expanded(tmp_path: Path, kind: str, entity: str) -> None:
    """An external entity must not read a file and nested entities must not expand: python-docx and
    python-pptx parse with resolve_entities=False (libxml2 also caps amplification), openpyxl's sheets
    go through expat, which loads no external entity and stops an amplification."""
    secret = tmp_path / "secret.txt"
    secret.write_text("LEAKED-SECRET")
    part, anchor = {
        "word": ("word/document.xml", b"Overview"),
        "slides": ("ppt/slides/slide1.xml", b"Harbour strategy"),
        "spreadsheet": ("xl/worksheets/sheet1.xml", b"Quarter"),
    }[kind]
    if entity == "external":
        declared = b'<!ENTITY e SYSTEM "' + secret.as_uri().encode() + b'">'
    else:
        declared = b'<!ENTITY l0 "lol">' + b"".join(
            b'<!ENTITY l%d "%s">' % (i, b"&l%d;" % (i - 1) * 10) for i in range(1, 10)
        )
        declared += b'<!ENTITY e "&l9;">'

    def change(infos: list[zipfile.ZipInfo], bodies: dict[str, bytes]) -> None:
        body = bodies[part]
        start = body.index(b"?>") + 2 if body.startswith(b"<?xml") else 0
        root = re.match(rb"\s*<([\w:]+)", body[start:])
        assert root is not None
        doctype = b"<!DOCTYPE " + root.group(1) + b" [" + declared + b"]>"
        bodies[part] = (body[:start] + doctype + body[start:]).replace(anchor, anchor + b" &e;", 1)

    path = tmp_path / f"entities{seeds(kind)[next(iter(seeds(kind)))][0]}"
    path.write_bytes(_rewrite_zip(next(iter(seeds(kind).values()))[1], change))
    with time_limit(10):
        outcomes = exercise(path, path.read_bytes())
        try:
            text = " ".join(c.text for c in parse_file(path, OPTIONS).chunks)
        except ParseError:
            text = ""
    assert "LEAKED-SECRET" not in text and "lollollol" not in text, outcomes


def test_parse_errors_reports_any_failure_in_one_line(tmp_path: Path) -> None:
    """The one place library failures become ParseErrors: the file's name, a short reason, one line."""
    from hyperfolio.parse.guard import MAX_REASON, parse_errors

    path = tmp_path / "report.docx"
    cases: list[tuple[BaseException, str]] = [
        (KeyError("no relationship with key 'rId7'"), "not a valid Word file: KeyError: no relationship"),
        (ValueError("first line\n<w:p>\n" + "x" * 5000), "not a valid Word file: first line <w:p>"),
        (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
        (MemoryError(), "too large to read"),
        (ParseError(str(path), "a reason\nover two lines"), "a reason over two lines"),
    ]
    for raised, said in cases:
        with pytest.raises(ParseError) as caught, parse_errors(path, "word"):
            raise raised
        check_error(path, caught.value)
        assert said in caught.value.reason and len(caught.value.reason) <= MAX_REASON
    with pytest.raises(KeyboardInterrupt), parse_errors(path, "word"):
        raise KeyboardInterrupt
