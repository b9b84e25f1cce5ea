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
from hyperfolio.phrases import find_phrases

ANCHOR_KINDS = frozenset({"name", "acronym", "quantity", "year"})
_LOCATOR = re.compile(
    r"\b(?:page|pages|slide|slides|figure|fig|table|chapter|section|unit|step|appendix|exhibit|p)\.?\s*$", re.I
)


def anchor_phrases(question: str) -> list[tuple[str, set[str]]]:
    """The question's anchors, as written and as the set of their terms. None for a question in capitals (every word
    looks like a name) and no page or figure numbers ("on page 14" locates, it does not name)."""
    letters = [c for c in question if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) > 0.6 * len(letters):
        return []
    found = []
    for phrase in find_phrases(question):
        if phrase.kind not in ANCHOR_KINDS or _LOCATOR.search(question[: phrase.start]):
            continue
        words = set(terms(phrase.text))
        if words:
            found.append((phrase.text, words))
    return found


def _present(evidence: Sequence[Passage]) -> set[str]:
    return set().union(*(set(terms(p.text)) for p in evidence)) if evidence else set()


def anchor_share(question: str, evidence: Sequence[Passage]) -> float:
    """The share of the question's anchors whose every term occurs in the evidence (1 with no anchors)."""
    wanted = anchor_phrases(question)
    if not wanted:
        return 1.0
    present = _present(evidence)
    return sum(words <= present for _, words in wanted) / len(wanted)


def missing_anchors(question: str, evidence: Sequence[Passage]) -> list[str]:
    """The anchors of the question the evidence never states, as the question writes them."""
    present = _present(evidence)
    return [text for text, words in anchor_phrases(question) if not words <= present]
