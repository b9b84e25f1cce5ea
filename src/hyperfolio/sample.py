"""A small, deterministic annual-report PDF for `hyperfolio demo` and tests.

It exercises every modality the parser handles (headings, prose, a ruled table with a
caption, a chart image with a caption) and holds facts on known pages, so the demo can
show a cited answer without shipping any third-party document.
"""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf

SAMPLE_TITLE = "Northwind Renewables Annual Report 2024"
SAMPLE_QUESTION = "Which region had the highest installed capacity in 2024?"
SAMPLE_ANSWER = "North Sea (1,850 MW)"  # stated in Table 1 on page 2

REGIONS: list[tuple[str, str, str]] = [
    ("North Sea", "1,850", "168.4"),
    ("Baltic", "1,120", "97.3"),
    ("Iberia", "860", "71.9"),
    ("Great Lakes", "640", "52.0"),
]
GENERATION_GWH: list[tuple[str, float]] = [("2020", 8.1), ("2021", 9.4), ("2022", 11.2), ("2023", 12.9), ("2024", 14.6)]

_WIDTH, _HEIGHT = pymupdf.paper_size("a4")
_MARGIN = 60.0
_FIXED_DATE = "D:20250101000000Z"


def _heading(page: pymupdf.Page, y: float, text: str, size: float = 15) -> float:
    page.insert_text((_MARGIN, y), text, fontname="hebo", fontsize=size)
    return y + size + 12


# Each section's paragraphs, in order: the facts the sample questions ask about.
_PROSE: dict[str, tuple[str, ...]] = {
    "Executive Summary": (
        "Northwind Renewables is an independent wind and solar power producer headquartered in "
        "Aarhus, Denmark. In 2024 the company generated revenue of $412.6 million, an increase of "
        "18 percent over 2023, and employed 1,240 people across four operating regions. Installed "
        "capacity reached 4,470 MW at year end after the commissioning of two offshore wind farms.",
        "Net income was $61.3 million. The board proposes a dividend of $0.42 per share. "
        "Safety performance improved, with a lost-time injury rate of 0.9 per million hours worked.",
    ),
    "Regional Performance": (
        "Generation revenue is reported by operating region. The North Sea portfolio remains the "
        "largest contributor, while the Great Lakes region, added in 2022, grew fastest. Services "
        "and grid-balancing income of $23.0 million is reported separately.",
    ),
    "Generation Trends": (
        "Electricity generation has risen every year since 2020 as new capacity came online. "
        "Figure 1 shows annual generation in terawatt-hours.",
    ),
    "Outlook 2025": (
        "For 2025 Northwind Renewables expects revenue between $450 million and $480 million. "
        "The Skagen offshore project (420 MW) is scheduled to start operation in the third quarter, "
        "and a 150 MW battery storage site in Iberia enters construction.",
        "The company plans to hire about 200 additional engineers and technicians, mainly in "
        "Aarhus and Bilbao, and targets a lost-time injury rate below 0.8.",
    ),
}
_TABLE_NOTE = "Capacity figures are net of minority interests. Revenue excludes hedging gains and losses."


def _paragraph(page: pymupdf.Page, y: float, text: str, size: float = 10.5) -> float:
    """Wrapped body text; returns the y just below it."""
    rect = pymupdf.Rect(_MARGIN, y, _WIDTH - _MARGIN, _HEIGHT - _MARGIN)
    spare = page.insert_textbox(rect, text, fontname="helv", fontsize=size, lineheight=1.35)
    used = rect.height - spare if spare >= 0 else rect.height
    return y + used + 14


def _chart_png() -> bytes:
    """Bar chart of annual generation; fixed size and no timestamp so the bytes are stable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
    years = [y for y, _ in GENERATION_GWH]
    values = [v for _, v in GENERATION_GWH]
    ax.bar(years, values, color="#2b7a78")
    ax.set_ylabel("Generation (TWh)")
    ax.set_title("Annual generation")
    for x, v in enumerate(values):  # the bars' axis is categorical: the i-th year sits at x = i
        ax.text(x, v + 0.2, f"{v:.1f}", ha="center", fontsize=9)
    ax.set_ylim(0, max(values) * 1.2)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _table(page: pymupdf.Page, top: float) -> float:
    """Draw Table 1 with full ruling lines (what table detectors look for); returns its bottom."""
    header = ("Region", "Capacity (MW)", "Revenue ($M)")
    rows = [header, *REGIONS]
    widths = [170.0, 130.0, 130.0]
    row_h = 22.0
    x0 = _MARGIN
    x_edges = [x0]
    for w in widths:
        x_edges.append(x_edges[-1] + w)
    bottom = top + row_h * len(rows)
    shape = page.new_shape()
    for i in range(len(rows) + 1):
        y = top + i * row_h
        shape.draw_line((x_edges[0], y), (x_edges[-1], y))
    for x in x_edges:
        shape.draw_line((x, top), (x, bottom))
    shape.finish(color=(0, 0, 0), width=0.8)
    shape.commit()
    for r, row in enumerate(rows):
        font = "hebo" if r == 0 else "helv"
        for c, cell in enumerate(row):
            page.insert_text((x_edges[c] + 6, top + r * row_h + 15), cell, fontname=font, fontsize=10)
    return bottom


def _section(page: pymupdf.Page, y: float, heading: str) -> float:
    """A section heading and its paragraphs (`_PROSE`) from `y` down; returns the y below them."""
    y = _heading(page, y, heading)
    for text in _PROSE[heading]:
        y = _paragraph(page, y, text)
    return y


def _section_page(doc: pymupdf.Document, heading: str) -> tuple[pymupdf.Page, float]:
    """A new page opening with a section; returns the page and the y below it."""
    page = doc.new_page(width=_WIDTH, height=_HEIGHT)
    return page, _section(page, 90, heading)


def _summary_page(doc: pymupdf.Document) -> None:
    page = doc.new_page(width=_WIDTH, height=_HEIGHT)
    y = _heading(page, 120, "Northwind Renewables", size=26)
    y = _heading(page, y + 4, "Annual Report 2024", size=16) + 20
    _section(page, y, "Executive Summary")


def _regions_page(doc: pymupdf.Document) -> None:
    """Page 2: Table 1, where the sample question's answer is."""
    page, y = _section_page(doc, "Regional Performance")
    page.insert_text(
        (_MARGIN, y + 4), "Table 1: Installed capacity and revenue by region, 2024", fontname="helv", fontsize=10
    )
    bottom = _table(page, y + 14)
    _paragraph(page, bottom + 24, _TABLE_NOTE)


def _trends_page(doc: pymupdf.Document) -> None:
    """Page 3: Figure 1, a chart image with its caption."""
    page, y = _section_page(doc, "Generation Trends")
    chart = pymupdf.Rect(_MARGIN, y, _WIDTH - _MARGIN, y + (_WIDTH - 2 * _MARGIN) * 3.2 / 6)
    page.insert_image(chart, stream=_chart_png())
    page.insert_text(
        (_MARGIN, chart.y1 + 16),
        "Figure 1: Annual electricity generation, 2020-2024 (TWh)",
        fontname="helv",
        fontsize=10,
    )


def _outlook_page(doc: pymupdf.Document) -> None:
    _section_page(doc, "Outlook 2025")


def write_sample_report(path: Path) -> Path:
    """Write the four-page Northwind Renewables report to `path` (same bytes every time)."""
    path = Path(path)
    doc = pymupdf.open()
    for write_page in (_summary_page, _regions_page, _trends_page, _outlook_page):
        write_page(doc)
    doc.set_metadata(
        {
            "title": SAMPLE_TITLE,
            "author": "Northwind Renewables (fictional)",
            "creator": "hyperfolio",
            "producer": "hyperfolio",
            "creationDate": _FIXED_DATE,
            "modDate": _FIXED_DATE,
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path, garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return path
