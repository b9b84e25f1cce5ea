"""How close the SQLite store's cell index (store/ann.py) comes to exact vector search, space by space.

(And its graph, `--hnsw`; and, where the store holds a space as float16, a full scan of that.)

For each vector space of a collection with at least `--min-rows` vectors: the seconds to make its cells,
and over `--queries` probes the cell search's recall of the exact top 10 and top 50 (by score: a tie
at the boundary counts as found), with both searches' p50/p95 ms. Probes are what `auto` sends: the
chunk space gets questions under the chunk embedder, the graph spaces questions' words under the graph
embedder. Questions are MMLongBench-Doc's when the data is present, else the synthetic generator's.

    python benchmarks/vector_index.py bench-out/synthetic-1000000-minilm
    python benchmarks/vector_index.py eval-out/dev/mm --min-rows 1000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from synthetic import Corpus

from hyperfolio.collection import Collection
from hyperfolio.config import Settings
from hyperfolio.eval.datasets import DatasetMissing, load_mmlongbench
from hyperfolio.eval.metrics import percentile
from hyperfolio.retrieve.base import Query
from hyperfolio.retrieve.rankings import graph_vectors, query_vector
from hyperfolio.store.ann import (
    GRAPH_LINKS,
    GRAPH_SEARCH_DEPTH,
    MIN_PROBED,
    PROBED_SHARE,
    CellIndex,
    GraphIndex,
    candidates,
)
from hyperfolio.store.base import CHUNK_SPACE, CONCEPT_SPACE, ENTITY_SPACE, HYPEREDGE_SPACE, RELATION_SPACE


def questions(n: int, dim: int) -> list[str]:
    try:
        return [q.question for q in load_mmlongbench().questions[:n]]
    except DatasetMissing:
        return Corpus.make(7, dim).questions(n)


def recall(found: list[float], best: np.ndarray, k: int) -> float:
    """Share of the exact top k whose score the found top k reaches (ties at the boundary count)."""
    if not len(best):
        return 1.0
    kth = best[min(k, len(best)) - 1]
    return min(1.0, sum(s >= kth - 1e-6 for s in found[:k]) / min(k, len(best)))


def scored_search(
    matrix: np.ndarray, probes: np.ndarray, exact: list, rows_for: Callable[[np.ndarray], np.ndarray]
) -> tuple[float, float, list[float]]:
    """Each probe's candidate rows (`rows_for`) scored exactly against the matrix, as the store scores them:
    mean recall@10 and recall@50 of the exact top, and each search's milliseconds."""
    r10, r50, took = [], [], []
    for probe, (best, _) in zip(probes, exact, strict=True):
        began = time.perf_counter()
        rows = rows_for(probe.reshape(1, -1).astype(np.float32))
        found = sorted((matrix[rows] @ probe).tolist(), reverse=True)
        took.append((time.perf_counter() - began) * 1000)
        r10.append(recall(found, best, 10))
        r50.append(recall(found, best, 50))
    return float(np.mean(r10)), float(np.mean(r50)), took


def stored_rows(store, space: str, rowids: np.ndarray) -> np.ndarray:
    """The float32 vectors as stored, in the order of the store's matrix (its rowids)."""
    out = np.zeros((len(rowids), 0), dtype=np.float32)
    place = {int(r): i for i, r in enumerate(rowids)}
    for rowid, blob in store._db.execute("SELECT rowid, vec FROM vectors WHERE space = ?", (space,)):
        if rowid in place:
            row = np.frombuffer(blob, dtype=np.float32)
            if not out.shape[1]:
                out = np.zeros((len(rowids), len(row)), dtype=np.float32)
            out[place[rowid]] = row
    return out


def half_rows(held: np.ndarray, matrix: np.ndarray, probes: np.ndarray, exact: list) -> None:
    """A full scan of the matrix as the store holds it (float16): recall of the exact top, and the largest
    difference of a score from the float32 one."""
    worst = 0.0

    def top(probe: np.ndarray) -> np.ndarray:
        nonlocal worst
        scores = held @ probe[0]
        worst = max(worst, float(np.abs(scores - matrix @ probe[0]).max()))
        return np.argsort(-scores, kind="stable")[:50]

    r10, r50, _ = scored_search(matrix, probes, exact, top)
    label = f"(scan, {held.dtype} as held; largest score error {worst:.1e})"
    print(f"| {label} | {len(matrix):,} | | | {r10:.3f} | {r50:.3f} | | |", flush=True)


def hnsw_rows(matrix: np.ndarray, probes: np.ndarray, exact: list, depths: list[int], links: int) -> None:
    """The same probes through the store's graph (`GraphIndex`: faiss HNSW, 8-bit codes, `links` neighbours
    a node) whose best `candidates(50)` rows are scored exactly, as the store does: seconds to make, recall,
    latency."""
    began = time.perf_counter()
    graph = GraphIndex.build(matrix, links=links)
    assert graph is not None  # nothing stops it
    made = time.perf_counter() - began
    for depth in depths:
        graph.search_depth = depth
        r10, r50, took = scored_search(matrix, probes, exact, lambda probe, g=graph: g.search(probe, 50)[0])
        print(
            f"| (HNSW, 8-bit, M {links}) | {len(matrix):,} | {made:.1f} | efSearch {depth} | {r10:.3f} |"
            f" {r50:.3f} | | {percentile(took, 50):.2f} / {percentile(took, 95):.2f} |",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", type=Path)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--min-rows", type=int, default=100_000, help="spaces at least this large are measured")
    parser.add_argument("--embedder", default=None, help="the collection's chunk embedder, if not its default")
    parser.add_argument(
        "--shares",
        default=str(PROBED_SHARE),
        help="comma-separated shares of the cells to scan, each measured on the same cells (e.g. 0.25,0.125,0.0625)",
    )
    parser.add_argument(
        "--hnsw",
        default=str(GRAPH_SEARCH_DEPTH),
        help="also measure the store's HNSW graph at these comma-separated search depths (efSearch; '' for none)",
    )
    parser.add_argument("--hnsw-m", type=int, default=GRAPH_LINKS, help="the HNSW graph's neighbours a node (M)")
    args = parser.parse_args()
    depths = [int(d) for d in args.hnsw.split(",") if d.strip()]
    shares = [float(s) for s in args.shares.split(",") if s.strip()]
    settings = Settings.load(None, embedder=args.embedder) if args.embedder else None
    with Collection(args.collection, settings=settings) as col:
        store = col.store
        ctx = col.parts.retrieval_context(col._texts)
        head = "| space | rows | cells made s | share scanned | recall@10 | recall@50 | exact p50 / p95 ms |"
        print(head + " cells p50 / p95 ms |")
        print("|---|---|---|---|---|---|---|---|")
        for space in (CHUNK_SPACE, ENTITY_SPACE, HYPEREDGE_SPACE, CONCEPT_SPACE, RELATION_SPACE):
            vm = store._matrix(space)  # the store's own in-memory matrix (sqlite_vectors.py)
            if len(vm.ids) < args.min_rows:
                continue
            held = vm.matrix  # float16 from sqlite_vectors.HALF_FROM rows
            matrix = held if held.dtype == np.float32 else stored_rows(store, space, vm.rowids[: len(held)])
            texts = questions(args.queries, matrix.shape[1])
            if space == CHUNK_SPACE:
                probes = np.vstack([query_vector(Query(t), ctx) for t in texts])
            else:
                words = [w for t in texts for w in t.split() if len(w) > 3][: args.queries]
                probes = np.asarray(graph_vectors(words, ctx))
            began = time.perf_counter()
            cells = CellIndex.build(matrix)
            made = time.perf_counter() - began
            exact = []
            for probe in probes:
                began = time.perf_counter()
                scores = matrix @ probe
                exact.append((-np.sort(-scores)[:50], (time.perf_counter() - began) * 1000))
            t_exact = [t for _, t in exact]
            if held.dtype != np.float32:
                half_rows(held, matrix, probes, exact)
            for share in shares:
                cells.index.nprobe = max(MIN_PROBED, int(cells.index.nlist * share))
                r10, r50, t_cells = scored_search(matrix, probes, exact, lambda probe, c=cells: c.search(probe, 50)[0])
                print(
                    f"| {space} | {len(matrix):,} | {made:.1f} | {share:g} ({cells.index.nprobe} of"
                    f" {cells.index.nlist}) | {r10:.3f} | {r50:.3f} |"
                    f" {percentile(t_exact, 50):.1f} / {percentile(t_exact, 95):.1f} |"
                    f" {percentile(t_cells, 50):.1f} / {percentile(t_cells, 95):.1f} |",
                    flush=True,
                )
            if depths:
                hnsw_rows(matrix, probes, exact, depths, args.hnsw_m)
        print(f"\nper search: the share of cells shown (the store scans {PROBED_SHARE:g}),", end=" ")
        print(f"{candidates(50)} rows scored for a top 50")
    return 0


if __name__ == "__main__":
    sys.exit(main())
