"""What pass 1 places on a page (text segments, tables, figures) and how their boxes relate.

Shared by every step of the PDF reader: pass 1 fills a `PageData` per page, pass 2 reads them all.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from hyperfolio.model import BBox
from hyperfolio.parse.chunking import Block
from hyperfolio.timing import StageTimes

log = logging.getLogger(__package__)  # one logger for the whole PDF reader

TEXT_FLAGS = (pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES) | pymupdf.TEXT_MEDIABOX_CLIP
CAPTION_RE = re.compile(
    r"^\s*(fig(?:ure)?\.?|table|tab\.|chart|exhibit|graph|diagram|plate|scheme|algorithm)\s*"
    r"([0-9]+[0-9.\-]*[a-z]?|[ivxlc]+\b|[a-z]\b)\s*[:.\-–—)]?",
    re.IGNORECASE,
)


@dataclass
class Item:
    """Anything placed on a page before chunking: a text segment, table or figure."""

    kind: str  # "text", "table", "image"
    bbox: BBox
    text: str = ""
    size: float = 0.0
    bold: bool = False
    n_lines: int = 1
    math: bool = False
    vertical: bool = False  # rotated text (arXiv stamps, axis titles) never heads a section
    role: str = "text"  # text | heading | caption | formula | furniture
    level: int = 0
    block: Block | None = None  # prepared payload for tables and images
    textless: bool = False  # a figure whose text is only a "[image on page N]" stand-in


@dataclass
class PageData:
    number: int
    width: float
    height: float
    items: list[Item] = field(default_factory=list)
    ocr: bool = False
    vision_dominant: bool = False
    image_count: int = 0
    warnings: list[str] = field(default_factory=list)
    label: str = ""  # the printed page label where the PDF defines labels ("iv", "5")
    times: StageTimes = field(default_factory=StageTimes)

    def warn(self, message: str) -> None:
        """Log a page's problem and keep it for the document's warnings."""
        log.warning(message)
        self.warnings.append(message)


@dataclass
class PdfPart:
    """Some pages of a PDF read on their own (a worker's share); `assemble_pdf` joins the parts."""

    pages: list[PageData]
    repaired: bool = False  # MuPDF repaired the file while reading these pages

    @property
    def times(self) -> StageTimes:
        total = StageTimes()
        for page in self.pages:
            total.merge(page.times)
        return total


def area(b: BBox) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def intersection(a: BBox, b: BBox) -> float:
    return area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def inside(inner: BBox, outer: BBox, share: float = 0.6) -> bool:
    a = area(inner)
    return a > 0 and intersection(inner, outer) >= share * a


def center_inside(inner: BBox, outer: BBox) -> bool:
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


LINE_TOLERANCE = 3.0  # points: words whose middles are this close in height stand on one line


def word_lines(words: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    """PyMuPDF's words (x0, y0, x1, y1, text, ...) in lines, top to bottom, each line left to right."""
    lines: list[list[tuple[Any, ...]]] = []
    for word in sorted(words, key=lambda w: ((w[1] + w[3]) / 2, w[0])):
        middle = (word[1] + word[3]) / 2
        if lines and abs((lines[-1][0][1] + lines[-1][0][3]) / 2 - middle) <= LINE_TOLERANCE:
            lines[-1].append(word)
        else:
            lines.append([word])
    return [sorted(line, key=lambda w: w[0]) for line in lines]
