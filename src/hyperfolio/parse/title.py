"""A document's title read from its cover as a person reads it: the largest type near the top of the
first page, its neighbouring lines when they continue it, and never the furniture printed around it
("About Pew Research Center", "Table of Contents", a release date, a page number, a court stamp, an
arXiv stamp). Where the cover is a picture, the title the document asks to be cited by."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hyperfolio.lexicon import JOINING_WORDS
from hyperfolio.parse.cover import COVER_PAGES, Cover, CoverLine, CoverPage, cover_from_pdf_pages
from hyperfolio.parse.file_titles import meaningful_title
from hyperfolio.parse.furniture import is_furniture, is_noise
from hyperfolio.parse.hyphens import join_line
from hyperfolio.parse.pdf.items import PageData

STANDOUT = 1.2  # a title's type is at least this much larger than the body's
_SIMILAR = 0.88  # a neighbouring line this close in size continues the title (authors are a size smaller)
_CONTINUED = 0.35  # ... or this close when a word joins them ("... CHANGE ON" / "HUMAN HEALTH")
_MAX_TITLE_LINES = 4
_MAX_TITLE_CHARS = 200
# A cover's own citation line: "Pew Research Center, May, 2018, “Trump Viewed Less Negatively ...”".
CITATION_HEAD = re.compile(
    r"^(?:recommended|suggested|preferred)\s+citation\b|^(?:please\s+)?cite\s+(?:this|as)\b", re.I
)
_QUOTED = re.compile(r"[“\"]([^”\"]{8,220})[”\"]")
# A web page printed from a browser: "6/3/2020 College Board Search Recorded Demonstrations" at the top.
_PRINT_HEADER = re.compile(r"^\d{1,2}/\d{1,2}/\d{2,4},?\s+(?:\d{1,2}:\d{2}\s*(?:[AP]M)?\s+)?(\S.{5,150})$", re.I)


def _candidates(page: CoverPage) -> list[CoverLine]:
    return [
        line
        for line in page.lines
        if line.size > 0 and not line.vertical and not is_furniture(line.text) and not is_noise(line.text)
        and len(line.text) <= _MAX_TITLE_CHARS
    ]  # fmt: skip


def _joins(upper: CoverLine, lower: CoverLine, top: float) -> bool:
    """Whether `lower` continues `upper` in one title: adjacent, and alike in size or joined by a word."""
    if lower.text.endswith(".") and len(lower.text.split()) > 5:
        return False  # a sentence opens the body, it does not continue a title
    gap = lower.top - upper.bottom
    if gap > 1.6 * max(upper.bottom - upper.top, lower.bottom - lower.top, 0.01) or gap < -0.02:
        return False
    size = min(upper.size, lower.size)
    if size >= _SIMILAR * max(upper.size, lower.size) and size >= _SIMILAR * top:
        return True
    first, last = lower.text.split()[0].lower(), upper.text.split()[-1].lower()
    open_end = upper.text.endswith("-") or upper.text.count("(") > upper.text.count(")")
    return size >= _CONTINUED * top and (first in JOINING_WORDS or last in JOINING_WORDS or open_end)


def join_lines(lines: Sequence[CoverLine]) -> str:
    """Title lines as one string; a word broken by a hyphen at a line end is mended ("AB-" "STRACTION"),
    a compound keeps its hyphen (`parse.hyphens`)."""
    text = ""
    for line in lines:
        text = join_line(text, " ".join(line.text.split()), capitals_break=True)
    return text.strip(" ,;:")


def _block(lines: list[CoverLine], anchor: int, top: float) -> list[CoverLine]:
    """The anchor line and the lines above and below it that continue it, top to bottom."""
    ordered = sorted(lines, key=lambda line: line.top)
    index = ordered.index(lines[anchor])
    start = end = index
    while start > 0 and end - start + 1 < _MAX_TITLE_LINES and _joins(ordered[start - 1], ordered[start], top):
        start -= 1
    while end + 1 < len(ordered) and end - start + 1 < _MAX_TITLE_LINES and _joins(ordered[end], ordered[end + 1], top):
        end += 1
    return ordered[start : end + 1]


def layout_title(page: CoverPage, body: float) -> str:
    """The title of a cover page by type size, or "" when nothing stands out from the body."""
    lines = _candidates(page)
    if not lines or body <= 0:
        return ""
    top = max(line.size for line in lines)
    if top < STANDOUT * body:
        return ""
    # Of the lines in the largest type, the highest: titles open covers, slogans close them.
    anchor = min((i for i, line in enumerate(lines) if line.size >= top - 0.6), key=lambda i: lines[i].top)
    return join_lines(_block(lines, anchor, top))


def cited_title(page: CoverPage) -> str:
    """The title a cover asks to be cited by, quoted on the line after "Recommended citation"."""
    for index, line in enumerate(page.lines):
        if CITATION_HEAD.match(line.text.strip()):
            following = " ".join(item.text for item in page.lines[index : index + 3])
            quoted = _QUOTED.search(following)
            if quoted:
                return " ".join(quoted[1].split()).strip(" ,.")
    return ""


def printed_page_title(page: CoverPage) -> str:
    """The page title a browser prints above a saved web page, after the print date."""
    for line in page.lines[:3]:
        match = _PRINT_HEADER.match(line.text.strip())
        if match and line.top < 0.06:
            return match[1].strip()
    return ""


_FILING = re.compile(
    r"\b(?:complaint|defen[cs]e|motion|order|opinion|brief|petition|judgment|memorandum|affidavit|"
    r"application|notice|declaration|stipulation|subpoena|summons|indictment)\b",
    re.IGNORECASE,
)
_FILING_WORDS = 10


def filing_title(page: CoverPage) -> str:
    """A court filing's title where nothing stands out by size: the caption line that names what it is
    ("Complaint For Forfeiture", "DEFENCE OF THE DEFENDANT THE TORONTO-DOMINION BANK"), never a sentence."""
    for line in page.lines:
        text = line.text.strip(" |")
        words = text.split()
        if not (2 <= len(words) <= _FILING_WORDS) or re.search(r"[.;,]\s", text) or text.endswith((".", ",", ":")):
            continue
        if _FILING.search(text) and text[0].isupper() and not is_furniture(text) and not is_noise(text):
            return text
    return ""


def cover_title(cover: Cover) -> str:
    """The title of a document from its first page (the second when the first carries no text)."""
    body = cover.body_size
    for page in cover.pages[:2]:
        title = cited_title(page) or printed_page_title(page) or layout_title(page, body) or filing_title(page)
        if title:
            return title
        if page.lines:
            return ""  # the first page has text, just no title: a later page's heading is not the title
    return ""


def choose_title(cover: Cover, fallback: str = "") -> str:
    """The title of a document: its cover's; the metadata's when it says the same and more ("User
    Manual" inside "4K UHD Display User Manual"), or when the cover has none; else the fallback. The one
    title rule: the PDF reader names a document by it, and its card is made by it."""
    layout = cover_title(cover)
    meta = meaningful_title(cover.metadata_title) or ""
    if layout and meta and set(layout.lower().split()) < set(meta.lower().split()):
        return meta
    return layout or meta or fallback


def pdf_title(pages: Sequence[PageData], metadata_title: str = "") -> str:
    """The title of a PDF from its reader's pages (pass 1) and its metadata title, by `choose_title`."""
    cover = cover_from_pdf_pages([page for page in pages if page.number <= COVER_PAGES], len(pages))
    cover.metadata_title = metadata_title
    return choose_title(cover)
