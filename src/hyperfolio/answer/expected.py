"""What kind of answer a question expects, read from its wording.

The short-answer extractor looks for a span of this kind (a percentage, a year, a name ...) in the
sentences and cells that support the answer; a model answerer is told the kind it should reply with.
The rules are few and ordered: the first that matches decides.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Kind(StrEnum):
    YES_NO = "yes/no"
    COUNT = "count"
    PERCENT = "percentage"
    MONEY = "money"
    YEAR = "year"
    DATE = "date"
    NUMBER = "number"
    NAME = "name"
    IDENTIFIER = "identifier"  # a phone number, e-mail address, web address, case or reference number
    LIST = "list"
    EXPLANATION = "explanation"
    TEXT = "text"


NUMERIC = frozenset({Kind.COUNT, Kind.PERCENT, Kind.MONEY, Kind.YEAR, Kind.NUMBER})

_AUXILIARY = r"(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall|may|might|must)"
_RULES: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    (Kind.EXPLANATION, re.compile(r"^\s*(why|how come)\b|\b(reasons?|explain|causes?d?|purpose|rationale)\b", re.I)),
    (
        Kind.IDENTIFIER,
        re.compile(
            r"\b(tele)?phone\b|\b(tel|fax)\b|\be-?mail\b|\b(url|website|web address|web site)\b|"
            r"\b(case|docket|file|filing|bar|reference|registration|account|serial|licen[cs]e|contract|order|po)"
            r" (number|no\.?|id)\b|\b(isbn|doi|zip code|postcode|postal code)\b",
            re.I,
        ),
    ),
    (Kind.COUNT, re.compile(r"\b(how many|number of|count of|how often)\b", re.I)),
    (
        Kind.PERCENT,
        re.compile(
            r"\b(percent|percentage|proportion|share of|what share|margin)\b|%|"
            r"\b(growth|interest|tax|unemployment|inflation|response|error|success|turnover|return) rate\b",
            re.I,
        ),
    ),
    (Kind.YEAR, re.compile(r"\b(which|what|in what|in which) (fiscal |calendar )?year\b|\bwhat year\b", re.I)),
    (Kind.DATE, re.compile(r"^\s*when\b|\b(what|which) (date|day|month)\b|\b(the|what|on what) date\b", re.I)),
    (
        Kind.MONEY,
        re.compile(
            r"\bhow much money\b|\b(revenue|revenues|income|sales|profit|earnings|"
            r"cost|costs|expenses?|capex|capital expenditures?|cash|dividends?|price|budget|debt|assets|"
            r"liabilities|ebitda|spend|spent|paid|worth)\b|\b(usd|dollars?|euros?|in (millions|billions|thousands))\b",
            re.I,
        ),
    ),
    (
        Kind.NUMBER,
        re.compile(
            r"\bhow (much|long|old|large|big|far|tall|high|deep|wide|fast|heavy)\b|"
            r"\b(what|which) (is|was|were|are) the "
            r"(value|number|amount|ratio|score|average|mean|median|size|rate|accuracy|total|sum|difference|change|"
            r"increase|decrease|growth|temperature|length|weight|height|f1|precision|recall|performance)\b|"
            r"\b(ratio|accuracy|f1|bleu|rouge|score)\b",
            re.I,
        ),
    ),
    (
        Kind.LIST,
        re.compile(r"^\s*(list|name all|enumerate)\b|\b(what|which) (\w+ ){0,3}(are|were)\b|\bwhich ones\b", re.I),
    ),
    (
        Kind.NAME,
        re.compile(
            r"^\s*(who|whom|whose)\b|\bwhat (is|was) (the )?(name|title)\b|\bwhich (company|companies|"
            r"person|individual|officer|official|organi[sz]ation|country|city|state|model|method|dataset|team|author|"
            r"firm|bank|product|brand)\b",
            re.I,
        ),
    ),
)
_YES_NO = re.compile(rf"^\s*{_AUXILIARY}\b", re.I)
_CHOICE = re.compile(r"\bor\b", re.I)


_INSTRUCTION = re.compile(
    r"(?:^|(?<=[.?!])\s+)(?:please\s+)?(?:format|write|give|return|represent|answer|express|round|provide|"
    r"the answer (?:should|shall|must))\b[^.?!]*\b(?:format|form|answer|integer|float|list|decimal|round(?:ed)?|"
    r"yyyy|places?|number)\b[^.?!]*[.?!]?\s*$",
    re.I,
)


def core_question(question: str) -> str:
    """The question without a trailing instruction on how to write the answer ("Format your answer as
    YYYY-MM-DD.", "Please write the answer in float format."): its words are not the question's."""
    stripped = question
    while (match := _INSTRUCTION.search(stripped)) is not None and match.start() > 0:
        stripped = stripped[: match.start()].rstrip()
    return stripped or question


def expected_kind(question: str) -> Kind:
    """The kind of answer `question` asks for (TEXT when no rule says otherwise)."""
    if _YES_NO.match(question) and not _CHOICE.search(question):
        return Kind.YES_NO  # "Is X or Y ...?" asks for one of two names, not yes or no
    for kind, rule in _RULES:
        if rule.search(question):
            return kind
    return Kind.TEXT
