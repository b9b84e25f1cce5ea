"""Facts and concepts without a model (HVM-GraphRAG 3.1, offline).

A fact is (head, relation, tail) between two entities. In a sentence, consecutive mentions are
linked by the words between them ("The Osprey Shipping Company *operates container vessels from*
Rotterdam"), reduced to a snake_case label; in a table, a row's key is linked to each of its
cells by the column header ("Aurora" -capacity_teu-> "8,500"). A concept is the category an
entity belongs to: a table key belongs to its key column ("Vessel"), a cell value to its column,
a number to its unit, a year to "Year", a multi-word name to its head noun when the document
also uses that noun as an ordinary word ("Osprey Shipping *Company*"), anything else to a
category named by a pattern in the text ("Rotterdam, a *port*...", "ports such as Rotterdam") or
to its broad type.
"""

from __future__ import annotations

import re
from collections import Counter

from hyperfolio.lexicon import STOPWORDS

# Between two mentions these carry no relation of their own ("Rotterdam and Singapore").
_LINKERS = {"and", "or", "nor", "but", "as", "well", ",", ";", "&", "also", "both", "either", "including"}
_AUXILIARIES = {
    "is", "are", "was", "were", "be", "been", "being", "am", "has", "have", "had", "do", "does", "did",
    "the", "a", "an", "its", "their", "his", "her", "our", "this", "that", "these", "those", "which",
    "who", "whom", "whose", "it", "they", "we", "he", "she", "there", "then", "now", "still", "currently",
}  # fmt: skip
_COPULA = {"is", "are", "was", "were", "be", "been", "am", "remains", "remained", "became", "becomes"}
_PREPOSITIONS = {"of", "in", "on", "at", "to", "from", "by", "for", "with", "into", "under", "over", "per", "about"}
# Tokens that look like a relation but are citation or layout residue ("Jiang et al. 2021", "p. 318").
_NOT_RELATIONS = {"et", "al", "pp", "fig", "see", "vs", "ibid", "cf", "eg", "ie"}
_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|[-'])*")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")

# Units that name a concept on their own; other trailing words of a quantity name it too ("TEU").
_UNIT_CONCEPTS = {
    "%": "Percentage",
    "percent": "Percentage",
    "per cent": "Percentage",
    "$": "Amount",
    "€": "Amount",
    "£": "Amount",
    "¥": "Amount",
    "million": "Amount",
    "billion": "Amount",
    "trillion": "Amount",
    "thousand": "Amount",
}
_TYPE_CONCEPTS = {
    "date": "Year",
    "table": "Table",
    "figure": "Figure",
    "reference": "Reference",
    "acronym": "Term",
    "name": "Name",
    "concept": "Term",
    "quantity": "Quantity",
    "table_header": "Table column",
}
_ORG_SUFFIXES = {"inc": "Company", "ltd": "Company", "corp": "Company", "plc": "Company", "llc": "Company"}
# "X, a port ...", "X is a port ...", "ports such as X", "the port of X": a category for a name.
_IS_A = re.compile(r"^(?P<x>.+?)(?:,| is| was| remains| became) (?:a|an|the) (?:\w+ ){0,2}?(?P<y>[a-z][a-z\-]{2,})\b")
_SUCH_AS = re.compile(r"\b(?P<y>[A-Za-z][a-z\-]{2,}) (?:such as|like|including) (?P<x>[A-Z][\w\- ]+)")


def relation_label(between: str, max_words: int = 4) -> str | None:
    """The relation two consecutive mentions stand in, from the words between them; None when those
    words only list the mentions ("A and B") or are too many to be one relation."""
    words = [w.lower() for w in _WORD.findall(between)]
    if not words:
        return None
    if len(words) > 8 or all(w in _LINKERS for w in words):
        return None
    if words[0] in _LINKERS and len(words) > 1 and all(w in _LINKERS | _AUXILIARIES for w in words):
        return None
    if all(w in _COPULA | _AUXILIARIES for w in words):
        return "is" if any(w in _COPULA for w in words) else None
    kept = [w for w in words if w not in _AUXILIARIES and w not in _LINKERS]
    while kept and kept[0] in _PREPOSITIONS and len(kept) > 1:
        kept.pop(0)
    content = [w for w in kept if w not in STOPWORDS or w in _PREPOSITIONS]
    # A bare preposition ("$5.2 million in 2022") or citation residue says too little to be a fact.
    if not any(w not in _PREPOSITIONS and w not in _NOT_RELATIONS and len(w) > 2 for w in content):
        return None
    if len(content) > max_words:  # keep the verb phrase's head and its closing preposition
        tail = [content[-1]] if content[-1] in _PREPOSITIONS else []
        content = content[: max_words - len(tail)] + tail
    return "_".join(w.replace("'", "").replace("-", "_") for w in content)


def header_concept(header: str) -> str:
    """A column header as the concept of its cells, when it reads like a category name."""
    words = header.split()
    if not words or len(words) > 4 or len(header) > 40:
        return ""
    if not any(len(w) >= 3 and w.isalpha() and w.lower() not in STOPWORDS for w in words):
        return ""
    return concept_name(header)


def column_relation(header: str) -> str:
    """A table column as a relation label: "Capacity (TEU)" -> "capacity_teu"."""
    words = [w.lower() for w in _WORD.findall(header)]
    return "_".join(words) or "value"


def years_in(text: str) -> set[str]:
    return set(_YEAR.findall(text))


def singular(word: str) -> str:
    lower = word.lower()
    if len(lower) > 4 and lower.endswith("ies"):
        return word[:-3] + "y"
    if len(lower) > 3 and lower.endswith("s") and not lower.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def concept_name(text: str) -> str:
    words = text.split()
    if not words:
        return ""
    words[-1] = singular(words[-1])
    name = " ".join(words)
    return name[:1].upper() + name[1:]


def quantity_concept(name: str) -> str:
    lower = name.lower()
    for unit, concept in _UNIT_CONCEPTS.items():
        if unit in lower:
            return concept
    unit = re.sub(r"^[^A-Za-z]*", "", name).strip()
    if unit and len(unit) <= 24:
        return concept_name(unit) if not unit.isupper() else unit
    return "Number"


class ConceptNamer:
    """Assigns each entity one concept, using what the whole document says."""

    def __init__(self, texts: list[str]) -> None:
        self.vocabulary: Counter = Counter()
        self.categories: dict[str, str] = {}  # normalised name -> category noun from a pattern
        for text in texts:
            self.vocabulary.update(w.lower() for w in _WORD.findall(text) if w.islower())
            for sentence in re.split(r"(?<=[.!?])\s+", text):
                self._patterns(sentence)

    def _patterns(self, sentence: str) -> None:
        match = _IS_A.match(sentence.strip())
        if match:
            subject = match.group("x").strip()
            noun = match.group("y")
            if len(subject.split()) <= 5 and subject[:1].isupper() and noun not in STOPWORDS:
                self.categories.setdefault(subject.lower(), singular(noun))
        for match in _SUCH_AS.finditer(sentence):
            noun = match.group("y").lower()
            if noun in STOPWORDS:
                continue
            for name in re.split(r",\s*|\s+and\s+|\s+or\s+", match.group("x")):
                name = name.strip()
                if name and name[:1].isupper():
                    self.categories.setdefault(name.lower(), singular(noun))

    def concept(self, name: str, type_: str) -> str:
        if type_ == "date":
            return "Year"
        if type_ == "quantity":
            return quantity_concept(name)
        if type_ in ("table", "figure", "reference", "table_header"):
            return _TYPE_CONCEPTS[type_]
        category = self.categories.get(name.lower())
        if category:
            return concept_name(category)
        words = name.split()
        if len(words) >= 2:
            head = words[-1].rstrip(".").lower()
            if head in _ORG_SUFFIXES:
                return _ORG_SUFFIXES[head]
            # A lower-case multi-word term is its head noun's kind ("container vessels" -> Vessel);
            # a capitalised name only when the document also uses the head as an ordinary word.
            used = name.islower() or self.vocabulary.get(head, 0) + self.vocabulary.get(singular(head), 0) > 0
            if used and head not in STOPWORDS and len(head) > 2 and head.isalpha():
                return concept_name(head)
        if name.islower() and len(words) == 1 and name.isalpha() and name not in STOPWORDS:
            return concept_name(name)
        return _TYPE_CONCEPTS.get(type_, "Thing")
