"""Pass 2's view of the whole document: running headers and footers, the body type size, headings
(from the PDF outline when it has one, else from type size and weight) and a title from the cover."""

from __future__ import annotations

import re
from collections import Counter

import pymupdf

from hyperfolio.parse.pdf.items import CAPTION_RE, Item, PageData
from hyperfolio.parse.tree import clean_heading, heading_key, level_for, rank_levels


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


def _heading_candidate(item: Item, body: float, factor: float = 1.15) -> float | None:
    """The size rank key of a heading-looking text segment, else None."""
    if item.kind != "text" or item.role != "text" or item.math or item.vertical:
        return None
    text = item.text.strip()
    words = text.split()
    if not words or len(words) > 18 or len(text) > 150 or item.n_lines > 3:
        return None
    letters = sum(ch.isalpha() for ch in text)
    if letters < 2 or letters < 0.5 * len(text.replace(" ", "")) or CAPTION_RE.match(text):
        return None
    if item.size >= body * factor and item.size >= body + 1.0:
        return item.size
    if item.bold and item.size >= body - 0.6 and len(words) <= 12 and not text.endswith((".", ",", ";")):
        return body + 0.05  # bold at body size: the lowest heading level
    return None


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
        _headings_from_sizes(scanned, body_size(scanned, include_ocr=True), factor=1.3)


def _headings_from_sizes(pages: list[PageData], body: float, factor: float = 1.15) -> None:
    candidates = [
        (item, key) for page in pages for item in page.items if (key := _heading_candidate(item, body, factor))
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


def title_from_first_page(pages: list[PageData], body: float) -> str | None:
    """The largest type on the first born-digital page, when it stands out from the body text."""
    for page in pages[:2]:
        texts = [i for i in page.items if i.kind == "text" and i.role != "furniture" and 3 <= len(i.text) <= 200]
        texts = [i for i in texts if sum(ch.isalpha() for ch in i.text) >= 3 and not i.vertical]
        if page.ocr:  # OCR sizes are rough and short fragments are usually noise
            texts = [
                i for i in texts if len(i.text) >= 8 and len(i.text.split()) >= 2 and i.bbox[1] < 0.5 * page.height
            ]
            body = body_size(pages, include_ocr=True)
        if not texts:
            continue
        top = max(i.size for i in texts)
        if top < body * 1.2:
            continue
        parts = [i.text for i in texts if abs(i.size - top) < 0.6][:3]
        return clean_heading(" ".join(parts)) or None
    return None
