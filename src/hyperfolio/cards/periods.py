"""Dates and fiscal periods as covers print them ("December 31, 2022", "31st March 2003",
"June 30, 2023") and the fiscal year and quarter they mean."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hyperfolio.lexicon import MONTHS

_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"
# "December 31, 2022", "Dec. 31 2022" | "31st March 2003", "31 March, 2003" | "March 2018"
MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)
DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)
MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)
NUMERIC_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)\d{2})\b")
_FISCAL_YEAR_ENDED = re.compile(r"(?:fiscal\s+)?year\s+ended", re.IGNORECASE)
# A 52/53-week year ending in the first days of January is named for the year before (J&J's "fiscal
# year ended January 1, 2023" is fiscal 2022).
_WEEK_YEAR_SPILL_DAYS = 7


@dataclass(frozen=True)
class Date:
    year: int
    month: int
    day: int = 0  # 0: the cover printed a month only

    @property
    def iso(self) -> str | None:
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}" if self.day else None


def _valid(year: int, month: int, day: int) -> bool:
    return 1 <= month <= 12 and 0 <= day <= 31 and 1900 <= year <= 2100


def find_dates(text: str) -> list[Date]:
    """The full dates a text prints, in order of appearance (day-month, month-day and numeric US forms)."""
    found: list[tuple[int, Date]] = []
    for match in MONTH_DAY_YEAR.finditer(text):
        found.append((match.start(), Date(int(match[3]), MONTHS[_month_key(match[1])], int(match[2]))))
    for match in DAY_MONTH_YEAR.finditer(text):
        found.append((match.start(), Date(int(match[3]), MONTHS[_month_key(match[2])], int(match[1]))))
    for match in NUMERIC_DATE.finditer(text):
        found.append((match.start(), Date(int(match[3]), int(match[1]), int(match[2]))))
    return [date for _, date in sorted(found, key=lambda f: f[0]) if _valid(date.year, date.month, date.day)]


def find_month_years(text: str) -> list[Date]:
    """Month-and-year mentions ("May, 2018"), for covers that print no day."""
    return [Date(int(m[2]), MONTHS[_month_key(m[1])]) for m in MONTH_YEAR.finditer(text)]


def _month_key(word: str) -> str:
    word = word.lower().rstrip(".")
    return word if word in MONTHS else word[:3]


def fiscal_year_of_end(date: Date) -> int:
    """The fiscal year a year-end date closes."""
    if date.month == 1 and date.day and date.day <= _WEEK_YEAR_SPILL_DAYS:
        return date.year - 1
    return date.year


def calendar_quarter(date: Date) -> int:
    """The calendar quarter a quarter-end date closes (a few days' spill of 52/53-week quarters allowed)."""
    month = date.month - 1 if date.day and date.day <= _WEEK_YEAR_SPILL_DAYS else date.month
    month = 12 if month == 0 else month
    return (month - 1) // 3 + 1


def year_ended(text: str) -> Date | None:
    """The date after "year ended" ("For the fiscal year ended December 31, 2022"), if printed."""
    for match in _FISCAL_YEAR_ENDED.finditer(text):
        dates = find_dates(text[match.end() : match.end() + 60])
        if dates:
            return dates[0]
    return None
