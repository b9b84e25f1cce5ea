"""Building a document's card without a model, from its cover: `card_for(document)` at ingest (the
`OfflineCarder`), or `card_for_file(path)` straight from a file's first pages (a 500-page filing costs
six pages)."""

from __future__ import annotations

import re
from pathlib import Path

from hyperfolio.cards.card import DocumentCard
from hyperfolio.cards.cover import read_cover
from hyperfolio.cards.doctype import doc_type, is_paper
from hyperfolio.cards.organisation import defined_organisation, issuer
from hyperfolio.cards.periods import (
    Date,
    find_dates,
    find_month_years,
    fiscal_year_of_end,
    year_ended,
)
from hyperfolio.cards.sec import SecFacts, sec_facts
from hyperfolio.cards.toc import document_toc
from hyperfolio.lexicon import ORDINAL_WORDS
from hyperfolio.model import Document
from hyperfolio.parse.cover import COVER_PAGES, Cover, cover_from_document
from hyperfolio.parse.file_titles import file_title
from hyperfolio.parse.furniture import is_furniture, is_noise
from hyperfolio.parse.title import choose_title, printed_page_title

_ORDINALS = {**ORDINAL_WORDS, "q1": 1, "q2": 2, "q3": 3, "q4": 4}
_QUARTER = re.compile(
    r"\b(first|second|third|fourth)\s+(?:fiscal\s+)?quarter(?:\s+(?:of\s+)?(?:fiscal\s+)?(?:year\s+)?((?:19|20)\d{2}))?"
    r"|\b(Q[1-4])\s*[/'’\-]?\s*((?:19|20)?\d{2})\b|\b((?:19|20)\d{2})\s*(Q[1-4])\b",
    re.IGNORECASE,
)
_ARXIV_DATE = re.compile(r"arxiv:\S+\s+\[[^\]]+\]\s+(\d{1,2}\s+\w{3,9}\s+(?:19|20)\d{2})", re.IGNORECASE)
_YEAR = re.compile(r"\b((?:19|20)\d{2})\b")
_COVER_LINE_WORDS = 16
_RELEASED = re.compile(r"\b(?:for\s+release|released|published|date\s+of\s+publication|issued|dated)\b\s*:?\s*", re.I)


def _sec_title(facts: SecFacts, organisation: str) -> str:
    """A filing's title as people name it: "PepsiCo, Inc. Form 10-K for fiscal year 2022"."""
    period = ""
    if facts.quarter and facts.fiscal_year:
        period = f" for Q{facts.quarter} {facts.fiscal_year}"
    elif facts.fiscal_year:
        period = f" for fiscal year {facts.fiscal_year}"
    return f"{organisation} Form {facts.form}{period}".strip()


def _quarter(text: str) -> tuple[int, int | None] | None:
    """(quarter, year) from "second quarter of 2023", "Q3 2015", "2015Q3"; year None when unnamed."""
    match = _QUARTER.search(text)
    if not match:
        return None
    if match[1]:
        return _ORDINALS[match[1].lower()], int(match[2]) if match[2] else None
    if match[3]:
        year = match[4]
        return _ORDINALS[match[3].lower()], int(year) if len(year) == 4 else 2000 + int(year)
    return _ORDINALS[match[6].lower()], int(match[5])


def _cover_period(cover: Cover, title: str) -> tuple[int | None, int | None, str | None]:
    """(fiscal year, quarter, ISO date) of a document that is not an SEC filing."""
    first = cover.pages[0] if cover.pages else None
    skip = printed_page_title(first) if first else ""  # a browser's print date is not the document's
    # Short lines only: a cover's date or "Third Quarter 2015" stands alone; the body's dates are others'.
    whole = first.text if first else ""
    lines = [line.text for line in first.lines if len(line.text.split()) <= _COVER_LINE_WORDS] if first else []
    text = "\n".join(line for line in lines if not is_furniture(line) and (not skip or skip not in line))
    quarter = _quarter(f"{title}\n{text}")
    ended = year_ended(cover.text)
    arxiv = _ARXIV_DATE.search(whole)
    dates: list[Date] = find_dates(arxiv[1]) if arxiv else []
    released = _RELEASED.search(whole)
    dates = dates or (find_dates(whole[released.end() : released.end() + 40]) if released else []) or find_dates(text)
    date = dates[0] if dates else None
    year = fiscal_year_of_end(ended) if ended else None
    if quarter and quarter[1]:
        year = quarter[1]
    if year is None and date is not None:
        year = date.year
    if year is None:
        months = find_month_years(text)
        year = months[0].year if months else None
    if year is None and (named := _YEAR.search(title)):
        year = int(named[1])
    return year, quarter[0] if quarter else None, date.iso if date else None


def card_from_cover(cover: Cover, document: Document | None = None, kind: str = "") -> DocumentCard:
    """The card of a document from its cover (and, when given, its parsed pages for headings)."""
    fallback = ""
    if document is not None:  # the parser's title, unless it is OCR debris or furniture; else the file's name
        clean = not is_noise(document.title) and not is_furniture(document.title)
        fallback = document.title if clean else file_title(document.source)
    facts = sec_facts(cover)
    card = DocumentCard(doc_id=document.doc_id if document is not None else "")
    if facts is not None:
        card.organisation = facts.registrant or defined_organisation(cover.text)
        card.title = _sec_title(facts, card.organisation)
        card.fiscal_year, card.quarter = facts.fiscal_year, facts.quarter
        card.date = facts.period_end.iso if facts.period_end else None
        card.aliases = list(facts.symbols)
    else:
        card.title = choose_title(cover, fallback)
        card.organisation = issuer(cover, card.title, paper=is_paper(cover))
        card.fiscal_year, card.quarter, card.date = _cover_period(cover, card.title)
    card.doc_type = doc_type(cover, facts, card.title, kind or (document.kind if document is not None else ""))
    card.toc = document_toc(cover, document)
    return card


def document_cover(document: Document) -> Cover:
    """A parsed document's cover. A PDF's is read by layout from the file's first pages (`add` makes it from
    the pages parsing read: `cards.cover.pdf_cover`); other formats', and PDFs' whose file is gone, from
    their chunks."""
    cover: Cover | None = None
    if document.kind == "pdf" and Path(document.source).is_file():
        try:
            cover = read_cover(Path(document.source))
        except Exception:  # the file changed or broke since parsing: the chunks still tell
            cover = None
    return cover if cover is not None else cover_from_document(document)


def card_for(document: Document, cover: Cover | None = None) -> DocumentCard:
    """The card of a parsed document, from its cover (read already, or now: `document_cover`)."""
    return card_from_cover(cover or document_cover(document), document, document.kind)


class OfflineCarder:
    """The card from the cover by layout, without a model (`card_for`)."""

    name = "offline"

    def card(self, document: Document, cover: Cover | None = None) -> DocumentCard:
        return card_for(document, cover)


def card_for_file(path: str | Path, first: int = COVER_PAGES) -> DocumentCard:
    """The card of a PDF from its first `first` pages, without parsing the rest."""
    return card_from_cover(read_cover(Path(path), first), kind="pdf")
