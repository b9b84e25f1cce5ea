"""Approximate nearest neighbours over a large in-memory vector space: which rows to score exactly.

Scoring every row of a million-row space costs ~100 ms per question (the matrix is read from memory
each time), and `auto` searches four spaces. From `APPROXIMATE_FROM` rows a space gets an inverted-file
index (faiss IVF with 8-bit codes, a quarter of the matrix's memory): the question's nearest cells are
scanned, their best `candidates(k)` rows come back, and the caller scores those exactly against the
float32 matrix, so returned scores and tie order are exact and only membership of the top k is
approximate (`benchmarks/vector_index.py` measures how often, per space).

The index is derived: made from the matrix on the first whole-space search (seconds at a million
rows), extended when the matrix is appended to, made again when the space has doubled since (its cells
were placed for the rows then), and dropped with the matrix when that is loaded again. Nothing is written
to disk, so it can never disagree with the database.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import faiss
import numpy as np

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
        index.train(np.ascontiguousarray(matrix[::step]))
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
            if len(matrix) > self.indexed:
                added = np.ascontiguousarray(matrix[self.indexed :])
                self.index.add_with_ids(added, np.arange(self.indexed, len(matrix), dtype=np.int64))
                self.indexed = len(matrix)

    def search(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """For each query, the row numbers worth scoring exactly for its top k."""
        with self.lock:
            _, found = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), candidates(k))
        return [row[row >= 0] for row in found]
