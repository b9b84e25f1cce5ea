"""SEC filings read from their cover page: the form ("FORM 10-K"), the period ("For the fiscal year
ended December 31, 2022", "For the quarterly period ended June 30, 2023") and the registrant (the
line above "(Exact name of registrant as specified in its charter)"). Every filing prints these the
same way, which is what makes them reliable without a model."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hyperfolio.cards.cues import cue
from hyperfolio.cards.periods import Date, calendar_quarter, find_dates, fiscal_year_of_end, year_ended
from hyperfolio.parse.cover import Cover, CoverPage

_FORM = cue(r"\bform\s*(10-?K|10-?Q|8-?K|20-?F|40-?F)(?:/A)?\b")
_PURPOSE = {
    form: cue(rf"\b{kind}\s+report\s+pursuant\s+to\s+section")
    for form, kind in (("10-K", "annual"), ("10-Q", "quarterly"), ("8-K", "current"))
}
_COMMISSION = cue(r"securities\s+and\s+exchange\s+commission")
_EXACT_NAME = cue(r"\(\s*exact\s+name\s+of\s+(?:the\s+)?registrant")
_QUARTER_ENDED = cue(r"quarterly\s+period\s+ended")
# Cover lines that sit between the registrant's name and its caption but are not the name.
_NOT_A_NAME = cue(
    r"commission\s+file|file\s+number|transition\s+period|pursuant\s+to|^\(?mark\s+one\)?$|^[\W\d_]*$|"
    r"exact\s+name|^or$|securities\s+and\s+exchange|washington|\bform\s+10"
)
# Exchange-listed symbols on the cover: "Common Stock JPM New York Stock Exchange".
_SYMBOL = re.compile(r"\b([A-Z]{2,5})\s+(?:The\s+)?(?:New\s+York\s+Stock\s+Exchange|NYSE|Nasdaq|NASDAQ)")
_SYMBOL_WORDS = {"NYSE", "LLC", "INC", "PAR", "USD", "THE", "DUE", "EUR", "ETN", "ETNS", "NOTES", "ARCA"}


@dataclass
class SecFacts:
    form: str  # "10-K", "10-Q", "8-K", "20-F", "40-F"
    registrant: str = ""
    period_end: Date | None = None
    fiscal_year: int | None = None
    quarter: int | None = None
    symbols: list[str] = field(default_factory=list)


def _form(text: str) -> str | None:
    """The form the filing is, from "FORM 10-K" or, failing that, the cover's "ANNUAL REPORT PURSUANT"."""
    match = _FORM.search(text)
    if match:
        code = match[1].upper().replace("-", "")
        return f"{code[:-1]}-{code[-1]}"
    for form, pattern in _PURPOSE.items():
        if pattern.search(text):
            return form
    return None


def _cover_page(cover: Cover) -> CoverPage | None:
    """The page that is the SEC cover: it names the Commission and the registrant's charter name."""
    for page in cover.pages:
        if _COMMISSION.search(page.text) and _EXACT_NAME.search(page.text):
            return page
    for page in cover.pages:
        if _COMMISSION.search(page.text) and _form(page.text):
            return page
    return None


def registrant_name(page: CoverPage) -> str:
    """The name printed above "(Exact name of registrant ...)", or before it on the same line."""
    for index, line in enumerate(page.lines):
        match = _EXACT_NAME.search(line.text)
        if not match:
            continue
        before = line.text[: match.start()].strip(" ,;:")
        if before and not _NOT_A_NAME.search(before):
            return before
        for previous in reversed(page.lines[max(0, index - 3) : index]):
            text = previous.text.strip(" ,;:")
            if sum(ch.isalpha() for ch in text) >= 2 and not _NOT_A_NAME.search(text) and len(text) <= 90:
                return text
        return ""
    return ""


def _symbols(text: str) -> list[str]:
    out: list[str] = []
    for match in _SYMBOL.finditer(text):
        symbol = match[1]
        if symbol not in _SYMBOL_WORDS and symbol not in out:
            out.append(symbol)
    return out[:3]


def _period(form: str, text: str, facts: SecFacts) -> None:
    """Fill the period: a 10-K's fiscal year from its year end, a 10-Q's quarter from its quarter end."""
    if form == "10-Q":
        for match in _QUARTER_ENDED.finditer(text):
            dates = find_dates(text[match.end() : match.end() + 90])
            if dates:
                facts.period_end = dates[0]
                facts.quarter = calendar_quarter(dates[0])
                facts.fiscal_year = dates[0].year
                return
    end = year_ended(text)
    if end is not None:
        facts.period_end = end
        facts.fiscal_year = fiscal_year_of_end(end)


def sec_facts(cover: Cover) -> SecFacts | None:
    """The filing's form, period, registrant and listed symbols, or None when no page is an SEC cover."""
    page = _cover_page(cover)
    if page is None:
        return None
    text = " ".join(page.text.replace("\xa0", " ").split())
    form = _form(text) or _form(cover.text)
    if form is None:
        return None
    facts = SecFacts(form=form, registrant=registrant_name(page), symbols=_symbols(text))
    _period(form, text, facts)
    return facts
