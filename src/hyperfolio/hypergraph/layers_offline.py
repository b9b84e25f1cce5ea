"""The offline themer: each chunk's theme from its structure and words, without a model.

The model themer (`layers_model`) falls back to it; the theme and concept layers it feeds are
built in `layers`.
"""

from __future__ import annotations

import math
from collections import Counter

from hyperfolio.hypergraph.layers import ChunkTheme, chunk_text
from hyperfolio.model import Chunk
from hyperfolio.phrases import content_words


class OfflineThemer:
    """Key entities by structural centrality in the chunk (how many of its hyperedges they join) and
    keyword weight (their words' frequency in the chunk against the document); the theme is the
    section path, the key entities and the chunk's most characteristic terms."""

    name = "offline"

    def __init__(self, key_entities: int = 5, terms: int = 6) -> None:
        self.key_entities = key_entities
        self.terms = terms

    def themes(
        self, chunks: list[Chunk], entities: dict[str, list[tuple[str, str]]], edges: dict[str, list[list[str]]]
    ) -> list[ChunkTheme]:
        doc_terms: Counter = Counter()
        chunk_terms: dict[str, Counter] = {}
        for chunk in chunks:
            words = Counter(content_words(chunk_text(chunk)))
            chunk_terms[chunk.chunk_id] = words
            doc_terms.update(set(words))
        n = max(1, len(chunks))
        out = []
        for chunk in chunks:
            words = chunk_terms[chunk.chunk_id]
            weight = {w: c * math.log(1 + n / doc_terms[w]) for w, c in words.items()}
            degree: Counter = Counter(m for members in edges.get(chunk.chunk_id, []) for m in set(members))
            scored = []
            for entity_id, name in entities.get(chunk.chunk_id, []):
                terms = content_words(name)
                keyword = sum(weight.get(t, 0.0) for t in terms) / max(1, len(terms))
                scored.append((degree.get(entity_id, 0) + 0.3 * keyword, name, entity_id))
            scored.sort(key=lambda s: (-s[0], s[1]))
            key = [entity_id for _, _, entity_id in scored[: self.key_entities]]
            names = [name for _, name, _ in scored[: self.key_entities]]
            top_terms = [w for w, _ in sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[: self.terms]]
            scope = " > ".join(p for p in chunk.section_path if p)
            parts = [scope] if scope else []
            if names:
                parts.append(", ".join(names))
            if top_terms:
                parts.append("about " + ", ".join(top_terms))
            if not parts:
                continue
            out.append(ChunkTheme(chunk.chunk_id, "; ".join(parts), key, top_terms))
        return out
