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


# ---------------------------------------------------------------- review fixes


def test_image_src_outside_the_document_folder_is_not_read(tmp_path: Path, png_chart: bytes) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (tmp_path / "secret.png").write_bytes(png_chart)  # an image, but outside the document's folder
    (folder / "notes.txt").write_text("password=hunter2")
    (folder / "inside.png").write_bytes(png_chart)
    path = folder / "guide.md"
    path.write_text(
        "# Guide\n\nSome text.\n\n"
        "![os release](/etc/os-release)\n\n"
        "![parent secret](../secret.png)\n\n"
        f"![absolute secret]({tmp_path / 'secret.png'})\n\n"
        "![local notes](notes.txt)\n\n"
        "![local figure](inside.png)\n"
    )
    images = {c.caption: c for c in parse_file(path).chunks if c.modality == "image"}
    assert set(images) == {"os release", "parent secret", "absolute secret", "local notes", "local figure"}
    for caption in ("os release", "parent secret", "absolute secret", "local notes"):
        assert images[caption].image is None, caption
        assert images[caption].text == caption
    assert images["local figure"].image == png_chart


def test_html_image_src_outside_the_document_folder_is_not_read(tmp_path: Path, png_chart: bytes) -> None:
    folder = tmp_path / "site"
    folder.mkdir()
    (tmp_path / "private.png").write_bytes(png_chart)
    path = folder / "page.html"
    path.write_text(
        '<p>Intro text.</p><img src="../private.png" alt="private chart"><img src="/etc/hostname" alt="host">'
    )
    images = [c for c in parse_file(path).chunks if c.modality == "image"]
    assert [i.caption for i in images] == ["private chart", "host"]
    assert all(i.image is None for i in images)


def test_html_nested_table_flattens_into_its_cell(tmp_path: Path) -> None:
    path = tmp_path / "nested.html"
    path.write_text(
        "<table><tr><th>Name</th><th>Detail</th><th>Note</th></tr>"
        "<tr><td>a</td><td><table><tr><td>x</td><td>y</td></tr><tr><td>z</td></tr></table></td><td>b</td></tr>"
        "<tr><td>c</td><td>d</td><td>e</td></tr></table><p>After the table.</p>"
    )
    chunks = parse_file(path).chunks
    tables = [c for c in chunks if c.modality == "table"]
    assert len(tables) == 1
    assert tables[0].table == [["Name", "Detail", "Note"], ["a", "x y; z", "b"], ["c", "d", "e"]]
    assert tables[0].table_header_rows == 1
    assert any(c.text == "After the table." for c in chunks)


def test_html_single_row_with_nested_table_keeps_outer_cells(tmp_path: Path) -> None:
    path = tmp_path / "layout.html"
    path.write_text("<table><tr><td>a</td><td><table><tr><td>x</td><td>y</td></tr></table></td><td>b</td></tr></table>")
    assert [c.text for c in parse_file(path).chunks] == ["a | x y | b"]


def test_html_table_without_th_has_no_header_row(tmp_path: Path) -> None:
    path = tmp_path / "plain.html"
    path.write_text("<table><tr><td>East</td><td>40</td></tr><tr><td>West</td><td>60</td></tr></table>")
    table = next(c for c in parse_file(path).chunks if c.modality == "table")
    assert table.table == [["East", "40"], ["West", "60"]]
    assert table.table_header_rows == 0


def test_html_svg_title_is_not_the_document_title(tmp_path: Path) -> None:
    path = tmp_path / "icons.html"
    path.write_text(
        "<html><head><title>Harbour Notes</title></head><body>"
        "<svg><title>Download icon</title><path d='M0 0'/></svg>"
        "<h1>Tides</h1><p>High water at noon.</p></body></html>"
    )
    doc = parse_file(path)
    assert doc.title == "Harbour Notes"
    assert "Download icon" not in " ".join(c.text for c in doc.chunks)
    path = tmp_path / "untitled.html"
    path.write_text(
        "<html><body><svg><title>Menu icon</title></svg><h1>Tides</h1><p>High water at noon.</p></body></html>"
    )
    assert parse_file(path).title == "Tides"
