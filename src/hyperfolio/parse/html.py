"""HTML with the standard library's parser: h1-h6 tree, prose, tables, figures.

Navigation, scripts and styles are skipped because they repeat on every page of a site
and would crowd out the content in retrieval.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from hyperfolio.config import ParseOptions
from hyperfolio.model import Modality, Page
from hyperfolio.parse.chunking import Block, paginate, rectangular
from hyperfolio.parse.markdown import load_local_image
from hyperfolio.parse.text import decode_text
from hyperfolio.parse.tree import SectionTracker, clean_heading

_SKIP = {"script", "style", "nav", "noscript", "template", "svg", "head", "iframe", "object", "select", "button"}
_BLOCK = {
    "p", "div", "li", "ul", "ol", "dl", "dt", "dd", "section", "article", "main", "header", "footer",
    "aside", "blockquote", "pre", "figure", "figcaption", "br", "hr", "form", "address", "details", "summary",
}  # fmt: skip
_VOID = {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "track", "wbr"}


class _Collector(HTMLParser):
    """Streams HTML into Blocks in document order."""

    def __init__(self, base: Path) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.tracker = SectionTracker()
        self.blocks: list[Block] = []
        self.buffer: list[str] = []
        self.skip_tag: str | None = None  # counting only this tag keeps sloppy HTML from derailing the skip
        self.skip_depth = 0
        self.inner_skip: list[str] = []  # skipped elements open inside the skipped one (an <svg> in <head>)
        self.pre_depth = 0
        self.heading: int | None = None
        self.heading_text: list[str] = []
        self.title_parts: list[str] = []
        self.in_title = False  # inside the document's <title>
        self.other_title = False  # inside any other <title> (an SVG's, one in the body): dropped
        self.in_body = False
        self.first_heading: str | None = None
        # the open outermost table (at most one); tables nested in it flatten into its current cell
        self.tables: list[dict[str, Any]] = []
        self.figure: dict[str, Any] | None = None
        self.in_figcaption = False
        self.in_math = 0

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        """`<![` opening anything but a known section (`<![CDA`, `<![ 1`) is a bogus comment, as browsers
        read it; the standard library's parser raises AssertionError there instead."""
        try:
            return int(super().parse_marked_section(i, report))
        except AssertionError:
            return int(self.parse_bogus_comment(i, report))

    # -- text flow
    def _flush(self) -> None:
        raw = "".join(self.buffer)
        self.buffer = []
        text = raw.strip("\n") if self.pre_depth else " ".join(raw.split())
        if not text.strip():
            return
        modality: Modality = "formula" if self.in_math else "text"
        self.blocks.append(Block(modality=modality, text=text, section_path=self.tracker.path))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "title":
            if self._document_title_allowed():
                self.in_title = True
                self.title_parts = []
            elif self.skip_tag is None:  # a skipped element's title is dropped with it
                self.other_title = True
            return
        if tag == "body":
            self.in_body = True
            if self.skip_tag == "head":  # an unclosed <head> ends where the body starts
                self.skip_tag, self.skip_depth, self.inner_skip = None, 0, []
        if self.skip_tag is not None:
            if tag == self.skip_tag:
                self.skip_depth += 1
            elif tag in _SKIP:
                self.inner_skip.append(tag)
            return
        if tag in _SKIP:
            self.skip_tag, self.skip_depth = tag, 1
            return
        if tag == "math":
            self._flush()
            self.in_math += 1
            return
        if re.fullmatch(r"h[1-6]", tag) and not self.tables:
            self._flush()
            self.heading = int(tag[1])
            self.heading_text = []
            return
        if self.tables:
            self._table_start(tag)
            if tag == "img":
                self._cell_text(a.get("alt", ""))
            return
        if tag == "img":
            self._image(a)
            return
        if tag == "figure":
            self._flush()
            self.figure = {"images": [], "caption": []}
            return
        if tag == "figcaption":
            self._flush()
            self.in_figcaption = True
            return
        if tag == "table":
            self._flush()
            self.tables.append(
                {"rows": [], "row": None, "cell": None, "header": 0, "thead": False, "caption": [], "nested": []}
            )
            return
        if tag == "pre":
            self._flush()
            self.pre_depth += 1
            return
        if tag in _BLOCK:
            self._flush()
            if tag == "li":
                self.buffer.append("• ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = self.other_title = False
            return
        if self.skip_tag is not None:
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if self.skip_depth <= 0:
                    self.skip_tag = None
                    self.inner_skip = []
                    self.in_title = False  # an unclosed <title> ends with its <head>
            elif tag in self.inner_skip:
                while self.inner_skip.pop() != tag:
                    pass  # elements left open inside it close with it
            return
        if tag == "math" and self.in_math:
            self._flush()
            self.in_math -= 1
            return
        if self.heading is not None and tag == f"h{self.heading}":
            text = " ".join("".join(self.heading_text).split())
            if text:
                self.tracker.enter(self.heading, text)
                self.first_heading = self.first_heading or clean_heading(text)
                self.blocks.append(Block(modality="text", text=text, section_path=self.tracker.path))
            self.heading = None
            return
        if self.tables:
            self._table_end(tag)
            return
        if tag == "figcaption":
            self.in_figcaption = False
            return
        if tag == "figure" and self.figure is not None:
            self._close_figure()
            return
        if tag == "pre":
            self._flush()
            self.pre_depth = max(0, self.pre_depth - 1)
            return
        if tag in _BLOCK:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
            return
        if self.skip_tag is not None or self.other_title:
            return
        if self.heading is not None:
            self.heading_text.append(data)
        elif self.tables:
            self._cell_text(data)
        elif self.in_figcaption and self.figure is not None:
            self.figure["caption"].append(data)
        else:
            self.buffer.append(data)

    def _document_title_allowed(self) -> bool:
        """Only the first non-empty <title> of the head names the document.

        A <title> inside an <svg> (or any other skipped element) is that element's tooltip,
        and one in the body is not the document's either.
        """
        if "".join(self.title_parts).strip():
            return False
        if self.skip_tag == "head":
            return not self.inner_skip
        return self.skip_tag is None and not self.in_body and not self.blocks and not self.tables

    # -- figures
    def _image(self, attrs: dict[str, str]) -> None:
        src = attrs.get("src", "")
        alt = " ".join(attrs.get("alt", "").split())
        title = " ".join(attrs.get("title", "").split())
        data, ext = load_local_image(self.base, src)
        block = Block(modality="image", text="", image=data, image_ext=ext, meta={"src": src})
        block.caption = " — ".join(p for p in (alt, title) if p) or None
        if self.figure is not None:
            self.figure["images"].append(block)
            return
        self._flush()
        block.section_path = self.tracker.path
        block.text = block.caption or f"[image {Path(src).name or src}]"
        self.blocks.append(block)

    def _close_figure(self) -> None:
        self._flush()
        figure, self.figure = self.figure, None
        assert figure is not None
        caption = " ".join("".join(figure["caption"]).split()) or None
        for block in figure["images"]:
            alt = block.caption
            block.caption = caption or alt
            parts = [p for p in (caption, alt if alt != caption else None) if p]
            block.text = "\n".join(parts) or f"[image {Path(block.meta.get('src', '')).name}]"
            block.section_path = self.tracker.path
            self.blocks.append(block)
        if not figure["images"] and caption:
            self.blocks.append(Block(modality="text", text=caption, section_path=self.tracker.path))

    # -- tables
    def _cell_text(self, data: str) -> None:
        table = self.tables[-1]
        if table["cell"] is not None:
            table["cell"].append(data)
        elif table.get("in_caption"):
            table["caption"].append(data)

    def _table_start(self, tag: str) -> None:
        table = self.tables[-1]
        nested: list[int] = table["nested"]
        if nested:  # inside a nested table: its rows and cells become text of the outer cell
            if tag == "table":
                nested.append(0)
            elif tag == "tr":
                if nested[-1]:
                    self._cell_text("; ")
                nested[-1] += 1
            elif tag in ("td", "th", "caption", "br", "p", "div", "li"):
                self._cell_text(" ")
            return
        if tag == "table":
            if table["cell"] is None:  # a table between cells still needs a cell to land in
                self._open_cell(table, header=False)
            self._cell_text(" ")
            nested.append(0)
        elif tag == "caption":
            table["in_caption"] = True
        elif tag == "thead":
            table["thead"] = True
        elif tag == "tr":
            if table["row"] is not None:  # the previous <tr> was never closed
                self._end_row(table)
            table["row"] = []
            table["row_th"] = True
        elif tag in ("td", "th"):
            self._open_cell(table, header=tag == "th")
        elif tag in ("br", "p", "div", "li") and table["cell"] is not None:
            table["cell"].append(" ")

    def _open_cell(self, table: dict[str, Any], header: bool) -> None:
        if table["cell"] is not None:  # the previous cell was never closed
            self._end_cell(table)
        if table["row"] is None:
            table["row"] = []
            table["row_th"] = True
        table["cell"] = []
        if not header:
            table["row_th"] = False

    def _end_cell(self, table: dict[str, Any]) -> None:
        table["row"].append(" ".join("".join(table["cell"]).split()))
        table["cell"] = None

    def _end_row(self, table: dict[str, Any]) -> None:
        if table["cell"] is not None:
            self._end_cell(table)
        row, table["row"] = table["row"], None
        if row and any(row):
            # a header row is made of <th> cells (or sits in <thead>), before any body row
            if (table["thead"] or table["row_th"]) and len(table["rows"]) == table["header"]:
                table["header"] += 1
            table["rows"].append(row)

    def _table_end(self, tag: str) -> None:
        table = self.tables[-1]
        nested: list[int] = table["nested"]
        if nested:
            if tag == "table":
                nested.pop()
                self._cell_text(" ")
            elif tag == "caption":
                self._cell_text(": ")
            return
        if tag == "caption":
            table["in_caption"] = False
        elif tag == "thead":
            table["thead"] = False
        elif tag in ("td", "th") and table["cell"] is not None:
            self._end_cell(table)
        elif tag == "tr" and table["row"] is not None:
            self._end_row(table)
        elif tag == "table":
            self.tables.pop()
            self._emit_table(table)

    def _emit_table(self, table: dict[str, Any]) -> None:
        if table["row"] is not None:
            self._end_row(table)
        rows: list[list[str]] = table["rows"]
        if not rows:
            return
        rows, _ = rectangular(rows)
        width = len(rows[0])
        caption = " ".join("".join(table["caption"]).split()) or None
        lines = [caption] if caption else []
        lines.extend(" | ".join(r) for r in rows)
        if width == 1 or len(rows) == 1:  # layout tables: just text
            self.blocks.append(Block(modality="text", text="\n".join(lines), section_path=self.tracker.path))
            return
        self.blocks.append(
            Block(
                modality="table",
                text="\n".join(lines),
                table=rows,
                table_header_rows=min(table["header"], len(rows) - 1),
                caption=caption,
                section_path=self.tracker.path,
            )
        )

    def close(self) -> None:
        super().close()
        while self.tables:
            self._emit_table(self.tables.pop())
        if self.figure is not None:
            self._close_figure()
        self._flush()


def parse_html(path: Path, data: bytes, options: ParseOptions) -> tuple[list[Page], str | None, dict[str, Any]]:
    """Virtual pages of an HTML file; the <title> (else the first heading) names it."""
    text = decode_text(data)
    collector = _Collector(path.parent)
    parts = text.split("\f")
    for part_no, part in enumerate(parts):
        if part_no:
            collector._flush()
        start = len(collector.blocks)
        collector.feed(part)
        if part_no and len(collector.blocks) > start:
            collector.blocks[start].page_break = True
    collector.close()
    title = " ".join("".join(collector.title_parts).split()) or collector.first_heading
    return paginate(collector.blocks, options), title, {}
