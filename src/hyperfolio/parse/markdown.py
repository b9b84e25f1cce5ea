"""Markdown via markdown-it-py: headings form the tree, pipe tables keep their cells.

Markdown has no pages, so blocks are grouped into virtual pages (a form feed forces a
break) to give citations a stable, human-checkable unit.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token

from hyperfolio.config import ParseOptions
from hyperfolio.model import Modality, Page
from hyperfolio.parse.chunking import Block, paginate, rectangular
from hyperfolio.parse.text import decode_text
from hyperfolio.parse.tree import SectionTracker, clean_heading

_IMAGE_EXTS = {
    ".png": "png",
    ".jpg": "jpg",
    ".jpeg": "jpg",
    ".gif": "gif",
    ".webp": "webp",
    ".bmp": "bmp",
    ".tif": "tiff",
    ".tiff": "tiff",
}
_MAX_IMAGE_BYTES = 50_000_000
_DISPLAY_MATH = re.compile(r"^\s*\$\$(.+?)\$\$\s*$", re.DOTALL)


def _inline_text(token: Token) -> str:
    """Plain text of an inline token: emphasis markers dropped, links reduced to their text."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(re.sub(r"<[^>]+>", "", child.content) if child.type == "html_inline" else child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n" if child.type == "hardbreak" else " ")
        elif child.type == "image":
            continue
    return "".join(parts).strip()


def load_local_image(base: Path, src: str) -> tuple[bytes | None, str]:
    """Bytes of an image referenced by a document, or None when it must not or cannot be read.

    Only local files with an image suffix that lie inside the document's own folder are
    read: a reference such as `/etc/passwd` or `../../secret.png` would otherwise copy an
    arbitrary file into the collection. URLs are never fetched (parsing is offline).
    """
    path_part = src.split("?")[0]
    ext = _IMAGE_EXTS.get(Path(path_part).suffix.lower())
    if ext is None or not path_part or re.match(r"^[a-z][a-z0-9+.-]*:", src, re.IGNORECASE):
        return None, ext or "png"
    try:
        root = base.resolve()
        for name in dict.fromkeys((path_part, unquote(path_part))):  # Markdown percent-encodes spaces
            candidate = (base / name).resolve()
            if not candidate.is_relative_to(root) or candidate.suffix.lower() not in _IMAGE_EXTS:
                continue  # outside the folder, or a symlink to something that is not an image
            if candidate.is_file() and candidate.stat().st_size < _MAX_IMAGE_BYTES:
                return candidate.read_bytes(), ext
    except (OSError, ValueError):
        pass
    return None, ext


def _image_block(child: Token, base: Path, path_now: list[str]) -> Block:
    src = str(child.attrs.get("src", ""))
    alt = "".join(c.content for c in child.children or []) or child.content
    title = str(child.attrs.get("title", "") or "")
    caption = " — ".join(p for p in (alt.strip(), title.strip()) if p) or None
    data, ext = load_local_image(base, src)
    return Block(
        modality="image",
        text=caption or f"[image {Path(src).name or src}]",
        caption=caption,
        image=data,
        image_ext=ext,
        section_path=path_now,
        meta={"src": src},
    )


def markdown_blocks(source: str, base: Path, tracker: SectionTracker) -> tuple[list[Block], str | None]:
    """Blocks of one Markdown text in order, plus its first heading (a title candidate)."""
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(source)
    blocks: list[Block] = []
    first_heading: str | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            text = _inline_text(tokens[i + 1])
            if text:
                tracker.enter(level, text)
                first_heading = first_heading or clean_heading(text)
                blocks.append(Block(modality="text", text=text, section_path=tracker.path))
            i += 3
            continue
        if tok.type == "inline" and tokens[i - 1].type == "paragraph_open":
            text = _inline_text(tok)
            match = _DISPLAY_MATH.match(tok.content)
            if match:
                blocks.append(Block(modality="formula", text=match.group(1).strip(), section_path=tracker.path))
            elif text:
                blocks.append(Block(modality="text", text=text, section_path=tracker.path))
            for child in tok.children or []:
                if child.type == "image":
                    blocks.append(_image_block(child, base, tracker.path))
            i += 1
            continue
        if tok.type in ("fence", "code_block"):
            info = (tok.info or "").strip().lower()
            content = tok.content.rstrip("\n")
            if content.strip():
                modality: Modality = "formula" if info in ("math", "latex", "tex", "katex") else "text"
                meta: dict[str, Any] = {"code": True, "language": info} if modality == "text" else {}
                blocks.append(Block(modality=modality, text=content, section_path=tracker.path, meta=meta))
            i += 1
            continue
        if tok.type == "html_block":
            text = re.sub(r"<[^>]+>", " ", tok.content)
            text = " ".join(text.split())
            if text:
                blocks.append(Block(modality="text", text=text, section_path=tracker.path))
            i += 1
            continue
        if tok.type == "table_open":
            i, block = _table(tokens, i, tracker.path)
            if block is not None:
                blocks.append(block)
            continue
        i += 1
    return blocks, first_heading


def _table(tokens: list[Token], start: int, path_now: list[str]) -> tuple[int, Block | None]:
    """Collect a pipe table into rows of cells; a pipe table always opens with its header row."""
    rows: list[list[str]] = []
    row: list[str] = []
    i = start + 1
    while i < len(tokens) and tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close":
            rows.append(row)
        elif tok.type == "inline":
            row.append(_inline_text(tok))
        i += 1
    if not rows:
        return i + 1, None
    rows, _ = rectangular(rows)
    text = "\n".join(" | ".join(r) for r in rows)
    block = Block(modality="table", text=text, table=rows, table_header_rows=1, section_path=path_now)
    return i + 1, block


def _attach_table_captions(blocks: list[Block]) -> list[Block]:
    """A 'Table N: ...' paragraph right before or after a table becomes its caption."""
    out: list[Block] = []
    skip: set[int] = set()
    for idx, block in enumerate(blocks):
        if idx in skip:
            continue
        if block.modality == "table" and block.caption is None:
            for near in (idx - 1, idx + 1):
                if 0 <= near < len(blocks) and near not in skip:
                    cand = blocks[near]
                    if cand.modality == "text" and re.match(r"^\s*table\s+\w+", cand.text, re.IGNORECASE):
                        block.caption = " ".join(cand.text.split())
                        block.text = f"{block.caption}\n{block.text}"
                        if near == idx - 1 and out and out[-1] is cand:
                            out.pop()
                        skip.add(near)
                        break
        out.append(block)
    return out


def parse_markdown(path: Path, data: bytes, options: ParseOptions) -> tuple[list[Page], str | None, dict[str, Any]]:
    """Virtual pages of a Markdown file; a form feed in the source starts a new page."""
    text = decode_text(data)
    tracker = SectionTracker()
    blocks: list[Block] = []
    title: str | None = None
    for part_no, part in enumerate(text.split("\f")):
        part_blocks, heading = markdown_blocks(part, path.parent, tracker)
        title = title or heading
        if part_no and part_blocks:
            part_blocks[0].page_break = True
        blocks.extend(part_blocks)
    blocks = _attach_table_captions(blocks)
    return paginate(blocks, options), title, {}
