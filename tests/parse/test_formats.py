"""Markdown, HTML and plain text: tree, tables, figures and virtual pages."""

from __future__ import annotations

from pathlib import Path

from hyperfolio.config import ParseOptions
from hyperfolio.parse import parse_file

MARKDOWN = """# Field Guide

Intro paragraph about the guide.

## Birds

The heron waits in shallow water.

| Species | Wingspan (cm) | Habitat |
|---------|---------------|---------|
| Heron   | 185           | Wetland |
| Kestrel | 75            | Grassland |

Table 2: Wingspans of common birds

![A heron at dawn](heron.png "Heron")

![Missing picture](missing.png)

```python
print("kept as text")
```

$$
E = mc^2
$$

### Waders

Waders probe mud for worms.
"""


def test_markdown_structure(tmp_path: Path, png_chart: bytes) -> None:
    (tmp_path / "heron.png").write_bytes(png_chart)
    path = tmp_path / "guide.md"
    path.write_text(MARKDOWN)
    doc = parse_file(path)
    assert doc.kind == "markdown" and doc.title == "Field Guide"
    chunks = doc.chunks
    table = next(c for c in chunks if c.modality == "table")
    assert table.table == [
        ["Species", "Wingspan (cm)", "Habitat"],
        ["Heron", "185", "Wetland"],
        ["Kestrel", "75", "Grassland"],
    ]
    assert table.table_header_rows == 1
    assert table.caption == "Table 2: Wingspans of common birds"
    assert table.section_path == ["Field Guide", "Birds"]
    images = [c for c in chunks if c.modality == "image"]
    assert [i.caption for i in images] == ["A heron at dawn — Heron", "Missing picture"]
    assert images[0].image is not None and images[1].image is None
    assert any('print("kept as text")' in c.text for c in chunks if c.modality == "text")
    formula = next(c for c in chunks if c.modality == "formula")
    assert formula.text == "E = mc^2"
    waders = next(c for c in chunks if "probe mud" in c.text)
    assert waders.section_path == ["Field Guide", "Birds", "Waders"]
    assert all(c.page == 1 for c in chunks)


def test_virtual_pages_and_form_feed(tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(12)]
    text = "\n\n".join(paragraphs[:6]) + "\n\f\n" + "\n\n".join(paragraphs[6:])
    path = tmp_path / "notes.txt"
    path.write_text(text)
    doc = parse_file(path, ParseOptions(virtual_page_words=200))
    numbers = [p.number for p in doc.pages]
    assert numbers == list(range(1, len(numbers) + 1))
    first_after_break = next(c for c in doc.chunks if c.text.startswith("Paragraph 6"))
    assert doc.pages[first_after_break.page - 1].chunks[0] is first_after_break
    for page in doc.pages:
        words = sum(len(c.text.split()) for c in page.chunks)
        assert words <= 200 + 70  # a page may exceed the target by less than one paragraph


def test_text_headings_and_fallback_decoding(tmp_path: Path) -> None:
    body = "INTRODUCTION\n\nCaf\xe9 culture is described here.\n\n2.1 Methods\n\nWe counted cups.\n"
    path = tmp_path / "legacy.text"
    path.write_bytes(body.encode("cp1252"))
    doc = parse_file(path)
    assert doc.kind == "text" and doc.title == "INTRODUCTION"
    cafe = next(c for c in doc.chunks if "culture" in c.text)
    assert "Café" in cafe.text
    cups = next(c for c in doc.chunks if "cups" in c.text)
    assert cups.section_path == ["INTRODUCTION", "2.1 Methods"]


def test_html_structure(tmp_path: Path, png_chart: bytes) -> None:
    (tmp_path / "plot.png").write_bytes(png_chart)
    html = """<html><head><title>Quarterly Memo</title><style>p {color: red}</style></head>
    <body><nav><a href="/">Home</a> | <a href="/x">Other page</a></nav>
    <h1>Results</h1><p>Sales rose <b>12%</b> in the quarter.</p>
    <script>var hidden = "secret";</script>
    <h2>By region</h2>
    <table><caption>Table 3: Sales by region</caption>
      <thead><tr><th>Region</th><th>Sales</th></tr></thead>
      <tbody><tr><td>East</td><td>40</td></tr><tr><td>West</td><td>60</td></tr></tbody></table>
    <figure><img src="plot.png" alt="bar chart"><figcaption>Figure 4: Sales trend</figcaption></figure>
    <ul><li>First point<li>Second point</ul>
    <pre>line one
  line two</pre>
    </body></html>"""
    path = tmp_path / "memo.html"
    path.write_text(html)
    doc = parse_file(path)
    assert doc.kind == "html" and doc.title == "Quarterly Memo"
    all_text = " ".join(c.text for c in doc.chunks)
    assert "secret" not in all_text and "Home" not in all_text and "color" not in all_text
    assert "Sales rose 12% in the quarter." in all_text
    table = next(c for c in doc.chunks if c.modality == "table")
    assert table.table == [["Region", "Sales"], ["East", "40"], ["West", "60"]]
    assert table.table_header_rows == 1 and table.caption == "Table 3: Sales by region"
    assert table.section_path == ["Results", "By region"]
    image = next(c for c in doc.chunks if c.modality == "image")
    assert image.caption == "Figure 4: Sales trend" and image.image is not None
    assert "bar chart" in image.text
    assert "line one\n  line two" in all_text
    assert "Second point" in all_text


def test_html_unclosed_tags_in_skipped_region(tmp_path: Path) -> None:
    path = tmp_path / "sloppy.htm"
    path.write_text("<nav><ul><li>Menu<li>More</nav><p>Real content survives.</p>")
    doc = parse_file(path)
    assert "Real content survives." in doc.chunks[0].text
    assert doc.title == "sloppy"
