"""A page's text: spans joined into style-homogeneous segments (or OCR'd), display math spotted,
and everything put in reading order, column by column."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import Any

import pymupdf

from hyperfolio.config import ParseOptions
from hyperfolio.parse.hyphens import join_line
from hyperfolio.parse.ocr import ocr_image, ocr_textpage, tesseract_available
from hyperfolio.parse.pdf.items import TEXT_FLAGS, Item

_MATH_FONT = re.compile(r"CMMI|CMSY|CMEX|MSBM|MSAM|Math|Symbol|STIX|CambriaMath|rsfs|esint", re.IGNORECASE)
_MATH_CHARS = set("=+−-×÷±∓∑∏∫∮√∞∂∇≤≥≠≈≡∝∈∉⊂⊆⊃∪∩∀∃→←↔⇒⇔αβγδεζηθικλμνξπρστυφχψωΓΔΘΛΞΠΣΦΨΩ^_()[]{}|/")
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)

# One line of a block: (line, text, size, bold, characters in math fonts, characters)
_Line = tuple[dict[str, Any], str, float, bool, int, int]


def is_bold(span: dict[str, Any]) -> bool:
    return bool(span["flags"] & 16) or bool(_BOLD_FONT.search(span.get("font", "")))


def _line_text(line: dict[str, Any]) -> str:
    """Join spans, adding the spaces OCR and some generators leave implicit as gaps."""
    out = ""
    prev: dict[str, Any] | None = None
    for span in line["spans"]:
        text = span["text"]
        if prev is not None and out and not out.endswith(" ") and not text.startswith(" "):
            gap = span["bbox"][0] - prev["bbox"][2]
            if gap > 0.15 * max(1.0, span["size"]):
                out += " "
        out += text
        prev = span
    return out


_WHOLE_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")


def _join_lines(lines: list[str], written: frozenset[str] = frozenset()) -> str:
    """Lines of one paragraph into one string, a line-end hyphen kept or undone by `parse.hyphens`
    ("informa-|tion" joins, "four-in-|ten", "well-|known", "Franco-|German" keep theirs). `written`: the
    page's words as it spells them."""
    out = ""
    for line in lines:
        line = line.strip()
        if line:
            out = join_line(out, line, written)
    return out


def _line_style(line: dict[str, Any], ocr: bool) -> _Line | None:
    """A line's text, dominant size and weight; None for a line of blank spans."""
    spans = [s for s in line.get("spans", []) if s["text"].strip()]
    if not spans:
        return None
    text = _line_text({"spans": spans})
    weights = [len(s["text"].strip()) for s in spans]
    total = sum(weights) or 1
    if ocr:
        size = float(statistics.median(s["size"] for s in spans))
    else:
        by_size: Counter[float] = Counter()
        for s, w in zip(spans, weights, strict=True):
            by_size[round(s["size"] * 2) / 2] += w
        size = by_size.most_common(1)[0][0]
    bold_chars = sum(w for s, w in zip(spans, weights, strict=True) if is_bold(s))
    math_chars = sum(w for s, w in zip(spans, weights, strict=True) if _MATH_FONT.search(s.get("font", "")))
    return (line, text, size, bold_chars >= 0.8 * total, math_chars, total)


def _style_groups(block: dict[str, Any], ocr: bool) -> list[list[_Line]]:
    """A block's lines in runs of one style (OCR sizes are too rough to split on: one run)."""
    groups: list[list[_Line]] = []
    for line in block.get("lines", []):
        entry = _line_style(line, ocr)
        if entry is None:
            continue
        style = (entry[2] if not ocr else 0.0, entry[3] if not ocr else False)
        if groups and (ocr or (round(groups[-1][-1][2] * 2) / 2, groups[-1][-1][3]) == style):
            groups[-1].append(entry)
        else:
            groups.append([entry])
    return groups


def _segment(group: list[_Line], ocr: bool, written: frozenset[str] = frozenset()) -> Item | None:
    """One run of lines as a text item; None when it holds no text."""
    text = _join_lines([g[1] for g in group], written)
    if not text.strip():
        return None
    x0 = min(g[0]["bbox"][0] for g in group)
    y0 = min(g[0]["bbox"][1] for g in group)
    x1 = max(g[0]["bbox"][2] for g in group)
    y1 = max(g[0]["bbox"][3] for g in group)
    total = sum(g[5] for g in group) or 1
    sizes = [g[2] for g in group]
    size = float(statistics.median(sizes)) if ocr else max(set(sizes), key=sizes.count)
    return Item(
        kind="text",
        bbox=(x0, y0, x1, y1),
        text=text,
        size=round(size * 2) / 2 if ocr else size,
        bold=all(g[3] for g in group),
        n_lines=len(group),
        math=not ocr and _looks_like_formula(text, sum(g[4] for g in group) / total),
        vertical=any(abs(g[0].get("dir", (1, 0))[1]) > 0.1 for g in group),
    )


def _page_spellings(text_dict: dict[str, Any]) -> frozenset[str]:
    """The words a page writes whole within its lines, lower-cased ("long-term", "cooperation"): how it
    spells a word decides how a line-break hyphen in that word is read. Empty when no line breaks on one."""
    texts = [_line_text(line) for block in text_dict.get("blocks", []) for line in block.get("lines", [])]
    if not any(text.rstrip().endswith("-") for text in texts):
        return frozenset()
    words: set[str] = set()
    for text in texts:
        text = text.rstrip()
        words.update(w.lower() for w in _WHOLE_WORD.findall(text[:-1] if text.endswith("-") else text))
    return frozenset(words)


def segments(text_dict: dict[str, Any], ocr: bool) -> list[Item]:
    """Text blocks split where the line style changes, so a heading glued to its paragraph separates."""
    items: list[Item] = []
    written = _page_spellings(text_dict)
    for block in text_dict.get("blocks", []):
        if block.get("type") != 0:
            continue
        for group in _style_groups(block, ocr):
            item = _segment(group, ocr, written)
            if item is not None:
                items.append(item)
    return items


def _looks_like_formula(text: str, math_font_share: float) -> bool:
    """Cheap display-math test: math fonts or symbol density, and little running prose."""
    stripped = text.replace(" ", "")
    if len(stripped) < 3 or len(text) > 600:
        return False
    words = re.findall(r"[A-Za-z]{4,}", text)
    if len(words) > 8:
        return False
    symbols = sum(ch in _MATH_CHARS for ch in stripped) / len(stripped)
    has_relation = any(ch in text for ch in "=≤≥≈∝∈→⇒")
    return (math_font_share >= 0.5 and has_relation) or (symbols >= 0.25 and has_relation)


def ocr_page(page: pymupdf.Page, options: ParseOptions) -> list[Item]:
    """OCR a page without a text layer, keeping layout when MuPDF's Tesseract is usable."""
    if not tesseract_available():
        return []
    textpage = ocr_textpage(page, options.ocr_dpi, options.ocr_language)
    if textpage is not None:
        return segments(page.get_text("dict", textpage=textpage, flags=TEXT_FLAGS, sort=True), ocr=True)
    png = page.get_pixmap(dpi=options.ocr_dpi, alpha=False).tobytes("png")
    text = ocr_image(png, options.ocr_language)
    rect = page.rect
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    return [
        Item(kind="text", bbox=(rect.x0, rect.y0, rect.x1, rect.y1), text=" ".join(p.split()), size=0.0)
        for p in paragraphs
    ]


def reading_order(items: list[Item], width: float, height: float) -> list[Item]:
    """Top-to-bottom, and column by column where the page has a two-column body.

    Wide items (titles, full-width figures) cut the page into bands; inside a band the
    left column is read before the right one.
    """
    mid = width / 2
    narrow = [
        i for i in items if (i.bbox[2] - i.bbox[0]) < 0.55 * width and not (i.bbox[0] < mid - 8 < mid + 8 < i.bbox[2])
    ]
    left_h = sum(i.bbox[3] - i.bbox[1] for i in narrow if (i.bbox[0] + i.bbox[2]) / 2 < mid)
    right_h = sum(i.bbox[3] - i.bbox[1] for i in narrow if (i.bbox[0] + i.bbox[2]) / 2 >= mid)
    by_row = sorted(items, key=lambda i: (round(i.bbox[1] / 4), i.bbox[0]))
    if left_h < 0.15 * height or right_h < 0.15 * height:
        return by_row
    narrow_ids = {id(i) for i in narrow}
    out: list[Item] = []
    band: list[Item] = []
    for item in sorted(items, key=lambda i: (i.bbox[1], i.bbox[0])):
        if id(item) in narrow_ids:
            band.append(item)
            continue
        out.extend(sorted(band, key=lambda i: ((i.bbox[0] + i.bbox[2]) / 2 >= mid, i.bbox[1])))
        band = []
        out.append(item)
    out.extend(sorted(band, key=lambda i: ((i.bbox[0] + i.bbox[2]) / 2 >= mid, i.bbox[1])))
    return out
