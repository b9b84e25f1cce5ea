"""The offline extractor: a useful hypergraph without any language model.

Entities are candidate phrases (capitalised names, acronyms, quantities with units,
years, figure and table labels, repeated multi-word terms) scored by how specific
they are to the document; tables contribute the table, its headers and row keys;
figures contribute the figure and what its caption and OCR name. Hyperedges come
from sentences (two members: `low`; three or more: `high`), table rows, and figure
captions with what they show. Which phrases count is `entity_filters`' business; values (numbers,
years, months) are kept only as the tails of facts.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from hyperfolio.hypergraph.entity_filters import WordCase, clean_name, table_name_like, term_like
from hyperfolio.hypergraph.extract import FACT, HIGH, LOW, ExtractedEdge, ExtractedEntity, PageGraph, PageUnit
from hyperfolio.hypergraph.facts_offline import ConceptNamer, column_relation, header_concept, relation_label
from hyperfolio.labels import DISPLAY_PARTS, opening_label
from hyperfolio.lexicon import MONTHS
from hyperfolio.model import VALUE_TYPES, Chunk
from hyperfolio.phrases import (
    Phrase,
    content_words,
    find_phrases,
    generic_name,
    key_phrases,
    normalize_name,
    sentences,
)

_KIND_TYPE = {
    "name": "name",
    "acronym": "acronym",
    "quantity": "quantity",
    "year": "date",
    "label": "reference",
    "keyphrase": "concept",
}
_CELL_NUMBER = re.compile(r"^[^\d-]*-?\d[\d,]*(?:\.\d+)?\s*%?[^\d]*$")


@dataclass
class _Stats:
    """Document-wide phrase statistics: a phrase repeated across the document is a better entity."""

    phrase_count: Counter
    key_count: Counter
    known_names: set[str]  # capitalised words seen as names mid-sentence
    namer: ConceptNamer
    case: WordCase = field(default_factory=WordCase)


def _sentences(text: str) -> list[str]:
    """Sentences of a chunk; a short unpunctuated first line is a heading, kept apart."""
    lines = text.split("\n", 1)
    if len(lines) == 2 and len(lines[0].split()) <= 8 and not lines[0].rstrip().endswith((".", ":", ";", ",")):
        text = lines[0] + ".\n\n" + lines[1]
    return [s for s in sentences(text) if len(s.split()) >= 2]


def _label_of(caption: str | None) -> str | None:
    label = opening_label(caption, DISPLAY_PARTS)
    return str(label) if label is not None else None


class OfflineExtractor:
    name = "offline"

    def __init__(self, multimodal: bool = True, max_entities_per_page: int = 40, max_members: int = 8) -> None:
        self.multimodal = multimodal
        self.max_entities_per_page = max_entities_per_page
        self.max_members = max_members

    # ------------------------------------------------------------------ statistics
    def _stats(self, units: list[PageUnit]) -> _Stats:
        """Counted over what the document says (a figure's caption, not its OCR): a phrase only OCR of a
        chart yields is noise unless the text uses it too."""
        phrases: Counter = Counter()
        keys: Counter = Counter()
        known: set[str] = set()
        texts: list[str] = []
        said: list[str] = []
        for unit in units:
            for chunk in unit.chunks:
                texts.append(self._chunk_text(chunk))
                text = (chunk.caption or "") if chunk.modality == "image" else chunk.text
                said.append(text)
                found = find_phrases(text)
                phrases.update({normalize_name(p.text) for p in found})
                known.update(p.text for p in found if p.kind == "name")
                keys.update(key_phrases(text))
        return _Stats(phrases, keys, known, ConceptNamer(texts), WordCase.of(said))

    def _chunk_text(self, chunk: Chunk) -> str:
        if chunk.modality == "image":
            return " ".join(t for t in (chunk.caption, chunk.ocr_text) if t)
        return chunk.text

    def extract_document(self, units: list[PageUnit]) -> list[PageGraph]:
        stats = self._stats(units)
        return [self._page(unit, stats) for unit in units]

    def table_graphs(self, units: list[PageUnit]) -> list[PageGraph]:
        """Only what the pages' tables state: the table, its headers, row keys, cells and one fact per
        cell, none cut by the per-page entity cap. Deterministic, so a model-built page keeps every
        table fact whatever the model wrote (or misspelt) about it. Tables use no phrase statistics:
        only the concept namer is built, not the document-wide phrase counts."""
        namer = ConceptNamer([self._chunk_text(c) for u in units for c in u.chunks])
        stats = _Stats(Counter(), Counter(), set(), namer)
        return [self._page(unit, stats, tables_only=True) for unit in units]

    # ------------------------------------------------------------------ one page
    def _page(self, unit: PageUnit, stats: _Stats, tables_only: bool = False) -> PageGraph:
        graph = PageGraph(unit.doc_id, unit.page)
        entities: dict[str, ExtractedEntity] = {}

        def entity(
            name: str, type_: str, modality: str, chunk: Chunk, description: str, score: float, concept: str = ""
        ) -> str:
            key = normalize_name(name)
            if not key:
                return ""
            found = entities.get(key)
            if found is None:
                found = entities[key] = ExtractedEntity(name, type_, modality, description[:300], [], [], score)
            elif found.type == "concept" and type_ != "concept":
                found.name, found.type = name, type_  # a proper name beats the same words seen as a term
            if concept and not found.concept:
                found.concept = concept
            if chunk.chunk_id not in found.chunks:
                found.chunks.append(chunk.chunk_id)
            found.score = max(found.score, score)
            return found.name

        for chunk in unit.chunks:
            if chunk.placeholder:
                continue
            if chunk.modality == "table" and chunk.table and self.multimodal:
                self._table(chunk, entity, graph)
            elif tables_only:
                continue
            elif chunk.modality == "image" and self.multimodal:
                self._figure(chunk, entity, graph, stats)
            elif chunk.modality in ("text", "formula"):
                self._text(chunk, entity, graph, stats)
        # Keep the page's most specific entities; drop edges that lost their members. Values link
        # nothing: they stay only as the tails of facts kept.
        values = {e.name for e in entities.values() if e.type in VALUE_TYPES}
        ranked = sorted(entities.values(), key=lambda e: -e.score)
        linked = [e for e in ranked if e.name not in values]
        keep = {e.name for e in (linked if tables_only else linked[: self.max_entities_per_page])} | values
        edges = []
        for edge in graph.edges:
            if edge.level == FACT:
                if all(m in keep for m in edge.members):
                    edges.append(edge)
                continue
            edge.members = [m for m in edge.members if m in keep and m not in values]
            if len(edge.members) >= 2:
                edge.level = LOW if len(edge.members) == 2 else HIGH
                edges.append(edge)
        graph.edges = edges
        stated = {m for edge in edges if edge.level == FACT for m in edge.members}
        graph.entities = [e for e in ranked if e.name in keep and (e.name not in values or e.name in stated)]
        for e in graph.entities:
            e.concept = e.concept or stats.namer.concept(e.name, e.type)
        return graph

    def _entity_phrase(self, phrase: Phrase, stats: _Stats) -> Phrase | None:
        """The phrase as an entity (`entity_filters`): a name cleaned of what is not part of it, a month
        a value; None for what is no entity."""
        if phrase.kind == "acronym":
            rare = len(phrase.text) <= 2 and stats.phrase_count.get(normalize_name(phrase.text), 0) < 2
            return None if rare or generic_name(phrase.text) else phrase
        if phrase.kind != "name":
            return phrase
        text = clean_name(phrase.text, stats.case)
        if not text:
            return None
        start = phrase.start + max(0, phrase.text.find(text))
        if generic_name(text):  # "January" is a date; "Inc" alone is nothing
            return Phrase(text, "year", start) if text.lower() in MONTHS else None
        return Phrase(text, "name", start)

    def _score(self, phrase: Phrase, stats: _Stats) -> float:
        repeats = stats.phrase_count.get(normalize_name(phrase.text), 1)
        base = {"name": 1.0, "acronym": 1.0, "label": 1.2, "quantity": 0.8, "year": 0.6, "keyphrase": 0.7}
        return base.get(phrase.kind, 0.5) * (1.0 + math.log(repeats))

    def _text(self, chunk: Chunk, entity, graph: PageGraph, stats: _Stats) -> None:
        for sentence in _sentences(chunk.text):
            members: list[tuple[str, float]] = []
            spans: list[tuple[int, int, str]] = []  # where each mention sits, for facts
            for found in find_phrases(sentence, stats.known_names):
                phrase = self._entity_phrase(found, stats)
                if phrase is None:
                    continue
                score = self._score(phrase, stats)
                type_ = _KIND_TYPE[phrase.kind]
                name = entity(phrase.text, type_, "text", chunk, sentence, score)
                if name:
                    spans.append((phrase.start, phrase.start + len(phrase.text), name))
                if name and type_ not in VALUE_TYPES and name not in [m for m, _ in members]:
                    members.append((name, score))
            # Repeated multi-word terms ("carbon capture") are entities too, even in lower case.
            terms = [
                t
                for t in dict.fromkeys(key_phrases(sentence))
                if stats.key_count.get(t, 0) >= 2 and term_like(t, stats.key_count[t])
            ]
            terms = [t for t in terms if not any(t != o and t in o for o in terms)]  # the longest wins
            for term in terms:
                if len(members) < self.max_members:
                    score = 0.5 * (1.0 + math.log(stats.key_count[term]))
                    name = entity(term, "concept", "text", chunk, sentence, score)
                    if name and name not in [m for m, _ in members]:
                        members.append((name, score))
                    at = sentence.lower().find(term)
                    if name and at >= 0 and not any(s <= at < e for s, e, _ in spans):
                        spans.append((at, at + len(term), name))
            graph.edges.extend(self._sentence_facts(sentence, spans, chunk))
            if len(members) < 2:
                continue
            members.sort(key=lambda m: -m[1])
            names = [m for m, _ in members[: self.max_members]]
            keywords = content_words(sentence)[:8]
            strength = min(1.0, 0.4 + 0.1 * len(names))
            graph.edges.append(
                ExtractedEdge(HIGH if len(names) > 2 else LOW, names, sentence, keywords, strength, [chunk.chunk_id])
            )
            if len(names) > 2:  # the two most specific members also get a pairwise edge
                graph.edges.append(ExtractedEdge(LOW, names[:2], sentence, keywords, 0.6, [chunk.chunk_id]))

    def _sentence_facts(self, sentence: str, spans: list[tuple[int, int, str]], chunk: Chunk) -> list[ExtractedEdge]:
        """Consecutive mentions linked by the words between them."""
        facts = []
        spans = sorted(spans)
        for (_, head_end, head), (tail_start, _, tail) in zip(spans, spans[1:], strict=False):
            if head == tail or tail_start < head_end:
                continue
            relation = relation_label(sentence[head_end:tail_start])
            if relation:
                facts.append(self._fact(head, relation, tail, sentence, chunk, 0.8))
        return facts

    def _fact(self, head: str, relation: str, tail: str, evidence: str, chunk: Chunk, strength: float) -> ExtractedEdge:
        # The section path is the statement's scope (HVM-GraphRAG's document tree): a heading such
        # as "2023 results" dates the figures under it.
        scope = " > ".join(p for p in chunk.section_path if p)
        return ExtractedEdge(
            FACT,
            [head, tail],
            (f"[{scope}] {evidence}" if scope else evidence)[:400],
            [relation],
            strength,
            [chunk.chunk_id],
            {head: "head", tail: "tail"},
            relation,
        )

    def _table(self, chunk: Chunk, entity, graph: PageGraph) -> None:
        table = chunk.table or []
        caption = chunk.caption or ""
        label = _label_of(caption) or (caption[:60] if caption else f"Table on page {chunk.page}")
        table_name = entity(label, "table", "table", chunk, caption or chunk.text[:200], 1.5)
        header_rows = chunk.table_header_rows
        headers = [c.strip() for c in table[header_rows - 1]] if header_rows else []
        header_names: dict[int, str] = {}
        for col, cell in enumerate(headers):
            if cell and not _CELL_NUMBER.match(cell) and table_name_like(cell, 60):
                header_names[col] = entity(cell, "table_header", "table", chunk, f"column of {label}", 1.0)
                graph.edges.append(
                    ExtractedEdge(
                        LOW,
                        [table_name, header_names[col]],
                        f"{label} has column {cell}",
                        ["column", cell],
                        0.8,
                        [chunk.chunk_id],
                        {table_name: "table", header_names[col]: "column"},
                    )
                )
        for row in table[header_rows:]:
            cells = [c.strip() for c in row]
            if not any(cells):
                continue
            key_col = next(
                (i for i, c in enumerate(cells) if c and not _CELL_NUMBER.match(c) and table_name_like(c, 80)), None
            )
            members = [table_name]
            roles = {table_name: "table"}
            key = ""
            key_cell = ""  # the row's key as written; set whenever `key` is
            if key_col is not None:
                key_cell = cells[key_col]
                key_concept = header_concept(headers[key_col]) if key_col < len(headers) else ""
                row_text = f"row of {label}: " + " | ".join(cells)
                key = entity(key_cell, "table_key", "table", chunk, row_text, 1.1, key_concept)
                members.append(key)
                roles[key] = "row"
            for col, cell in enumerate(cells):
                if col == key_col or not cell:
                    continue
                if col in header_names:
                    members.append(header_names[col])
                    roles[header_names[col]] = "column"
                    if key and len(cell) <= 80:  # the row's key has this value in this column: a fact
                        kind = "quantity" if _CELL_NUMBER.match(cell) else "table_value"
                        value = entity(
                            cell,
                            kind,
                            "table",
                            chunk,
                            f"{headers[col]} of {key_cell} in {label}",
                            0.75,
                            header_concept(headers[col]),
                        )
                        if value and value != key:
                            evidence = f"{label}: {key_cell} — {headers[col]}: {cell}"
                            graph.edges.append(
                                self._fact(key, column_relation(headers[col]), value, evidence, chunk, 1.0)
                            )
            parts = [f"{headers[i]}: {c}" if i < len(headers) and headers[i] else c for i, c in enumerate(cells) if c]
            description = f"{label} row — " + "; ".join(parts)
            if len(members) >= 2:
                level = HIGH if len(members) > 2 else LOW
                graph.edges.append(
                    ExtractedEdge(
                        level,
                        members[: self.max_members],
                        description[:400],
                        content_words(" ".join(cells))[:8],
                        1.0,
                        [chunk.chunk_id],
                        roles,
                    )
                )

    def _figure(self, chunk: Chunk, entity, graph: PageGraph, stats: _Stats) -> None:
        caption = chunk.caption or ""
        label = _label_of(caption) or (caption[:60] if caption else f"Figure on page {chunk.page}")
        shown = find_phrases(caption)
        # OCR of a chart is noisy: keep only the names the document's text also uses.
        for read in find_phrases(chunk.ocr_text or ""):
            if read.kind in ("name", "acronym") and stats.phrase_count.get(normalize_name(read.text), 0) >= 1:
                shown.append(read)
        things: list[tuple[str, str, float]] = []  # (name, type, score) of what the figure shows
        for found in shown:
            phrase = self._entity_phrase(found, stats) if found.kind not in ("label", "quantity", "year") else None
            if phrase is not None and phrase.kind != "year":
                things.append((phrase.text, _KIND_TYPE[phrase.kind], self._score(phrase, stats)))
        things += [(term, "concept", 0.6) for term in filter(term_like, dict.fromkeys(key_phrases(caption)))]
        if not caption and not things:
            return  # a picture that names nothing: no "Figure on page 4" in the graph
        figure = entity(label, "figure", "visual", chunk, caption or (chunk.ocr_text or "")[:200], 1.5)
        members = [figure]
        roles = {figure: "figure"}
        for text, type_, score in things:
            name = entity(text, type_, "visual", chunk, f"shown in {label}: {caption}", score)
            if name and name not in members:
                members.append(name)
                roles[name] = "shown"
        if len(members) >= 2:
            if caption:
                description = caption if caption.startswith(label) else f"{label}: {caption}"
            else:
                description = f"{label} shows " + ", ".join(members[1:6])
            graph.edges.append(
                ExtractedEdge(
                    HIGH if len(members) > 2 else LOW,
                    members[: self.max_members],
                    description[:400],
                    content_words(caption)[:8],
                    1.0,
                    [chunk.chunk_id],
                    roles,
                )
            )
