"""Answer-sized passages of an evidence chunk: sentences of text, rows of tables, captions of figures.

Every answerer reads the evidence through these; the terms of a passage are what it shares with the
question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hyperfolio.lexicon import QUESTION_WORDS, STOPWORDS
from hyperfolio.model import EvidenceItem, EvidencePackage
from hyperfolio.phrases import first_number, sentences

_STOP = STOPWORDS | QUESTION_WORDS
_TOKEN = re.compile(r"[^\W_]+(?:[.,][0-9]+)*%?")  # letters of any script, digits
# A cell that is a number: a currency or sign before it, a unit after it, a spread in brackets ("73.2%
# (1.9%)"); never a name with a digit in it ("PaLM-2L + RAG", "Q1 2023").
_NUMBER = re.compile(
    r"^\s*(?:[$€£¥(\[+−–]|US\$|USD|EUR|GBP|INR|Rs\.?|\s)*(-?\d[\d,]*(?:\.\d+)?)\s*%?"
    r"(?:\s*\(\s*[±+−-]?\s*\d[\d,.]*\s*%?\s*\))?[^\d]*$"
)


def cell_number(cell: str) -> float | None:
    """The number in a table cell such as '1,850', '$12.5', '42%'; None if the cell is not numeric."""
    return first_number(cell) if _NUMBER.match(cell.strip()) else None


@dataclass
class Passage:
    text: str
    item: EvidenceItem
    kind: str  # "sentence", "row", "caption", "derived"
    value: str = ""  # what a passage read off a table answers: the cell, or the row named by a superlative
    lead: int = 0  # characters at its start that are the section heading: matched, never an answer
    cells: tuple[str, ...] = ()  # a row's or a table answer's cells as the table writes them, the row's key first


def terms(text: str) -> list[str]:
    """Lower-cased content terms with a light plural fold, for overlap scoring."""
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if tok in _STOP:
            continue
        if len(tok) > 4 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.append(tok)
    return out


def heading_length(text: str, section_path: list[str]) -> int:
    """How many characters of a chunk's first sentence are the heading line it opens with (its citation
    names the section): its words help match the question, but no answer is read from them."""
    if section_path:
        heading = section_path[-1].strip()
        first, newline, _ = text.lstrip().partition("\n")
        if newline and heading and first.strip().lstrip("#").strip() == heading:
            return len(heading) + 1
    return 0


def passages(item: EvidenceItem, max_chars: int = 600) -> list[Passage]:
    """Split one evidence chunk into answer-sized candidates by modality."""
    chunk = item.chunk
    found: list[Passage] = []
    if chunk.modality == "table" and chunk.table:
        header = chunk.table[: chunk.table_header_rows]  # no header row: cells speak for themselves
        names = [c.strip() for c in header[-1]] if header else []
        if chunk.caption:
            found.append(Passage(chunk.caption, item, "caption"))
        for row in chunk.table[chunk.table_header_rows :]:
            cells = [c.strip() for c in row]
            if not any(cells):
                continue
            if names and len(names) == len(cells):
                text = "; ".join(f"{n}: {v}" if n else v for n, v in zip(names, cells, strict=True) if v)
            else:
                text = " | ".join(c for c in cells if c)
            found.append(Passage(text[:max_chars], item, "row", cells=tuple(c for c in cells if c)))
        return found
    if chunk.modality == "image":
        # OCR of a chart is mostly tick labels: quote the caption when there is one.
        text = chunk.caption or chunk.ocr_text or chunk.text
        if chunk.meta.get("description"):  # what a vision model saw in it, kept at indexing
            text = f"{chunk.caption or ''} {chunk.meta['description']}".strip()
        return [Passage(text[:max_chars], item, "caption")]
    lead = heading_length(chunk.text, chunk.section_path)
    for sentence in sentences(chunk.text):
        if len(sentence) < 3:
            continue
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            found.append(Passage(sentence[:cut], item, "sentence", lead=lead))
            sentence, lead = sentence[cut:].strip(), 0
        if sentence:
            found.append(Passage(sentence, item, "sentence", lead=lead))
        lead = 0  # only the first sentence opens with the heading
    return found


def disputed(passage: Passage, evidence: EvidencePackage) -> bool:
    """Whether the passage states a fact that was dropped as contradicted while indexing."""
    text = passage.text.lower()
    for item in evidence.meta.get("disputed", []):
        if passage.item.chunk.chunk_id not in item["chunks"]:
            continue
        head, _, tail = (part.strip().lower() for part in item["fact"].split(" | ", 2))
        if head in text and tail in text:
            return True
    return False
