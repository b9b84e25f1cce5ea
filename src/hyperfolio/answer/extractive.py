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
from typing import Protocol

import numpy as np

from hyperfolio.answer.arithmetic import compute
from hyperfolio.answer.conflicts import ValueConflict, find_conflicts
from hyperfolio.answer.expected import core_question
from hyperfolio.answer.inventory import inventory_answer
from hyperfolio.answer.passages import Passage, disputed, passages, terms
from hyperfolio.answer.quotes import answering
from hyperfolio.answer.row_sums import row_sum
from hyperfolio.answer.short import short_answer
from hyperfolio.answer.support import anchor_share, missing_anchors
from hyperfolio.answer.table_answers import table_category, table_cell, table_extreme, table_filter
from hyperfolio.embed.protocols import Embedder
from hyperfolio.model import Answer, Citation, EvidenceItem, EvidencePackage
from hyperfolio.retrieve.encoding import TextCache

INSUFFICIENT = "The indexed documents do not contain enough evidence to answer this question."
PASSAGE_VECTORS = 20_000  # passage vectors an answerer keeps across questions (about 1.5 kB each)
FIRST_PASSAGES = 8  # passages scored before the bar the others must be able to reach is known

_QUANTITY = re.compile(
    r"\b(how (many|much|long|old|large|big|far)|what (percentage|percent|share|number|amount|year)|when|which year)\b",
    re.I,
)  # noqa: E501
_HAS_NUMBER = re.compile(r"\d")

# A citation marker as readers (and the web page) find them in an answer: [3], [1, 2], [ 4 ], [2-5].
MARKER = re.compile(r"\[\s*\d+(?:\s*[,;\u2013-]\s*\d+)*\s*\]")


def quoted(text: str) -> str:
    """A passage as quoted in an answer: its own bracketed numbers (a document's reference list,
    or a forged "[1] ...") become parenthesised, so only the answer's markers read as citations."""
    return MARKER.sub(lambda m: "(" + m.group(0)[1:-1].strip() + ")", text)


class Answerer(Protocol):
    name: str

    def answer(self, question: str, evidence: EvidencePackage, on_text: Callable[[str], None] | None = None) -> Answer:
        """The cited answer; an answerer that writes it over time calls `on_text` with the text so far."""
        ...


def read_items(evidence: EvidencePackage) -> list[EvidenceItem]:
    """The evidence an answer is read from: the pages the question names when it names some and the
    evidence holds them (`retrieve/named_pages.py`: "on page 28" means there), else all of it (the
    answerer reads all of it too when the named pages miss what the question names)."""
    named = {(doc, page) for doc, page in evidence.meta.get("named_pages", [])}
    on_named = [item for item in evidence.items if (item.chunk.doc_id, item.chunk.page) in named]
    return on_named or list(evidence.items)


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
        min_score: float = 0.15,
        max_candidates: int = 200,
        min_anchor_share: float = 0.0,
    ) -> None:
        self.embedder = embedder
        self.max_passages = max_passages
        self.min_score = min_score
        self.min_anchor_share = min_anchor_share  # answer/support.py: abstain when the evidence misses the names
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

    def candidates(self, core: str, items: Sequence[EvidenceItem], evidence: EvidencePackage) -> list[Passage]:
        """The passages an answer is chosen from: what a table's cells answer first (a superlative ranks
        rows, a threshold filters them, else a row and a column name a cell), then the items' passages."""
        found = [p for item in items for p in passages(item)][: self.max_candidates]
        found = [p for p in found if not disputed(p, evidence)]
        derived = [
            p
            for item in items
            if (p := table_extreme(core, item) or table_filter(core, item) or table_category(core, item))
        ]
        if not derived:
            derived = [p for item in items if (p := table_cell(core, item)) is not None]
        return derived + found

    def answer(self, question: str, evidence: EvidencePackage, on_text: Callable[[str], None] | None = None) -> Answer:
        """Extractive: the answer is picked, not written, so `on_text` is never called."""
        read_whole = inventory_answer(question, evidence, self.name)  # "how many tables are in the document"
        if read_whole is not None:
            return read_whole
        core = core_question(question)  # without "Format your answer as ...": those words match nothing
        items = read_items(evidence)
        candidates = self.candidates(core, items, evidence)
        if len(items) < len(evidence.items) and anchor_share(core, candidates) < self.min_anchor_share:
            items = list(evidence.items)  # the named page does not say what the question names: read it all
            candidates = self.candidates(core, items, evidence)
        if not candidates:
            return Answer(question, INSUFFICIENT, [], evidence, sufficient=False, answerer=self.name)
        scores = self.score(core, candidates)
        best = float(scores.max())
        if best < self.min_score:
            return Answer(question, INSUFFICIENT, [], evidence, sufficient=False, answerer=self.name)
        if anchor_share(core, candidates) < self.min_anchor_share:
            closest = candidates[int(np.argmax(scores))]
            return not_found(question, evidence, closest, missing_anchors(core, candidates), self.name)
        across = bool(evidence.meta.get("across_documents"))
        if across:
            chosen = per_document(candidates, scores, self.min_score)
        else:
            chosen = [candidates[i] for i in pick(candidates, scores, self.max_passages, 0.8 * best)]
        computed = None if across else row_sum(core, items) or compute(core, items, candidates)
        short = None if across or computed else short_answer(question, candidates, scores)
        first = [o.passage for o in computed.operands] if computed else [short.passage] if short else []
        if computed is not None:  # the cited operands are the quote
            chosen = first
        elif first:  # what the short answer is read from is quoted first
            chosen = list({id(p): p for p in [*first, *chosen]}.values())  # none of the best dropped
        citations: list[Citation] = []
        for passage in chosen:
            if passage.item.citation not in citations:
                citations.append(passage.item.citation)
        named = len({p.item.chunk.doc_id for p in chosen}) > 1  # say whose each part is
        parts = []
        if computed is not None:
            markers = "".join(dict.fromkeys(f"[{citations.index(p.item.citation) + 1}]" for p in first))
            parts.append(f"{computed.answer()} {markers} \u2014 {computed.shown()}.")
        elif short is not None and short.text != short.passage.text:
            parts.append(f"{quoted(short.text)} [{citations.index(short.passage.item.citation) + 1}] \u2014")
        for passage in chosen:
            marker = citations.index(passage.item.citation) + 1
            whose = f"{passage.item.citation.title}: " if named else ""
            parts.append(f"{whose}{quoted(passage.text)} [{marker}]")
        conflicts = find_conflicts(question, evidence) if evidence.meta.get("across_documents") else []
        parts += conflict_lines(conflicts, evidence, citations)
        return Answer(
            question=question,
            text=" ".join(parts),
            citations=answering(citations, first, chosen, short.text if short else ""),  # what answers in each
            evidence=evidence,
            sufficient=True,
            answerer=self.name,
            support=[p.text for p in chosen],
            short=computed.answer() if computed else short.text if short else "",
            meta={"support_chunks": [p.item.chunk.chunk_id for p in chosen]}
            | ({"conflicts": [c.as_dict() for c in conflicts]} if conflicts else {})
            | ({"answer_kind": str(short.kind)} if short is not None else {})
            | ({"computation": computed.shown()} if computed is not None else {}),
        )


def not_found(question: str, evidence: EvidencePackage, closest: Passage, missing: list[str], answerer: str) -> Answer:
    """An abstention that says what the evidence lacks and quotes the closest passage, cited."""
    lacking = f" (nothing about {', '.join(missing)})" if missing else ""
    text = f"Not found in the indexed documents{lacking}. The closest evidence: {quoted(closest.text)} [1]"
    return Answer(
        question,
        text,
        answering([closest.item.citation], [closest], []),
        evidence,
        sufficient=False,
        answerer=answerer,
        support=[closest.text],
        meta={"abstained": "anchors", "missing": missing},
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
