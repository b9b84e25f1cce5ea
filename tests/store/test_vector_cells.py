"""SQLite's large spaces are held as float16 and searched through cells, then a graph made in the background
(store/ann.py): returned scores within 2^-11 of exact, ties in storage order, membership of the top k close
to exact, and the indexes follow the matrix as it grows."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from tests.store.test_contract import chunk, document

from hyperfolio.store import ann, sqlite_vectors
from hyperfolio.store.base import CHUNK_SPACE, SPACES, STAGE_READY
from hyperfolio.store.graph_files import GraphFiles
from hyperfolio.store.sqlite import GRAPH_FOLDER, SQLiteStore

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


def close_to_exact(store: SQLiteStore, ids: list[str], data: np.ndarray, queries: np.ndarray) -> float:
    """Mean recall of the exact top 10 over the queries, having checked that every search returns ten
    stored rows (`ids`, `data`) with their scores (float16 rows: within 2^-11 of exact), best first."""
    recalls = []
    for query in queries:
        found = store.vector_search(CHUNK_SPACE, query, 10)
        assert len(found) == 10
        for item, score in found:
            assert score == pytest.approx(float(data[ids.index(item)] @ query), abs=2**-11)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        recalls.append(len({f for f, _ in found} & set(exact(ids, data, query, 10))) / 10)
    return float(np.mean(recalls))


@pytest.fixture
def small_limit(monkeypatch):
    """Cells (and float16 rows) from 1,000 rows, and no graph: the cells' own behaviour."""
    monkeypatch.setattr(sqlite_vectors, "APPROXIMATE_FROM", 1_000)
    monkeypatch.setattr(sqlite_vectors, "HALF_FROM", 1_000)
    monkeypatch.setattr(sqlite_vectors, "GRAPH_FROM", 10**9)


@pytest.fixture
def store(tmp_path):
    opened = SQLiteStore(tmp_path / "col")
    yield opened
    opened.close()


def space_index(store: SQLiteStore) -> ann.SpaceIndex:
    """The chunk space's approximate index (it must have one)."""
    index = store._matrices[CHUNK_SPACE].index
    assert index is not None
    return index


def cells_of(store: SQLiteStore) -> ann.CellIndex | None:
    index = store._matrices[CHUNK_SPACE].index
    return None if index is None else index.cells


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
        assert close_to_exact(store, ids, data, queries) >= 0.95  # and nothing of "late"
        assert cells_of(store) is not None  # the cells did the search
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
        assert cells_of(store) is None
        add(store, "b", clustered(600, 7))
        store.vector_search(CHUNK_SPACE, probe, 10)
        cells = cells_of(store)
        assert cells is not None and cells.indexed == 1200
        twin = np.tile(probe, (3, 1))  # three rows equal to the query, stored after everything else
        add(store, "c", twin)
        found = store.vector_search(CHUNK_SPACE, probe, 3)
        assert cells_of(store) is cells and cells.indexed == 1203  # extended, not remade
        assert [f for f, _ in found] == ["c:1:0", "c:1:1", "c:1:2"]  # equal scores in storage order
        assert [s for _, s in found] == pytest.approx([1.0] * 3, abs=2**-11)
        add(store, "d", clustered(1300, 8))  # the space doubled since its cells were placed: placed again
        assert [f for f, _ in store.vector_search(CHUNK_SPACE, probe, 3)] == ["c:1:0", "c:1:1", "c:1:2"]
        assert cells_of(store) is not cells
        cells = cells_of(store)
        assert cells is not None and cells.placed_for == cells.indexed == 2503
        store.remove_document("c")  # a deletion: the matrix is loaded again, and its cells made again
        found = store.vector_search(CHUNK_SPACE, probe, 3)
        assert not any(f.startswith("c:") for f, _ in found)
        assert cells_of(store) is not cells
    finally:
        store.close()


def test_candidates_leave_a_margin():
    assert ann.candidates(10) == 110 and ann.candidates(50) == 200


@pytest.fixture
def held_graph(monkeypatch):
    """Cells, float16 rows and a graph from 1,000 rows; the graph's making waits for the returned gate."""
    monkeypatch.setattr(sqlite_vectors, "APPROXIMATE_FROM", 1_000)
    monkeypatch.setattr(sqlite_vectors, "HALF_FROM", 1_000)
    monkeypatch.setattr(sqlite_vectors, "GRAPH_FROM", 1_000)
    gate = threading.Event()
    make = ann.GraphIndex.build

    def held(matrix, stopped=None):
        assert gate.wait(60)
        return make(matrix, stopped)

    monkeypatch.setattr(ann.GraphIndex, "build", staticmethod(held))
    return gate


def test_a_graph_made_in_the_background_takes_over_with_every_row(tmp_path, held_graph):
    store = SQLiteStore(tmp_path / "col")
    try:
        first = clustered(2000, 11)
        add(store, "a", first)
        queries = clustered(40, 12)
        store.vector_search(CHUNK_SPACE, queries[0], 10)
        index = store._matrices[CHUNK_SPACE].index
        assert index is not None and index.cells is not None and index.graph is None  # the cells answer
        probe = queries[0]
        add(store, "b", np.tile(probe, (3, 1)))  # added while the graph is being made from the first 2,000
        assert [f for f, _ in store.vector_search(CHUNK_SPACE, probe, 3)] == ["b:1:0", "b:1:1", "b:1:2"]
        held_graph.set()
        assert index.wait(60)
        found = store.vector_search(CHUNK_SPACE, probe, 3)
        assert index.graph is not None and index.cells is None  # the graph took over, the cells were freed
        assert index.graph.indexed == 2003  # brought up to the rows added meanwhile
        assert [f for f, _ in found] == ["b:1:0", "b:1:1", "b:1:2"]
        assert [s for _, s in found] == pytest.approx([1.0] * 3, abs=2**-11)
        ids = [f"a:1:{i}" for i in range(2000)] + [f"b:1:{i}" for i in range(3)]
        data = np.vstack([first, np.tile(probe, (3, 1))])
        assert close_to_exact(store, ids, data, queries[1:]) >= 0.95
        add(store, "c", clustered(50, 13))  # later rows join the graph, nothing is made again
        store.vector_search(CHUNK_SPACE, probe, 3)
        assert store._matrices[CHUNK_SPACE].index is index and index.graph.indexed == 2053
    finally:
        store.close()


def test_a_graph_no_longer_wanted_is_abandoned(tmp_path, held_graph):
    store = SQLiteStore(tmp_path / "col")
    try:
        add(store, "a", clustered(1500, 14))
        add(store, "b", clustered(10, 15))
        store.vector_search(CHUNK_SPACE, clustered(1, 16)[0], 5)
        index = store._matrices[CHUNK_SPACE].index
        assert index is not None
        store.remove_document("b")  # a deletion: the matrix is loaded again, with new indexes
        store.vector_search(CHUNK_SPACE, clustered(1, 16)[0], 5)
        assert store._matrices[CHUNK_SPACE].index is not index and index.stopped.is_set()
        held_graph.set()
        assert not index.wait(60) and index.graph is None  # its graph was given up, not made
        last = store._matrices[CHUNK_SPACE].index
        assert last is not None
    finally:
        store.close()
    assert last.stopped.is_set()  # closing the store gives up a graph still being made
    assert ann.GraphIndex.build(clustered(100, 17), stopped=last.stopped) is None


def test_a_space_loads_in_batches_into_one_buffer(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_vectors, "LOAD_BATCH", 7)
    store = SQLiteStore(tmp_path / "col")
    try:
        first, second, late = clustered(100, 21), clustered(80, 22), clustered(10, 23)
        add(store, "a", first)
        add(store, "late", late, ready=False)  # stored between the two, not searchable
        add(store, "b", second)
        vm = sqlite_vectors.load(store._db, CHUNK_SPACE)
        assert len(vm.ids) == 180 and len(vm.buffer) == 190  # sized once, for every stored vector
        assert np.array_equal(vm.matrix, np.vstack([first, second]))
        assert vm.ids == [f"a:1:{i}" for i in range(100)] + [f"b:1:{i}" for i in range(80)]
        assert list(vm.rows_by_doc["b"]) == list(range(100, 180))
    finally:
        store.close()


@pytest.fixture
def counted_graphs(monkeypatch):
    """Cells, float16 rows and a graph from 1,000 rows; the graphs made are counted."""
    monkeypatch.setattr(sqlite_vectors, "APPROXIMATE_FROM", 1_000)
    monkeypatch.setattr(sqlite_vectors, "HALF_FROM", 1_000)
    monkeypatch.setattr(sqlite_vectors, "GRAPH_FROM", 1_000)
    made: list[int] = []
    make = ann.GraphIndex.build

    def counted(matrix, stopped=None):
        made.append(len(matrix))
        return make(matrix, stopped)

    monkeypatch.setattr(ann.GraphIndex, "build", staticmethod(counted))
    return made


def saved_rows(location) -> list[int]:
    return [rows for rows, _, _ in GraphFiles(location / GRAPH_FOLDER, CHUNK_SPACE).saved()]


def test_a_graph_made_is_kept_and_taken_up_by_the_next_store(tmp_path, counted_graphs):
    location = tmp_path / "col"
    first, second, probe = clustered(2000, 31), clustered(300, 32), clustered(1, 33)[0]
    store = SQLiteStore(location)
    try:
        add(store, "a", first)
        store.vector_search(CHUNK_SPACE, probe, 10)
        assert space_index(store).wait(60)
        assert counted_graphs == [2000] and saved_rows(location) == [2000]
        add(store, "b", second)  # joins the graph in memory; a tenth more rows: saved again on closing
        store.vector_search(CHUNK_SPACE, probe, 10)
    finally:
        store.close()
    assert saved_rows(location) == [2300]  # the older file went

    again = SQLiteStore(location)
    try:
        ids = [f"a:1:{i}" for i in range(2000)] + [f"b:1:{i}" for i in range(300)]
        assert close_to_exact(again, ids, np.vstack([first, second]), clustered(30, 34)) >= 0.95
        index = space_index(again)
        assert index.cells is None and index.builder is None  # taken up, not made
        assert index.graph is not None and index.graph.indexed == 2300 and counted_graphs == [2000]
        again.remove_document("a")  # other rows now: the saved graph no longer fits, cells answer at once
        add(again, "c", clustered(1500, 35))
        again.vector_search(CHUNK_SPACE, probe, 10)
        assert space_index(again).cells is not None and space_index(again).wait(60)
        assert counted_graphs == [2000, 1800] and saved_rows(location) == [1800]
    finally:
        again.close()


def test_a_damaged_saved_graph_is_made_again(tmp_path, counted_graphs, caplog):
    location = tmp_path / "col"
    store = SQLiteStore(location)
    try:
        add(store, "a", clustered(1200, 36))
        store.vector_search(CHUNK_SPACE, clustered(1, 37)[0], 10)
        assert space_index(store).wait(60)
    finally:
        store.close()
    (path,) = [p for _, _, p in GraphFiles(location / GRAPH_FOLDER, CHUNK_SPACE).saved()]
    path.write_bytes(path.read_bytes()[:1000])  # cut short, as by a full disk
    again = SQLiteStore(location)
    try:
        assert len(again.vector_search(CHUNK_SPACE, clustered(1, 37)[0], 10)) == 10
        assert space_index(again).cells is not None and space_index(again).wait(60)  # the cells, and a new graph
        assert counted_graphs == [1200, 1200] and saved_rows(location) == [1200]
        assert "cannot read the saved graph" in caplog.text
    finally:
        again.close()


def test_warming_loads_the_spaces_and_with_wait_puts_the_graphs_to_use(store, counted_graphs):
    add(store, "a", clustered(1100, 41))
    store.warm(wait=True)  # no search yet
    assert set(store._matrices) == set(SPACES)
    assert space_index(store).graph is not None and space_index(store).cells is None
    assert counted_graphs == [1100] and all(store._matrices[s].index is None for s in SPACES[1:])


def test_a_large_space_is_held_as_float16_whether_loaded_or_appended_to(store, monkeypatch):
    monkeypatch.setattr(sqlite_vectors, "HALF_FROM", 150)
    first, second = clustered(100, 51), clustered(100, 52)
    add(store, "a", first)
    probe = clustered(1, 53)[0]
    before = store.vector_search(CHUNK_SPACE, probe, 5)
    assert store._matrices[CHUNK_SPACE].matrix.dtype == np.float32  # 100 rows: exact
    exact_scores = [float(first[int(f.rsplit(":", 1)[1])] @ probe) for f, _ in before]
    assert [s for _, s in before] == pytest.approx(exact_scores, abs=1e-6)
    add(store, "b", second)  # 200 rows: appended, and held as float16 from here
    appended = store.vector_search(CHUNK_SPACE, probe, 10)
    assert store._matrices[CHUNK_SPACE].matrix.dtype == np.float16
    fresh = sqlite_vectors.load(store._db, CHUNK_SPACE)
    assert fresh.matrix.dtype == np.float16 and np.array_equal(fresh.matrix, store._matrices[CHUNK_SPACE].matrix)
    store._forget_matrices()
    assert store.vector_search(CHUNK_SPACE, probe, 10) == appended  # loaded afresh: the same scores, bit for bit
    ids = [f"a:1:{i}" for i in range(100)] + [f"b:1:{i}" for i in range(100)]
    assert close_to_exact(store, ids, np.vstack([first, second]), clustered(20, 54)) == 1.0  # scanned whole
