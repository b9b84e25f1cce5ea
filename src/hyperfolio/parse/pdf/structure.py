"""Pass 2's view of the whole document: running headers and footers, the body type size, headings
(from the PDF outline when it has one, else from type size and weight)."""

from __future__ import annotations

import re
from collections import Counter

import pymupdf

from hyperfolio.lexicon import JOINING_WORDS
from hyperfolio.parse.furniture import is_furniture, is_noise
from hyperfolio.parse.pdf.items import CAPTION_RE, Item, PageData
from hyperfolio.parse.tree import clean_heading, heading_key, level_for, rank_levels

_CAMEL = re.compile(r"[a-z][A-Z]|[a-z]-[A-Z]")  # "iPhone", "e-Commerce": lower-case openings of names
NUMBERED_HEADING = re.compile(  # "3.1 ", "A.2 ", "(b) ", "iii) ", "IV. ": a heading by its number
    r"\(?(?:\d+(?:\.\d+)*[.):]?|[A-Za-z](?:\.\d+)+|[A-Za-z][.)]|[ivxlcIVXLC]+[.)])\s"
)
_BULLETS = "●•▪■◦‣–—-*>"
_AFFILIATED = re.compile(r"[A-Za-z][0-9∗*†‡][0-9,∗*†‡]*(?=\s|$)")  # an author's name with its affiliation marks
_PAGE_REFERENCE = re.compile(r"[A-Za-z)][\s.…]+(?:\d{1,4}|[ivxlc]{1,6})$")  # a contents line's page number
_MIN_WIDTH_PER_CHAR = 0.15  # of the type size: real text runs 0.4-0.6 em a character, condensed type 0.3


def body_size(pages: list[PageData], include_ocr: bool = False) -> float:
    """The most common text size by characters: the yardstick for headings."""
    weights: Counter[float] = Counter()
    for page in pages:
        if page.ocr and not include_ocr:
            continue
        for item in page.items:
            if item.kind == "text":
                weights[item.size] += len(item.text)
    if not weights:
        for page in pages:
            for item in page.items:
                if item.kind == "text":
                    weights[item.size] += len(item.text)
    return weights.most_common(1)[0][0] if weights else 10.0


def mark_furniture(pages: list[PageData]) -> None:
    """Drop running headers, footers and page numbers: text repeated in the margins of many pages."""
    keys: Counter[str] = Counter()
    margin_items: list[tuple[Item, str]] = []
    for page in pages:
        seen = set()
        for item in page.items:
            if item.kind != "text" or len(item.text) > 120:
                continue
            in_margin = item.bbox[3] < 0.08 * page.height or item.bbox[1] > 0.92 * page.height
            if not in_margin:
                continue
            key = re.sub(r"\d+", "#", heading_key(item.text))
            margin_items.append((item, key))
            if re.fullmatch(r"(page)?#?(of#)?|[ivxlc]+", key):
                item.role = "furniture"
            elif key not in seen:
                seen.add(key)
                keys[key] += 1
    threshold = max(3, int(0.3 * len(pages)))
    for item, key in margin_items:
        if keys[key] >= threshold:
            item.role = "furniture"


def _heading_candidate(item: Item, body: float, factor: float = 1.15, max_words: int = 18) -> float | None:
    """The size rank key of a heading-looking text segment, else None."""
    if item.kind != "text" or item.role != "text" or item.math or item.vertical:
        return None
    text = item.text.strip()
    words = text.split()
    if not words or len(words) > max_words or len(text) > 150 or item.n_lines > 3:
        return None
    if not _fits_its_size(item, text) or not reads_as_heading(text):
        return None
    letters = sum(ch.isalpha() for ch in text)
    if letters < 2 or letters < 0.5 * len(text.replace(" ", "")) or CAPTION_RE.match(text):
        return None
    if item.size >= body * factor and item.size >= body + 1.0:
        return item.size
    if item.bold and item.size >= body - 0.6 and len(words) <= 12 and not text.endswith((".", ",", ";")):
        return body + 0.05  # bold at body size: the lowest heading level
    return None


def reads_as_heading(text: str) -> bool:
    """Whether a line set large or bold reads as a heading, not a sentence's broken line ("believe that all
    pens are made in Hamburg, Germany. The"), a fragment of a graphic's lettering ("s express", "a ome"),
    an author line ("Liangming Pan1,2 Xiaobao Wu3"), the page's furniture or OCR debris."""
    words = text.rstrip(" :").split()
    if not words:
        return False
    first = text[0]
    if first.islower() and not _CAMEL.match(text) and not NUMBERED_HEADING.match(text) or first in _BULLETS:
        return False
    last = words[-1].lower()
    if last in JOINING_WORDS or text.endswith((",", ";", "-")) or (text.count(",") >= 2 and len(text.split()) > 8):
        return False
    if len(_AFFILIATED.findall(text)) >= 2:
        return False
    return not is_furniture(text) and not is_noise(text)


def _fits_its_size(item: Item, text: str) -> bool:
    """Whether a segment's box is as wide as its type size says: glyphs drawn tiny under a large declared
    size (a graphic's lettering, "In dependents' views of" at 47 pt in a 13 pt box) make a size no heading
    can be ranked by."""
    per_line = len(text) / max(item.n_lines, 1)
    return item.bbox[2] - item.bbox[0] >= _MIN_WIDTH_PER_CHAR * per_line * item.size


def _without_contents_entries(items: list[Item]) -> list[Item]:
    """A page's items less its contents entries: where three or more lines end in a page number ("Chapter
    2: Survey Results 23", "Executive Summary i"), they list the sections, they do not open them."""
    entries = [item for item in items if item.kind == "text" and _PAGE_REFERENCE.search(item.text.strip())]
    if len(entries) < 3:
        return items
    listed = {id(item) for item in entries}
    return [item for item in items if id(item) not in listed]


def assign_font_headings(pages: list[PageData], body: float) -> None:
    """Headings from type size and weight on born-digital pages.

    OCR'd pages only get headings when they are most of the document (slide decks,
    scans), ranked against their own body size: OCR size estimates are too coarse to
    compare with real font sizes.
    """
    digital = [p for p in pages if not p.ocr]
    scanned = [p for p in pages if p.ocr]
    _headings_from_sizes(digital, body)
    if len(scanned) > len(digital):
        _headings_from_sizes(scanned, body_size(scanned, include_ocr=True), factor=1.3, max_words=12)


def _headings_from_sizes(pages: list[PageData], body: float, factor: float = 1.15, max_words: int = 18) -> None:
    candidates = [
        (item, key)
        for page in pages
        for item in _without_contents_entries(page.items)
        if (key := _heading_candidate(item, body, factor, max_words))
    ]
    if not candidates:
        return
    total_text = sum(1 for page in pages for item in page.items if item.kind == "text")
    # If "headings" are most of the text, the styling is decorative (slides, posters): keep the largest only.
    if len(candidates) > 0.6 * total_text and total_text > 10:
        top = max(key for _, key in candidates)
        candidates = [(i, k) for i, k in candidates if k >= top - 0.6]
    levels = rank_levels([k for _, k in candidates], max_levels=4)
    for item, key in candidates:
        item.role = "heading"
        item.level = level_for(key, levels)


def toc_events(doc: pymupdf.Document, pages: list[PageData]) -> dict[int, list[tuple[int, int, str]]] | None:
    """Outline entries placed at the text segment they name: {page: [(item index, level, title)]}."""
    try:
        toc = doc.get_toc(simple=True)
    except Exception:
        return None
    entries = [(lvl, clean_heading(title), pno) for lvl, title, pno in toc if 1 <= pno <= len(pages) and title.strip()]
    if len(entries) < 3:
        return None
    events: dict[int, list[tuple[int, int, str]]] = {}
    cursor: dict[int, int] = {}
    for level, title, pno in entries:
        page = pages[pno - 1]
        key = heading_key(title)
        start = cursor.get(pno, 0)
        found = None
        for idx in range(start, len(page.items)):
            item = page.items[idx]
            if item.kind != "text" or len(item.text) > 300:
                continue
            ikey = heading_key(item.text)
            if not ikey:
                continue
            if ikey == key or (len(ikey) >= 4 and key.startswith(ikey)) or (len(key) >= 6 and ikey.startswith(key)):
                found = idx
                break
        index = found if found is not None else start
        if found is not None:
            page.items[found].role = "heading"
            cursor[pno] = found + 1
        events.setdefault(pno, []).append((index, level, title))
    return events
