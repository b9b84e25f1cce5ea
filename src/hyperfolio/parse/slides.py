"""PowerPoint .pptx via python-pptx: one page per slide, speaker notes kept.

A slide is the unit people cite ("slide 7"), so it is the page: numbered like the deck,
sized like the slide, every chunk boxed where its shape sits (in points). The slide title
heads the section path; notes are a chunk of their own under "Speaker notes", since they
often say what the slide only shows. Charts keep their data as a table.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pptx
from pptx.enum.shapes import PP_PLACEHOLDER
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.shapes.picture import Picture

from hyperfolio.config import ParseOptions
from hyperfolio.model import BBox, Page
from hyperfolio.parse import office_common as office
from hyperfolio.parse.chunking import Block, blocks_to_chunks
from hyperfolio.parse.file_titles import meaningful_title
from hyperfolio.parse.tree import clean_heading

if TYPE_CHECKING:
    from pptx.presentation import Presentation
    from pptx.shapes.base import BaseShape
    from pptx.slide import Slide

log = logging.getLogger(__name__)

NOTES_SECTION = "Speaker notes"
_SLIDE_PART = re.compile(r"^ppt/slides/slide\d+\.xml$")
# footer, date and slide number repeat on every slide, like a PDF's running footer
_FURNITURE = {PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.SLIDE_NUMBER, PP_PLACEHOLDER.HEADER}
_ROW_BAND = 18.0  # points: shapes whose tops differ by less read left to right


def open_slides(path: Path, data: bytes) -> Presentation:
    """The opened deck, or a ParseError saying why it is not a readable .pptx."""
    office.check_package(path, data, "PowerPoint")
    with office.reading(path, "PowerPoint"):
        return pptx.Presentation(io.BytesIO(data))


def check_slides(path: Path, data: bytes) -> int:
    """Validate an upload; its pages are its slides (listing them reads the deck's relationships, which
    can be damaged in a package that opened)."""
    deck = open_slides(path, data)
    with office.reading(path, "PowerPoint"):
        return max(len(deck.slides), 1)


def count_slides(source: Path | io.BytesIO) -> int:
    """Slides counted from the package's part names alone (for progress); 1 when unreadable."""
    try:
        with zipfile.ZipFile(source) as package:
            return max(sum(1 for n in package.namelist() if _SLIDE_PART.match(n)), 1)
    except Exception:
        return 1


@dataclass(frozen=True)
class _Frame:
    """Maps a group's child coordinates to slide coordinates (EMU): x' = sx * x + dx."""

    sx: float = 1.0
    dx: float = 0.0
    sy: float = 1.0
    dy: float = 0.0

    def box(self, shape: BaseShape) -> BBox | None:
        if shape.left is None or shape.top is None or shape.width is None or shape.height is None:
            return None
        x0, y0 = self.sx * shape.left + self.dx, self.sy * shape.top + self.dy
        x1, y1 = x0 + self.sx * shape.width, y0 + self.sy * shape.height
        return (office.emu_to_points(x0), office.emu_to_points(y0), office.emu_to_points(x1), office.emu_to_points(y1))

    def inside(self, group: BaseShape) -> _Frame:
        """The frame of a group's children: the group stretches its child extent onto its own box."""
        xfrm = group._element.xpath("./p:grpSpPr/a:xfrm")
        if not xfrm:
            return self

        def point(name: str, x: str, y: str) -> tuple[float, float] | None:
            found = xfrm[0].xpath(f"./a:{name}")
            if not found:
                return None
            return float(found[0].get(x, 0)), float(found[0].get(y, 0))

        off, ext = point("off", "x", "y"), point("ext", "cx", "cy")
        ch_off, ch_ext = point("chOff", "x", "y"), point("chExt", "cx", "cy")
        if off is None or ext is None or ch_off is None or ch_ext is None:
            return self
        sx = ext[0] / ch_ext[0] if ch_ext[0] else 1.0
        sy = ext[1] / ch_ext[1] if ch_ext[1] else 1.0
        # child x -> group's parent space: off + (x - chOff) * s; then through this frame
        return _Frame(
            sx=self.sx * sx,
            dx=self.sx * (off[0] - sx * ch_off[0]) + self.dx,
            sy=self.sy * sy,
            dy=self.sy * (off[1] - sy * ch_off[1]) + self.dy,
        )


def _leaves(shapes: Any, frame: _Frame) -> Iterator[tuple[BaseShape, BBox | None]]:
    """Every non-group shape with its box on the slide, groups walked at any depth."""
    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _leaves(shape.shapes, frame.inside(shape))
        else:
            yield shape, frame.box(shape)


def _frame_text(text_frame: Any) -> str:
    """Paragraphs on their own lines; PowerPoint's soft line breaks (vertical tabs) too."""
    lines: list[str] = []
    for paragraph in text_frame.paragraphs:
        text = paragraph.text.replace("\v", "\n")
        lines.extend(" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.6g}"
    return str(value)


def _chart_rows(chart: Any) -> tuple[list[list[str]], str | None]:
    """A chart's data as rows (category, one value per series) and its title: the numbers behind the bars."""
    title = None
    if chart.has_title and chart.chart_title.has_text_frame:
        title = _frame_text(chart.chart_title.text_frame) or None
    rows: list[list[str]] = []
    for plot in chart.plots:
        series = list(plot.series)
        if not series:
            continue
        categories = [str(c) for c in plot.categories]
        rows.append(["", *(s.name or f"Series {i + 1}" for i, s in enumerate(series))])
        values = [list(s.values) for s in series]
        length = max([len(categories), *(len(v) for v in values)])
        for i in range(length):
            label = categories[i] if i < len(categories) else str(i + 1)
            rows.append([label, *(_number(v[i]) if i < len(v) else "" for v in values)])
    return rows, title


def _table_rows(table: Any) -> list[list[str]]:
    rows = []
    for r in range(len(table.rows)):
        row = []
        for c in range(len(table.columns)):
            cell = table.cell(r, c)
            row.append("" if cell.is_spanned else " ".join(cell.text.replace("\v", " ").split()))
        rows.append(row)
    return rows


def _slide_title(slide: Slide) -> str | None:
    shape = slide.shapes.title
    if shape is None or not shape.has_text_frame:
        return None
    return clean_heading(_frame_text(shape.text_frame)) or None


class _SlideReader:
    def __init__(self, options: ParseOptions) -> None:
        self.options = options
        self.pictures = 0

    def shape_block(self, shape: BaseShape, bbox: BBox | None, path: list[str], number: int) -> Block | None:
        """One shape as a block: text frame, table, chart or picture; None for shapes with no content."""
        if isinstance(shape, GraphicFrame):
            if shape.has_table:
                table = shape.table
                return office.table_block(_table_rows(table), path, marked_header=bool(table.first_row), bbox=bbox)
            if shape.has_chart:
                rows, title = _chart_rows(shape.chart)
                caption = title or f"Chart on slide {number}"
                block = office.table_block(rows, path, marked_header=True, caption=caption, bbox=bbox)
                if block is not None:
                    block.meta["chart"] = True
                return block
            return None  # SmartArt, embedded objects: nothing python-pptx can read as content
        if isinstance(shape, Picture):
            try:
                image = shape.image
            except Exception:  # a linked picture: its bytes are not in the file
                return None
            self.pictures += 1
            name = image.filename or shape.name or "picture"
            return office.picture_block(image.blob, image.ext, self.options, path, name, bbox=bbox)
        if shape.has_text_frame:
            if shape.is_placeholder and shape.placeholder_format.type in _FURNITURE:
                return None
            text = _frame_text(shape.text_frame)  # type: ignore[attr-defined]
            return Block(modality="text", text=text, bbox=bbox, section_path=list(path)) if text else None
        return None

    def slide_page(self, number: int, slide: Slide, width: float, height: float) -> Page:
        title = _slide_title(slide)
        path = [title] if title else []
        title_shape = slide.shapes.title
        placed: list[tuple[bool, float, float, Block]] = []
        for shape, bbox in _leaves(slide.shapes, _Frame()):
            block = self.shape_block(shape, bbox, path, number)
            if block is None:
                continue
            is_title = title_shape is not None and shape.shape_id == title_shape.shape_id
            top, left = (bbox[1], bbox[0]) if bbox else (height, width)
            placed.append((not is_title, round(top / _ROW_BAND), left, block))
        placed.sort(key=lambda item: item[:3])  # the title first, then top to bottom, left to right
        blocks = [block for *_, block in placed]
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = _frame_text(frame) if frame is not None else ""
            if notes:
                blocks.append(
                    Block(modality="text", text=notes, section_path=[*path, NOTES_SECTION], meta={"notes": True})
                )
        if not blocks:
            blocks.append(
                Block(modality="text", text=f"[Slide {number}: no text]", section_path=path, placeholder=True)
            )
        hidden = slide._element.get("show") in ("0", "false")
        chunks = blocks_to_chunks(number, blocks, self.options)
        for chunk in chunks:
            chunk.meta["page_label"] = f"slide {number}"
            if hidden:
                chunk.meta["hidden_slide"] = True
        text_chars = sum(len(c.text) for c in chunks if c.modality == "text" and not c.placeholder)
        return Page(
            number=number,
            chunks=chunks,
            width=width,
            height=height,
            vision_dominant=any(c.modality == "image" for c in chunks) and text_chars < self.options.min_page_chars,
        )


def parse_slides(path: Path, data: bytes, options: ParseOptions) -> tuple[list[Page], str | None, dict[str, Any]]:
    """One page per slide (hidden slides too, marked, so page numbers stay the deck's slide numbers)."""
    deck = open_slides(path, data)
    with office.reading(path, "PowerPoint", "cannot read the"):
        width = office.emu_to_points(deck.slide_width) or 720.0  # the 10 x 7.5 inch default when unset
        height = office.emu_to_points(deck.slide_height) or 540.0
        reader = _SlideReader(options)
        pages = [reader.slide_page(n, slide, width, height) for n, slide in enumerate(deck.slides, 1)]
        first = next((t for slide in deck.slides if (t := _slide_title(slide))), None)
        title = meaningful_title(deck.core_properties.title) or first
    meta: dict[str, Any] = {"slides": len(pages), "pictures": reader.pictures}
    if office.ocr_missing(options, reader.pictures):
        log.warning("%s: %s", path, office.OCR_UNAVAILABLE)
        meta["ocr"] = "unavailable"
        meta["warnings"] = [office.OCR_UNAVAILABLE]
    return pages, title, meta
