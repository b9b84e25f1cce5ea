"""Word .docx via python-docx: heading styles form the tree, tables keep their cells.

The body is walked in document order (paragraphs and tables interleaved) straight from the
XML, so text boxes, hyperlinks and pictures inside runs are found where they sit. Headers,
footers, footnotes and comments are left out: they repeat or sit beside the text, as a
PDF's running headers do. A .docx has no pages, so blocks get virtual pages; an explicit
page break (or a next-page section break) starts a new one.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from hyperfolio.config import ParseOptions
from hyperfolio.model import Page
from hyperfolio.parse import office_common as office
from hyperfolio.parse.chunking import Block, paginate
from hyperfolio.parse.file_titles import meaningful_title
from hyperfolio.parse.tree import SectionTracker, clean_heading

if TYPE_CHECKING:
    from docx.document import Document as WordDocument
    from docx.oxml.xmlchemy import BaseOxmlElement
    from docx.styles.style import ParagraphStyle

log = logging.getLogger(__name__)

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_V = "{urn:schemas-microsoft-com:vml}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_SKIPPED = {_MC + "Fallback", _W + "del", _W + "moveFrom", _W + "instrText", _W + "delText", _W + "rPr", _W + "pPr"}
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_NUMBERING = r"(([a-z]\.?)?\d+(\.\d+)*|[ivxlc]+)\b"  # 3, 2.1, A.1, IV
_FIGURE_CAPTION = re.compile(rf"^\s*(figure|fig\.?)\s*{_NUMBERING}", re.IGNORECASE)
_TABLE_CAPTION = re.compile(rf"^\s*table\s+{_NUMBERING}", re.IGNORECASE)
_PAGE = object()  # marks an explicit page break in the stream of a paragraph's content
MAX_GRID_COLUMNS = 1_000  # Word stops at 63 columns; a larger span or offset is damage, not a table


def open_word(path: Path, data: bytes) -> WordDocument:
    """The opened document, or a ParseError saying why it is not a readable .docx."""
    office.check_package(path, data, "Word")
    with office.reading(path, "Word"):
        return docx.Document(io.BytesIO(data))


def check_word(path: Path, data: bytes) -> int:
    """Validate an upload; a .docx has no pages of its own, so it counts as one."""
    open_word(path, data)
    return 1


def _content(element: BaseOxmlElement) -> Iterator[str | object]:
    """Text, page-break markers and picture relationship ids of an element, in reading order.

    Alternate content keeps its first choice only (its fallback repeats it); deleted revisions and
    field codes are not text the reader sees.
    """
    for child in element.iterchildren():
        tag = child.tag
        if not isinstance(tag, str) or tag in _SKIPPED:
            continue
        if tag == _W + "t":
            yield child.text or ""
        elif tag == _W + "tab":
            yield "\t"
        elif tag == _W + "br":
            yield _PAGE if child.get(_W + "type") == "page" else "\n"
        elif tag in (_W + "cr", _W + "p"):
            if tag == _W + "p":  # a paragraph nested in a text box or a cell
                yield "\n"
                yield from _content(child)
            yield "\n"
        elif tag == _W + "noBreakHyphen":
            yield "-"
        elif tag == _A + "blip" and child.get(_R + "embed"):
            yield ("picture", child.get(_R + "embed"))
        elif tag == _V + "imagedata" and child.get(_R + "id"):
            yield ("picture", child.get(_R + "id"))
        else:
            yield from _content(child)


def _style_chain(style: ParagraphStyle | None) -> Iterator[ParagraphStyle]:
    seen = 0
    while style is not None and seen < 10:  # a cycle of base styles must not loop forever
        yield style
        style = style.base_style
        seen += 1


def _body_items(element: BaseOxmlElement, parent: Any) -> Iterator[Paragraph | Table]:
    """Paragraphs and tables in document order, including those inside content controls (cover
    pages, forms) that python-docx's own iteration skips; a generated table of contents is left out."""
    for child in element.iterchildren():
        if child.tag == _W + "p":
            yield Paragraph(child, parent)
        elif child.tag == _W + "tbl":
            yield Table(child, parent)
        elif child.tag == _W + "sdt":  # not an element class python-docx knows: plain lxml lookups
            gallery = child.find(f"{_W}sdtPr/{_W}docPartObj/{_W}docPartGallery")
            if gallery is not None and (gallery.get(_W + "val") or "").lower().startswith("table of contents"):
                continue
            for content in child.findall(f"{_W}sdtContent"):
                yield from _body_items(content, parent)
        elif child.tag == _W + "customXml":
            yield from _body_items(child, parent)


def _outline(element: BaseOxmlElement) -> int | None:
    """Heading level from an explicit outline level (0-8; 9 means body text), 1-based."""
    found = element.xpath("./w:pPr/w:outlineLvl/@w:val")
    return int(found[0]) + 1 if found and str(found[0]).isdigit() and int(found[0]) < 9 else None


@dataclass(frozen=True)
class _StyleInfo:
    """What a paragraph style says about its paragraphs: heading level (0: Title), list item, caption."""

    level: int | None = None
    listed: bool = False
    caption: bool = False


def _style_info(style: ParagraphStyle | None) -> _StyleInfo:
    """Read up the chain of base styles: "My Heading" based on "Heading 2" is a level-2 heading.

    Names are matched in English ("Title", "Heading N"); outline levels catch headings in any language."""
    level: int | None = None
    listed = caption = False
    for depth, current in enumerate(_style_chain(style)):
        name = (current.name or "").strip().lower()
        listed = listed or name.startswith("list") or bool(current.element.xpath("./w:pPr/w:numPr"))
        caption = caption or (depth == 0 and name == "caption")
        if level is None:
            match = _HEADING_STYLE.match(name)
            level = 0 if name == "title" else int(match.group(1)) if match else _outline(current.element)
    return _StyleInfo(level, listed, caption)


class _Walker:
    """Collects blocks from the body in order, tracking headings and pending page breaks."""

    def __init__(self, doc: WordDocument, options: ParseOptions) -> None:
        self.doc = doc
        self.options = options
        self.tracker = SectionTracker()
        self.blocks: list[Block] = []
        self.first_heading: str | None = None
        self.break_pending = False
        self.pictures = 0
        self.styles: dict[str | None, _StyleInfo] = {}
        self.items = list(_body_items(doc.element.body, doc._body))
        # Heading N sits under the Title when the document has one, so the title heads the tree
        self.title_offset = int(any(self.style(p).level == 0 for p in self.items[:80] if isinstance(p, Paragraph)))

    def style(self, paragraph: Paragraph) -> _StyleInfo:
        key = paragraph._p.style
        if key not in self.styles:
            try:
                self.styles[key] = _style_info(paragraph.style)
            except Exception:  # a style that points at a missing one: body text
                self.styles[key] = _StyleInfo()
        return self.styles[key]

    def add(self, block: Block) -> None:
        block.page_break = block.page_break or (self.break_pending and bool(self.blocks))
        self.break_pending = False
        self.blocks.append(block)

    def picture(self, rid: str) -> None:
        part = self.doc.part.related_parts.get(rid)
        blob = getattr(part, "blob", None)
        if not blob:
            return  # a linked (not embedded) picture, or one whose part is missing
        partname = str(getattr(part, "partname", "") or "")
        name = partname.rsplit("/", 1)[-1] or "picture"
        ext = name.rsplit(".", 1)[-1] if "." in name else "png"
        self.pictures += 1
        self.add(office.picture_block(blob, ext, self.options, self.tracker.path, name))

    def paragraph(self, paragraph: Paragraph) -> None:
        p = paragraph._p
        if p.xpath("./w:pPr/w:pageBreakBefore[not(@w:val='0' or @w:val='false')]"):
            self.break_pending = True
        info = self.style(paragraph)
        level = _outline(p) or info.level
        listed, caption = info.listed or bool(p.xpath("./w:pPr/w:numPr")), info.caption
        text: list[str] = []

        def flush() -> None:
            content = "".join(text).strip()
            text.clear()
            if not content:
                return
            if level is not None and clean_heading(content):
                self.tracker.enter(1 if level == 0 else level + self.title_offset, content)
                self.first_heading = self.first_heading or clean_heading(content)
                heading = Block(
                    modality="text",
                    text=clean_heading(content),
                    section_path=self.tracker.path,
                    meta={"_heading": True},
                )
                self.add(heading)
                return
            lines = [" ".join(line.split()) for line in content.split("\n")]
            body = "\n".join(line for line in lines if line)
            meta: dict[str, Any] = {"list": True} if listed else {}
            if caption:
                meta["_caption"] = True
            self.add(
                Block(modality="text", text=f"• {body}" if listed else body, section_path=self.tracker.path, meta=meta)
            )

        for item in _content(p):
            if isinstance(item, str):
                text.append(item)
            elif item is _PAGE:
                flush()
                self.break_pending = True
            elif isinstance(item, tuple):
                flush()
                self.picture(item[1])
        flush()
        section = p.xpath("./w:pPr/w:sectPr/w:type/@w:val")
        if p.xpath("./w:pPr/w:sectPr") and (not section or section[0] in ("nextPage", "oddPage", "evenPage")):
            self.break_pending = True  # a section break that starts the next section on a new page

    def table(self, table: Table) -> None:
        """The grid read from the XML: a cell's text in its first column, its horizontal span padded, a
        vertical merge repeating the text above. Not python-docx's `row.cells`: that builds a tuple as
        long as the declared span (gridSpan="2000000000" took 26 s and gigabytes) and finds the cell
        above a merge by walking up from each row (quadratic: 3,000 merged rows took 38 s)."""
        rows: list[list[str]] = []
        pictures: list[str] = []
        above: dict[int, str] = {}  # grid column -> text of the cell there, for a vertical merge below it
        for tr in table._tbl.tr_lst:
            column = min(tr.grid_before, MAX_GRID_COLUMNS)
            cells = [""] * column
            for tc in tr.tc_lst:
                if column >= MAX_GRID_COLUMNS:
                    break
                span = min(max(tc.grid_span, 1), MAX_GRID_COLUMNS - column)
                if tc.vMerge == "continue":
                    text = above.get(column, "")
                else:
                    parts: list[str] = []
                    for item in _content(tc):
                        if isinstance(item, str):
                            parts.append(item)
                        elif isinstance(item, tuple):
                            pictures.append(item[1])
                    text = " ".join("".join(parts).split())
                above[column] = text
                cells.append(text)
                cells.extend([""] * (span - 1))
                column += span
            rows.append(cells)
        first = table._tbl.tr_lst[0] if table._tbl.tr_lst else None
        marked = first is not None and bool(first.xpath("./w:trPr/w:tblHeader[not(@w:val='0' or @w:val='false')]"))
        if first is not None and not marked:
            runs = first.xpath(".//w:r[w:t[normalize-space()]]")
            marked = bool(runs) and all(r.xpath("./w:rPr/w:b[not(@w:val='0' or @w:val='false')]") for r in runs)
        block = office.table_block(rows, self.tracker.path, marked_header=marked)
        if block is not None:
            self.add(block)
        for rid in pictures:  # pictures inside cells follow their table
            self.picture(rid)

    def walk(self) -> None:
        for item in self.items:
            if isinstance(item, Table):
                try:
                    self.table(item)
                except Exception as exc:  # an irregular grid python-docx cannot map: keep its text
                    log.debug("table read as text: %s", exc)
                    text = " ".join(str(t) for t in _content(item._tbl) if isinstance(t, str))
                    if text.strip():
                        self.add(Block(modality="text", text=" ".join(text.split()), section_path=self.tracker.path))
            else:
                self.paragraph(item)


def _attach_captions(blocks: list[Block]) -> list[Block]:
    """A "Figure …" / "Table …" (or Caption-styled) paragraph beside a picture or table becomes its caption.

    Figure captions are looked for below first, table captions above first, as Word places them.
    """
    taken: set[int] = set()
    for index, block in enumerate(blocks):
        if block.modality not in ("image", "table") or block.caption:
            continue
        pattern = _FIGURE_CAPTION if block.modality == "image" else _TABLE_CAPTION
        order = (index + 1, index - 1) if block.modality == "image" else (index - 1, index + 1)
        for near in order:
            if not 0 <= near < len(blocks) or near in taken:
                continue
            candidate = blocks[near]
            if candidate.modality != "text" or candidate.meta.get("list") or candidate.meta.get("_heading"):
                continue
            if not (pattern.match(candidate.text) or candidate.meta.get("_caption")):
                continue
            if (near > index and candidate.page_break) or (near < index and block.page_break):
                continue  # a page break between them: not this one's caption
            caption = " ".join(candidate.text.split())
            block.caption = caption
            block.text = caption if block.text.startswith("[picture ") else f"{caption}\n{block.text}"
            block.page_break = block.page_break or (near < index and candidate.page_break)
            taken.add(near)
            break
    out = [b for i, b in enumerate(blocks) if i not in taken]
    for block in out:  # the marks were for this pass only
        block.meta.pop("_caption", None)
        block.meta.pop("_heading", None)
    return out


def parse_word(path: Path, data: bytes, options: ParseOptions) -> tuple[list[Page], str | None, dict[str, Any]]:
    """Virtual pages of a .docx; the title is the document property, else the first heading."""
    doc = open_word(path, data)
    with office.reading(path, "Word", "cannot read the"):
        walker = _Walker(doc, options)
        walker.walk()
        title = meaningful_title(doc.core_properties.title) or walker.first_heading
        blocks = _attach_captions(walker.blocks)
        pages = paginate(blocks, options)
    meta: dict[str, Any] = {"pictures": walker.pictures}
    if office.ocr_missing(options, walker.pictures):
        log.warning("%s: %s", path, office.OCR_UNAVAILABLE)
        meta["ocr"] = "unavailable"
        meta["warnings"] = [office.OCR_UNAVAILABLE]
    return pages, title, meta
