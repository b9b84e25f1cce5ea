"""SQLite's large spaces are searched through a cell index (store/ann.py): returned scores and tie order
are exact, membership of the top k close to exact, and the index follows the matrix as it grows."""

from __future__ import annotations

import numpy as np
import pytest
from tests.store.test_contract import chunk, document

from hyperfolio.store import ann, sqlite_vectors
from hyperfolio.store.base import CHUNK_SPACE, STAGE_READY
from hyperfolio.store.sqlite import SQLiteStore

DIM = 32


def clustered(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 40 centres, as embeddings of related passages lie."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, DIM))
    data = centres[rng.integers(0, 40, n)] + 0.35 * rng.standard_normal((n, DIM))
    return (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)


def add(store: SQLiteStore, doc: str, vectors: np.ndarray, ready: bool = True) -> None:
    n = len(vectors)
    store.write_document(document(doc, [[chunk(doc, 1, i, "text", f"t{i}") for i in range(n)]]))
    store.put_vectors(CHUNK_SPACE, [(f"{doc}:1:{i}", doc) for i in range(n)], vectors)
    if ready:
        store.set_stage(doc, STAGE_READY)


def exact(ids: list[str], data: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    order = np.lexsort((np.arange(len(data)), -(data @ query)))  # ties in storage order
    return [ids[i] for i in order[:k]]


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(sqlite_vectors, "APPROXIMATE_FROM", 1_000)


def test_a_large_space_is_searched_through_cells_with_exact_scores(tmp_path, small_limit):
    store = SQLiteStore(tmp_path / "col")
    try:
        first, second, late = clustered(1500, 1), clustered(1500, 2), clustered(300, 3)
        add(store, "a", first)
        add(store, "b", second)
        add(store, "late", late, ready=False)  # not searchable
        ids = [f"a:1:{i}" for i in range(1500)] + [f"b:1:{i}" for i in range(1500)]
        data = np.vstack([first, second])
        queries = clustered(40, 4)
        recalls = []
        for query in queries:
            found = store.vector_search(CHUNK_SPACE, query, 10)
            assert len(found) == 10 and not any(f.startswith("late") for f, _ in found)
            for item, score in found:  # every score is the exact one
                assert score == pytest.approx(float(data[ids.index(item)] @ query), abs=1e-6)
            assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
            recalls.append(len({f for f, _ in found} & set(exact(ids, data, query, 10))) / 10)
        assert np.mean(recalls) >= 0.95, recalls
        assert store._matrices[CHUNK_SPACE].cells is not None  # the cells did the search
        scoped = store.vector_search(CHUNK_SPACE, queries[0], 10, ["b"])  # one document: scored whole
        assert [f for f, _ in scoped] == exact(ids[1500:], second, queries[0], 10)
        many = store.vector_search_many(CHUNK_SPACE, queries[:3], 5)
        assert many == [store.vector_search(CHUNK_SPACE, q, 5) for q in queries[:3]]
    finally:
        store.close()


def test_the_cells_follow_the_matrix_and_a_small_space_stays_exact(tmp_path, small_limit):
    store = SQLiteStore(tmp_path / "col")
    try:
        add(store, "a", clustered(600, 5))
        probe = clustered(1, 6)[0]
        ids = [f"a:1:{i}" for i in range(600)]
        # 600 rows, under the limit: exact, no cells
        assert [f for f, _ in store.vector_search(CHUNK_SPACE, probe, 10)] == exact(ids, clustered(600, 5), probe, 10)
        assert store._matrices[CHUNK_SPACE].cells is None
        add(store, "b", clustered(600, 7))
        store.vector_search(CHUNK_SPACE, probe, 10)
        cells = store._matrices[CHUNK_SPACE].cells
        assert cells is not None and cells.indexed == 1200
        twin = np.tile(probe, (3, 1))  # three rows equal to the query, stored after everything else
        add(store, "c", twin)
        found = store.vector_search(CHUNK_SPACE, probe, 3)
        assert store._matrices[CHUNK_SPACE].cells is cells and cells.indexed == 1203  # extended, not remade
        assert [f for f, _ in found] == ["c:1:0", "c:1:1", "c:1:2"]  # equal scores in storage order
        assert [s for _, s in found] == pytest.approx([1.0] * 3)
        add(store, "d", clustered(1300, 8))  # the space doubled since its cells were placed: placed again
        assert [f for f, _ in store.vector_search(CHUNK_SPACE, probe, 3)] == ["c:1:0", "c:1:1", "c:1:2"]
        assert store._matrices[CHUNK_SPACE].cells is not cells
        cells = store._matrices[CHUNK_SPACE].cells
        assert cells is not None and cells.placed_for == cells.indexed == 2503
        store.remove_document("c")  # a deletion: the matrix is loaded again, and its cells made again
        found = store.vector_search(CHUNK_SPACE, probe, 3)
        assert not any(f.startswith("c:") for f, _ in found)
        assert store._matrices[CHUNK_SPACE].cells is not cells
    finally:
        store.close()


def test_candidates_leave_a_margin():
    assert ann.candidates(10) == 110 and ann.candidates(50) == 200
