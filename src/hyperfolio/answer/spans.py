"""Typed spans in a passage: the numbers, percentages, sums of money, years, dates and names it states.

A short answer is one of these spans, chosen by the kind the question expects (`expected.py`); the
arithmetic of `arithmetic.py` takes its operands from them, with their units.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from hyperfolio.answer.expected import Kind
from hyperfolio.lexicon import NUMBER_WORDS
from hyperfolio.phrases import find_phrases

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
    r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_DATE = re.compile(
    rf"\b(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}|"
    rf"{_MONTH}\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}})\b"
)
_SCALE = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9}
_NUMBER = re.compile(
    r"(?<![\w.,/-])(?<![.,;:!?][\"\u201d\u2019])(?P<sign>[-−–]\s?)?(?P<cur>[$€£¥]|US\$|USD\s|EUR\s|GBP\s)?\s?"
    r"(?P<num>\d{1,3}(?:,\d{2})+,\d{3}(?:\.\d+)?|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<unit>%|percent\b|per cent\b|percentage points?\b|pp\b|thousand\b|million\b|mn\b|billion\b|bn\b|"
    r"trillion\b|[kmb]\b))?(?![\w/])",
    re.I,
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_WEB = re.compile(r"\b(?:https?://|www\.)[^\s,;)]+", re.I)
_PHONE = re.compile(r"(?<![\w-])\+?\(?\d[\d ().-]{5,}\d(?![\w-])")
_CODE = re.compile(r"\b(?=[A-Z0-9-]*\d)(?:[A-Z0-9]+[-/])+[A-Z0-9]+\b|\b\d{5,}\b")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.I)


@dataclass(frozen=True)
class Span:
    """A typed piece of a passage; `value` is the number it states (scaled by million/billion), if any."""

    text: str
    start: int
    end: int
    kind: Kind
    value: float | None = None
    unit: str = ""  # "%", "$", "million" ... as written


def number_spans(text: str) -> list[Span]:
    """Every number in `text`, typed by its unit: percentage, money, year, count or plain number."""
    found = []
    for m in _NUMBER.finditer(text):
        digits = m.group("num").replace(",", "")
        value = float(digits)
        if m.group("sign"):
            value = -value
        unit = (m.group("unit") or "").lower()
        currency = (m.group("cur") or "").strip()
        if unit in {"%", "percent", "per cent"} or unit.startswith("percentage point") or unit == "pp":
            kind = Kind.PERCENT
        elif currency or unit in {"million", "mn", "billion", "bn", "trillion", "thousand", "m", "b", "k"}:
            kind = Kind.MONEY if currency or unit in {"million", "billion", "bn", "mn", "trillion"} else Kind.NUMBER
            value *= 1e12 if unit == "trillion" else _SCALE.get(unit, 1.0)
        elif "." not in digits and 1900 <= value <= 2099 and "," not in m.group("num"):
            kind = Kind.YEAR
        elif "." not in digits:
            kind = Kind.COUNT
        else:
            kind = Kind.NUMBER
        start = m.start() + len(m.group(0)) - len(m.group(0).lstrip())  # the number, not the space before it
        found.append(Span(m.group(0).strip(), start, m.end(), kind, value, currency or unit))
    for m in _NUMBER_WORD.finditer(text):
        found.append(Span(m.group(0), m.start(), m.end(), Kind.COUNT, float(NUMBER_WORDS[m.group(0).lower()])))
    return sorted(found, key=lambda s: s.start)


_RANGE = re.compile(r"(?<![\w.,/-])(\d{1,3})\s*(?:through|thru|to|\u2013|\u2014|-)\s*(\d{1,3})(?![\w.,%/])")
MAX_RANGE = 200  # a numbered range longer than this is a span of values, not of items


def range_spans(text: str) -> list[Span]:
    """Numbered ranges as the count of what they number: "markets 15 through 18" are 4 markets."""
    found = []
    for m in _RANGE.finditer(text):
        first, last = int(m.group(1)), int(m.group(2))
        if 0 < last - first <= MAX_RANGE:
            found.append(Span(str(last - first + 1), m.start(), m.end(), Kind.COUNT, float(last - first + 1)))
    return found


def date_spans(text: str) -> list[Span]:
    return [Span(m.group(0), m.start(), m.end(), Kind.DATE) for m in _DATE.finditer(text)]


_TITLES = r"(?:Mr|Mrs|Ms|Dr|Prof|Sir|Smt|Shri)"
_TITLED = re.compile(
    rf"\b{_TITLES}\.?\s*(?:[A-Z]\.\s*){{0,3}}[A-Z][\w'\u2019-]+(?:\s+(?!{_TITLES}\b)[A-Z][\w'\u2019-]+){{0,2}}"
)


# A citation or cross-reference marker names nothing: "BIBREF12", "TABREF3", "INLINEFORM0" (as papers
# converted to text write them), "Fig", "Eq".
_REFERENCE = re.compile(r"(?:BIB|TAB|SEC|FIG|EQ)REF\d+|(?:INLINE|DISPLAY)FORM\d+|Fig|Eq|Sec|Ref|Tab", re.I)
_SHOUTED = re.compile(r"[A-Z]{5,}")  # a capitalised word, not an acronym: "GOVERNOR", "SECRETARY"


def _trimmed(span: Span, words: list[re.Match[str]], drop) -> Span | None:  # noqa: ANN001 - a predicate
    """The part of `span` its `words` (matches in `span.text`) cover, less the words at either edge that
    `drop` refuses; None when none is left."""
    while words and drop(words[0].group(0)):
        words = words[1:]
    while words and drop(words[-1].group(0)):
        words = words[:-1]
    if not words:
        return None
    start, end = words[0].start(), words[-1].end()
    text = span.text[start:end].strip(",.;: ")
    return Span(text, span.start + start, span.start + start + len(text), span.kind) if text else None


def _case_parts(span: Span) -> list[Span]:
    """A run of capitalised words split where the lettering changes between capitals and title case: a
    cover's "Rick Scott GOVERNOR Celeste Philip" names two people and a role, not one name ("of" left at
    a part's edge joins nothing)."""
    words = list(re.finditer(r"\S+", span.text))
    shouted = [bool(_SHOUTED.fullmatch(w.group(0).strip(",.;:"))) for w in words]
    if all(shouted) or not any(shouted):
        return [span]
    runs: list[list[re.Match[str]]] = [[words[0]]]
    for word, before, now in zip(words[1:], shouted[:-1], shouted[1:], strict=True):
        if now != before:
            runs.append([])
        runs[-1].append(word)
    parts = [_trimmed(span, run, lambda w: w[0].islower()) for run in runs]
    return [part for part in parts if part is not None]


def name_spans(text: str) -> list[Span]:
    """Names and acronyms (capitalised phrases), as the graph's offline extractor finds them; a person
    named with a title and initials ("Mr. S.V. Shanbhag") as one name."""
    titled = [Span(m.group(0), m.start(), m.end(), Kind.NAME) for m in _TITLED.finditer(text)]
    others = [
        part
        for p in find_phrases(text)
        if p.kind in {"name", "acronym"}
        for part in _case_parts(Span(p.text, p.start, p.start + len(p.text), Kind.NAME))
    ]
    inside = [s for s in others if not any(t.start <= s.start < t.end for t in titled)]
    found = sorted((kept for s in titled + inside if (kept := _without_references(s))), key=lambda s: s.start)
    return _incorporated(_joined(found, text), text)


_JOINER = re.compile(r"\s+(?:(?:of|&|for|the|de|du|van|von)\s+)?", re.I)
CORPORATE = re.compile(  # the form of company that ends a company's name
    r",?\s*(?:Inc|Incorporated|LLC|L\.L\.C|Ltd|Limited|Corp|Corporation|Company|Co|PLC|LLP|GmbH|AG|S\.A|N\.V)"
    r"\b\.?",
    re.I,
)


def _shouted(span: Span) -> bool:
    return all(_SHOUTED.fullmatch(w) or len(w) < 5 and w.isupper() for w in span.text.split())


def _joined(spans: list[Span], text: str) -> list[Span]:
    """Neighbouring names of one lettering joined across a space or a joining word: a cover in capitals
    reads "LIBERTARIAN PARTY" "OF" "GEORGIA" as words, the name is all of them (a role in capitals beside
    a name in title case stays apart: "Rick Scott" "GOVERNOR"; so does the next titled name, "Mr. ...")."""
    out: list[Span] = []
    for span in spans:
        last = out[-1] if out else None
        gap = text[last.end : span.start] if last else ""
        fits = not _TITLED.match(span.text) and _shouted(last) == _shouted(span) if last else False
        if last and gap and _JOINER.fullmatch(gap) and fits:
            out[-1] = Span(text[last.start : span.end], last.start, span.end, Kind.NAME)
        else:
            out.append(span)
    return out


def _incorporated(spans: list[Span], text: str) -> list[Span]:
    """A company's name with the form of company after it ("Acme, Inc.", "LIBERTARIAN PARTY OF GEORGIA,
    INC"): the suffix is part of the name, not a name of its own."""
    out: list[Span] = []
    for span in spans:
        if out and span.start < out[-1].end:
            continue  # the suffix taken into the name before it
        suffix = CORPORATE.match(text, span.end)
        if suffix and not CORPORATE.fullmatch(span.text):
            end = suffix.end() - (1 if text[suffix.end() - 1] == "." else 0)
            span = Span(text[span.start : end], span.start, end, Kind.NAME)
        out.append(span)
    return out


def _without_references(span: Span) -> Span | None:
    """The span less the reference markers at its edges ("PDTB BIBREF12" -> "PDTB"); None when nothing
    else is left."""
    words = list(re.finditer(r"\S+", span.text))
    return _trimmed(span, words, lambda w: bool(_REFERENCE.fullmatch(w.strip(",.;:()"))))


ASKED_FORMAT = re.compile(r"\b(YYYY-MM-DD|YYYY-MM|MM/DD/YYYY|DD/MM/YYYY)\b", re.I)
_DATE_FORMATS = ("%B %d %Y", "%b %d %Y", "%d %B %Y", "%d %b %Y", "%B %Y", "%b %Y", "%Y-%m-%d", "%m/%d/%Y", "%m/%d/%y")
_STRFTIME = {"yyyy-mm-dd": "%Y-%m-%d", "yyyy-mm": "%Y-%m", "mm/dd/yyyy": "%m/%d/%Y", "dd/mm/yyyy": "%d/%m/%Y"}


def parsed_date(text: str) -> datetime | None:
    """A date span as a date ("March 9, 2020", "9th of March 2020", "2020-03-09"), if it reads as one."""
    cleaned = re.sub(r"(?<=\d)(st|nd|rd|th)\b|\bof\b|[,.]", " ", text)
    cleaned = " ".join(cleaned.split()).replace("Sept ", "Sep ")
    for form in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, form)
        except ValueError:
            continue
    return None


def in_format(question: str, span: Span) -> str:
    """A span as the question wants it: a count in digits ("Four" -> "4"); a date in the format the
    question names ("Format your answer as YYYY-MM-DD"); anything else as written."""
    if span.kind == Kind.COUNT and span.value is not None and span.text.lower() in NUMBER_WORDS:
        return str(int(span.value))
    asked = ASKED_FORMAT.search(question)
    if span.kind == Kind.DATE and asked and (date := parsed_date(span.text)) is not None:
        return date.strftime(_STRFTIME[asked.group(1).lower()])
    return span.text


def identifier_spans(text: str, question: str = "") -> list[Span]:
    """E-mail and web addresses, phone numbers and reference codes; only the sort the question names
    when it names one ("fax", "e-mail", "website")."""
    wanted = question.lower()
    if "mail" in wanted:
        finders = [_EMAIL]
    elif any(w in wanted for w in ("website", "web ", "url")):
        finders = [_WEB]
    elif any(w in wanted for w in ("phone", "fax", "tel")):
        finders = [_PHONE]
    else:
        finders = [_CODE, _PHONE, _EMAIL, _WEB]
    found: dict[int, Span] = {}
    for finder in finders:
        for m in finder.finditer(text):
            if not any(s.start <= m.start() < s.end for s in found.values()):
                found[m.start()] = Span(m.group(0).strip(" .-"), m.start(), m.end(), Kind.IDENTIFIER)
    return sorted(found.values(), key=lambda s: s.start)


def typed_spans(text: str, kind: Kind, question: str = "") -> list[Span]:
    """The spans of `text` that can answer a question expecting `kind`."""
    if kind == Kind.IDENTIFIER:
        return identifier_spans(text, question)
    if kind == Kind.DATE:
        return date_spans(text) or [s for s in number_spans(text) if s.kind == Kind.YEAR]
    if kind == Kind.YEAR:
        return [s for s in number_spans(text) if s.kind == Kind.YEAR]
    if kind == Kind.NAME:
        return name_spans(text)
    if kind == Kind.COUNT:
        numbers = [s for s in number_spans(text) if s.kind in {Kind.COUNT, Kind.NUMBER}]
        return sorted(range_spans(text) + numbers, key=lambda s: (s.start, -s.end))  # a range before its ends
    if kind == Kind.PERCENT:
        return [s for s in number_spans(text) if s.kind == Kind.PERCENT]
    if kind == Kind.MONEY:
        spans = number_spans(text)
        return [s for s in spans if s.kind == Kind.MONEY] or [s for s in spans if s.kind in {Kind.NUMBER, Kind.COUNT}]
    if kind == Kind.NUMBER:
        return [s for s in number_spans(text) if s.kind != Kind.YEAR]
    return []
