"""Questions about what a whole document holds, read off all of it rather than off its best chunks.

"How many tables are in the document?" is no passage's to answer: the count is of the numbered tables
the document labels ("Table 1" ... "Table 3"), wherever they stand; "how many tables include 'F1'"
counts those whose caption or cells say it. "List all pages Exhibit P-10 is mentioned on" and "on which
pages does a web address appear" list the pages that mention it. The retrieval step reads the
document (the one the question is scoped to, else that of its best evidence), puts what it found in
`evidence.meta` and the chunks that show it first in the evidence; `answer/inventory.py` says it.
A count whose condition the labels cannot check ("how many figures show people") is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hyperfolio.answer.expected import Kind, core_question
from hyperfolio.answer.spans import identifier_spans
from hyperfolio.labels import Label, label_mentions, opening_label
from hyperfolio.model import Chunk, EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.evidence import asked_document, read_whole_first, reading_order
from hyperfolio.retrieve.named_pages import page_labels

_PART_NOUNS = {
    "figure": "figure", "figures": "figure", "table": "table", "tables": "table", "chart": "chart",
    "charts": "chart", "exhibit": "exhibit", "exhibits": "exhibit", "appendix": "appendix",
    "appendices": "appendix", "appendixes": "appendix", "annex": "appendix", "annexes": "appendix",
    "chapter": "chapter", "chapters": "chapter",
}  # fmt: skip
_COUNTED = re.compile(
    rf"\bhow many\s+(?:distinct\s+|different\s+|unique\s+|separate\s+)?({'|'.join(_PART_NOUNS)})\b(.*)", re.I | re.S
)
# Words that place a count in the whole document and say nothing about which parts count.
_SCOPE_WORDS = frozenset(
    "are is were was there in on of the this that a an its it total altogether overall all entire whole "
    "document paper report article file deck slides slide presentation guidebook guide book manual brochure "
    "study thesis filing appear appears appeared included include includes contained contain contains "
    "shown show shows presented present mentioned mention listed list used use provided given referenced "
    "cited does do did have has had".split()
)
_QUOTED = re.compile(r"[\"\u201c\u2018']([^\"\u201d\u2019']{1,60})[\"\u201d\u2019']")
_LISTS_PAGES = re.compile(r"\b(?:list|which|what)\b[^?.]*\bpages\b|\bpages?\b[^?.]*\blist\b|\bpage numbers\b", re.I)
_EXAMPLE = re.compile(r"\[[^\]]*\]")
_NAMED_KIND = re.compile(r"\b(web\s*sites?|web address|urls?|e-?mails?|(?:tele)?phone|fax)\b", re.I)


@dataclass(frozen=True)
class Tally:
    """A count the question asks of the whole document: of which part, and what each must say."""

    part: str  # "table"
    noun: str  # as the question says it: "tables"
    term: str | None = None  # a quoted condition: tables that include "F1"


def asked_tally(question: str) -> Tally | None:
    """The count of a document's labelled parts `question` asks for, if that is what it asks."""
    core = core_question(question)
    asked = _COUNTED.search(core)
    if asked is None:
        return None
    quoted = _QUOTED.search(asked.group(2))
    rest = set(re.findall(r"[^\W\d_]+", asked.group(2).lower())) - _SCOPE_WORDS
    if rest and quoted is None:
        return None  # "how many figures show people": a condition no label answers
    return Tally(_PART_NOUNS[asked.group(1).lower()], asked.group(1).lower(), quoted.group(1) if quoted else None)


def asked_mentions(question: str) -> tuple[str, Kind | None] | None:
    """What `question` asks the pages of ("Exhibit P-10", a quoted term, or a kind of identifier such as a
    web address), when it asks for a list of pages; None otherwise."""
    if not _LISTS_PAGES.search(question):
        return None
    core = _EXAMPLE.sub(" ", core_question(question))  # ["p1", "p2"] shows the answer's form, not its subject
    labels = label_mentions(core)
    if labels:
        return str(labels[0]), None
    quoted = _QUOTED.search(core)
    if quoted is not None:
        return quoted.group(1), None
    named = _NAMED_KIND.search(core)
    return (named.group(1), Kind.IDENTIFIER) if named else None


def _labelled(ctx: RetrievalContext, doc_id: str) -> list[tuple[Label, Chunk]]:
    """Every label mention of a document with its chunk, in reading order."""

    def read() -> list[tuple[Label, Chunk]]:
        return [(label, chunk) for chunk in reading_order(ctx, doc_id) for label in label_mentions(chunk.text)]

    return ctx.kept(("labels", doc_id), read)


def _says(chunk: Chunk, term: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(term)}(?!\w)", chunk.text, re.I) is not None


def tally(tallied: Tally, mentions: list[tuple[Label, Chunk]]) -> dict[str, Chunk]:
    """The document's distinct labels of the asked part -> the chunk that shows each (its caption, else
    its first mention); with a condition, only those whose captioned chunks say the term."""
    first: dict[str, Chunk] = {}
    captioned: dict[str, list[Chunk]] = {}
    for label, chunk in mentions:
        if label.part != tallied.part:
            continue
        key = str(label)
        first.setdefault(key, chunk)
        opens = opening_label(chunk.caption or chunk.text)
        if opens is not None and str(opens) == key:
            captioned.setdefault(key, []).append(chunk)
    shown = {key: captioned[key][0] if key in captioned else chunk for key, chunk in first.items()}
    if tallied.term is not None:
        return {k: c for k, c in shown.items() if any(_says(x, tallied.term) for x in captioned.get(k, []))}
    return shown


_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50}
_NUMBERED = re.compile(r"([A-Z]{0,2})-?(\d+)[a-z]?")


def _roman(text: str) -> int:
    values = [_ROMAN[ch] for ch in text]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def numbered_count(idents: list[str]) -> int:
    """How many parts a document numbers, from the identifiers it was found to mention: parts are numbered
    in order, so "Chapter 1" and "Chapter 9" say nine chapters where the others went unlabelled, and each
    series counts apart ("P-1" ... "P-26" and "D-1" ... "D-5"); "3.2" and the like count as found."""
    roman = any(len(i) > 1 and set(i) <= set(_ROMAN) for i in idents)
    highest: dict[str, int] = {}
    loose = 0
    for ident in idents:
        if roman and set(ident) <= set(_ROMAN):
            series, place = "roman", _roman(ident)
        elif len(ident) == 1 and ident.isalpha():
            series, place = "letter", ord(ident) - ord("A") + 1
        elif (numbered := _NUMBERED.fullmatch(ident)) is not None:
            series, place = numbered.group(1), int(numbered.group(2))
        else:
            loose += 1
            continue
        highest[series] = max(highest.get(series, 0), place)
    return sum(highest.values()) + loose


def mention_pages(target: str, kind: Kind | None, ctx: RetrievalContext, doc_id: str) -> dict[int, Chunk]:
    """The pages of a document that mention `target` (a label or a term; an identifier of the kind the
    question names when `kind` is given) -> the first chunk that does."""
    found: dict[int, Chunk] = {}
    for chunk in reading_order(ctx, doc_id):
        if chunk.page in found:
            continue
        if kind is not None:
            said = bool(identifier_spans(chunk.text, target))
        else:
            said = any(str(label) == target for label in label_mentions(chunk.text)) or _says(chunk, target)
        if said:
            found[chunk.page] = chunk
    return found


def inventory_first(evidence: EvidencePackage, query: Query, ctx: RetrievalContext) -> EvidencePackage:
    """The evidence with what the whole document says about the question's count or page list in
    `meta["inventory"]` and the chunks that show it first; unchanged when the question asks neither or
    the document labels nothing of the kind."""
    tallied = asked_tally(query.text)
    listed = None if tallied else asked_mentions(query.text)
    doc_id = asked_document(evidence, query)
    if (tallied is None and listed is None) or doc_id is None:
        return evidence
    labels = page_labels(ctx, doc_id)
    found: dict[str, Any]
    if tallied is not None:
        shown = tally(tallied, _labelled(ctx, doc_id))
        if not shown:
            return evidence
        # With a condition, only those found to meet it count; else as many as the numbering says.
        idents = [key.split(" ", 1)[1] for key in shown]
        count = len(shown) if tallied.term else numbered_count(idents)
        found = {"count": count, "part": tallied.part, "noun": tallied.noun, "term": tallied.term}
        chunks = list(shown.values())
        found["labels"] = [[key, c.page, labels.get(c.page, "")] for key, c in shown.items()]
    else:
        assert listed is not None
        pages = mention_pages(listed[0], listed[1], ctx, doc_id)
        if not pages:
            return evidence
        found = {"pages_of": listed[0], "pages": [[page, labels.get(page, "")] for page in sorted(pages)]}
        chunks = [pages[page] for page in sorted(pages)]
    found["chunks"] = [c.chunk_id for c in chunks]
    return read_whole_first(evidence, query, ctx, chunks, found, "inventory")
