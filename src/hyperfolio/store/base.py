"""The store interface every backend implements (SQLite now, PostgreSQL later).

The store knows documents, pages, chunks, vectors and the hypergraph tables; it
knows no stage or retrieval strategy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from hyperfolio.model import Chunk, Document, DocumentInfo

# Ingestion stages recorded per document; a document is searchable once "ready".
STAGE_PARSED = "parsed"
STAGE_EMBEDDED = "embedded"
STAGE_GRAPHED = "graphed"  # hypergraph extracted, merged, refined and embedded
STAGE_READY = "ready"

CHUNK_SPACE = "chunk"  # vector space of chunk embeddings
ENTITY_SPACE = "entity"  # hypergraph vertices, one vector per (entity, document)
HYPEREDGE_SPACE = "hyperedge"  # hyperedges, one vector per (hyperedge, document)
CONCEPT_SPACE = "concept"  # concept nodes, one vector per (concept, document)
RELATION_SPACE = "relation"  # concept-level relation labels, one vector per (relation, document)
THEME_SPACE = "theme"  # chunk themes (the top layer), one vector per (theme, document)


def scoped_key(item_id: str, doc_id: str) -> str:
    """Graph items span documents; keying their vectors per document lets a search be scoped."""
    return f"{item_id}|{doc_id}"


def item_of(key: str) -> str:
    return key.split("|", 1)[0]


class Store(Protocol):
    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    # documents
    def write_document(self, doc: Document) -> None:
        """Persist a parsed document, its pages and chunks in one transaction (stage `parsed`)."""

    def set_stage(self, doc_id: str, stage: str) -> None: ...

    def list_documents(self) -> list[DocumentInfo]: ...

    def get_document(self, doc_id: str) -> DocumentInfo | None: ...

    def titles(self) -> dict[str, str]: ...

    def document_by_hash(self, content_hash: str) -> DocumentInfo | None: ...

    def documents_by_source(self, source: str) -> list[DocumentInfo]: ...

    def remove_document(self, doc_id: str) -> None:
        """Delete a document and everything only it supported."""

    # chunks
    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def iter_chunks(self, doc_id: str | None = None) -> Iterable[Chunk]: ...

    def count_chunks(self, doc_id: str | None = None) -> int: ...

    # search
    def keyword_search(self, query: str, k: int, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]: ...

    def put_vectors(self, space: str, items: Sequence[tuple[str, str]], vectors: np.ndarray) -> None:
        """Store vectors for (item_id, doc_id) pairs in one transaction."""

    def missing_vectors(self, space: str, doc_id: str) -> list[Chunk]: ...

    def vector_search(
        self, space: str, vector: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]: ...

    def vector_scores(self, space: str, vector: np.ndarray, item_ids: Sequence[str]) -> dict[str, float]: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...
