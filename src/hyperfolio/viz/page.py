"""A document page as a picture, with cited regions marked: what a citation points at, shown.

The page is drawn from the source PDF with PyMuPDF on an in-memory copy (the file is never
changed); each region is a translucent rectangle in PDF points, the coordinates citations carry.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pymupdf

from hyperfolio.errors import HyperfolioError

MAX_DPI = 300
HIGHLIGHT = (0.98, 0.55, 0.0)  # orange: visible on white pages and on most figures


def render_page(source: str | Path, page: int, boxes: Sequence[Sequence[float]] = (), dpi: int = 110) -> bytes:
    """PNG of 1-based `page` of the PDF at `source`, with `boxes` (x0, y0, x1, y1 in points) outlined."""
    path = Path(source)
    if not path.is_file():
        raise HyperfolioError(f"{path}: the document's source file is no longer there, so its pages cannot be drawn")
    if not 18 <= dpi <= MAX_DPI:
        raise HyperfolioError(f"dpi must be between 18 and {MAX_DPI}, not {dpi}")
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
        pdf_page = doc[page - 1]
        for box in boxes:
            if len(box) != 4:
                raise HyperfolioError(f"a region is four numbers x0,y0,x1,y1, not {list(box)}")
            # Citations hold the page as shown (rotation applied); drawing wants the unrotated page's points.
            rect = pymupdf.Rect(*box) * pdf_page.derotation_matrix
            pdf_page.draw_rect(rect, color=HIGHLIGHT, fill=HIGHLIGHT, fill_opacity=0.22, width=2.0)
        return pdf_page.get_pixmap(dpi=dpi).tobytes("png")
