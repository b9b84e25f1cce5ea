"""A document page as a picture, with cited regions marked: what a citation points at, shown.

The page is drawn from the source PDF with PyMuPDF on an in-memory copy (the file is never
changed); each region is a translucent rectangle in PDF points, the coordinates citations carry.
Given the quotes of what answers inside the regions (a citation's sentence or cells), their lines are
found on the page (`regions.locate`) and filled strongly inside the regions' lighter outline.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pymupdf

from hyperfolio.errors import HyperfolioError
from hyperfolio.viz.regions import Located, locate

MAX_DPI = 300
HIGHLIGHT = (0.98, 0.55, 0.0)  # orange: visible on white pages and on most figures
ANSWER = (0.85, 0.25, 0.0)  # darker orange: the lines that answer, inside the lighter region


@contextmanager
def open_page(source: str | Path, page: int) -> Iterator[pymupdf.Page]:
    """1-based `page` of the PDF at `source`, refused with a clear error when it cannot be read."""
    path = Path(source)
    if not path.is_file():
        raise HyperfolioError(f"{path}: the document's source file is no longer there, so its pages cannot be drawn")
    try:
        doc = pymupdf.open(path)
    except Exception as exc:
        raise HyperfolioError(f"{path.name}: cannot be opened to draw its pages ({exc})") from exc
    with doc:
        if doc.needs_pass:
            raise HyperfolioError(f"{path.name}: is encrypted; its pages cannot be drawn")
        if not doc.is_pdf:
            raise HyperfolioError(f"{path.name}: pages are drawn for PDF documents only")
        if not 1 <= page <= doc.page_count:
            raise HyperfolioError(f"{path.name} has {doc.page_count} pages; there is no page {page}")
        yield doc[page - 1]


def _checked(boxes: Sequence[Sequence[float]]) -> list[tuple[float, float, float, float]]:
    for box in boxes:
        if len(box) != 4:
            raise HyperfolioError(f"a region is four numbers x0,y0,x1,y1, not {list(box)}")
    return [(box[0], box[1], box[2], box[3]) for box in boxes]


def render_page(
    source: str | Path,
    page: int,
    boxes: Sequence[Sequence[float]] = (),
    dpi: int = 110,
    quotes: Sequence[str] = (),
) -> bytes:
    """PNG of 1-based `page` of the PDF at `source`, with `boxes` (x0, y0, x1, y1 in points) outlined and
    the lines of `quotes` found inside them (anywhere on the page without boxes) filled more strongly."""
    if not 18 <= dpi <= MAX_DPI:
        raise HyperfolioError(f"dpi must be between 18 and {MAX_DPI}, not {dpi}")
    regions = _checked(boxes)
    with open_page(source, page) as pdf_page:
        found = [box for located in locate(pdf_page, quotes, regions) for box in located.boxes] if quotes else []
        # Citations hold the page as shown (rotation applied); drawing wants the unrotated page's points.
        unturn = pdf_page.derotation_matrix
        for box in regions:  # lighter when the lines inside are marked
            opacity, width = (0.08, 1.2) if found else (0.22, 2.0)
            pdf_page.draw_rect(
                pymupdf.Rect(*box) * unturn, color=HIGHLIGHT, fill=HIGHLIGHT, fill_opacity=opacity, width=width
            )
        for box in found:
            rect = pymupdf.Rect(*box) * unturn + (-1, -1, 1, 1)
            pdf_page.draw_rect(rect, color=ANSWER, fill=HIGHLIGHT, fill_opacity=0.38, width=1.0)
        return pdf_page.get_pixmap(dpi=dpi).tobytes("png")


def page_regions(
    source: str | Path, page: int, boxes: Sequence[Sequence[float]] = (), quotes: Sequence[str] = ()
) -> dict[str, Any]:
    """Where `quotes` are inside `boxes` on 1-based `page` (the whole page without boxes): the page's size
    as shown and, for each quote, its boxes (one per line, in points) and how it was found."""
    regions = _checked(boxes)
    with open_page(source, page) as pdf_page:
        located = locate(pdf_page, quotes, regions)
        return {
            "page": page,
            "width": pdf_page.rect.width,
            "height": pdf_page.rect.height,
            "boxes": [list(b) for b in regions],
            "quotes": [_quote_row(q) for q in located],
        }


def _quote_row(located: Located) -> dict[str, Any]:
    return {
        "quote": located.quote,
        "found": located.how or None,
        "boxes": [[round(v, 2) for v in box] for box in located.boxes],
    }
