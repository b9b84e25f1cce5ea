"""Turn a page's ordered blocks into retrievable chunks of bounded size.

Every parser emits `Block`s (one paragraph, table, image or formula, with its section
path) in reading order; this module packs text into chunks of about
`options.chunk_tokens` tokens at sentence boundaries, never across a page or a section,
and gives formats without pages (Markdown, HTML, text) virtual pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hyperfolio.config import ParseOptions
from hyperfolio.model import BBox, Chunk, Modality, Page

_TOKEN = re.compile(r"\w+|[^\w\s]")
_SENTENCE_END = re.compile(r"(?<=[.!?;。])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9•\-–])")
_WORD = re.compile(r"\S+")
MAX_TABLE_CELLS = 1_000_000  # cells of one table's grid, empty ones included; beyond, its first rows only


@dataclass
class Block:
    """One unit of page content before chunking, in reading order."""

    modality: Modality
    text: str
    bbox: BBox | None = None
    section_path: list[str] = field(default_factory=list)
    table: list[list[str]] | None = None
    table_header_rows: int = 0
    caption: str | None = None
    ocr_text: str | None = None
    image: bytes | None = None
    image_ext: str = "png"
    placeholder: bool = False
    page_break: bool = False  # virtual pagination: this block starts a new page
    meta: dict[str, Any] = field(default_factory=dict)


def count_tokens(text: str) -> int:
    """Approximate sub-word tokens by words plus punctuation marks: cheap and monotone."""
    return len(_TOKEN.findall(text))


def count_words(text: str) -> int:
    return len(_WORD.findall(text))


def split_sentences(text: str) -> list[str]:
    """Split prose at sentence ends and line breaks; keeps list items and headings apart."""
    return [s.strip() for s, _ in _split_lines(text)]


def _split_lines(text: str) -> list[tuple[str, bool]]:
    """(sentence, starts a line) pairs; a line's indentation is kept so code and <pre> survive."""
    out: list[tuple[str, bool]] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        indent = line[: len(line) - len(line.lstrip())]
        parts = [p.strip() for p in _SENTENCE_END.split(line.strip()) if p.strip()]
        for i, part in enumerate(parts):
            out.append((indent + part if i == 0 else part, i == 0))
    return out


def union_bbox(boxes: list[BBox | None]) -> BBox | None:
    real = [b for b in boxes if b is not None]
    if not real:
        return None
    return (
        min(b[0] for b in real),
        min(b[1] for b in real),
        max(b[2] for b in real),
        max(b[3] for b in real),
    )


def _split_long(sentence: str, max_tokens: int) -> list[str]:
    """Cut a sentence that alone exceeds the budget into word windows."""
    words = sentence.split()
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for word in words:
        n = count_tokens(word)
        if current and size + n > max_tokens:
            pieces.append(" ".join(current))
            current, size = [], 0
        current.append(word)
        size += n
    if current:
        pieces.append(" ".join(current))
    return pieces


def pack_text(
    pieces: list[tuple[str, BBox | None]], max_tokens: int, overlap: int = 0
) -> list[tuple[str, BBox | None]]:
    """Pack paragraphs into chunks of at most `max_tokens`, cutting at sentences.

    Consecutive chunks share up to `overlap` tokens of whole sentences so a fact that
    straddles a cut is still found in one piece. Each chunk's bbox is the union of the
    blocks its sentences came from.
    """
    max_tokens = max(8, max_tokens)
    overlap = max(0, min(overlap, max_tokens // 2))
    # units: (text, bbox, line key, tokens); units on one line of one piece join with a space
    units: list[tuple[str, BBox | None, int, int]] = []
    line_key = 0
    for text, bbox in pieces:
        for sentence, new_line in _split_lines(text):
            line_key += new_line
            n = count_tokens(sentence)
            if n > max_tokens:
                parts = _split_long(sentence, max_tokens)
                units.extend((part, bbox, line_key, count_tokens(part)) for part in parts)
            else:
                units.append((sentence, bbox, line_key, n))
    chunks: list[tuple[str, BBox | None]] = []
    current: list[tuple[str, BBox | None, int, int]] = []
    size = 0
    fresh = 0  # units in `current` that are not overlap carried from the previous chunk

    def render(group: list[tuple[str, BBox | None, int, int]]) -> str:
        out = ""
        for i, (text, _, piece, _) in enumerate(group):
            if i:
                out += " " if piece == group[i - 1][2] else "\n"
            out += text
        return out

    for unit in units:
        if current and fresh and size + unit[3] > max_tokens:
            chunks.append((render(current), union_bbox([u[1] for u in current])))
            carried: list[tuple[str, BBox | None, int, int]] = []
            carried_size = 0
            for prev in reversed(current):
                if carried_size + prev[3] > overlap or carried_size + prev[3] + unit[3] > max_tokens:
                    break
                carried.insert(0, prev)
                carried_size += prev[3]
            current, size, fresh = carried, carried_size, 0
        current.append(unit)
        size += unit[3]
        fresh += 1
    if current and fresh:
        chunks.append((render(current), union_bbox([u[1] for u in current])))
    return chunks


def rectangular(rows: list[list[str]], max_cells: int = MAX_TABLE_CELLS) -> tuple[list[list[str]], int]:
    """Rows padded to the widest one and cut to the first rows that fit `max_cells`; also how many were cut.

    A few bytes of markup declare a cell, so one row thousands of cells wide over thousands of short rows
    makes a grid quadratic in the file's size (fuzzing found a 70 KB HTML table that padded to 25 million
    cells and 75 MB of chunk text). Every parser pads its tables here, under one bound.
    """
    if not rows:
        return rows, 0
    width = max(len(r) for r in rows)
    keep = max(1, max_cells // max(1, width))
    return [r + [""] * (width - len(r)) for r in rows[:keep]], max(0, len(rows) - keep)


def table_text(rows: list[list[str]], caption: str | None = None) -> str:
    """The indexed text of a table: its caption, then one line per row with cells joined by bars."""
    lines = [caption] if caption else []
    lines.extend(" | ".join(cell.replace("\n", " ").strip() for cell in row) for row in rows)
    return "\n".join(lines)


def _split_table(block: Block, max_tokens: int) -> list[Block]:
    """Cut a long table into row groups that repeat its header, so each part embeds whole."""
    rows = block.table or []
    header = rows[: block.table_header_rows]
    body = rows[block.table_header_rows :]
    if count_tokens(block.text) <= 2 * max_tokens or len(body) < 2:
        return [block]
    parts: list[list[list[str]]] = []
    current: list[list[str]] = []
    base = count_tokens(table_text(header, block.caption))
    size = base
    for row in body:
        n = count_tokens(" | ".join(row))
        if current and size + n > max_tokens:
            parts.append(current)
            current, size = [], base
        current.append(row)
        size += n
    if current:
        parts.append(current)
    out = []
    for i, part in enumerate(parts):
        cells = header + part
        out.append(
            Block(
                modality="table",
                text=table_text(cells, block.caption),
                bbox=block.bbox,
                section_path=block.section_path,
                table=cells,
                table_header_rows=len(header),
                caption=block.caption,
                meta={**block.meta, "table_part": i + 1, "table_parts": len(parts)},
            )
        )
    return out


def blocks_to_chunks(page: int, blocks: list[Block], options: ParseOptions) -> list[Chunk]:
    """Chunk one page: runs of text in one section are packed; other blocks stay whole."""
    chunks: list[Chunk] = []
    run: list[Block] = []

    def emit(block: Block, text: str, bbox: BBox | None) -> None:
        chunks.append(
            Chunk(
                page=page,
                order=len(chunks),
                modality=block.modality,
                text=text,
                bbox=bbox,
                section_path=list(block.section_path),
                table=block.table,
                table_header_rows=block.table_header_rows,
                caption=block.caption,
                ocr_text=block.ocr_text,
                image=block.image,
                image_ext=block.image_ext,
                placeholder=block.placeholder,
                meta=dict(block.meta),
            )
        )

    def flush() -> None:
        if not run:
            return
        packed = pack_text([(b.text, b.bbox) for b in run], options.chunk_tokens, options.chunk_overlap)
        for text, bbox in packed:
            emit(run[0], text, bbox)
        run.clear()

    for block in blocks:
        if block.modality == "text" and not block.placeholder:
            if not block.text.strip():
                continue
            if run and run[-1].section_path != block.section_path:
                flush()
            run.append(block)
            continue
        flush()
        if block.modality == "table" and block.table:
            for part in _split_table(block, options.chunk_tokens):
                emit(part, part.text, part.bbox)
        else:
            emit(block, block.text, block.bbox)
    flush()
    return chunks


def _presplit(block: Block, limit: int) -> list[Block]:
    """Break a paragraph longer than a virtual page so pagination can cut inside it."""
    if block.modality != "text" or count_words(block.text) <= limit:
        return [block]
    parts = pack_text([(block.text, block.bbox)], limit, 0)
    out = []
    for i, (text, _) in enumerate(parts):
        out.append(
            Block(
                modality="text",
                text=text,
                section_path=block.section_path,
                page_break=block.page_break and i == 0,
                meta=dict(block.meta),
            )
        )
    return out


def paginate(blocks: list[Block], options: ParseOptions) -> list[Page]:
    """Group blocks of a page-less format into virtual pages of about `virtual_page_words` words.

    Cuts fall between blocks (a form feed in the source forces one), so a table or a
    paragraph is never split across pages unless it alone exceeds a page.
    """
    limit = max(50, options.virtual_page_words)
    groups: list[list[Block]] = []
    current: list[Block] = []
    words = 0
    for original in blocks:
        for block in _presplit(original, limit):
            n = count_words(block.text)
            if current and (block.page_break or words + n > limit):
                groups.append(current)
                current, words = [], 0
            current.append(block)
            words += n
    if current:
        groups.append(current)
    pages: list[Page] = []
    for group in groups:
        chunks = blocks_to_chunks(len(pages) + 1, group, options)
        if chunks:
            pages.append(Page(number=len(pages) + 1, chunks=chunks))
    return pages
