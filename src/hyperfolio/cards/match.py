"""A question against a collection's cards: which documents it names by organisation, period and
document type. Each card gets features in [0, 1] for a learned ranker (`CardMatch`), and
`named_entities` groups the matched documents by what was named, for questions that compare
several organisations or periods."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hyperfolio.cards.card import DocumentCard
from hyperfolio.cards.names import DISTINCT, NameIndex, core, name_score
from hyperfolio.lexicon import ORDINAL_WORDS

_Y = r"((?:19|20)\d{2}|'?\d{2})"
_FY = re.compile(r"\bFY\s*'?((?:19|20)?\d{2})\b|\bfiscal\s+(?:year\s+)?((?:19|20)\d{2})\b", re.IGNORECASE)
_QUARTERS = [
    re.compile(rf"\bQ([1-4])(?:\s*(?:of\s+)?(?:FY|fiscal(?:\s+year)?)?\s*{_Y})?(?![\w%])", re.IGNORECASE),
    re.compile(r"\b((?:19|20)\d{2})\s*Q([1-4])\b", re.IGNORECASE),
    re.compile(r"\b([1-4])Q\s*'?((?:19|20)?\d{2})\b", re.IGNORECASE),
    re.compile(
        r"\b(first|second|third|fourth)\s+(?:fiscal\s+)?quarter(?:\s+(?:of\s+)?(?:fiscal\s+)?(?:year\s+)?((?:19|20)\d{2}))?",
        re.IGNORECASE,
    ),
]
_YEAR = re.compile(r"(?<![\w$.,])((?:19|20)\d{2})(?![\w%])")
_TYPES: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"\b10-?K\b|\bannual\s+(?:reports?|filings?)\b", re.I), ("10-K", "annual report")),
    (re.compile(r"\b10-?Q\b|\bquarterly\s+(?:reports?|filings?)\b", re.I), ("10-Q",)),
    (re.compile(r"\b8-?K\b|\bcurrent\s+report\b", re.I), ("8-K",)),
    (re.compile(r"\b(?:earnings|press)\s+release\b|\bearnings\s+call\b", re.I), ("earnings release",)),
    (re.compile(r"\b(?:paper|article|preprint)\b", re.I), ("paper",)),
    (re.compile(r"\b(?:slides?|slide\s+deck|deck|presentation)\b", re.I), ("slide deck",)),
    (re.compile(r"\b(?:manual|user\s+guide|handbook|guidebook)\b", re.I), ("manual",)),
    (re.compile(r"\bbrochure\b", re.I), ("brochure",)),
    (re.compile(r"(?<!quarterly )(?<!annual )(?<!current )\breports?\b", re.I), ("report", "annual report")),
]
ORG_NAMED = DISTINCT  # an organisation score this high counts as the question naming it


@dataclass(frozen=True)
class QuestionCues:
    """What a question names: fiscal years (marked "FY"/"fiscal"/with a quarter), bare years,
    quarters as (quarter, year or None), and document types."""

    fiscal_years: tuple[int, ...] = ()
    years: tuple[int, ...] = ()
    quarters: tuple[tuple[int, int | None], ...] = ()
    types: frozenset[str] = frozenset()

    @property
    def target_years(self) -> tuple[int, ...]:
        """Marked years when any, else bare years: "As of FY2021 ... in 2024" is about 2021."""
        return self.fiscal_years or self.years


def _year(text: str | None) -> int | None:
    if not text:
        return None
    digits = text.lstrip("'")
    return int(digits) if len(digits) == 4 else 2000 + int(digits)


def _quarters(question: str) -> list[tuple[int, int | None]]:
    found: list[tuple[int, int | None]] = []
    for number, pattern in enumerate(_QUARTERS):
        for m in pattern.finditer(question):
            if number == 0:
                found.append((int(m[1]), _year(m[2])))
            elif number == 1:
                found.append((int(m[2]), int(m[1])))
            elif number == 2:
                found.append((int(m[1]), _year(m[2])))
            else:
                found.append((ORDINAL_WORDS[m[1].lower()], _year(m[2])))
    dated = {q for q, y in found if y is not None}
    return list(dict.fromkeys((q, y) for q, y in found if y is not None or q not in dated))


def question_cues(question: str) -> QuestionCues:
    """The periods and document types a question names."""
    quarters = _quarters(question)
    marked = [_year(m[1] or m[2]) for m in _FY.finditer(question)] + [y for _, y in quarters if y]
    fiscal = tuple(dict.fromkeys(y for y in marked if y))
    bare = tuple(dict.fromkeys(int(m[1]) for m in _YEAR.finditer(question)))
    lone = [q for q, y in quarters if y is None]
    if lone and len(fiscal + bare) == 1:  # "Q2 of FY2022" and "2022 ... second quarter" name one quarter
        year: int | None = (fiscal + bare)[0]
        quarters = [(q, y) for q, y in quarters if y] + [(q, year) for q in lone]
    types = frozenset(t for pattern, named in _TYPES if pattern.search(question) for t in named)
    return QuestionCues(fiscal, bare, tuple(dict.fromkeys(quarters)), types)


def period_score(card: DocumentCard, cues: QuestionCues) -> float:
    """1: the card's period is the one asked about; less for a period the card also covers (an annual
    report for a quarter asked, an earlier year the question also names, the next year's filing)."""
    if card.fiscal_year is None:
        return 0.0
    dated = [(q, y) for q, y in cues.quarters if y is not None]
    if dated:
        best = 0.0
        for quarter, year in dated:
            if card.fiscal_year == year:
                best = max(best, 1.0 if card.quarter == quarter else 0.6 if card.quarter is None else 0.3)
        return best
    years = cues.target_years
    if not years:
        return 0.0
    if card.fiscal_year == max(years):
        return 1.0 if card.quarter is None or not cues.quarters else 0.8
    if card.fiscal_year in years:
        return 0.7
    return 0.3 if card.fiscal_year - 1 == max(years) and card.quarter is None else 0.0


@dataclass(frozen=True)
class CardMatch:
    """One card's features for a question, in [0, 1]; the `named` flags say whether the question named
    an organisation / period / type at all (0 then means "not asked", not "wrong")."""

    index: int  # the card's position in the list given
    doc_id: str
    org_match: float
    period_match: float
    type_match: float
    org_named: bool = False
    period_named: bool = False
    type_named: bool = False

    @property
    def score(self) -> float:
        """A default ordering for routing until a learned ranker weighs the features."""
        return 2.0 * self.org_match + self.period_match + 0.5 * self.type_match


def match_cards(question: str, cards: Sequence[DocumentCard]) -> list[CardMatch]:
    """Every card's features for `question`, in the order of `cards`."""
    index = NameIndex.of([c.organisation for c in cards if c.organisation])
    cues = question_cues(question)
    orgs = [name_score(question, c.organisation, index, c.aliases) if c.organisation else 0.0 for c in cards]
    org_named = any(score >= ORG_NAMED for score in orgs)
    period_named = bool(cues.target_years or cues.quarters)
    return [
        CardMatch(
            index=i,
            doc_id=card.doc_id,
            org_match=orgs[i],
            period_match=period_score(card, cues),
            type_match=1.0 if card.doc_type in cues.types else 0.0,
            org_named=org_named,
            period_named=period_named,
            type_named=bool(cues.types),
        )
        for i, card in enumerate(cards)
    ]


@dataclass
class NamedEntities:
    """The documents a question reaches, grouped by what it named: {"Adobe Systems": [0, 3]},
    {"FY2016": [0]}, {"10-K": [0, 1]} (indices into the cards given)."""

    organisations: dict[str, list[int]] = field(default_factory=dict)
    periods: dict[str, list[int]] = field(default_factory=dict)
    types: dict[str, list[int]] = field(default_factory=dict)

    @property
    def several_organisations(self) -> bool:
        return len(self.organisations) > 1

    @property
    def several_periods(self) -> bool:
        return len(self.periods) > 1


def _period_labels(cues: QuestionCues) -> list[tuple[str, QuestionCues]]:
    """Each period the question names on its own, with the cues that name only it."""
    dated = [(q, y) for q, y in cues.quarters if y is not None]
    if dated:
        return [(f"Q{q} {y}", QuestionCues(quarters=((q, y),))) for q, y in dated]
    return [(f"FY{y}", QuestionCues(fiscal_years=(y,))) for y in cues.target_years]


def named_entities(question: str, cards: Sequence[DocumentCard]) -> NamedEntities:
    """The cards each named organisation, period and type reaches; several keys in one group mark a
    question across documents ("Adobe vs Nike", "FY2021 and FY2022")."""
    out = NamedEntities()
    index = NameIndex.of([c.organisation for c in cards if c.organisation])
    for i, card in enumerate(cards):
        if card.organisation and name_score(question, card.organisation, index, card.aliases) >= ORG_NAMED:
            key = " ".join(core(card.organisation)).title()
            out.organisations.setdefault(key, []).append(i)
    cues = question_cues(question)
    for label, alone in _period_labels(cues):
        reached = [i for i, card in enumerate(cards) if period_score(card, alone) >= 0.6]
        if reached:
            out.periods[label] = reached
    for doc_type in sorted(cues.types):
        reached = [i for i, card in enumerate(cards) if card.doc_type == doc_type]
        if reached:
            out.types[doc_type] = reached
    return out
