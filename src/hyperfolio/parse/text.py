"""Plain text: paragraphs by blank lines, light heading heuristics, virtual pages."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hyperfolio.config import ParseOptions
from hyperfolio.model import Page
from hyperfolio.parse.chunking import Block, paginate
from hyperfolio.parse.tree import SectionTracker, clean_heading

_PARAGRAPH_SPLIT = re.compile(r"\n[ \t]*\n+")
_NUMBERED = re.compile(r"^(\d+(\.\d+)*)\.?\s+[A-Z]")
_CHAPTER = re.compile(r"^(chapter|section|part|appendix)\s+[\w.]+", re.IGNORECASE)


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM, or UTF-16 with BOM), else Windows-1252, else Latin-1: never fails."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _heading_level(paragraph: str) -> tuple[int, str] | None:
    """(level, title) when a paragraph looks like a heading, else None.

    Recognises Markdown-style '#', setext underlines, 'Chapter 3' / '2.1 Results'
    numbering and short ALL-CAPS lines; anything longer than a line is prose.
    """
    lines = [ln.rstrip() for ln in paragraph.strip().split("\n")]
    if len(lines) == 2 and re.fullmatch(r"=+|-+", lines[1].strip()) and len(lines[0]) < 120:
        return (1 if lines[1].strip()[0] == "=" else 2), lines[0].strip()
    if len(lines) != 1:
        return None
    line = lines[0].strip()
    words = line.split()
    if not words or len(line) > 100:
        return None
    md = re.match(r"^(#{1,6})\s+(.+)$", line)
    if md:
        return len(md.group(1)), md.group(2)
    if line.endswith((".", ",", ";", "?", "!")) and not _CHAPTER.match(line):
        return None
    if _CHAPTER.match(line) and len(words) <= 12:
        return 1, line
    numbered = _NUMBERED.match(line)
    if numbered and len(words) <= 12:
        return numbered.group(1).count(".") + 1, line
    letters = [ch for ch in line if ch.isalpha()]
    if len(letters) >= 3 and all(ch.isupper() for ch in letters) and len(words) <= 10:
        return 1, line
    return None


def text_blocks(text: str, tracker: SectionTracker) -> tuple[list[Block], str | None]:
    blocks: list[Block] = []
    first_heading: str | None = None
    for part_no, part in enumerate(text.split("\f")):
        started = False
        for paragraph in _PARAGRAPH_SPLIT.split(part.replace("\r\n", "\n").replace("\r", "\n")):
            if not paragraph.strip():
                continue
            heading = _heading_level(paragraph)
            if heading is not None:
                level, title = heading
                tracker.enter(level, title)
                first_heading = first_heading or clean_heading(title)
                content = title
            else:
                content = " ".join(paragraph.split()) if "  " not in paragraph.strip() else paragraph.strip()
            block = Block(modality="text", text=content, section_path=tracker.path)
            if part_no and not started:
                block.page_break = True
            started = True
            blocks.append(block)
    return blocks, first_heading


def parse_text(path: Path, data: bytes, options: ParseOptions) -> tuple[list[Page], str | None, dict[str, Any]]:
    """Virtual pages of a plain-text file; a form feed forces a page break."""
    blocks, title = text_blocks(decode_text(data), SectionTracker())
    return paginate(blocks, options), title, {}
