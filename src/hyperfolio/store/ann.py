"""Approximate nearest neighbours over a large in-memory vector space: which rows to score exactly.

Scoring every row of a million-row space costs ~100 ms per question (the matrix is read from memory
each time), and `auto` searches four spaces. From `APPROXIMATE_FROM` rows a space is searched through an
index that names the rows worth scoring: the caller scores the index's best `candidates(k)` rows
against the matrix (float16 at that size, scores within 5e-4: `sqlite_vectors.py`), so returned scores and
tie order are those of a full scan and only membership of the top k is approximate
(`benchmarks/vector_index.py` measures how often, per space).

Two indexes, both derived from the matrix: cells (faiss IVF with 8-bit codes), placed in seconds on the
first whole-space search, whose cost is a share of the rows; and a graph (faiss HNSW, 8-bit codes), whose
cost grows with the logarithm of the rows but which takes minutes to make at a million rows, so it is made
on a background thread and takes over from the cells when made (`SpaceIndex`). Both follow the matrix as
it is appended to, and go with it when it is loaded again. The graph is kept on disk (`graph_files.py`)
under a fingerprint of the rows it covers: a store reopened over the same rows takes it up at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import faiss
import numpy as np

from hyperfolio.store.graph_files import GraphFiles

# Rows from which a space is searched through cells; a smaller one (every dev collection) is scored exactly:
# 150,000 rows cost 11 ms exactly, and below ~250,000 cells save little and lose the most recall.
APPROXIMATE_FROM = 250_000
ROWS_PER_CELL = 1_000  # cells = rows / this (about sqrt(rows) at a million), at least MIN_CELLS
MIN_CELLS = 64
# The share of cells scanned per question (at least MIN_PROBED cells). Recall of the exact top 10 by it:
# real keywords against 298,204 real names (model2vec, `vector_index_real.py`) 0.947 at 1/8, 0.972 at 1/4,
# 0.992 at 1/2; the synthetic million-chunk collection (`vector_index.py`, pseudo-word questions near no
# stored vector) at 1/4: chunks 1.000, entities 0.979, hyperedges 0.938. A million chunk vectors: 25 ms.
PROBED_SHARE = 1 / 4
MIN_PROBED = 32
TRAINING_PER_CELL = 40  # rows sampled per cell to place the cells (k-means)
# The graph that replaces the cells once made (`GraphIndex`): neighbours a node, search depths while
# adding and searching. Recall of the exact top 10 at 100k chunks' dev densities (`vector_index.py --hnsw
# 256 --hnsw-m 24`): 343,000 entities 0.987 (cells at 1/4: 0.948), 497,000 hyperedges 0.927 (cells 0.910),
# in 0.6 and 1.1 ms. M 32 finds no more (0.993, 0.920) in 557 bytes a 256-dimensional vector against ~475,
# a gigabyte more at a million dev-density chunks; M 16 (390 bytes) loses hyperedges (0.876).
GRAPH_LINKS = 24
GRAPH_BUILD_DEPTH = 40
GRAPH_SEARCH_DEPTH = 256
GRAPH_TRAINING_ROWS = 20_000  # rows sampled to fit the 8-bit codes' ranges
GRAPH_BATCH = 10_000  # rows added between looks at whether the graph is still wanted (under a second)
GRAPH_FROM = APPROXIMATE_FROM  # rows from which a space searched through cells gets a graph made too
ADD_BATCH = 100_000  # rows converted to float32 and added at a time (a whole large space would double it)


def float32_batches(matrix: np.ndarray, start: int) -> Iterator[tuple[int, int, np.ndarray]]:
    """Rows from `start` on, `ADD_BATCH` at a time, as faiss takes them (a large space's matrix holds
    float16; converting it whole would double it): (first row, end, rows)."""
    for first in range(start, len(matrix), ADD_BATCH):
        end = min(first + ADD_BATCH, len(matrix))
        yield first, end, np.ascontiguousarray(matrix[first:end], dtype=np.float32)


def candidates(k: int) -> int:
    """Rows taken from the index for an exact top k: a margin for the 8-bit codes' error."""
    return max(4 * k, k + 100)


@dataclass
class CellIndex:
    """An IVF index over rows 0..indexed-1 of one matrix; row numbers are the index's ids."""

    index: faiss.IndexIVFScalarQuantizer
    placed_for: int  # rows when the cells were placed
    indexed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def build(cls, matrix: np.ndarray) -> CellIndex:
        rows, dim = matrix.shape
        cells = max(MIN_CELLS, rows // ROWS_PER_CELL)
        index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(dim), dim, cells, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        step = max(1, rows // (cells * TRAINING_PER_CELL))  # every step-th row: the same sample each time
        index.train(np.ascontiguousarray(matrix[::step], dtype=np.float32))
        index.nprobe = max(MIN_PROBED, int(cells * PROBED_SHARE))
        made = cls(index, rows)
        made.extend(matrix)
        return made

    def outgrown(self, rows: int) -> bool:
        """Whether the space has doubled since its cells were placed: they would hold twice the rows."""
        return rows >= 2 * self.placed_for

    def extend(self, matrix: np.ndarray) -> None:
        """Index the rows the matrix gained since the last call."""
        with self.lock:
            for first, end, rows in float32_batches(matrix, self.indexed):
                self.index.add_with_ids(rows, np.arange(first, end, dtype=np.int64))
                self.indexed = end

    def search(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """For each query, the row numbers worth scoring exactly for its top k."""
        with self.lock:
            _, found = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), candidates(k))
        return [row[row >= 0] for row in found]


@dataclass
class GraphIndex:
    """A faiss HNSW graph (8-bit codes) over rows 0..indexed-1 of one matrix; row numbers are its ids.

    Its search costs about the logarithm of the rows where the cells' cost is a share of them (a million
    chunks' entity space: ~1 ms a keyword against ~10 ms), with better recall; but it takes minutes to make
    at a million rows, so it is made in the background (`SpaceIndex`) while the cells answer.
    """

    index: faiss.IndexHNSWSQ
    indexed: int = 0
    search_depth: int = GRAPH_SEARCH_DEPTH  # at least: a larger k searches deeper
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def build(
        cls, matrix: np.ndarray, stopped: threading.Event | None = None, links: int = GRAPH_LINKS
    ) -> GraphIndex | None:
        """The graph over every row of `matrix`, added a batch at a time; none if `stopped` was set meanwhile."""
        rows, dim = matrix.shape
        stop = stopped or threading.Event()  # never set when none is given
        if stop.is_set():
            return None
        # faiss's stubs say a ScalarQuantizer; the constructor takes its type, as IndexIVFScalarQuantizer's does
        index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, links, faiss.METRIC_INNER_PRODUCT)  # type: ignore[arg-type]
        index.hnsw.efConstruction = GRAPH_BUILD_DEPTH
        index.train(np.ascontiguousarray(matrix[:: max(1, rows // GRAPH_TRAINING_ROWS)], dtype=np.float32))
        made = cls(index)
        for end in range(GRAPH_BATCH, rows + GRAPH_BATCH, GRAPH_BATCH):
            if stop.is_set():
                return None
            made.extend(matrix[: min(end, rows)])
        return made

    def extend(self, matrix: np.ndarray) -> None:
        """Add the rows the matrix gained since the last call (in order: the graph numbers rows as added)."""
        with self.lock:
            for _, end, rows in float32_batches(matrix, self.indexed):
                self.index.add(rows)
                self.indexed = end

    def search(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """For each query, the row numbers worth scoring exactly for its top k."""
        wanted = candidates(k)
        with self.lock:
            self.index.hnsw.efSearch = max(self.search_depth, wanted)
            _, found = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), wanted)
        return [row[row >= 0] for row in found]


@dataclass
class SpaceIndex:
    """How one large space is searched whole: through its cells at once, through its graph once that is made.

    The cells take seconds to place; the graph is made on a background thread from the rows held when the
    space was first searched, then brought up to date with the rows added meanwhile, and replaces the cells
    (freeing their memory). `stop` abandons the graph when the matrix is dropped. With `files`, a graph
    saved for the same first rows is taken up instead (no cells, no making), and a graph made is saved.
    """

    cells: CellIndex | None
    graph_from: int  # rows from which the graph is made
    turns: threading.Lock  # held while a graph is made: one at a time per store (memory, and faiss uses every core)
    files: GraphFiles | None = None
    graph: GraphIndex | None = None
    made: GraphIndex | None = None  # the graph, once made, until `update` has brought it up to date
    saved_rows: int = 0  # rows of the graph when last saved
    stopped: threading.Event = field(default_factory=threading.Event)
    builder: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(
        cls,
        matrix: np.ndarray,
        rowids: np.ndarray,
        graph_from: int,
        turns: threading.Lock,
        files: GraphFiles | None = None,
    ) -> SpaceIndex:
        """The index for a space whose rows (`matrix`) have these rowids (what a saved graph is checked by)."""
        if files is not None and len(matrix) >= graph_from:
            saved = files.load(rowids[: len(matrix)], matrix.shape[1])
            if saved is not None:
                graph = GraphIndex(saved, indexed=saved.ntotal)
                graph.extend(matrix)
                return cls(None, graph_from, turns, files, graph=graph, saved_rows=saved.ntotal)
        made = cls(CellIndex.build(matrix), graph_from, turns, files)
        made._start_graph(matrix, rowids)
        return made

    def _start_graph(self, matrix: np.ndarray, rowids: np.ndarray) -> None:
        if self.builder is None and self.graph is None and len(matrix) >= self.graph_from:
            rows = (matrix, rowids[: len(matrix)])
            self.builder = threading.Thread(target=self._make_graph, args=rows, name="ann-graph", daemon=True)
            self.builder.start()

    def _make_graph(self, matrix: np.ndarray, rowids: np.ndarray) -> None:
        with self.turns:
            graph = GraphIndex.build(matrix, self.stopped)
            if graph is not None and self.files is not None and not self.stopped.is_set():
                self.files.save(graph.index, rowids)
                self.saved_rows = graph.indexed
        with self.lock:
            if not self.stopped.is_set():
                self.made = graph

    def update(self, matrix: np.ndarray, rowids: np.ndarray) -> None:
        """Cover every row of `matrix` (which holds the rows searched before, and perhaps more after them)."""
        with self.lock:
            if self.made is not None:
                self.graph, self.made, self.cells = self.made, None, None
            if self.graph is not None:
                self.graph.extend(matrix)
            elif self.cells is None or self.cells.outgrown(len(matrix)):
                self.cells = CellIndex.build(matrix)
            else:
                self.cells.extend(matrix)
            self._start_graph(matrix, rowids)

    def search(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        with self.lock:
            through: GraphIndex | CellIndex | None = self.graph or self.cells
        assert through is not None  # update() leaves one of them
        return through.search(queries, k)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the graph to be made (the next `update` puts it to use); whether it is."""
        if self.builder is not None:
            self.builder.join(timeout)
        return self.graph is not None or self.made is not None

    def keep(self, rowids: np.ndarray) -> None:
        """Save the graph again if it has grown by a tenth since it was saved (rows added after it was made
        join it in memory; a reopened store would otherwise add them again)."""
        with self.lock:
            graph = self.graph
        if graph is None or self.files is None or graph.indexed < self.saved_rows * 1.1:
            return
        with graph.lock:
            self.files.save(graph.index, rowids[: graph.indexed])
            self.saved_rows = graph.indexed

    def stop(self, wait: bool = False) -> None:
        """Give up the graph if it is still being made; with `wait`, return once its thread has ended (a
        process must not exit while faiss is still adding to it on another thread)."""
        self.stopped.set()
        if wait and self.builder is not None:
            self.builder.join()
