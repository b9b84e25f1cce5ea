"""Which phrases the offline extractor keeps as entities worth linking (issue 31, item 1).

No part-of-speech model serves offline from a package here (spaCy's English models are not on PyPI), so
these are measured rules, most of them read off the document itself: a capitalised word that the same
document also writes in lower case is a common word that opened a sentence or a heading ("Using",
"Reasoning", "Soon Aurora"), not a name; a heading's all-capitals words run into the name after them
("RECOMMENDED CITATION Pew Research Center"); a name ends before a pronoun or a function word ("CLAIM
We"); short letter-digit codes ("A3", "FN31") and long runs of table cells read as one name are no
entities. A multi-word term must read as a noun phrase: no adverb or participle at its ends ("already
know", "investigation revealed"). Years, numbers, units and months are values (`VALUE_TYPES`): facts
keep them as tails, but they link nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from hyperfolio.lexicon import STOPWORDS

# Words that never end a name ("Human Evaluation We", "Poor Not", "OVERVIEW OF RAG A").
_NEVER_LAST = STOPWORDS | {"we", "it", "not", "among", "upon", "he", "she", "they", "i", "our", "us", "its"}
# Words that may sit inside a long name without making it a run of cells.
_JOINERS = {"of", "for", "the", "and", "&", "de", "la", "du", "von", "van", "on", "in"}
_CODE = re.compile(r"[A-Za-z]{1,3}\d{1,3}")  # "A3", "D5", "RQ3", "FN31": a place in a list, not a thing
_WORD = re.compile(r"[A-Za-z][a-z]+")
# OCR debris: a digit between letters ("SS8aSeonr", "ABI2A813"), a letter three times over ("LTTTNT").
_DEBRIS = re.compile(r"[A-Za-z]\d+[A-Za-z]|([A-Za-z])\1\1")
_NUMERIC = re.compile(r"[\d.,%()+-]+")
# What opens a sentence or a heading, before a capitalised word: punctuation, a line break, a bracket, a
# section number ("5 Conclusion").
_SENTENCE_OPEN = re.compile(r"(?:^|[.!?:;•\n]\s*|\(\s*|\d\.?\s+)$")
# A term's first word that qualifies rather than names ("already know", "few miles", "above claim").
_VAGUE_FIRST = frozenset(
    """already always also very often above below following few several various many much same such other
    certain given having being felt using based overall previous next last recent further whole entire
    just still even rather quite well very say said says give giving calculate infer assist kept presents
    ensure enhance improve provide allow make made adding incorporating expressing""".split()
)
# A term's last word that is a verb or a preposition ("fact involves", "vote against", "care provided").
_VERB_LAST = frozenset(
    """involves involve include includes including know knows receive receives show shows shown said says
    make makes made found use uses used based against within across without become becomes get gets
    take takes took give gives gave see seen need needs want wants help helps tens allows enables requires
    provides presents contains means suggests indicates leads remains seems appears follows describes
    reports brought born meant carried out under between whose them themselves himself herself itself very
    top""".split()
)


@dataclass
class WordCase:
    """How a document writes each word: in lower case (a common word) or capitalised mid-sentence (part of a
    name). Counted once per document, from the text its chunks say (OCR left out)."""

    lower: Counter = field(default_factory=Counter)
    capital: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, texts: Iterable[str]) -> WordCase:
        case = cls()
        for text in texts:
            for m in _WORD.finditer(text):
                word = m.group(0)
                if word[0].islower():
                    case.lower[word] += 1
                elif not _SENTENCE_OPEN.search(text[max(0, m.start() - 5) : m.start()]):
                    case.capital[word.lower()] += 1
        return case

    def common(self, word: str) -> bool:
        """Written in lower case at least twice as often as capitalised mid-sentence (and at least twice)."""
        low = word.lower()
        lower = self.lower.get(low, 0)
        return lower >= 2 and lower >= 2 * self.capital.get(low, 0)

    def common_alone(self, word: str) -> bool:
        """A one-word name the document writes in lower case at least as often as capitalised mid-sentence."""
        low = word.lower()
        lower = self.lower.get(low, 0)
        return lower >= 1 and lower >= self.capital.get(low, 0)


def clean_name(text: str, case: WordCase) -> str:
    """The name a capitalised phrase really is, or "" for none (see the module's rules)."""
    words = text.split()
    if any(_DEBRIS.search(w) for w in words):
        return ""
    lead = 0  # a heading's all-capitals words before a name in mixed case
    while lead < len(words) and words[lead].isalpha() and words[lead].isupper():
        lead += 1
    if 0 < lead < len(words) and any(len(w) >= 5 for w in words[:lead]):
        words = words[lead:]
    while words and (words[-1].lower() in _NEVER_LAST or len(words[-1]) == 1 or case.common(words[-1])):
        words.pop()
    while len(words) > 1 and (words[0].lower() in _NEVER_LAST or case.common(words[0])):
        words.pop(0)
    if not words:
        return ""
    code = next((i for i, w in enumerate(words) if _CODE.fullmatch(w)), None)
    if code:  # "Northeast Queens NY30 Pennsylvania": a name, its code, and the next row's name
        words = words[:code]
    if len(words) == 1:
        word = words[0]
        if _CODE.fullmatch(word) or (not word.isupper() and case.common_alone(word)):
            return ""
        if len(word) <= 2 or (len(word) == 3 and not word.isupper() and case.capital.get(word.lower(), 0) < 2):
            return ""  # "Mi", "Oot": OCR debris, unless the text capitalises it mid-sentence twice
        if word.isupper() and word.isalpha() and len(word) >= 5 and case.common_alone(word):
            return ""  # a heading's word in capitals ("CLAIM") the text also writes in lower case
    elif len(words) >= 6 and not any(w.lower() in _JOINERS for w in words):
        return ""  # six capitalised words with nothing joining them: cells of a table read as one line
    elif len({w.lower() for w in words}) < len(words):
        return ""  # "Recursive Retrieval Recursive": a word twice is two headings run together
    return " ".join(words)


def term_like(term: str, repeats: int = 2) -> bool:
    """A repeated lower-case run reads as a noun phrase: no adverb, participle or verb at either end. A
    participle may open a term the document repeats often ("registered manager"), not a rarer one
    ("generated outputs"); one closing it after a plural ("issues facing") never."""
    words = term.split()
    first, last = words[0], words[-1]
    if first in _VAGUE_FIRST or first.endswith("ly") or (first.endswith("ed") and repeats < 4):
        return False
    if last in _VERB_LAST or last.endswith("ly") or (last.endswith("ed") and len(last) > 4):
        return False
    before = words[-2]
    return not (last.endswith("ing") and before.endswith("s") and not before.endswith("ss"))


def table_name_like(cell: str, limit: int) -> bool:
    """A table's header or row key names something when it is mostly letters and short: a header row read
    as one cell, or a row of numbers, names nothing."""
    letters = sum(ch.isalpha() for ch in cell)
    numbers = sum(bool(_NUMERIC.fullmatch(w)) for w in cell.split())
    return 0 < len(cell) <= limit and numbers <= 1 and letters >= 0.5 * sum(not ch.isspace() for ch in cell)
