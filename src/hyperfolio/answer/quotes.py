"""What answers inside a cited block: the sentence that holds the answer, or the answering row's cells.

A citation names a whole chunk (a paragraph, a table), and a reader looks for the answer inside it. The
extractive answerer knows the passage it read its answer from: a sentence (the quote), a table row, or
the cells a table answer read (the row's key and the value). A language model's answer is matched back
to the sentence (or row) of each cited chunk that shares most of its words. The faces find these texts
on the page (`viz/regions.py`) and mark them inside the block's outline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from hyperfolio.answer.passages import Passage, passages, terms
from hyperfolio.model import Citation, EvidenceItem

_TOKEN = re.compile(r"[^\W_]+")
NUMBER_WEIGHT = 2  # a number the answer and a passage share says more than a shared word
LONG_QUOTE_WORDS = 30  # a "sentence" this long is lines the sentence splitter could not part (a chart's labels)
AROUND_WORDS = 10  # words either side of the answer quoted from a long run without sentences
_PIECE_END = re.compile(r"(?<=[.!?;])\s+(?=\S)|\s*[\u25cf\u2022\u25aa\u25a0\u25e6]\s*")  # a sentence's end, a bullet


def _tokens(text: str) -> set[str]:
    """Lower-cased words and numbers, thousands separators dropped ("1,850" = "1850")."""
    return set(_TOKEN.findall(re.sub(r"(?<=\d),(?=\d)", "", text.lower())))


def holds(cell: str, answer: str) -> bool:
    """Whether a table cell states (part of) an answer: the cell's words all in the answer ("1,850" in
    "1,850 MW"), or the answer's all in the cell ("North Sea" in "North Sea (offshore)")."""
    cell_words, answer_words = _tokens(cell), _tokens(answer)
    return bool(cell_words) and bool(answer_words) and (cell_words <= answer_words or answer_words <= cell_words)


def narrowed(text: str, answer: str) -> str:
    """The part of a long passage that holds the answer, as written in it: the sentence (a bullet or a
    sentence's end parts them), else the words around it; the passage itself when it is short or does
    not say the answer as given."""
    if len(text.split()) <= LONG_QUOTE_WORDS or not answer.strip():
        return text
    said = re.search(rf"(?<!\w){re.escape(answer.strip())}(?!\w)", text, re.I)  # "1" is not in "10"
    if said is None:
        return text
    at, answer = said.start(), said.group(0)
    start, end = 0, len(text)
    for cut in _PIECE_END.finditer(text):
        if cut.end() <= at:
            start = cut.end()
        elif cut.start() >= at + len(answer):
            end = cut.start()
            break
    piece = text[start:end].strip()
    if len(piece.split()) <= LONG_QUOTE_WORDS:
        return piece
    before = text[start:at].split()[-AROUND_WORDS:]
    after = text[at + len(answer) : end].split()[:AROUND_WORDS]
    return " ".join([*before, answer, *after])


def passage_quote(passage: Passage, answer: str = "") -> tuple[str, list[str]]:
    """(quote, cells) of the passage an answer was read from: a sentence without the heading its chunk
    opens with (of a long run of lines, the part that holds `answer`: `narrowed`); a table row's key and
    the cells that hold `answer` (every cell without one); a table answer's cells. Nothing for a figure
    (the figure is the region) or a value composed from a table without its cells."""
    if passage.item.chunk.modality == "image":
        return "", []
    if passage.cells:
        if passage.kind == "row" and answer:
            holding = [c for c in passage.cells if holds(c, answer)]
            if holding:
                return "", list(dict.fromkeys([passage.cells[0], *holding]))
        return "", list(passage.cells)
    if passage.kind == "derived":
        return "", []
    return narrowed(passage.text[passage.lead :].strip(), answer), []


def answering(
    citations: Sequence[Citation], read_from: Sequence[Passage], chosen: Sequence[Passage], short: str = ""
) -> list[Citation]:
    """Each citation with what answers inside its block: the passages the answer was read from
    (`read_from`: the short answer's passage, a computation's operands) where they are in its chunk,
    else the first passage the answer quotes from it (`chosen`). The citations are copies: the evidence
    items keep theirs."""
    out = []
    for citation in citations:
        own = [p for p in read_from if p.item.chunk.chunk_id == citation.chunk_id]
        if not own:
            own = [p for p in chosen if p.item.chunk.chunk_id == citation.chunk_id][:1]
            short_here = ""
        else:
            short_here = short
        quote, cells = "", []
        for passage in own:
            said, its_cells = passage_quote(passage, short_here)
            quote = quote or said
            cells += its_cells
        out.append(replace(citation, quote=quote, cells=list(dict.fromkeys(cells))) if own else citation)
    return out


def _weight(answer: set[str], text: str) -> int:
    shared = answer & {t.replace(",", "") for t in terms(text)}
    return sum(NUMBER_WEIGHT if any(ch.isdigit() for ch in t) else 1 for t in shared)


def overlapping(item: EvidenceItem, answer: str) -> Citation:
    """The item's citation with the passage of its chunk that shares most of `answer`'s words (a row by
    its cells, not its column names; numbers count double) as what answers; as it was when none
    shares any."""
    wanted = {t.replace(",", "") for t in terms(answer)}
    best: Passage | None = None
    best_weight = 0
    for passage in passages(item):
        weight = _weight(wanted, " ".join(passage.cells) if passage.cells else passage.text[passage.lead :])
        if weight > best_weight:
            best, best_weight = passage, weight
    if best is None:
        return item.citation
    quote, cells = passage_quote(best, answer)
    return replace(item.citation, quote=quote, cells=cells)
