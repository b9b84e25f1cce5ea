"""The concept layer over the entities (HVM-GraphRAG 3.1.3): concept nodes, concept edges, and the
concept -> chunk evidence index, with embeddings for concepts and relations.

Each entity belongs to one concept; a concept's evidence is the union of its entities' evidence
(after reconciliation removed the links only dropped facts supported), and its edges are the
schemas its resolved facts instantiate. Everything is kept per document so retrieval can be
scoped, and recomputed only for the concepts a document touches.
"""

from __future__ import annotations

from collections.abc import Sequence

from hyperfolio.models.protocols import Embedder
from hyperfolio.store.base import CONCEPT_SPACE, RELATION_SPACE, scoped_key
from hyperfolio.store.sqlite import SQLiteStore

MEMBERS_SHOWN = 8  # entity names embedded with a concept's name


def relation_text(relation: str) -> str:
    return relation.replace("_", " ").strip()


def update_concept_layer(store: SQLiteStore, embedder: Embedder, doc_id: str, extra: Sequence[str] = ()) -> int:
    """Recompute the concepts the document touches (and `extra` ones, e.g. from a removed document),
    then embed the document's concepts and relations. Returns how many concepts it has."""
    touched = list(dict.fromkeys([*store.document_concepts(doc_id), *extra]))
    store.rebuild_concepts(touched)
    concepts = store.concepts_in(doc_id)
    if concepts:
        members = store.concept_members_in(doc_id, [c for c, _ in concepts], MEMBERS_SHOWN)
        texts = [name + (": " + ", ".join(members[cid]) if members.get(cid) else "") for cid, name in concepts]
        store.put_vectors(
            CONCEPT_SPACE, [(scoped_key(cid, doc_id), doc_id) for cid, _ in concepts], embedder.embed(texts)
        )
    relations = store.relations_in(doc_id)
    if relations:
        store.put_vectors(
            RELATION_SPACE,
            [(scoped_key(r, doc_id), doc_id) for r in relations],
            embedder.embed([relation_text(r) for r in relations]),
        )
    return len(concepts)
