"""The store as a port: the protocols every backend implements (SQLite and PostgreSQL).

Stages depend on the protocol they use — parsing and flat search on `DocumentStore`, the build
stage and graph strategies on `HypergraphStore`, reconciliation and the concept and theme layers
on `LayerStore` — never on a backend class; `open_store(location)` picks the backend. The store
knows no stage or retrieval strategy.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hyperfolio.model import (
    CachedReply,
    Chunk,
    ConversationRecord,
    Decision,
    Document,
    DocumentInfo,
    Entity,
    FactRow,
    Hyperedge,
    Page,
)
from hyperfolio.store.integrity import Finding

# Ingestion stages recorded per document; a document is searchable once "ready".
STAGE_PARSED = "parsed"
STAGE_EMBEDDED = "embedded"
# The document's hypergraph written, with reconciliation's changes to earlier documents, in one
# transaction; refinement, graph vectors and the layers still to come (a resumed build goes on from here).
STAGE_GRAPH_WRITTEN = "graph-written"
STAGE_GRAPHED = "graphed"  # hypergraph extracted, merged, refined and embedded
STAGE_READY = "ready"

# What reconciliation counts per document (the store keeps and sums them).
RECONCILE_COUNTS = ("facts", "groups", "conflicts", "kept", "merged", "revised", "dropped", "unresolved")

CHUNK_SPACE = "chunk"  # vector space of chunk embeddings
ENTITY_SPACE = "entity"  # hypergraph vertices, one vector per (entity, document)
HYPEREDGE_SPACE = "hyperedge"  # hyperedges, one vector per (hyperedge, document)
CONCEPT_SPACE = "concept"  # concept nodes, one vector per (concept, document)
RELATION_SPACE = "relation"  # concept-level relation labels, one vector per (relation, document)
THEME_SPACE = "theme"  # chunk themes (the top layer), one vector per (theme, document)
SPACES = (CHUNK_SPACE, ENTITY_SPACE, HYPEREDGE_SPACE, CONCEPT_SPACE, RELATION_SPACE, THEME_SPACE)


def scoped_key(item_id: str, doc_id: str) -> str:
    """Graph items span documents; keying their vectors per document lets a search be scoped."""
    return f"{item_id}|{doc_id}"


def space_label(space: str) -> str:
    """A space's name where only letters, digits and _ may go (an index, a file): readable, and unique even
    for spaces whose names differ only in punctuation or case."""
    readable = re.sub(r"\W", "_", space.lower())[:32]
    return f"{readable}_{hashlib.sha1(space.encode()).hexdigest()[:8]}"


def item_of(key: str) -> str:
    return key.split("|", 1)[0]


def chunk_doc_page(chunk_id: str) -> tuple[str, int]:
    """Chunk ids are "<doc_id>:<page>:<order>"."""
    doc, page, _ = chunk_id.rsplit(":", 2)
    return doc, int(page)


class DocumentStore(Protocol):
    """Documents, pages, chunks, their status, keyword and vector search, and bookkeeping."""

    location: str  # what `open_store` was given: a directory or a server URL

    def get_meta(self, key: str) -> str | None: ...

    def bulk(self) -> AbstractContextManager[None]:
        """A block of many writes (a large `add`, an import): the backend may defer upkeep to its end."""

    def claim(self, key: str, owner: str, seconds: float, dead: str = "") -> str | None:
        """Take or renew the claim on `key` for `seconds`: None when `owner` holds it now, else its holder.

        A claim that was not renewed in time, or whose holder is `dead` (known to have died), is free."""

    def release(self, key: str, owner: str) -> None: ...

    def claim_holders(self, keys: Sequence[str]) -> dict[str, str]:
        """key -> owner of each live claim among `keys`: the documents some worker is indexing now."""

    def set_meta(self, key: str, value: str) -> None: ...

    def meta_items(self) -> dict[str, str]: ...

    def write_document(self, doc: Document) -> None:
        """Persist a parsed document, its pages and chunks in one transaction (stage `parsed`);
        `DuplicateDocument` when the same content was written meanwhile (by another process)."""

    def set_stage(self, doc_id: str, stage: str) -> None: ...

    def documents_version(self) -> str:
        """A token that changes whenever a document is written or removed or its stage, meta or title
        changes: what is derived from the documents (their cards, the ready set, the chunk count) is up to
        date while it is the same."""
        ...

    def graph_version(self) -> str:
        """A token that changes whenever part of the hypergraph is written or removed."""
        ...

    def update_document_meta(self, doc_id: str, changes: dict[str, Any]) -> None:
        """Merge `changes` into a document's meta (what ingest derived later, e.g. its card)."""

    def set_document_title(self, doc_id: str, title: str) -> None:
        """Replace a document's title (a card's, for a document indexed before cards named it)."""

    def list_documents(self) -> list[DocumentInfo]: ...

    def unfinished_documents(self) -> list[DocumentInfo]:
        """Documents whose indexing has not reached "ready" (cut off, or running elsewhere)."""
        ...

    def get_document(self, doc_id: str) -> DocumentInfo | None: ...

    def titles(self) -> dict[str, str]: ...

    def document_by_hash(self, content_hash: str) -> DocumentInfo | None: ...

    def documents_by_source(self, source: str) -> list[DocumentInfo]: ...

    def remove_document(self, doc_id: str) -> None:
        """Delete a document and everything only it supported."""

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def annotate_chunk(self, chunk_id: str, key: str, value: Any) -> None: ...

    def iter_chunks(self, doc_id: str | None = None) -> Iterable[Chunk]: ...

    def page_chunk_texts(self, pages: Sequence[tuple[str, int]]) -> dict[tuple[str, int], list[tuple[str, str]]]: ...

    def get_pages(self, doc_id: str) -> list[Page]:
        """A document's pages in order: number, size in points, OCR and vision flags (no chunks)."""

    def count_chunks(self, doc_id: str | None = None) -> int: ...

    def keyword_search(self, query: str, k: int, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]: ...

    def atomic(self) -> AbstractContextManager[None]:
        """One transaction around several store calls (each joins it): all of them land, or none."""

    def prune_vectors(self, space: str, doc_id: str, keep: Sequence[str]) -> int:
        """Delete the document's vectors in `space` whose keys are not in `keep`; how many went."""

    def put_vectors(self, space: str, items: Sequence[tuple[str, str]], vectors: np.ndarray) -> None:
        """Store vectors for (item_id, doc_id) pairs in one transaction."""

    def missing_vectors(self, space: str, doc_id: str) -> list[Chunk]: ...

    def iter_vectors(self, space: str) -> Iterable[tuple[str, str, np.ndarray]]:
        """Every stored (item_id, doc_id, vector) of a space, in the order they were stored."""
        ...

    def clear_vectors(self, space: str) -> None: ...

    def vector_search(
        self, space: str, vector: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]: ...

    def vector_search_many(
        self, space: str, vectors: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """`vector_search` for each row of `vectors` (a question's keywords), in one pass where the backend can."""
        ...

    def vector_scores(self, space: str, vector: np.ndarray, item_ids: Sequence[str]) -> dict[str, float]: ...

    def warm(self, wait: bool = False) -> None:
        """Make the first search of every space as fast as the others (what a server does at start-up);
        with `wait`, return once the indexes being made for large spaces are made and in use."""
        ...

    def add_stage_times(self, doc_id: str, seconds: dict[str, float]) -> None: ...

    def stage_times(self, doc_id: str | None = None) -> dict[str, float]: ...

    def stats(self) -> dict[str, Any]: ...

    def copy_to(self, location: str | Path) -> Store:
        """A consistent copy of the whole store at another location (a variant to try settings on)."""

    def close(self) -> None: ...


class HypergraphStore(Protocol):
    """Entities, hyperedges with their own ids, incidence, provenance, refinement state, and who built what."""

    def write_graph(
        self,
        entities: Sequence[tuple[Entity, Sequence[str]]],
        edges: Sequence[tuple[Hyperedge, Sequence[str]]],
        max_description_chars: int = 600,
    ) -> None: ...

    def clear_document_graph(self, doc_id: str) -> None: ...

    def clear_graph(self) -> None: ...

    def delete_hyperedges(self, edge_ids: Sequence[str]) -> None: ...

    def get_entities(self, entity_ids: Sequence[str]) -> list[Entity]: ...

    def get_hyperedges(self, edge_ids: Sequence[str]) -> list[Hyperedge]: ...

    def hyperedge_strengths(self, edge_ids: Sequence[str]) -> dict[str, float]: ...

    def incident_edges(
        self, entity_ids: Sequence[str], levels: Sequence[str] | None = None
    ) -> dict[str, list[str]]: ...

    def provenance(
        self, kind: str, item_ids: Sequence[str], doc_ids: Sequence[str] | None = None
    ) -> dict[str, list[tuple[str, str, int]]]: ...

    def entities_by_norm_name(self, norm_names: Sequence[str]) -> dict[str, str]: ...

    def chunk_entities(self, doc_id: str) -> dict[str, list[tuple[str, str]]]: ...

    def hyperedge_incidence(
        self, doc_id: str, levels: Sequence[str] = ("low", "high")
    ) -> list[tuple[str, str, str]]: ...

    def chunk_hyperedge_members(
        self, doc_id: str, levels: Sequence[str] = ("low", "high")
    ) -> dict[str, list[list[str]]]: ...

    def chunk_hyperedges(self, chunk_id: str) -> list[str]: ...

    def hyperedges_of_level(self, doc_id: str, level: str) -> list[str]: ...

    def entities_matching(self, name: str) -> list[str]: ...

    def document_entities(self, doc_id: str) -> list[str]: ...

    def document_hyperedges(self, doc_id: str) -> list[str]: ...

    def entity_pages(self, entity_ids: Sequence[str]) -> dict[str, set[tuple[str, int]]]: ...

    def refine_signatures(self, anchor_ids: Sequence[str]) -> dict[str, tuple[str, list[str]]]: ...

    def set_refine_signature(self, anchor_id: str, signature: str, edge_ids: Sequence[str]) -> None: ...

    def graph_stats(self) -> dict[str, Any]: ...

    def record_builds(self, doc_id: str, rows: list[tuple[str, str, str, str]]) -> None: ...

    def builds(self, doc_id: str | None = None, how: str | None = None) -> list[tuple[str, str, str, str, str]]: ...

    def build_counts(self) -> dict[str, dict[str, int]]: ...


class LayerStore(Protocol):
    """Facts and reconciliation decisions, concepts with their edges and chunk evidence, and the layers' counts."""

    def facts_about(self, entity_ids: Sequence[str]) -> list[FactRow]: ...

    def document_facts(self, doc_id: str) -> list[FactRow]: ...

    def relabel_fact(self, edge_id: str, relation: str) -> None: ...

    def remove_evidence_links(self, links: Sequence[tuple[str, str]]) -> None: ...

    def log_decisions(self, decisions: Sequence[Decision]) -> None: ...

    def save_reconcile_counts(self, doc_id: str, counts: dict[str, int]) -> None: ...

    def reconcile_totals(self) -> dict[str, int]: ...

    def reconcile_counts(self, doc_id: str) -> dict[str, int]:
        """What reconciliation counted for one document ({} before it ran)."""

    def dropped_in(self, chunk_ids: Sequence[str]) -> list[Decision]: ...

    def decisions(self, doc_id: str | None = None) -> list[Decision]: ...

    def concepts_of(self, entity_ids: Sequence[str]) -> dict[str, str]: ...

    def document_concepts(self, doc_id: str) -> list[str]: ...

    def rebuild_concepts(self, concept_ids: Sequence[str], doc_id: str | None = None) -> None: ...

    def concept_names(self, concept_ids: Sequence[str]) -> dict[str, str]: ...

    def concepts_in(self, doc_id: str) -> list[tuple[str, str]]: ...

    def concept_members_in(self, doc_id: str, concept_ids: Sequence[str], limit: int) -> dict[str, list[str]]: ...

    def relations_in(self, doc_id: str) -> list[str]: ...

    def concept_edges_for(
        self, relations: Sequence[str], doc_ids: Sequence[str] | None = None, touching: Sequence[str] | None = None
    ) -> list[tuple[str, str, str, int]]: ...

    def concept_chunk_pairs(
        self, concept_ids: Sequence[str], doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str]]: ...

    def concept_top_chunks(self, levels: Mapping[str, int], limit: int) -> list[tuple[str, int]]: ...

    def layer_stats(self) -> dict[str, Any]: ...


class GraphStore(DocumentStore, HypergraphStore, Protocol):
    """What the build stage and the graph strategies read and write: chunks and the hypergraph."""


class IntegrityStore(Protocol):
    """The integrity check over every table (store/integrity.py): rows that point at nothing, and their repair."""

    def integrity(self) -> list[Finding]:
        """Every kind of dangling row found, with counts and examples, in `integrity.KINDS` order."""
        ...

    def repair(self, findings: Sequence[Finding]) -> dict[str, int]:
        """Delete what dangles and rebuild the keyword index, for these findings' repairable kinds, one
        transaction per kind; the rows changed per kind. Missing chunk vectors need an embedder: the
        collection makes them."""
        ...


class ConversationStore(Protocol):
    """Conversations with the collection (store/sql/conversations.py): threads, each with its turns."""

    def create_conversation(self, owner: str = "") -> ConversationRecord: ...

    def add_turn(self, conversation_id: str, turn: dict[str, Any]) -> int: ...

    def get_conversation(self, conversation_id: str) -> ConversationRecord | None: ...

    def list_conversations(self, owner: str = "", limit: int = 100) -> list[ConversationRecord]: ...

    def delete_conversation(self, conversation_id: str) -> bool: ...


class Store(DocumentStore, HypergraphStore, LayerStore, IntegrityStore, ConversationStore, Protocol):
    """A whole collection's store: what `open_store` returns."""


class ModelRecordStore(Protocol):
    """A collection's model-call records: cached replies, usage per stage, server profiles.

    Shared by every process using the collection; `store.model_records.ModelRecords` implements it
    for both backends, `open_model_records(location)` opens it.
    """

    where: str

    def reply(self, key: str) -> CachedReply | None: ...

    def put_reply(self, key: str, model: str, response: str, prompt_tokens: int, completion_tokens: int) -> None: ...

    def discard_reply(self, key: str) -> None: ...

    def clear_replies(self, model: str | None = None) -> int:
        """Forget every reply (or one model's); how many were removed."""

    def replies(self) -> list[tuple[str, CachedReply]]: ...

    def count_replies(self) -> int: ...

    def add_usage(self, stage: str, delta: Mapping[str, float]) -> None: ...

    def usage(self) -> dict[str, dict[str, Any]]: ...

    def reset_usage(self) -> None: ...

    def profile(self, key: str) -> tuple[str, float] | None: ...

    def put_profile(self, key: str, profile: str, probed_at: float) -> None: ...

    def forget_profiles(self) -> None: ...

    def close(self) -> None: ...
