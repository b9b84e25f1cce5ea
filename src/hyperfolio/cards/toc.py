"""What a document's contents say it covers: the printed table of contents when the first pages hold
one, else the PDF outline, else the section headings the parser found. Entries, not page numbers:
the card indexes what the document is about."""

from __future__ import annotations

import re

from hyperfolio.model import Document
from hyperfolio.parse.cover import Cover

MAX_ENTRIES = 40
_MIN_ENTRIES = 5  # fewer "entries" than this and the page is a running "Table of Contents" link
_HEADER = re.compile(r"^(?:.*\s)?(?:table\s+of\s+)?contents\b|^index$|^item\s+page$", re.IGNORECASE)
_NUMBER_SHARE = 0.05  # of the words after the header: page numbers are dense in contents, rare in prose
_PAGE_NUMBER = re.compile(r"^(?:\d{1,3}|[ivxl]{1,5})$", re.IGNORECASE)
_LEADER = re.compile(r"(?:\s*[.·…_]){3,}\s*")
_OPENS_ENTRY = re.compile(r"^(?:item|part|chapter|section|note|appendix)$", re.IGNORECASE)
_NOT_ENTRY = re.compile(r"^(?:page(?:\s+no\.?)?|pages?|contents|table\s+of\s+contents|form\s+10-[kq].*)$", re.I)
_NEW_ENTRY = re.compile(r"(?=\b(?:ITEM|Item)\s+\d+[A-Z]?\b\.?)|(?=\bPART\s+[IVX]+\b)")


def _entries(text: str) -> tuple[list[str], int]:
    """Entries of printed contents (page numbers and dot leaders end an entry; "Item 7." starts one)
    and how many page numbers ended one: prose under a running "Table of Contents" link has few."""
    words = _LEADER.sub(" 0 ", text).split()
    pieces: list[str] = []
    current: list[str] = []
    numbers = 0
    for word in words:
        if _PAGE_NUMBER.match(word.strip(".,")) and not (current and _OPENS_ENTRY.match(current[-1])):
            numbers += 1
            if current:
                pieces.append(" ".join(current))
            current = []
        else:
            current.append(word)
    if current:
        pieces.append(" ".join(current))
    out: list[str] = []
    for piece in pieces:
        for part in _NEW_ENTRY.split(piece):
            entry = part.strip(" .,;:–—-")
            readable = sum(ch.isalpha() for ch in entry) >= 3 and len(entry) <= 120
            if readable and not _NOT_ENTRY.match(entry) and entry not in out:
                out.append(entry)
    return out, numbers


def printed_toc(cover: Cover) -> list[str]:
    """The entries of a printed table of contents among the first pages, or [] when none is printed."""
    for page in cover.pages:
        headers = [i for i, line in enumerate(page.lines) if line.top < 0.35 and _HEADER.match(line.text.strip())]
        if not headers:
            continue
        text = " ".join(line.text for line in page.lines[headers[-1] + 1 :])
        entries, numbers = _entries(text)
        if len(entries) >= _MIN_ENTRIES and numbers >= _MIN_ENTRIES and numbers >= _NUMBER_SHARE * len(text.split()):
            return entries[:MAX_ENTRIES]
    return []


def outline_toc(cover: Cover) -> list[str]:
    """The PDF outline's top levels (two when the first alone says little)."""
    top = [name for level, name in cover.outline if level == 1]
    depth = 1 if len(top) >= _MIN_ENTRIES else 2
    out: list[str] = []
    for level, name in cover.outline:
        if level <= depth and name not in out:
            out.append(name)
    return out[:MAX_ENTRIES]


def section_toc(document: Document) -> list[str]:
    """The headings the parser placed the chunks under, in order of first appearance."""
    out: list[str] = []
    for chunk in document.chunks:
        for heading in chunk.section_path[:2]:
            if heading not in out:
                out.append(heading)
        if len(out) >= MAX_ENTRIES:
            break
    return out[:MAX_ENTRIES]


def document_toc(cover: Cover, document: Document | None = None) -> list[str]:
    """Printed contents, else the outline, else the parsed section headings."""
    return printed_toc(cover) or outline_toc(cover) or (section_toc(document) if document is not None else [])
