"""Text compared as people read it: numbers as values, words with case, accents, hyphenation and plurals folded.

Shared by the citation check (does a cited chunk hold the answer?) and the graph build's grounding
(does a page state what a model named?). Numbers are values however they are written: thousands
separators ("1,850" = "1850"), trailing zeros ("97.30" = "97.3"), scale words ("97.3 million" is
also 97,300,000), signs dropped; words fold case, accents, soft hyphens, a word split across a line
break, possessives and apostrophes, and plurals.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from hyperfolio.lexicon import NUMBER_WORDS

# A number with fewer significant digits ("3", "2 million") occurs in many chunks by chance (list
# items, footnote marks, table numbers), so matching it alone does not show support: the answer's
# words must agree as well. "12", "1,850" or "0.5" rarely turn up by chance.
DISTINCTIVE_DIGITS = 2
# An answer may round what its chunk says ("97%" from "97.3%", "1.9 million" from "1,850,000"); a
# chunk's number rounded to the answer's precision then counts, but only for answer numbers with
# this many significant digits: "2" would otherwise be found in every chunk holding 1.5 to 2.49.
ROUNDING_MIN_DIGITS = 2

_SCALES = {"thousand": 3, "k": 3, "million": 6, "mn": 6, "mln": 6, "m": 6, "billion": 9, "bn": 9, "b": 9}
_SCALES |= {"trillion": 12, "tn": 12}
# Number words count as the numbers they name; "one" does not (it is far more often a pronoun), nor
# "hundred" (a scale: "two hundred").
_NUMBER_WORDS = {word: value for word, value in NUMBER_WORDS.items() if word not in {"one", "hundred"}}
_NUMBER = re.compile(
    r"(?<!\d)(?<!\d\.)"  # not the middle of a number already read ("3.2.1" is 3.2)
    r"(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?"  # grouped thousands or plain digits, then decimals
    r"(?:\s?(thousands?|millions?|mln|mn|billions?|bn|trillions?|tn|[kmb])(?![^\W\d_]))?"  # a scale (text folded)
)
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b")
# Thin and no-break spaces group thousands in typeset reports ("1 850"); ordinary spaces are too
# ambiguous ("in 2023 1,850 ...") to read that way.
_SPACE_GROUP = re.compile(r"(?<=\d)[\u00a0\u2009\u202f](?=\d{3}(?!\d))")
WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_LINE_HYPHEN = re.compile(r"([^\W\d_])-\s*\n\s*([^\W\d_])")  # "con-\ntainer": a word split across lines
_POSSESSIVE = re.compile(r"['’]s\b")
_APOSTROPHE = re.compile(r"(?<=[^\W\d_])['’](?=[^\W\d_])")


def fold(text: str) -> str:
    """Text as it is compared: lower case, accents and soft hyphens gone, words split across lines
    joined, possessives and apostrophes dropped ("Kelmouth's" = "kelmouth", "don't" = "dont")."""
    text = text.replace("\u00ad", "")
    text = _SPACE_GROUP.sub(",", text)
    text = _LINE_HYPHEN.sub(r"\1\2", text)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = _POSSESSIVE.sub("", text)
    return _APOSTROPHE.sub("", text).lower()


def stem(word: str) -> str:
    """A light plural fold (the extractive answerer's, plus -ies): enough for "vessels" = "vessel"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def word_unit(word: str) -> str:
    """A word as it is looked for: a hyphenated compound keeps its (stemmed) parts, joined by '-'."""
    return "-".join(stem(part) for part in word.split("-") if part)


@dataclass(frozen=True)
class Quantity:
    """A number as written, its sign dropped ("-5%" and "(5)" report the same 5), and its value
    times a scale word that followed it ("97.3 million" -> 97300000), so either form matches."""

    value: Decimal
    scaled: Decimal | None = None

    @property
    def forms(self) -> tuple[Decimal, ...]:
        return (self.value,) if self.scaled is None else (self.value, self.scaled)

    @property
    def digits(self) -> int:
        """Significant digits as written: "1850" has 4, "0.05" has 1, "97.30" has 4."""
        return len(self.value.as_tuple().digits)

    @property
    def distinctive(self) -> bool:
        """Whether finding it in a chunk means something on its own (see DISTINCTIVE_DIGITS)."""
        return self.digits >= DISTINCTIVE_DIGITS or _exponent(self.value) < 0

    def same(self, other: Quantity) -> bool:
        """Whether `other` (a number in a chunk) is this one (a number of an answer): equal in value,
        by either form, or - for a precise enough answer - equal once rounded to its precision."""
        for mine in self.forms:
            for theirs in other.forms:
                if mine == theirs:
                    return True
                if len(mine.as_tuple().digits) >= ROUNDING_MIN_DIGITS and _exponent(theirs) < _exponent(mine):
                    try:
                        if theirs.quantize(Decimal(1).scaleb(_exponent(mine)), rounding=ROUND_HALF_UP) == mine:
                            return True
                    except InvalidOperation:  # more digits than the decimal context holds
                        continue
        return False


def _exponent(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    return exponent if isinstance(exponent, int) else 0


def quantities(text: str) -> list[Quantity]:
    """The numbers of a text, in order, however they are written (see the module docstring)."""
    folded = fold(text)
    found: list[tuple[int, Quantity]] = []
    for m in _NUMBER.finditer(folded):
        value = Decimal(m.group(1).replace(",", "") + (m.group(2) or ""))
        scale = m.group(3)
        power = _SCALES.get(scale.rstrip("s") if scale and len(scale) > 2 else scale or "")
        found.append((m.start(), Quantity(value, value.scaleb(power) if power else None)))
    found.extend((m.start(), Quantity(Decimal(_NUMBER_WORDS[m.group(1)]))) for m in _NUMBER_WORD.finditer(folded))
    return [q for _, q in sorted(found, key=lambda pair: pair[0])]


def word_forms(text: str) -> frozenset[str]:
    """Every form a word of the text may be looked for in: each part of a hyphenated compound, the
    compound written solid, and neighbouring words written solid ("cross border" = "crossborder")."""
    forms: set[str] = set()
    previous = ""
    for token in WORD.findall(fold(text)):
        parts = [p for p in token.split("-") if p]
        forms.update(stem(p) for p in parts)
        solid = "".join(parts)
        forms.add(stem(solid))
        if previous:
            forms.add(stem(previous + solid))
        previous = solid
    return frozenset(forms)


def has_unit(unit: str, forms: frozenset[str]) -> bool:
    parts = unit.split("-")
    return "".join(parts) in forms or all(p in forms for p in parts)
