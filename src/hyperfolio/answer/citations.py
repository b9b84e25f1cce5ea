"""Whether a cited chunk supports an answer: the answer's numbers and names must occur in it.

A model told to cite the chunks it used tends to cite most of what it was shown, and a reader who
follows a citation expects to find the answer there. `check_citations` keeps the cited chunks whose
text holds every number of the answer or, for an answer without numbers, its names and enough of
its content words. A chunk's text is everything the model could have read in it: prose, every cell
of a table, a figure's caption, OCR text and the vision model's description.

Numbers are compared as values, so the way they are written does not matter: thousands separators
("1,850" = "1850"), trailing zeros ("97.30" = "97.3"), percent signs and words, currency symbols and
codes, and scale words ("$97.3M" = "97.3 M$" = a cell "97.3" under a "(in millions)" header =
"97,300,000"). Words are compared with case, accents, hyphenation, possessives and plurals folded.
Pure functions of text: no model, no store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hyperfolio.answer.extractive import MARKER
from hyperfolio.lexicon import QUESTION_WORDS, STOPWORDS
from hyperfolio.model import Chunk, EvidenceItem
from hyperfolio.phrases import content_words, find_phrases
from hyperfolio.textmatch import WORD, Quantity, fold, has_unit, quantities, word_forms, word_unit

# ---------------------------------------------------------------------------- thresholds
# Share of an answer's content words (names included) a chunk must hold when numbers cannot decide:
# half, because an answer rephrases its evidence, but a chunk holding less shares only the topic.
WORD_SHARE_MIN = 0.5
# A gold answer is a short span: a chunk holds it when it holds nearly all of its words.
GOLD_WORD_SHARE_MIN = 0.8
# Outcomes of the check, recorded on the answer (`Answer.meta["citation_support"]`).
SUPPORTED = "supported"  # every kept citation holds the answer
PARTIAL = "partial"  # no cited chunk holds all of it: those holding most of it were kept
RECOVERED = "recovered"  # no cited chunk holds any of its numbers; a shown chunk holding all of them is cited
UNSUPPORTED = "unsupported"  # no cited chunk holds any of its numbers (or any of it): all kept, marked
UNCHECKED = "unchecked"  # nothing in the answer (or its question) to look for: the citations as given
OFF = "off"  # the check was switched off

# Where an answer points into the documents ("page 5", "Table 3", "chunk [2]"): a reference, not a
# fact the cited chunk must repeat (a chunk does not hold its own page number).
_REFERENCE = re.compile(
    r"\b(?:pages?|pp?\.|slides?|chunks?|sources?|tables?|figures?|figs?\.|charts?|exhibits?|sections?|"
    r"chapters?|appendix|appendices|footnotes?|notes?|rows?|columns?)\s*\[?\s*\d+(?:\.\d+)*[a-z]?\]?"
    r"(?:\s*(?:[-\u2013,]|and|&|to)\s*\[?\d+(?:\.\d+)*[a-z]?\]?)*",
    re.IGNORECASE,
)
# Words a model frames an answer with, and the words of numbers and units: not what a chunk must hold.
_FILLER = frozenset(
    """answer answers according approximately roughly around nearly almost about evidence chunk context
    provided mentioned stated indicated listed respectively based percent percentage cent thousand million
    billion trillion mln usd eur gbp dollar dollars euro euros pound pounds yen""".split()
)
# Words inside names that say nothing on their own ("Bank of England", "Procter & Gamble").
_NAME_GLUE = frozenset({"of", "the", "for", "and", "de", "la", "du", "von", "van", "der", "del"}) | STOPWORDS


# ---------------------------------------------------------------------------- what an answer claims
@dataclass(frozen=True)
class Claim:
    """What a chunk must hold to support an answer: its numbers, its names (capitalised words and
    multi-word names, acronyms) and its content words (names included), each as looked for."""

    numbers: tuple[Quantity, ...] = ()
    names: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.numbers and not self.words


def _claim_parts(text: str, keep_references: bool) -> Claim:
    """Everything a text states, as looked for; a gold answer keeps its references ("Table 3" may be
    the answer), a model's answer does not."""
    text = MARKER.sub(" ", text)  # the answer's own citation markers are not numbers it states
    if not keep_references:
        text = _REFERENCE.sub(" ", text)
    names: set[str] = set()
    for phrase in find_phrases(text):
        if phrase.kind in ("name", "acronym"):
            names.update(word_unit(w) for w in WORD.findall(fold(phrase.text)) if len(w) > 1 and w not in _NAME_GLUE)
    words = {word_unit(w) for w in content_words(fold(text)) if w not in _FILLER and w not in QUESTION_WORDS}
    words.discard("")
    return Claim(tuple(quantities(text)), frozenset(names), frozenset(words | names))


def claim_of(answer: str, question: str = "") -> Claim:
    """What `answer` claims beyond its question: numbers and words the question already holds are
    context ("In 2023, ..."), not the answer, so a chunk need not repeat them - unless the answer
    says nothing else. Its numbers decide when it has new ones; otherwise its words do. References
    into the documents ("page 5", "Table 3") are not claims."""
    said = _claim_parts(answer, keep_references=False)
    if not question:
        return said
    asked_numbers = quantities(question)
    asked_words = word_forms(question)
    numbers = tuple(q for q in said.numbers if not any(q.same(a) and a.same(q) for a in asked_numbers))
    words = frozenset(w for w in said.words if not has_unit(w, asked_words))
    names = said.names & words
    if numbers:
        return Claim(numbers, names if words else said.names, words or said.words)
    if words:
        return Claim((), names, words)
    return said


# ---------------------------------------------------------------------------- what a chunk holds
@dataclass(frozen=True)
class TextIndex:
    """A chunk's text as the check reads it: its numbers and its word forms."""

    numbers: tuple[Quantity, ...]
    words: frozenset[str]

    @classmethod
    def of(cls, text: str) -> TextIndex:
        return cls(tuple(quantities(text)), word_forms(text))


def evidence_text(chunk: Chunk) -> str:
    """All a chunk says: its text, every table cell (row by row), a figure's caption, OCR text and
    the vision model's description - whichever of them the model may have read the answer in."""
    parts = [chunk.text, chunk.caption or "", chunk.ocr_text or "", str(chunk.meta.get("description") or "")]
    if chunk.table:
        parts.append("\n".join(" | ".join(cell for cell in row) for row in chunk.table))
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class Support:
    """How much of a claim one chunk holds."""

    numbers: frozenset[int]  # positions in `Claim.numbers` of the numbers found
    names: frozenset[str]
    words: frozenset[str]
    supported: bool

    @property
    def rank(self) -> tuple[int, int, int]:
        """Best overlap first: numbers found, then names, then words."""
        return len(self.numbers), len(self.names), len(self.words)

    @property
    def shares(self) -> bool:
        return any(self.rank)


def support(claim: Claim, text: str | TextIndex) -> Support:
    """Which parts of the claim the text holds, and whether that supports it: every number (and, when
    all of them are small numbers, enough words too), or - without numbers - every name and at least
    WORD_SHARE_MIN of the words."""
    index = text if isinstance(text, TextIndex) else TextIndex.of(text)
    numbers = frozenset(i for i, q in enumerate(claim.numbers) if any(q.same(c) for c in index.numbers))
    names = frozenset(n for n in claim.names if has_unit(n, index.words))
    words = frozenset(w for w in claim.words if has_unit(w, index.words))
    share = len(words) / len(claim.words) if claim.words else 0.0
    if claim.numbers:
        ok = len(numbers) == len(claim.numbers) and (
            any(q.distinctive for q in claim.numbers) or not claim.words or share >= WORD_SHARE_MIN
        )
    else:
        ok = bool(claim.words) and names == claim.names and share >= WORD_SHARE_MIN
    return Support(numbers, names, words, ok)


def supports(answer: str, text: str, question: str = "") -> bool:
    """Whether `text` supports `answer` (to `question`)."""
    return support(claim_of(answer, question), text).supported


def contains_answer(gold: str, text: str | TextIndex) -> bool | None:
    """Whether a text holds a gold answer: all its numbers and GOLD_WORD_SHARE_MIN of its words. None
    when the gold has neither ("Yes", "No"): no text can be said to hold it."""
    claim = _claim_parts(gold, keep_references=True)
    if claim.empty:
        return None
    found = support(claim, text)
    share = len(found.words) / len(claim.words) if claim.words else 1.0
    return len(found.numbers) == len(claim.numbers) and share >= GOLD_WORD_SHARE_MIN


# ---------------------------------------------------------------------------- the check
@dataclass
class CitationCheck:
    kept: list[EvidenceItem]  # in the model's order
    status: str  # SUPPORTED, PARTIAL, RECOVERED, UNSUPPORTED or UNCHECKED
    dropped: int  # the model's citations not kept
    added: int = 0  # shown chunks cited that the model did not cite (RECOVERED: one)


def _cover(claim: Claim, found: Sequence[Support]) -> list[int]:
    """The best-overlapping chunk, then those that add a distinctive number (or, without numbers, a
    name) the chunks taken so far lack: an answer drawn from two chunks keeps both, but a chunk
    adding only a common word or a small number is noise."""
    best = max(range(len(found)), key=lambda i: (found[i].rank, -i))
    taken = [best]

    def targets(s: Support) -> set[object]:
        if claim.numbers:
            return {i for i in s.numbers if claim.numbers[i].distinctive}
        return set(s.names)

    covered = targets(found[best])
    while True:
        gains = [(len(targets(s) - covered), -i) for i, s in enumerate(found) if i not in taken]
        if not gains or max(gains)[0] == 0:
            return sorted(taken)
        _, minus = max(gains)
        taken.append(-minus)
        covered |= targets(found[-minus])


def check_citations(
    answer: str, question: str, cited: Sequence[EvidenceItem], shown: Iterable[EvidenceItem] = ()
) -> CitationCheck:
    """The model's citations (`cited`, distinct, in its order) that support its answer.

    Every cited chunk that supports the answer is kept, in order. When none does:
    - when the answer has a distinctive number, no cited chunk holds any of its numbers and a chunk
      the prompt showed (`shown`) holds all of them, that chunk is cited instead (RECOVERED). The
      model read it, and a distinctive number found verbatim in it says where the answer came from
      better than citations sharing nothing with the answer; small models often misnumber their
      citations. It is the only citation added, it must support the answer fully, and words alone
      never recover one: shared words say too little about where an answer came from;
    - else, when the cited chunks share part of the answer (its words and, if it has numbers, some
      of them), those overlapping it most (see `_cover`) are kept: PARTIAL;
    - else nothing tells the citations apart: all are kept as the model gave them, marked
      UNSUPPORTED so that a caller warns. Keeping one would lose the chunk a wrong answer was read
      from as often as not (SmolLM2-135M on MMLongBench-Doc dev: answers citing the gold chunk fell
      from 43 % to 29 % when only the first was kept).
    An answer with nothing to look for ("Yes") is checked against its question's words, which it
    affirms or denies; with none either, the citations are kept as given (UNCHECKED).
    """
    cited = list(cited)
    if not cited:
        return CitationCheck([], UNCHECKED, 0)
    claim = claim_of(answer, question)
    if claim.empty:
        asked = _claim_parts(question, keep_references=False)
        claim = Claim((), asked.names, asked.words)
        if claim.empty:
            return CitationCheck(cited, UNCHECKED, 0)
    found = [support(claim, evidence_text(item.chunk)) for item in cited]
    kept = [item for item, s in zip(cited, found, strict=True) if s.supported]
    if kept:
        return CitationCheck(kept, SUPPORTED, len(cited) - len(kept))
    if any(q.distinctive for q in claim.numbers) and not any(s.numbers for s in found):
        citations = [item.citation for item in cited]
        for item in shown:
            if item.citation not in citations and support(claim, evidence_text(item.chunk)).supported:
                return CitationCheck([item], RECOVERED, len(cited), added=1)
    # Sharing words but none of the answer's numbers is overlap, not support of any part.
    if any(s.shares for s in found) and (not claim.numbers or any(s.numbers for s in found)):
        kept = [cited[i] for i in _cover(claim, found)]
        return CitationCheck(kept, PARTIAL, len(cited) - len(kept))
    return CitationCheck(cited, UNSUPPORTED, 0)
