"""Questions about a document's outline, read off its headings rather than off its best chunks.

"Which subsections does the section 'Augmentation process in RAG' include?" is answered by the headings
the parser set under that one (each chunk's section path), in reading order, wherever they stand; no
passage lists them. The retrieval step puts them in `evidence.meta["inventory"]` with the chunk that opens
each first in the evidence, as the document's counts are (`retrieve/inventory.py`); `answer/inventory.py`
says them.
"""

from __future__ import annotations

import re

from hyperfolio.answer.expected import core_question
from hyperfolio.model import Chunk, EvidencePackage
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.evidence import asked_document, read_whole_first, reading_order

_ASKS_PARTS = re.compile(r"\b(sub-?sections?|sub-?headings?|sub-?chapters?|sections|parts)\b", re.I)
_QUOTED = re.compile(r"[\"\u201c\u2018']([^\"\u201d\u2019']{2,120})[\"\u201d\u2019']")
_NAMED = re.compile(r"\b(section|chapter|part)\s+(?:on\s+|about\s+|called\s+|titled\s+)?([A-Z0-9][^?]{0,100})", re.I)
_VERB = re.compile(r"\s+(?:ha(?:ve|s)|includes?|contains?|consists?|covers?|holds?|comprises?|is|are)\b.*", re.I)


def _folded(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def asked_outline(question: str) -> str | None:
    """The heading whose parts `question` asks for ("section 'X'", "chapter 3"), or None."""
    core = core_question(question)
    if not _ASKS_PARTS.search(core):
        return None
    quoted = _QUOTED.search(core)
    if quoted is not None:
        return quoted.group(1).strip(" .")
    named = _NAMED.search(core)
    if named is None:
        return None
    name = _VERB.sub("", named.group(2)).strip(" .")
    return f"{named.group(1)} {name}" if re.fullmatch(r"[\d.]+|[IVXL]+", name) else name  # "chapter 3"


def sub_headings(heading: str, chunks: list[Chunk]) -> dict[str, Chunk]:
    """The headings set directly under `heading` (matched without case or punctuation, as the title or
    the start of it: "chapter 3" finds "Chapter 3: Results" and "3 Results") -> the first chunk under each."""
    wanted = _folded(heading)
    numbered = re.fullmatch(r"(?:section|chapter|part) ([\w.]+)", wanted)
    openings = [wanted, numbered.group(1)] if numbered else [wanted] if len(wanted) >= 4 else []
    found: dict[str, Chunk] = {}
    for chunk in chunks:
        path = list(chunk.section_path)
        for depth, title in enumerate(path[:-1]):
            folded = _folded(title)
            if folded == wanted or any(folded.startswith(opening + " ") for opening in openings):
                found.setdefault(path[depth + 1], chunk)
                break
    return found


def outline_first(evidence: EvidencePackage, query: Query, ctx: RetrievalContext) -> EvidencePackage:
    """The evidence with the headings under the one the question names in `meta["inventory"]` and the
    chunks opening them first; unchanged when it asks for no parts or the document sets none under it."""
    heading = asked_outline(query.text)
    doc_id = asked_document(evidence, query) if heading is not None else None
    if heading is None or doc_id is None:
        return evidence
    parts = sub_headings(heading, reading_order(ctx, doc_id))
    if not parts:
        return evidence
    opening = list(parts.values())
    found = {"outline_of": heading, "parts": list(parts), "chunks": [c.chunk_id for c in opening]}
    return read_whole_first(evidence, query, ctx, opening, found, "outline")
