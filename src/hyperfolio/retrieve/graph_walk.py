"""A random walk over the hypergraph, restarted at what the question names: a source `auto` reads.

Chunks, entities and hyperedges are the walk's nodes: a chunk links to the entities and the hyperedges
evidenced in it, a hyperedge to its member entities. A walk that restarts at the question's entities
(each weighted by its match and by how specific it is: an entity on few chunks says more) and at the best
flat candidates (the first hop) settles on chunks that share entities and facts with both — among them
those no flat source ranks, such as the second paragraph of a bridge question ("the university whose
campus is in Lawrence" -> the University of Kansas -> its fight song). This is personalised PageRank, as
HippoRAG runs it over its phrase graph; here it runs over the hypergraph the collection already has.

The transitions are built once per scope while the documents and the graph stay the same (a version of
each keys them), and a walk is a few sparse matrix-vector products (numpy's bincount over the links).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.graph_paths import ENTITY_LEVELS, searchable_scope
from hyperfolio.retrieve.rankings import Ranking, reciprocal_rank_fusion

DAMPING = 0.5  # chance of following an edge rather than restarting at the seeds (HippoRAG's choice)
ITERATIONS = 25  # power iterations: the walk's mass moves less than 1e-7 after this many at 0.5
FLAT_SEEDS = 5  # best fused flat candidates the walk restarts at beside the question's entities
FLAT_SHARE = 0.5  # of the restart mass, the share on those candidates when entities matched too
WHOLE_COLLECTION_CHUNKS = 50_000  # a whole collection up to this size is walked (HotpotQA's: 5,000)
PREBUILD_CHUNKS = 500  # a document this long has its walk graph built when the collection is warmed


@dataclass(frozen=True)
class Transition:
    """A sparse column-stochastic matrix as its non-zero entries: `step` moves a mass vector one edge."""

    rows: np.ndarray
    cols: np.ndarray
    weights: np.ndarray
    size: int

    def step(self, mass: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows, weights=self.weights * mass[self.cols], minlength=self.size)


@dataclass(frozen=True)
class WalkGraph:
    """The scope's chunk-entity-hyperedge graph and its transitions."""

    chunks: list[str]  # nodes 0 .. len(chunks) - 1
    node: dict[str, int]  # "c:" chunk, "e:" entity, "h:" hyperedge -> node
    transition: Transition
    entity_chunks: dict[str, int]  # entity -> how many chunks evidence it

    @property
    def size(self) -> int:
        return len(self.node)


def build_walk_graph(ctx: RetrievalContext, doc_ids: Sequence[str]) -> WalkGraph:
    """The graph of these documents' chunks, entities and hyperedges (every level of the entity graph)."""
    chunk_of: dict[str, int] = {}
    item_of: dict[str, int] = {}  # "e:" entity, "h:" hyperedge -> its number among the items
    near: list[int] = []  # links, each (near[i], far[i]): a chunk or item number, then an item number
    far: list[int] = []
    from_item: list[bool] = []  # whether near[i] numbers an item (a hyperedge's member) or a chunk
    for doc_id in doc_ids:
        for chunk, entities in ctx.store.chunk_entities(doc_id).items():
            c = chunk_of.setdefault(chunk, len(chunk_of))
            for entity, _ in entities:
                near.append(c)
                far.append(item_of.setdefault(f"e:{entity}", len(item_of)))
                from_item.append(False)
        for chunk, edge, entity in ctx.store.hyperedge_incidence(doc_id, ENTITY_LEVELS):
            c, h = chunk_of.setdefault(chunk, len(chunk_of)), item_of.setdefault(f"h:{edge}", len(item_of))
            e = item_of.setdefault(f"e:{entity}", len(item_of))
            near += [c, h]  # chunk - hyperedge, and hyperedge - member
            far += [h, e]
            from_item += [False, True]
    chunks, n = len(chunk_of), len(chunk_of) + len(item_of)
    a = np.array(near, dtype=np.int64) + chunks * np.array(from_item, dtype=np.int64)
    b = np.array(far, dtype=np.int64) + chunks
    pairs = np.unique(a * max(n, 1) + b)  # each link once, however often the store repeats it
    a, b = pairs // max(n, 1), pairs % max(n, 1)
    rows, cols = np.concatenate([a, b]), np.concatenate([b, a])
    degree = np.bincount(cols, minlength=n).astype(np.float64)
    transition = Transition(rows, cols, 1.0 / degree[cols], n)  # node j spreads its mass evenly
    node = {f"c:{chunk}": i for chunk, i in chunk_of.items()} | {key: chunks + j for key, j in item_of.items()}
    is_entity = np.array([key.startswith("e:") for key in item_of], dtype=bool)
    on_chunks = b[(a < chunks)] - chunks
    counts = np.bincount(on_chunks[is_entity[on_chunks]], minlength=len(item_of))  # chunks per entity
    entity_chunks = {key[2:]: int(counts[j]) for key, j in item_of.items() if is_entity[j] and counts[j]}
    ordered = sorted(chunk_of, key=chunk_of.__getitem__)
    return WalkGraph(ordered, node, transition, entity_chunks)


def prebuild(ctx: RetrievalContext) -> int:
    """Build now the walk graphs of the documents long enough that reading their links would slow their
    first question (a 2,000-chunk filing: a third of a second); the number built."""
    long = [d.doc_id for d in ctx.ready_documents() if d.num_chunks >= PREBUILD_CHUNKS]
    for doc_id in long:
        walk_graph(Query(text="", doc_ids=[doc_id]), ctx)
    return len(long)


def walk_graph(query: Query, ctx: RetrievalContext) -> WalkGraph | None:
    """The question's scope's graph, built once while the documents and the graph stay the same; None for
    a question over a whole collection larger than `WHOLE_COLLECTION_CHUNKS` (a walk over a million
    chunks' links would cost each question more than all its other sources)."""
    if not query.doc_ids and ctx.kept(("chunks",), ctx.store.count_chunks) > WHOLE_COLLECTION_CHUNKS:
        return None
    scope = tuple(sorted(searchable_scope(query, ctx)))
    version = ctx.memo.value(("graph-version",), ctx.store.graph_version)
    key = ("walk-graph", scope if query.doc_ids else None)
    return ctx.kept(key, lambda: build_walk_graph(ctx, scope), also=version)


def personalised_pagerank(transition: Transition, restart: np.ndarray) -> np.ndarray:
    """The walk's stationary mass: x = (1 - d) r + d T x, by power iteration from the restart vector."""
    mass = restart.copy()
    for _ in range(ITERATIONS):
        mass = (1.0 - DAMPING) * restart + DAMPING * transition.step(mass)
    return mass


def restart_vector(
    graph: WalkGraph, entity_score: Mapping[str, float], flat: Sequence[tuple[str, float]]
) -> np.ndarray:
    """Where the walk restarts: the matched entities, each by its match over the square root of the
    chunks it is on, and the best flat candidates by reciprocal rank; each group sums to its share."""
    restart = np.zeros(graph.size)
    entities = np.zeros(graph.size)
    for entity, score in entity_score.items():
        i = graph.node.get(f"e:{entity}")
        if i is not None:
            entities[i] = score / max(1, graph.entity_chunks.get(entity, 1)) ** 0.5
    chunks = np.zeros(graph.size)
    for rank, (chunk_id, _) in enumerate(flat[:FLAT_SEEDS], start=1):
        i = graph.node.get(f"c:{chunk_id}")
        if i is not None:
            chunks[i] = 1.0 / rank
    groups = [(entities, 1.0 - FLAT_SHARE), (chunks, FLAT_SHARE)]
    present = [(vector, share) for vector, share in groups if vector.sum() > 0]
    total = sum(share for _, share in present)
    for vector, share in present:  # a group alone takes all the mass, whatever its share
        restart += vector / vector.sum() * (share / total)
    return restart


def walk_ranking(
    query: Query, ctx: RetrievalContext, entity_score: Mapping[str, float], flat: Mapping[str, Ranking], depth: int
) -> Ranking:
    """Chunks by the walk's mass, best first, at most `depth`: empty when the scope has no graph or
    nothing to restart at."""
    graph = walk_graph(query, ctx)
    if graph is None or not graph.chunks:
        return []
    fused, _ = reciprocal_rank_fusion(dict(flat), ctx.rrf_k)
    restart = restart_vector(graph, entity_score, fused)
    if restart.sum() == 0:
        return []
    mass = personalised_pagerank(graph.transition, restart)[: len(graph.chunks)]
    top = np.argsort(-mass, kind="stable")[:depth]
    return [(graph.chunks[i], float(mass[i])) for i in top if mass[i] > 0]
