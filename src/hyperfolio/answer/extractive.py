"""Answering from an evidence package.

The offline answerer is extractive: it breaks the evidence into candidate passages
(sentences of text chunks, rows of tables, captions and OCR of images), scores each
against the question by IDF-weighted term overlap, embedding similarity and the
retrieval rank of its chunk, and returns the best passages with their citations. A
language-model answerer plugs in behind the same `Answerer` protocol.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hyperfolio.answer.conflicts import ValueConflict, find_conflicts
from hyperfolio.embed.protocols import Embedder
from hyperfolio.lexicon import QUESTION_WORDS, STOPWORDS
from hyperfolio.model import Answer, Citation, EvidenceItem, EvidencePackage
from hyperfolio.phrases import first_number, sentences
from hyperfolio.retrieve.encoding import TextCache

INSUFFICIENT = "The indexed documents do not contain enough evidence to answer this question."
PASSAGE_VECTORS = 20_000  # passage vectors an answerer keeps across questions (about 1.5 kB each)
FIRST_PASSAGES = 8  # passages scored before the bar the others must be able to reach is known

_STOP = STOPWORDS | QUESTION_WORDS
_TOKEN = re.compile(r"[^\W_]+(?:[.,][0-9]+)*%?")  # letters of any script, digits
_QUANTITY = re.compile(
    r"\b(how (many|much|long|old|large|big|far)|what (percentage|percent|share|number|amount|year)|when|which year)\b",
    re.I,
)  # noqa: E501
_HAS_NUMBER = re.compile(r"\d")


_MAX_WORDS = re.compile(r"\b(highest|largest|most|biggest|greatest|maximum|max|top|best|leading)\b", re.I)
_MIN_WORDS = re.compile(r"\b(lowest|smallest|least|fewest|minimum|min|worst)\b", re.I)
_NUMBER = re.compile(r"^[^\d-]*(-?\d[\d,]*(?:\.\d+)?)\s*%?[^\d]*$")
# A citation marker as readers (and the web page) find them in an answer: [3], [1, 2], [ 4 ], [2-5].
MARKER = re.compile(r"\[\s*\d+(?:\s*[,;\u2013-]\s*\d+)*\s*\]")


def quoted(text: str) -> str:
    """A passage as quoted in an answer: its own bracketed numbers (a document's reference list,
    or a forged "[1] ...") become parenthesised, so only the answer's markers read as citations."""
    return MARKER.sub(lambda m: "(" + m.group(0)[1:-1].strip() + ")", text)


def cell_number(cell: str) -> float | None:
    """The number in a table cell such as '1,850', '$12.5', '42%'; None if the cell is not numeric."""
    return first_number(cell) if _NUMBER.match(cell.strip()) else None


class Answerer(Protocol):
    name: str

    def answer(self, question: str, evidence: EvidencePackage, on_text: Callable[[str], None] | None = None) -> Answer:
        """The cited answer; an answerer that writes it over time calls `on_text` with the text so far."""
        ...


@dataclass
class Passage:
    text: str
    item: EvidenceItem
    kind: str  # "sentence", "row", "caption"


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
            found.append(Passage(text[:max_chars], item, "row"))
        return found
    if chunk.modality == "image":
        # OCR of a chart is mostly tick labels: quote the caption when there is one.
        text = chunk.caption or chunk.ocr_text or chunk.text
        if chunk.meta.get("description"):  # what a vision model saw in it, kept at indexing
            text = f"{chunk.caption or ''} {chunk.meta['description']}".strip()
        return [Passage(text[:max_chars], item, "caption")]
    for sentence in sentences(chunk.text):
        if len(sentence) < 3:
            continue
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            found.append(Passage(sentence[:cut], item, "sentence"))
            sentence = sentence[cut:].strip()
        if sentence:
            found.append(Passage(sentence, item, "sentence"))
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


def table_extreme(question: str, item: EvidenceItem) -> Passage | None:
    """Answer 'which X has the highest/lowest Y' from a table's cells instead of quoting a row."""
    chunk = item.chunk
    want_max = bool(_MAX_WORDS.search(question))
    want_min = bool(_MIN_WORDS.search(question))
    if chunk.modality != "table" or not chunk.table or want_max == want_min:
        return None
    header_rows = chunk.table_header_rows
    if header_rows < 1:
        return None  # without column names there is nothing to match the question against
    header = [c.strip() for c in chunk.table[header_rows - 1]]
    body = [row for row in chunk.table[header_rows:] if len(row) == len(header)]
    if len(body) < 2:
        return None
    q_terms = set(terms(question))
    numeric: list[tuple[int, int]] = []  # (header overlap with question, column)
    label_col = None
    for col in range(len(header)):
        values = [cell_number(row[col]) for row in body]
        if sum(v is not None for v in values) >= max(2, len(body) // 2 + 1):
            overlap = len(q_terms & set(terms(header[col])))
            numeric.append((overlap, col))
        elif label_col is None:
            label_col = col
    if not numeric or label_col is None:
        return None
    overlap, col = max(numeric, key=lambda oc: (oc[0], -oc[1]))
    if overlap == 0:
        return None
    numbered = [(cell_number(row[col]), row) for row in body]
    scored = [(v, row) for v, row in numbered if v is not None]
    value, row = (max if want_max else min)(scored, key=lambda vr: vr[0])
    word = "highest" if want_max else "lowest"
    text = f"{row[label_col].strip()} has the {word} {header[col]}: {row[col].strip()}"
    if chunk.caption:
        text += f" ({chunk.caption})"
    return Passage(text, item, "derived")


def header_paths(table: list[list[str]], header_rows: int) -> list[list[str]]:
    """Each column's header path, top to bottom: a spanning cell left empty to its right (a merged
    cell) is carried over, so 'Q1 2023' over 'Organic' and 'Reported' names both."""
    width = max((len(r) for r in table), default=0)
    paths: list[list[str]] = [[] for _ in range(width)]
    for r in range(header_rows):
        row = [c.strip() for c in table[r]] + [""] * (width - len(table[r]))
        carried = ""
        for col, cell in enumerate(row):
            upper = r < header_rows - 1  # only upper rows span; the last row names each column itself
            carried = cell or (carried if upper else "")
            if carried and (not paths[col] or paths[col][-1] != carried):
                paths[col].append(carried)
    return paths


def table_cell(question: str, item: EvidenceItem) -> Passage | None:
    """Answer 'the Y of X' from the cell at X's row and Y's column, naming the row key and the whole
    header path, instead of quoting a row (or the table's total)."""
    chunk = item.chunk
    if chunk.modality != "table" or not chunk.table or chunk.table_header_rows < 1:
        return None
    q_terms = set(terms(question))
    header_rows = chunk.table_header_rows
    paths = header_paths(chunk.table, header_rows)
    body = [[c.strip() for c in row] for row in chunk.table[header_rows:]]
    best: tuple[float, int, int] | None = None
    for r, row in enumerate(body):
        key_col = next((c for c, cell in enumerate(row) if cell and cell_number(cell) is None), None)
        if key_col is None:
            continue
        key_terms = set(terms(row[key_col]))
        row_match = len(q_terms & key_terms) / len(key_terms) if key_terms else 0.0
        if row_match == 0:
            continue
        for col, cell in enumerate(row):
            if col == key_col or not cell or col >= len(paths):
                continue
            col_terms = set(terms(" ".join(paths[col])))
            col_match = len(q_terms & col_terms) / len(col_terms) if col_terms else 0.0
            if col_match == 0:
                continue
            score = row_match + col_match
            if best is None or score > best[0]:
                best = (score, r, col)
    if best is None:
        return None
    _, r, col = best
    row = body[r]
    key = next(cell for cell in row if cell and cell_number(cell) is None)
    text = f"{key}, {' > '.join(paths[col])}: {row[col]}"
    if chunk.caption:
        text += f" ({chunk.caption})"
    return Passage(text, item, "derived")


def pick(candidates: Sequence[Passage], scores: np.ndarray, limit: int, floor: float) -> list[int]:
    """The best passages, at most `limit`, none below `floor` and none quoting a text already picked."""
    chosen: list[int] = []
    for index in np.argsort(-scores):
        if len(chosen) >= limit or float(scores[index]) < floor:
            break
        if any(candidates[index].text == candidates[c].text for c in chosen):
            continue
        chosen.append(int(index))
    return chosen


def per_document(candidates: Sequence[Passage], scores: np.ndarray, floor: float) -> list[Passage]:
    """A question across documents: each document's best passage above `floor`, in document order of
    first appearance, so the answer has a part from every document the evidence holds."""
    best: dict[str, int] = {}
    for index in np.argsort(-scores):
        doc_id = candidates[index].item.chunk.doc_id
        if doc_id not in best and float(scores[index]) >= floor:
            best[doc_id] = int(index)
    order = list(dict.fromkeys(p.item.chunk.doc_id for p in candidates))
    return [candidates[best[d]] for d in order if d in best]


class ExtractiveAnswerer:
    """Offline answerer: picks the best passages of the evidence and cites them."""

    name = "extractive"

    def __init__(
        self,
        embedder: Embedder | None = None,
        max_passages: int = 2,
        min_score: float = 0.25,
        max_candidates: int = 200,
    ) -> None:
        self.embedder = embedder
        self.max_passages = max_passages
        self.min_score = min_score
        self.max_candidates = max_candidates
        # Vectors by text, kept across questions: a text's vector never changes, and the passages of the
        # chunks a collection keeps citing were most of what each question embedded again.
        self.passage_vectors = TextCache(PASSAGE_VECTORS)

    def _embed(self, embedder: Embedder, texts: list[str]) -> np.ndarray:
        """Rows for `texts`, embedding only those no earlier question embedded."""
        found = {t: v for t in dict.fromkeys(texts) if (v := self.passage_vectors.get(t)) is not None}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            for text, vector in zip(missing, embedder.embed(missing), strict=True):
                found[text] = self.passage_vectors.put(text, vector)
        return np.stack([found[t] for t in texts])

    def score(self, question: str, candidates: Sequence[Passage]) -> np.ndarray:
        """Each passage's score: IDF-weighted term overlap and similarity of meaning to the question, its
        chunk's retrieval rank, small bonuses. A passage that could not be chosen whatever its meaning
        scores -inf without being embedded (`_similarity`): embedding is most of an answer's time."""
        q_terms = set(terms(question))
        docs = [set(terms(p.text)) for p in candidates]
        n = len(candidates)
        df = Counter(t for d in docs for t in d)
        idf = {t: math.log(1 + (n + 1) / (df.get(t, 0) + 0.5)) for t in q_terms}
        total = sum(idf.values()) or 1.0
        lexical = np.array([sum(idf[t] for t in q_terms & d) / total for d in docs], dtype=np.float32)
        prior = np.array([1.0 / math.sqrt(p.item.rank) for p in candidates], dtype=np.float32)
        numbers = np.array([bool(_HAS_NUMBER.search(p.text)) for p in candidates], dtype=np.float32)
        # A value computed from a table's cells answers the question more directly than any quoted row.
        derived = np.array([p.kind == "derived" for p in candidates], dtype=np.float32)
        # Very short fragments rarely answer anything on their own.
        lengths = np.array([len(p.text.split()) for p in candidates], dtype=np.float32)
        quantity = bool(_QUANTITY.search(question))

        def combine(semantic: np.ndarray) -> np.ndarray:  # rises with `semantic`, every other term fixed
            scores = 0.45 * lexical + 0.45 * semantic + 0.10 * prior
            if quantity:
                scores += 0.05 * numbers
            scores += 0.15 * derived
            scores *= np.where(lengths < 4, 0.7, 1.0)
            return scores

        if self.embedder is None or not candidates:
            return combine(lexical)
        semantic = self._similarity(self.embedder, question, candidates, combine)
        return np.where(np.isnan(semantic), -np.inf, combine(np.nan_to_num(semantic)))

    def _similarity(
        self,
        embedder: Embedder,
        question: str,
        candidates: Sequence[Passage],
        combine: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """Each passage's similarity to the question (0..1); nan where no similarity could get it chosen.

        Passages embedded before and the few with the highest possible score (similarity 1) are scored
        first. That sets the bar: the score of the last passage the answer would take, or 0.8 x the best.
        Of the rest, only those whose highest possible score reaches the bar are embedded; the others
        could neither be the best nor displace a chosen one, so the answer is the one that embedding
        every passage would give.
        """
        texts = [p.text for p in candidates]
        semantic = np.full(len(texts), np.nan, dtype=np.float32)
        high = combine(np.ones(len(texts), dtype=np.float32))
        first = {i for i, text in enumerate(texts) if self.passage_vectors.get(text) is not None}
        first.update(int(i) for i in np.argsort(-high, kind="stable")[:FIRST_PASSAGES])

        def fill(rows: list[int]) -> None:
            if rows:
                vectors = self._embed(embedder, [question] + [texts[i] for i in rows])
                semantic[rows] = np.clip(vectors[1:] @ vectors[0], 0.0, 1.0)

        fill(sorted(first))
        scores = np.where(np.isnan(semantic), -np.inf, combine(np.nan_to_num(semantic)))
        best = float(scores.max())
        taken = pick(candidates, scores, self.max_passages, 0.8 * best)
        bar = float(scores[taken[-1]]) if taken and len(taken) >= self.max_passages else 0.8 * best
        fill([i for i in range(len(texts)) if np.isnan(semantic[i]) and high[i] >= bar])
        return semantic

    def answer(self, question: str, evidence: EvidencePackage, on_text: Callable[[str], None] | None = None) -> Answer:
        """Extractive: the answer is picked, not written, so `on_text` is never called."""
        candidates = [p for item in evidence.items for p in passages(item)][: self.max_candidates]
        candidates = [p for p in candidates if not disputed(p, evidence)]
        derived = [p for item in evidence.items if (p := table_extreme(question, item)) is not None]
        if not derived:  # a superlative ranks rows; otherwise a row and a column name one cell
            derived = [p for item in evidence.items if (p := table_cell(question, item)) is not None]
        candidates = derived + candidates
        if not candidates:
            return Answer(question, INSUFFICIENT, [], evidence, sufficient=False, answerer=self.name)
        scores = self.score(question, candidates)
        best = float(scores.max())
        if best < self.min_score:
            return Answer(question, INSUFFICIENT, [], evidence, sufficient=False, answerer=self.name)
        if evidence.meta.get("across_documents"):
            chosen = per_document(candidates, scores, self.min_score)
        else:
            chosen = [candidates[i] for i in pick(candidates, scores, self.max_passages, 0.8 * best)]
        citations: list[Citation] = []
        for passage in chosen:
            if passage.item.citation not in citations:
                citations.append(passage.item.citation)
        named = len({p.item.chunk.doc_id for p in chosen}) > 1  # say whose each part is
        parts = []
        for passage in chosen:
            marker = citations.index(passage.item.citation) + 1
            whose = f"{passage.item.citation.title}: " if named else ""
            parts.append(f"{whose}{quoted(passage.text)} [{marker}]")
        conflicts = find_conflicts(question, evidence) if evidence.meta.get("across_documents") else []
        parts += conflict_lines(conflicts, evidence, citations)
        return Answer(
            question=question,
            text=" ".join(parts),
            citations=citations,
            evidence=evidence,
            sufficient=True,
            answerer=self.name,
            support=[p.text for p in chosen],
            meta={"conflicts": [c.as_dict() for c in conflicts]} if conflicts else {},
        )


def conflict_lines(
    conflicts: Sequence[ValueConflict], evidence: EvidencePackage, citations: list[Citation]
) -> list[str]:
    """One sentence per conflict, citing the chunk of each side (added to `citations` when new)."""
    by_chunk = {item.chunk.chunk_id: item.citation for item in evidence.items}
    lines = []
    for conflict in conflicts:
        markers = []
        for side in conflict.sides:
            citation = by_chunk[side.chunk_id]
            if citation not in citations:
                citations.append(citation)
            markers.append(f"[{citations.index(citation) + 1}]")
        lines.append(f"{quoted(conflict.line())} {''.join(dict.fromkeys(markers))}")
    return lines
