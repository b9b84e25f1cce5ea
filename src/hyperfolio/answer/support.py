"""Whether the evidence is about what the question names: the signal for abstaining.

A question about "the two plants of Apple Inc." put to a tobacco company's annual report retrieves the
report's plants — passages that score well on everything but the name. The names, acronyms, years and
quantities the question states are its anchors; the share of them found in the evidence the answer
reads is low when the documents do not hold the answer. The answerer abstains below a floor chosen by
cross-validation on dev questions with whole documents held out (`benchmarks/abstention.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hyperfolio.answer.passages import Passage, terms
from hyperfolio.answer.spans import ASKED_FORMAT
from hyperfolio.phrases import find_phrases

ANCHOR_KINDS = frozenset({"name", "acronym", "quantity", "year"})
_LOCATOR = re.compile(
    r"\b(?:page|pages|slide|slides|figure|fig|table|chapter|section|unit|step|appendix|exhibit|p)\.?\s*$", re.I
)


_FISCAL = re.compile(r"\bFY\s?'?(\d{4}|\d{2})\b")
_QUARTER_OF = re.compile(r"\bQ[1-4]\s+(?:of\s+)?(?=\d{4}\b)")
_POSSESSIVE = re.compile(r"['\u2019]s?$")
_CURRENCY_CODES = frozenset({"USD", "EUR", "GBP", "JPY", "CNY", "INR", "CHF"})


def _asking_part(question: str) -> str:
    """The sentences that ask (end in "?"), when the question also defines terms or gives instructions
    ("ROA is defined as ...": names there need not be in the documents)."""
    asking = [s for s in re.split(r"(?<=[.?!])\s+(?=[A-Z])", question) if s.rstrip().endswith("?")]
    return " ".join(asking) or question


def _fiscal_years(question: str) -> str:
    """'FY2022' and 'FY22' as the years documents write ('2022'); 'Q2 of FY2022' as '2022'."""
    text = _FISCAL.sub(lambda m: m.group(1) if len(m.group(1)) == 4 else "20" + m.group(1), question)
    return _QUARTER_OF.sub("", text)


def anchor_phrases(question: str) -> list[tuple[str, set[str]]]:
    """The question's anchors, as written and as the set of their terms. None for a question in capitals (every word
    looks like a name) and no page or figure numbers ("on page 14" locates, it does not name)."""
    letters = [c for c in question if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) > 0.6 * len(letters):
        return []
    question = _fiscal_years(_asking_part(question))
    found = []
    for phrase in find_phrases(question):
        if phrase.kind not in ANCHOR_KINDS or _LOCATOR.search(question[: phrase.start]):
            continue
        if phrase.text in _CURRENCY_CODES or ASKED_FORMAT.fullmatch(phrase.text):
            continue  # "in USD", "as YYYY-MM-DD" say how to answer, not what about
        words = set(terms(_POSSESSIVE.sub("", phrase.text)))
        if words:
            found.append((phrase.text, words))
    return found


_HYPHENATED = re.compile(r"\b([^\W\d_]+)-([^\W\d_]+)\b")
# A word this long or longer is stated by one a letter away ("Americen" by "American"); a whole name must
# be stated, though: "HAQ Executive Leadership" is not "MQA Executive Leadership".
FUZZY_LENGTH = 6


def _present(evidence: Sequence[Passage]) -> set[str]:
    """The terms of the passages and of their documents' titles (a question put to one filing names its
    company, which its tables never repeat); "e-mail" stands for "email" too."""
    texts = [p.text for p in evidence] + list({p.item.citation.title for p in evidence})
    present = set().union(*(set(terms(t)) for t in texts)) if texts else set()
    return present | {(a + b).lower() for t in texts for a, b in _HYPHENATED.findall(t)}


def _one_letter_away(word: str, other: str) -> bool:
    if len(word) == len(other):
        return sum(a != b for a, b in zip(word, other, strict=True)) == 1
    short, long = sorted((word, other), key=len)
    return len(long) - len(short) == 1 and any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _stated(word: str, present: set[str]) -> bool:
    """A word of an anchor is stated by the evidence: as such, a number written apart ("31,2003" as "31,
    2003"), or a long word misspelt by a letter in the question ("Germen" for "German")."""
    if word in present:
        return True
    if any(ch.isdigit() for ch in word):
        parts = [p for p in re.split(r"[,.]", word) if p]
        return len(parts) > 1 and all(p in present for p in parts)
    if len(word) < FUZZY_LENGTH:
        return False
    return any(p[:1] == word[:1] and abs(len(p) - len(word)) <= 1 and _one_letter_away(word, p) for p in present)


def _said(words: set[str], present: set[str]) -> bool:
    """An anchor is said when every word of it is."""
    return all(_stated(w, present) for w in words)


def anchor_share(question: str, evidence: Sequence[Passage]) -> float:
    """The share of the question's anchors the evidence states (1 with no anchors)."""
    wanted = anchor_phrases(question)
    if not wanted:
        return 1.0
    present = _present(evidence)
    return sum(_said(words, present) for _, words in wanted) / len(wanted)


def missing_anchors(question: str, evidence: Sequence[Passage]) -> list[str]:
    """The anchors of the question the evidence never states, as the question writes them."""
    present = _present(evidence)
    return [text for text, words in anchor_phrases(question) if not _said(words, present)]
