"""PDF parsing with PyMuPDF: text blocks, headings, tables, figures and OCR per page.

Two passes. The first (`pages`) reads each page once (text spans with sizes and weights, or OCR
when the page has no text layer; tables on pages that have ruling lines; raster and
vector figures with captions) and orders everything for reading. The second (`document`) needs
the whole document: body font size, heading levels (or the PDF outline when there is one),
running headers to drop, and then section paths and chunks.
"""

from hyperfolio.parse.pdf.document import assemble_pdf
from hyperfolio.parse.pdf.items import PdfPart
from hyperfolio.parse.pdf.opening import open_pdf, pdf_page_count
from hyperfolio.parse.pdf.pages import read_pdf_pages

__all__ = [
    "PdfPart",
    "assemble_pdf",
    "open_pdf",
    "pdf_page_count",
    "read_pdf_pages",
]
