"""Layers over the entity hypergraph.

The concept layer (HVM-GraphRAG 3.1.3): concept nodes, concept edges, and the concept -> chunk
evidence index, with embeddings for concepts and relations. The theme layer (VizRAG's two-layer
index): per chunk a theme hyperedge over its key entities, the top layer of top-down retrieval.

Each entity belongs to one concept; a concept's evidence is the union of its entities' evidence
(after reconciliation removed the links only dropped facts supported), and its edges are the
schemas its resolved facts instantiate. Everything is kept per document so retrieval can be
scoped, and recomputed only for the concepts a document touches. Themes come from a `Themer`:
the offline one in `layers_offline`, the model one in `layers_model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from hyperfolio.embed.protocols import Embedder
from hyperfolio.hypergraph.merge import edge_id
from hyperfolio.model import Chunk, Hyperedge
from hyperfolio.store.base import CONCEPT_SPACE, RELATION_SPACE, THEME_SPACE, GraphStore, Store, scoped_key

MEMBERS_SHOWN = 8  # entity names embedded with a concept's name


def relation_text(relation: str) -> str:
    return relation.replace("_", " ").strip()


def update_concept_layer(
    store: Store, embedder: Embedder, doc_id: str, extra: Sequence[str] = (), docs: Sequence[str] = ()
) -> int:
    """Recompute the concepts the document touches (and `extra` ones, e.g. from a removed document),
    then embed the concepts and relations of the document and of `docs` (others whose facts changed
    with it: a relabelled fact's relation is new there, its old one may be gone). Returns how many
    concepts the document has."""
    touched = list(dict.fromkeys([*store.document_concepts(doc_id), *extra]))
    # A new document adds rows of its own and changes no other's (an entity keeps its first concept, and
    # what reconciliation changed elsewhere was rebuilt with the graph): only its rows, unless a removal's.
    store.rebuild_concepts(touched, doc_id=None if extra else doc_id)
    count = 0
    for doc in dict.fromkeys([doc_id, *docs]):
        concepts = store.concepts_in(doc)
        if doc == doc_id:
            count = len(concepts)
        if concepts:
            members = store.concept_members_in(doc, [c for c, _ in concepts], MEMBERS_SHOWN)
            texts = [name + (": " + ", ".join(members[cid]) if members.get(cid) else "") for cid, name in concepts]
            keys = [(scoped_key(cid, doc), doc) for cid, _ in concepts]
            store.put_vectors(CONCEPT_SPACE, keys, embedder.embed(texts))
        relations = store.relations_in(doc)
        if relations:
            store.put_vectors(
                RELATION_SPACE,
                [(scoped_key(r, doc), doc) for r in relations],
                embedder.embed([relation_text(r) for r in relations]),
            )
        prune_layer_vectors(store, doc)
    return count


def prune_layer_vectors(store: Store, doc_id: str) -> None:
    """Drop the document's concept and relation vectors whose concept or relation it no longer has."""
    store.prune_vectors(CONCEPT_SPACE, doc_id, [scoped_key(cid, doc_id) for cid, _ in store.concepts_in(doc_id)])
    store.prune_vectors(RELATION_SPACE, doc_id, [scoped_key(r, doc_id) for r in store.relations_in(doc_id)])


# --------------------------------------------------------------------------- the top (theme) layer
THEME = "theme"  # hyperedge level of a chunk's theme (VizRAG's top layer)


@dataclass
class ChunkTheme:
    chunk_id: str
    description: str
    key_entities: list[str]  # entity ids, most central first
    keywords: list[str]


class Themer(Protocol):
    name: str

    def themes(
        self, chunks: list[Chunk], entities: dict[str, list[tuple[str, str]]], edges: dict[str, list[list[str]]]
    ) -> list[ChunkTheme]:
        """One theme per chunk. `entities`: chunk -> [(entity id, name)]; `edges`: chunk -> member id lists."""


def chunk_text(chunk: Chunk) -> str:
    if chunk.modality == "image":
        return " ".join(t for t in (chunk.caption, chunk.ocr_text, str(chunk.meta.get("description", ""))) if t)
    return chunk.text


def build_theme_layer(store: GraphStore, embedder: Embedder, doc_id: str, themer: Themer) -> int:
    """A theme hyperedge per chunk over its key entities, stored as level "theme" and embedded."""
    chunks = [c for c in store.iter_chunks(doc_id) if not c.placeholder]
    entity_rows = store.chunk_entities(doc_id)
    edge_rows = store.chunk_hyperedge_members(doc_id)
    themes = themer.themes(chunks, entity_rows, edge_rows)
    store.delete_hyperedges(store.hyperedges_of_level(doc_id, THEME))  # a rebuild replaces them
    written = []
    for theme in themes:
        members = [(e, "key") for e in theme.key_entities]
        hid = edge_id(
            THEME, [f"{theme.chunk_id}:{e}" for e in theme.key_entities] or [theme.chunk_id], theme.description
        )
        written.append((Hyperedge(hid, THEME, theme.description, theme.keywords, 1.0, members), [theme.chunk_id]))
    store.write_graph([], written)
    if written:
        vectors = embedder.embed([h.description for h, _ in written])
        store.put_vectors(THEME_SPACE, [(scoped_key(h.edge_id, doc_id), doc_id) for h, _ in written], vectors)
    return len(written)
