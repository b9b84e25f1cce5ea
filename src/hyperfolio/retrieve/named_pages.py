"""Pages a question names ("on page 14", "page fourteen", "the second page", "the cover"), put first.

A question that says where to look has said more than any ranking can find: the chunks of the page it
names lead its evidence, whatever the strategy, and the pages it names lead the page ranking. A page
is named as printed (a manual's "page 28" is the PDF's 29: `parse/pdf/folios.py` reads the folios, and
a PDF's own labels count the same) and, failing that, as counted from the first page; "the second
page", "the last page" and "the cover" are always counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from hyperfolio.answer.expected import core_question
from hyperfolio.lexicon import CASE_PARTIES, NUMBER_WORDS, ORDINAL_WORDS
from hyperfolio.model import Chunk, EvidenceItem, EvidencePackage, PageScore
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.evidence import brought_in, led_by

_PAGE_WORDS = {word: int(value) for word, value in NUMBER_WORDS.items() if value <= 20}  # "page fourteen"
_NUMBERED = re.compile(
    r"\b(?:pages?|slides?|p\.)\s*(\d{1,5}(?:\s*(?:,|and|&)\s*\d{1,5})*)\b|"
    rf"\b(?:pages?|slides?)\s+({'|'.join(_PAGE_WORDS)})\b",
    re.I,
)
_COUNTED = re.compile(
    r"\b(?:the\s+)?(second[- ]to[- ]last|second[- ]last|penultimate|last|final|"
    rf"{'|'.join(ORDINAL_WORDS)})\s+(?:page|slide)\b|"
    r"\b(?:page|slide)\s+at\s+the\s+(second[- ]last|last)\b|"
    r"\b(?:on|in|of)\s+the\s+(cover)(?:\s+page)?\b(?!\s+(?:letter|story|image))",
    re.I,
)
# What a document's first page says of it, asked without naming a page: a case's parties, its number and
# filing, the document's date ("Who is the defendant of this case?", "What is the USCA case number?").
_FIRST_PAGE_ASKED = re.compile(
    r"^\s*(?:who|what|which)\b[^?]*\b(?:is|are|was|were)\s+(?:an?|the)\s+"
    rf"(?:{'|'.join(CASE_PARTIES)})s?\b(?:\s+(?:of|in)\s+(?:this|the)\s+\w+)?\W*$|"
    r"\b(?:case|docket|filing)\s+(?:number|no\.?|id)\b|"
    r"\bdate of (?:the|this) (?:document|report|letter|filing|opinion)\b",
    re.I,
)
_FROM_END = {"last": -1, "final": -1, "second last": -2, "second-last": -2, "penultimate": -2}


@dataclass(frozen=True)
class AskedPages:
    """The pages a question names: `numbers` as printed (or counted, when nothing prints them),
    `counted` from the first page (1 the first, -1 the last)."""

    numbers: frozenset[int] = frozenset()
    counted: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.numbers or self.counted)


def asked_pages(question: str) -> AskedPages:
    """The pages `question` names, if any; not those of an example of how to write the answer ("formatted
    as a list like ['Page 2', 'Page 4']"). A question after what a first page says (a case's parties,
    number or date) names the first page."""
    question = core_question(question)
    numbers: set[int] = set()
    for match in _NUMBERED.finditer(question):
        if match.group(1):
            numbers |= {int(n) for n in re.findall(r"\d+", match.group(1))}
        else:
            numbers.add(_PAGE_WORDS[match.group(2).lower()])
    counted: set[int] = set()
    for match in _COUNTED.finditer(question):
        said = " ".join((match.group(1) or match.group(2) or match.group(3)).lower().replace("-", " ").split())
        said = said.replace("second to last", "second last")
        if said == "cover":
            counted.add(1)
        elif said in _FROM_END:
            counted.add(_FROM_END[said])
        else:
            counted.add(ORDINAL_WORDS[said])
    if not numbers and not counted and _FIRST_PAGE_ASKED.search(question):
        counted.add(1)
    return AskedPages(frozenset(numbers), frozenset(counted))


def label_numbers(label: str) -> set[int]:
    """The page numbers a printed label stands for: "28" -> {28}, a spread's "16-17" -> {16, 17}; a
    label like "iv" or "slide 3" -> {} (a slide is named by its number, which is its page)."""
    return {int(n) for n in label.split("-") if n.isdigit()} if re.fullmatch(r"\d+(?:-\d+)?", label) else set()


def named_in(asked: AskedPages, page: int, label: str) -> bool:
    """Whether a page (its number and printed label) is one the question names by number."""
    printed = label_numbers(label)
    return bool(asked.numbers & printed) if printed else page in asked.numbers


def resolve(asked: AskedPages, labels: dict[int, str]) -> list[int]:
    """The pages of one document (`labels`: every page number -> its printed label, '' for none) that
    the question names: a number as printed where a page prints it, else as counted."""
    count = max(labels, default=0)
    found: list[int] = []
    for number in sorted(asked.numbers):
        printed = [p for p, label in sorted(labels.items()) if number in label_numbers(label)]
        found += printed or ([number] if number in labels else [])
    for position in sorted(asked.counted):
        page = position if position > 0 else count + 1 + position
        if page in labels:
            found.append(page)
    return sorted(set(found))


def page_labels(ctx: RetrievalContext, doc_id: str) -> dict[int, str]:
    """Every page of a document with its printed label, kept while the collection's documents stay."""

    def read() -> dict[int, str]:
        labels = {page.number: "" for page in ctx.store.get_pages(doc_id)}
        for chunk in ctx.store.iter_chunks(doc_id):
            labels[chunk.page] = labels.get(chunk.page) or str(chunk.meta.get("page_label", ""))
        return labels

    return ctx.kept(("page-labels", doc_id), read)


def _items_of(pages: list[tuple[str, int]], ctx: RetrievalContext, score: float) -> list[EvidenceItem]:
    """The chunks of the named pages, in reading order, as evidence."""
    found = ctx.store.page_chunk_texts(pages)
    ids = [chunk_id for key in pages for chunk_id, _ in found.get(key, [])]
    chunks: dict[str, Chunk] = {c.chunk_id: c for c in ctx.store.get_chunks(ids)}
    ordered = sorted(chunks.values(), key=lambda c: (pages.index((c.doc_id, c.page)), c.order))
    return brought_in(ordered, [], score, ctx.titles, "named_page")


def named_pages_first(evidence: EvidencePackage, query: Query, ctx: RetrievalContext) -> EvidencePackage:
    """The evidence with the pages the question names first (in the documents it is scoped to, else in
    the document of its best evidence); unchanged when it names none or none exists."""
    asked = asked_pages(query.text)
    if not asked or not evidence.items:
        return evidence
    docs = list(query.doc_ids) if query.doc_ids else [evidence.items[0].chunk.doc_id]
    wanted = [(doc, page) for doc in docs for page in resolve(asked, page_labels(ctx, doc))]
    if not wanted:
        return evidence
    top = max(item.score for item in evidence.items)
    first = [item for item in evidence.items if (item.chunk.doc_id, item.chunk.page) in wanted]
    if not first:
        first = _items_of(wanted, ctx, top)
    items = led_by(evidence.items, first, max(len(evidence.items), query.k))
    named = {(p.doc_id, p.page): p for p in evidence.ranked_pages}
    leading = [named.get(key) or PageScore(key[0], key[1], top) for key in wanted]
    ranked = leading + [p for p in evidence.ranked_pages if (p.doc_id, p.page) not in wanted]
    meta = {**evidence.meta, "named_pages": [[doc, page] for doc, page in wanted]}  # answers are read there
    return replace(evidence, items=items, ranked_pages=ranked if evidence.ranked_pages else [], meta=meta)
