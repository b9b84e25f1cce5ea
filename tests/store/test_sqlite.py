"""SQLite store: persistence, keyword and vector search, scoped search, removal."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from hyperfolio.errors import DuplicateDocument
from hyperfolio.model import Chunk, Document, Page
from hyperfolio.store.base import CHUNK_SPACE, STAGE_PARSED, STAGE_READY
from hyperfolio.store.keywords.tokens import query_terms
from hyperfolio.store.sqlite import SQLiteStore


def make_doc(doc_id: str, texts: list[str], source: str | None = None) -> Document:
    pages = []
    for number, text in enumerate(texts, start=1):
        chunk = Chunk(
            page=number,
            order=0,
            modality="text",
            text=text,
            bbox=(1.0, 2.0, 3.0, 4.0),
            section_path=["Intro", f"Part {number}"],
        )
        chunk.doc_id, chunk.chunk_id = doc_id, f"{doc_id}:{number}:0"
        pages.append(Page(number=number, chunks=[chunk], width=612, height=792))
    return Document(
        doc_id=doc_id,
        source=source or f"/tmp/{doc_id}.pdf",
        title=doc_id.upper(),
        kind="pdf",
        pages=pages,
        content_hash="h-" + doc_id,
    )


def write_ready(store: SQLiteStore, doc: Document) -> None:
    store.write_document(doc)
    store.set_stage(doc.doc_id, STAGE_READY)


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "col")
    yield s
    s.close()


def test_wal_mode_and_round_trip(store, tmp_path):
    doc = make_doc("d1", ["The turbine produced 40 MW.", "Revenue grew in Europe."])
    store.write_document(doc)
    mode = sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    info = store.get_document("d1")
    assert info.num_pages == 2 and info.num_chunks == 2 and info.status == STAGE_PARSED
    (chunk,) = store.get_chunks(["d1:2:0"])
    assert chunk.text == "Revenue grew in Europe."
    assert chunk.bbox == (1.0, 2.0, 3.0, 4.0)
    assert chunk.section_path == ["Intro", "Part 2"]
    assert store.document_by_hash("h-d1").doc_id == "d1"
    store.set_stage("d1", STAGE_READY)
    # a second connection to the same directory sees the committed state
    other = SQLiteStore(tmp_path / "col")
    assert other.get_document("d1").status == STAGE_READY
    other.close()


def test_same_document_twice_is_rejected_not_duplicated(store):
    store.write_document(make_doc("d1", ["alpha"]))
    with pytest.raises(DuplicateDocument):
        store.write_document(make_doc("d1", ["alpha"]))
    assert store.count_chunks() == 1  # the failed transaction left nothing behind


def test_keyword_search_ranks_and_scopes(store):
    write_ready(store, make_doc("d1", ["wind turbines in Denmark", "solar panels in Spain"]))
    write_ready(store, make_doc("d2", ["wind farms offshore"]))
    hits = store.keyword_search("Which wind turbines?", 10)
    assert hits[0][0] == "d1:1:0"
    assert {h[0] for h in hits} == {"d1:1:0", "d2:1:0"}
    scoped = store.keyword_search("wind", 10, doc_ids=["d2"])
    assert [h[0] for h in scoped] == ["d2:1:0"]
    # punctuation and FTS operators in the question are harmless
    assert isinstance(store.keyword_search('"NEAR(" AND OR *', 5), list)  # no FTS syntax error
    assert query_terms('what is "x" - OR y?') == ["x", "y"]


def test_vector_search_scoped_and_persisted(store, tmp_path):
    write_ready(store, make_doc("d1", ["a", "b"]))
    write_ready(store, make_doc("d2", ["c"]))
    vectors = np.eye(3, dtype=np.float32)
    store.put_vectors(CHUNK_SPACE, [("d1:1:0", "d1"), ("d1:2:0", "d1"), ("d2:1:0", "d2")], vectors)
    hits = store.vector_search(CHUNK_SPACE, np.array([0, 1, 0.1], dtype=np.float32), 2)
    assert [h[0] for h in hits] == ["d1:2:0", "d2:1:0"]
    scoped = store.vector_search(CHUNK_SPACE, np.array([0, 1, 0.1], dtype=np.float32), 2, doc_ids=["d2"])
    assert [h[0] for h in scoped] == ["d2:1:0"]
    assert store.missing_vectors(CHUNK_SPACE, "d1") == []
    reopened = SQLiteStore(tmp_path / "col")
    assert reopened.vector_search(CHUNK_SPACE, np.array([1, 0, 0], dtype=np.float32), 1)[0][0] == "d1:1:0"
    reopened.close()


def test_remove_deletes_only_what_the_document_alone_supported(store):
    write_ready(store, make_doc("d1", ["shared fact page"]))
    write_ready(store, make_doc("d2", ["other doc"]))
    store.put_vectors(CHUNK_SPACE, [("d1:1:0", "d1"), ("d2:1:0", "d2")], np.eye(2, dtype=np.float32))
    with store.transaction() as db:
        db.executemany(
            "INSERT INTO entities(entity_id, name, norm_name) VALUES (?, ?, ?)",
            [("e_only1", "Only1", "only1"), ("e_shared", "Shared", "shared")],
        )
        db.executemany("INSERT INTO hyperedges(edge_id, level) VALUES (?, ?)", [("h1", "low"), ("h2", "low")])
        # two hyperedges over the same entity set stay two rows
        db.executemany(
            "INSERT INTO incidence(edge_id, entity_id, role) VALUES (?, ?, ?)",
            [
                ("h1", "e_only1", "member"),
                ("h1", "e_shared", "member"),
                ("h2", "e_only1", "member"),
                ("h2", "e_shared", "member"),
            ],
        )
        db.executemany(
            "INSERT INTO provenance(item_kind, item_id, chunk_id, doc_id, page) VALUES (?, ?, ?, ?, ?)",
            [
                ("entity", "e_only1", "d1:1:0", "d1", 1),
                ("entity", "e_shared", "d1:1:0", "d1", 1),
                ("entity", "e_shared", "d2:1:0", "d2", 1),
                ("hyperedge", "h1", "d1:1:0", "d1", 1),
                ("hyperedge", "h2", "d2:1:0", "d2", 1),
            ],
        )
    store.remove_document("d1")
    assert store.get_document("d1") is None
    assert store.count_chunks() == 1
    assert store.keyword_search("shared fact", 5) == []
    assert [h[0] for h in store.vector_search(CHUNK_SPACE, np.array([1, 1], dtype=np.float32), 5)] == ["d2:1:0"]
    entities = {r[0] for r in store._query("SELECT entity_id FROM entities")}
    edges = {r[0] for r in store._query("SELECT edge_id FROM hyperedges")}
    assert entities == {"e_shared"}
    assert edges == {"h2"}
    assert store._query("SELECT edge_id, entity_id FROM incidence") == [("h2", "e_shared")]


def test_vector_search_fast_path_at_scale(store):
    """Exact top-k over many vectors, scoped and unscoped (speed at 100k is measured in benchmarks/)."""
    rng = np.random.default_rng(0)
    n, dim = 20_000, 64
    doc = make_doc("big", ["x"])
    write_ready(store, doc)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.put_vectors("scale", [(f"i{i}", "big") for i in range(n)], vectors)
    query = rng.standard_normal(dim).astype(np.float32)
    expected = np.argsort(-(vectors @ query))[:5]
    assert [h[0] for h in store.vector_search("scale", query, 5)] == [f"i{i}" for i in expected]
    write_ready(store, make_doc("small", ["y"]))
    store.put_vectors("scale", [("s0", "small"), ("s1", "small")], vectors[:2] * -1)
    scoped = store.vector_search("scale", query, 5, doc_ids=["small"])
    assert {h[0] for h in scoped} == {"s0", "s1"}


def test_documents_not_fully_indexed_are_not_searchable(store):
    write_ready(store, make_doc("d1", ["lighthouse keeper logbook"]))
    store.write_document(make_doc("d2", ["lighthouse lamp maintenance"]))  # stage "parsed": ingest unfinished
    store.put_vectors(CHUNK_SPACE, [("d1:1:0", "d1"), ("d2:1:0", "d2")], np.eye(2, dtype=np.float32))
    assert [h[0] for h in store.keyword_search("lighthouse", 10)] == ["d1:1:0"]
    assert [h[0] for h in store.vector_search(CHUNK_SPACE, np.array([1, 1], dtype=np.float32), 10)] == ["d1:1:0"]
    store.set_stage("d2", STAGE_READY)
    assert len(store.keyword_search("lighthouse", 10)) == 2
    assert len(store.vector_search(CHUNK_SPACE, np.array([1, 1], dtype=np.float32), 10)) == 2


def test_a_second_store_sees_vectors_written_by_another_connection(store, tmp_path):
    write_ready(store, make_doc("d1", ["a"]))
    store.put_vectors(CHUNK_SPACE, [("d1:1:0", "d1")], np.array([[1, 0]], dtype=np.float32))
    reader = SQLiteStore(tmp_path / "col")
    assert len(reader.vector_search(CHUNK_SPACE, np.array([1, 0], dtype=np.float32), 5)) == 1  # cached now
    write_ready(store, make_doc("d2", ["b"]))
    store.put_vectors(CHUNK_SPACE, [("d2:1:0", "d2")], np.array([[0, 1]], dtype=np.float32))
    hits = reader.vector_search(CHUNK_SPACE, np.array([0, 1], dtype=np.float32), 5)
    assert hits[0][0] == "d2:1:0"
    reader.close()


def test_invalid_k_returns_nothing(store):
    write_ready(store, make_doc("d1", ["alpha beta"]))
    store.put_vectors(CHUNK_SPACE, [("d1:1:0", "d1")], np.array([[1.0]], dtype=np.float32))
    assert store.keyword_search("alpha", 0) == [] and store.keyword_search("alpha", -1) == []
    assert store.vector_search(CHUNK_SPACE, np.array([1.0], dtype=np.float32), -1) == []


def test_chunk_annotations_persist_in_its_metadata(store, tmp_path):
    store.write_document(make_doc("d1", ["A chart of capacity."]))
    store.annotate_chunk("d1:1:0", "description", "A bar chart: 412,000 TEU in 2023.")
    (chunk,) = SQLiteStore(tmp_path / "col").get_chunks(["d1:1:0"])
    assert chunk.meta["description"] == "A bar chart: 412,000 TEU in 2023."


OPEN_AT = (
    "import sys, time\n"
    "from hyperfolio.store.sqlite import SQLiteStore\n"
    "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
    "SQLiteStore(sys.argv[1]).close()\n"
)


@pytest.mark.slow
def test_processes_opening_one_new_collection_at_the_same_instant_all_succeed(tmp_path):
    # Two `add`s started together on a new collection: switching the new file to WAL answered
    # "database is locked" at once to all but one of them, without waiting.
    for trial in range(4):
        directory, start = tmp_path / f"c{trial}", f"{time.time() + 2.5:.3f}"
        runs = [
            subprocess.Popen([sys.executable, "-c", OPEN_AT, str(directory), start], stderr=subprocess.PIPE, text=True)
            for _ in range(6)
        ]
        errors = [run.communicate(timeout=120)[1] for run in runs]
        assert [run.returncode for run in runs] == [0] * 6, [e.strip().splitlines()[-1:] for e in errors]
        with sqlite3.connect(directory / "hyperfolio.db") as db:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_indexes_new_in_this_release_are_announced_before_they_are_made(tmp_path, caplog):
    SQLiteStore(tmp_path / "col").close()
    assert "new index" not in caplog.text  # a new collection's indexes come with its tables
    with sqlite3.connect(tmp_path / "col" / "hyperfolio.db") as db:
        db.execute("DROP INDEX provenance_item_rows")
    SQLiteStore(tmp_path / "col").close()
    assert "making 1 new index(es) (provenance_item_rows)" in caplog.text
    caplog.clear()
    SQLiteStore(tmp_path / "col").close()  # made once
    assert "new index" not in caplog.text


def test_searches_while_other_questions_append_to_the_matrix(store):
    """Two threads asking while documents are added: one thread's search must not count rows another
    thread's refresh appended meanwhile (it once raised IndexError under a chat soak)."""
    import threading

    rng = np.random.default_rng(3)
    write_ready(store, make_doc("d0", ["seed"]))
    store.put_vectors(CHUNK_SPACE, [("d0:1:0", "d0")], rng.normal(size=(1, 16)).astype(np.float32))
    failures: list[BaseException] = []
    writing = threading.Event()
    writing.set()

    def search() -> None:
        query = rng.normal(size=16).astype(np.float32)
        while writing.is_set():
            try:
                hits = store.vector_search(CHUNK_SPACE, query, 3)
                assert hits and len(hits) <= 3
            except BaseException as exc:  # noqa: BLE001 - every failure is the test's
                failures.append(exc)
                return

    searchers = [threading.Thread(target=search) for _ in range(3)]
    for thread in searchers:
        thread.start()
    try:
        for n in range(1, 100):
            doc = f"d{n}"
            write_ready(store, make_doc(doc, ["text"] * 3))
            vectors = rng.normal(size=(3, 16)).astype(np.float32)
            store.put_vectors(CHUNK_SPACE, [(f"{doc}:{p}:0", doc) for p in (1, 2, 3)], vectors)
    finally:
        writing.clear()
        for thread in searchers:
            thread.join()
    assert not failures, repr(failures[0])
