"""The store contract, run against every backend: SQLite in a directory, PostgreSQL + pgvector on a test server.

Each behaviour is checked on each backend with the same expectations; `test_backends_agree` then builds
one collection on both and compares every read method's answer (same ids, same sets, the same order
where SQLite defines one; keyword search by its top hit and its set of matches). The PostgreSQL server
comes from tests/store/conftest.py; without its packages the postgres cases skip.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hyperfolio.errors import DuplicateDocument, StoreError
from hyperfolio.model import Chunk, Decision, Document, Entity, Hyperedge, Page
from hyperfolio.store.base import (
    CHUNK_SPACE,
    ENTITY_SPACE,
    HYPEREDGE_SPACE,
    RECONCILE_COUNTS,
    STAGE_PARSED,
    STAGE_READY,
    scoped_key,
)
from hyperfolio.store.sql.keywords import LOCAL_META
from hyperfolio.store.sql.layers import concept_id
from hyperfolio.store.sqlite import SQLiteStore

BACKENDS = ["sqlite", "postgres"]


# --------------------------------------------------------------------------- backends
@dataclass
class Backend:
    name: str
    open: Callable[[], Any]  # another store object on the same collection


def _backend(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if name == "sqlite":
        return Backend(name, lambda: SQLiteStore(tmp_path / "col"))
    from hyperfolio.store.postgres import PostgresStore

    url = request.getfixturevalue("pg_url")
    return Backend(name, lambda: PostgresStore(url))


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path) -> Backend:
    return _backend(request.param, request, tmp_path)


@pytest.fixture
def store(backend):
    opened = backend.open()
    yield opened
    opened.close()


@pytest.fixture
def both(request, tmp_path):
    """The same collection's store on each backend, SQLite first."""
    stores = [_backend(name, request, tmp_path).open() for name in BACKENDS]
    yield stores
    for opened in stores:
        opened.close()


# --------------------------------------------------------------------------- a small corpus of every modality
def chunk(doc_id: str, page: int, order: int, modality: str, text: str, **fields: Any) -> Chunk:
    made = Chunk(page=page, order=order, modality=modality, text=text, **fields)  # type: ignore[arg-type]
    made.doc_id, made.chunk_id = doc_id, f"{doc_id}:{page}:{order}"
    return made


def document(doc_id: str, pages: list[list[Chunk]], title: str = "", source: str = "") -> Document:
    return Document(
        doc_id=doc_id,
        source=source or f"/reports/{doc_id}.pdf",
        title=title or doc_id.title(),
        kind="pdf",
        pages=[
            Page(number=n, chunks=chunks, width=595.0, height=842.0, ocr=n == 2, vision_dominant=n == 2)
            for n, chunks in enumerate(pages, start=1)
        ],
        content_hash="sha-" + doc_id,
        meta={"author": "Northwind", "year": 2024},
    )


def north() -> Document:
    ops = ["Annual Report", "Operations"]
    return document(
        "north",
        [
            [
                chunk(
                    "north",
                    1,
                    0,
                    "text",
                    "Northwind operates offshore wind turbines in the North Sea. Installed capacity reached"
                    " 1,850 MW in 2024.",
                    bbox=(60.0, 72.5, 535.0, 140.25),
                    section_path=ops,
                ),
                chunk(
                    "north",
                    1,
                    1,
                    "table",
                    "Region | Capacity (MW)\nNorth Sea | 1,850\nBaltic | 1,120",
                    bbox=(60.0, 150.0, 535.0, 260.0),
                    section_path=ops,
                    table=[["Region", "Capacity (MW)"], ["North Sea", "1,850"], ["Baltic", "1,120"]],
                    table_header_rows=1,
                    caption="Table 1: Installed capacity by region",
                ),
            ],
            [
                chunk(
                    "north",
                    2,
                    0,
                    "image",
                    "Figure 2: Annual generation. Generation (TWh) 2020 2021 2022",
                    bbox=(80.0, 100.0, 500.0, 400.0),
                    section_path=["Annual Report", "Generation"],
                    caption="Figure 2: Annual generation",
                    ocr_text="Generation (TWh) 2020 2021 2022",
                    image_path="images/north/p2-0.png",
                    meta={"width_px": 600, "height_px": 320},
                ),
                chunk(
                    "north",
                    2,
                    1,
                    "formula",
                    "E = P × t",
                    section_path=["Annual Report", "Method"],
                    meta={"latex": "E = P \\times t"},
                ),
            ],
        ],
        title="Northwind Annual Report",
    )


def baltic() -> Document:
    return document(
        "baltic",
        [
            [
                chunk(
                    "baltic",
                    1,
                    0,
                    "text",
                    "The Baltic fleet grew: Baltic capacity is 1,120 MW.",
                    section_path=["Review"],
                )
            ],
            [
                chunk(
                    "baltic",
                    2,
                    0,
                    "text",
                    "Maintenance of the Baltic turbines was outsourced.",
                    section_path=["Review"],
                ),
                chunk("baltic", 2, 1, "text", "[page 2: a photograph]", placeholder=True),
            ],
        ],
        title="Baltic Review",
    )


def draft() -> Document:
    """Parsed but never finished: not searchable."""
    return document("draft", [[chunk("draft", 1, 0, "text", "Draft notes: turbines everywhere, lighthouse too.")]])


ENTITIES = {
    e.entity_id: e
    for e in [
        Entity("e_turbine", "Wind turbine", "equipment", "Turbines make power", "text", ["turbine"], "wind turbine"),
        Entity("e_northsea", "North Sea", "region", "A sea region", "text", ["NS"], "north sea"),
        Entity("e_baltic", "Baltic", "region", "Baltic region", "text", [], "baltic"),
        Entity("e_northwind", "Northwind", "company", "An operator", "text", [], "northwind"),
        Entity("e_1850", "1,850 MW", "quantity", "", "table", [], "1,850 mw"),
        Entity("e_1120", "1,120 MW", "quantity", "", "text", [], "1,120 mw"),
        Entity("e_chart", "Annual generation chart", "figure", "A bar chart", "visual", [], "annual generation chart"),
    ]
}
CONCEPT_OF = {"e_turbine": "equipment", "e_northsea": "region", "e_baltic": "region", "e_northwind": "company"}
CONCEPT_OF |= {"e_1850": "capacity", "e_1120": "capacity"}  # the chart has no concept
for _entity in ENTITIES.values():
    _entity.concept = CONCEPT_OF.get(_entity.entity_id, "")


def edge(
    edge_id: str, level: str, members: list[tuple[str, str]], relation: str = "", strength: float = 1.0
) -> Hyperedge:
    return Hyperedge(edge_id, level, f"{edge_id} description", [level, "kw"], strength, members, relation)


def build_graph(store) -> None:
    """Two documents' hypergraphs sharing entities, every hyperedge level, and the layers over them."""
    e = ENTITIES
    store.write_graph(
        [
            (e["e_turbine"], ["north:1:0"]),
            (e["e_northsea"], ["north:1:0", "north:1:1"]),
            (e["e_baltic"], ["north:1:1"]),
            (e["e_northwind"], ["north:1:0"]),
            (e["e_1850"], ["north:1:1"]),
            (e["e_chart"], ["north:2:0"]),
        ],
        [
            (edge("h_low1", "low", [("e_northwind", "subject"), ("e_turbine", "object")], strength=0.9), ["north:1:0"]),
            (
                edge("h_high1", "high", [("e_northsea", ""), ("e_baltic", ""), ("e_1850", "")], strength=0.7),
                ["north:1:1"],
            ),
            (edge("h_fact1", "fact", [("e_northsea", "head"), ("e_1850", "tail")], "has_capacity"), ["north:1:1"]),
            (edge("h_refine", "refine", [("e_turbine", ""), ("e_northsea", "")]), ["north:1:0"]),
            (edge("h_theme", "theme", [("e_chart", "")]), ["north:2:0"]),
        ],
    )
    shared_turbine = dataclasses.replace(e["e_turbine"], description="Turbines in the Baltic", aliases=["WTG"])
    shared_baltic = dataclasses.replace(e["e_baltic"], description="A sea east of Denmark", modality="table")
    store.write_graph(
        [
            (shared_turbine, ["baltic:2:0"]),
            (shared_baltic, ["baltic:1:0", "baltic:2:0"]),
            (e["e_1120"], ["baltic:1:0"]),
            (e["e_northwind"], ["baltic:1:0"]),
        ],
        [
            (edge("h_low2", "low", [("e_baltic", ""), ("e_turbine", "")]), ["baltic:2:0"]),
            (edge("h_fact2", "fact", [("e_baltic", "head"), ("e_1120", "tail")], "has_capacity"), ["baltic:1:0"]),
            (
                edge("h_fact3", "fact", [("e_northwind", "head"), ("e_baltic", "tail")], "operates_in"),
                ["north:1:0", "baltic:1:0"],
            ),
        ],
    )
    store.rebuild_concepts([*store.document_concepts("north"), *store.document_concepts("baltic")])
    store.set_refine_signature("e_turbine", "sig-1", ["h_refine"])
    store.set_refine_signature("e_northsea", "sig-2", [])
    store.log_decisions(
        [
            Decision(
                "baltic",
                "duplicate",
                "dropped",
                "Baltic | has_capacity | 1,000 MW",
                "Baltic | has_capacity | 1,120 MW",
                "an older figure",
                ["baltic:1:0"],
            ),
            Decision(
                "north", "mutual", "kept", "North Sea | has_capacity | 1,850 MW", "", "no conflict", ["north:1:1"]
            ),
            Decision("north", "temporal", "revised", "a | b | c", "a | b | d", "newer", [], "model"),
        ]
    )
    store.save_reconcile_counts("north", {"facts": 2, "kept": 1, "revised": 1})
    store.save_reconcile_counts("baltic", {"facts": 2, "dropped": 1, "extra": 3})
    store.record_builds(
        "north", [("extract", "north:1:0", "offline", "no model"), ("themes", "north:2:0", "model", "")]
    )
    store.record_builds("baltic", [("extract", "baltic:1:0", "model", "")])


def vectors_for(items: list[str], dim: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((len(items), dim)).astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


CHUNK_IDS = {
    "north": ["north:1:0", "north:1:1", "north:2:0", "north:2:1"],
    "baltic": ["baltic:1:0", "baltic:2:0", "baltic:2:1"],
    "draft": ["draft:1:0"],
}


def fill(store) -> None:
    """The whole corpus: three documents (two ready), chunk and entity vectors, the graph and its layers."""
    for doc in (north(), baltic(), draft()):
        store.write_document(doc)
    items = [(c, d) for d, ids in CHUNK_IDS.items() for c in ids]
    store.put_vectors(CHUNK_SPACE, items, vectors_for([c for c, _ in items]))
    build_graph(store)
    keys = [(scoped_key(e, d), d) for e, d in [("e_turbine", "north"), ("e_turbine", "baltic"), ("e_baltic", "baltic")]]
    store.put_vectors(ENTITY_SPACE, keys, vectors_for([k for k, _ in keys], seed=1))
    store.put_vectors(HYPEREDGE_SPACE, [(scoped_key("h_low1", "north"), "north")], vectors_for(["h"], seed=2))
    store.add_stage_times("north", {"parse": 1.5, "chunk embedding": 0.25})
    store.add_stage_times("north", {"parse": 0.5})
    store.add_stage_times("baltic", {"parse": 2.0})
    store.set_meta("embedder", "minilm")
    store.set_stage("north", STAGE_READY)
    store.set_stage("baltic", STAGE_READY)


# --------------------------------------------------------------------------- documents and chunks
def test_documents_round_trip(store):
    doc = north()
    store.write_document(doc)
    info = store.get_document("north")
    assert (info.title, info.kind, info.num_pages, info.num_chunks, info.status) == (
        "Northwind Annual Report",
        "pdf",
        2,
        4,
        STAGE_PARSED,
    )
    assert info.added_at > 0 and info.meta == {"author": "Northwind", "year": 2024}
    assert store.document_by_hash("sha-north").doc_id == "north"
    assert store.document_by_hash("nope") is None
    assert [d.doc_id for d in store.documents_by_source("/reports/north.pdf")] == ["north"]
    assert store.get_document("nope") is None
    for original, stored in zip(doc.chunks, store.iter_chunks("north"), strict=True):
        assert stored == original  # every field: modality, bbox, section path, table cells, caption, image path, meta
    table = store.get_chunks(["north:1:1"])[0]
    assert table.table == [["Region", "Capacity (MW)"], ["North Sea", "1,850"], ["Baltic", "1,120"]]
    assert table.table_header_rows == 1 and table.bbox == (60.0, 150.0, 535.0, 260.0)
    image = store.get_chunks(["north:2:0"])[0]
    assert (image.caption, image.ocr_text, image.image_path) == (
        "Figure 2: Annual generation",
        "Generation (TWh) 2020 2021 2022",
        "images/north/p2-0.png",
    )
    store.write_document(dataclasses.replace(baltic(), added_at=1_000.0))  # a time given (an import) is kept
    assert store.get_document("baltic").added_at == 1_000.0
    assert [d.doc_id for d in store.list_documents()] == ["baltic", "north"]
    assert store.titles() == {"north": "Northwind Annual Report", "baltic": "Baltic Review"}
    assert list(store.titles()) == ["baltic", "north"]  # in one order on both backends: oldest first
    store.write_document(dataclasses.replace(draft(), added_at=1_000.0))  # a tie: by id
    assert [d.doc_id for d in store.list_documents()] == ["baltic", "draft", "north"]
    assert list(store.titles()) == ["baltic", "draft", "north"]
    store.remove_document("draft")
    assert store.get_chunks(["baltic:2:1"])[0].placeholder is True
    assert [(d.doc_id, d.num_chunks) for d in store.unfinished_documents()] == [("baltic", 3), ("north", 4)]
    store.set_stage("north", STAGE_READY)
    assert store.get_document("north").status == STAGE_READY
    assert [d.doc_id for d in store.unfinished_documents()] == ["baltic"]
    with pytest.raises(StoreError):
        store.set_stage("nope", STAGE_READY)


def test_a_documents_meta_takes_what_ingest_derives_later(store):
    store.write_document(north())
    before = store.get_document("north").meta
    store.update_document_meta("north", {"card": {"title": "North Sea report", "fiscal_year": 2024}})
    store.update_document_meta("north", {"card": {"title": "North Sea report", "fiscal_year": 2023}})
    after = store.get_document("north").meta
    assert after == before | {"card": {"title": "North Sea report", "fiscal_year": 2023}}  # merged, replaced
    with pytest.raises(StoreError):
        store.update_document_meta("nope", {"card": {}})


def test_a_documents_title_can_be_replaced(store):
    store.write_document(north())
    store.write_document(baltic())
    before = store.get_document("north")
    store.set_document_title("north", "Northwind Annual Report 2023")
    after = store.get_document("north")
    assert after.title == "Northwind Annual Report 2023" and after.meta == before.meta
    assert store.titles() == {"baltic": "Baltic Review", "north": "Northwind Annual Report 2023"}  # only its own
    with pytest.raises(StoreError):
        store.set_document_title("nope", "Anything")


def test_chunk_reads(store):
    store.write_document(north())
    store.write_document(baltic())
    assert [c.chunk_id for c in store.get_chunks(["baltic:2:0", "nope", "north:1:0"])] == ["baltic:2:0", "north:1:0"]
    assert store.get_chunks([]) == []
    assert [c.chunk_id for c in store.iter_chunks()] == [*CHUNK_IDS["baltic"], *CHUNK_IDS["north"]]
    texts = store.page_chunk_texts([("north", 2), ("baltic", 1), ("north", 2), ("north", 9)])
    assert list(texts) == [("north", 2), ("baltic", 1)]
    assert [cid for cid, _ in texts[("north", 2)]] == ["north:2:0", "north:2:1"]
    assert texts[("baltic", 1)] == [("baltic:1:0", "The Baltic fleet grew: Baltic capacity is 1,120 MW.")]
    assert store.get_pages("north") == [
        Page(1, width=595.0, height=842.0),
        Page(2, width=595.0, height=842.0, ocr=True, vision_dominant=True),
    ]
    assert store.get_pages("nope") == []
    assert (store.count_chunks(), store.count_chunks("north"), store.count_chunks("nope")) == (7, 4, 0)
    store.annotate_chunk("north:2:0", "description", "A bar chart: 14.6 TWh in 2024.")
    store.annotate_chunk("north:2:0", "checked", True)
    assert store.get_chunks(["north:2:0"])[0].meta == {
        "width_px": 600,
        "height_px": 320,
        "description": "A bar chart: 14.6 TWh in 2024.",
        "checked": True,
    }


def test_same_content_twice_is_a_duplicate_and_leaves_nothing_behind(store):
    store.write_document(north())
    again = baltic()
    again.content_hash = "sha-north"  # another id, the same bytes
    with pytest.raises(DuplicateDocument):
        store.write_document(again)
    with pytest.raises(DuplicateDocument):
        store.write_document(north())
    assert store.count_chunks() == 4 and [d.doc_id for d in store.list_documents()] == ["north"]
    assert store.keyword_search("Baltic", 5) == []


def test_meta(store):
    assert store.get_meta("embedder") is None
    store.set_meta("embedder", "minilm")
    store.set_meta("embedder", "model2vec")
    store.set_meta("embed_dim", "256")
    assert store.get_meta("embedder") == "model2vec"
    items = store.meta_items()
    assert {k: items[k] for k in ("embedder", "embed_dim")} == {"embedder": "model2vec", "embed_dim": "256"}
    assert "schema_version" in items


def test_a_second_store_object_sees_committed_writes(backend):
    writer, reader = backend.open(), backend.open()
    try:
        writer.write_document(north())
        writer.set_stage("north", STAGE_READY)
        writer.put_vectors(CHUNK_SPACE, [("north:1:0", "north")], np.array([[1.0, 0.0]], dtype=np.float32))
        assert reader.get_document("north").status == STAGE_READY
        assert [h[0] for h in reader.vector_search(CHUNK_SPACE, np.array([1.0, 0.0], dtype=np.float32), 3)] == [
            "north:1:0"
        ]
        writer.put_vectors(CHUNK_SPACE, [("north:1:1", "north")], np.array([[0.0, 1.0]], dtype=np.float32))
        assert reader.vector_search(CHUNK_SPACE, np.array([0.0, 1.0], dtype=np.float32), 1)[0][0] == "north:1:1"
        # The keyword index (shared by both on one machine) follows the writer's documents too.
        assert reader.keyword_search("offshore turbines", 3)[0][0] == "north:1:0"
        writer.write_document(baltic())
        writer.set_stage("baltic", STAGE_READY)
        writer.remove_document("north")
        assert {h[0].split(":")[0] for h in reader.keyword_search("offshore turbines capacity", 10)} == {"baltic"}
    finally:
        writer.close()
        reader.close()


def test_a_search_while_another_process_writes_the_keyword_index_skips_what_is_no_longer_ready(backend, monkeypatch):
    """The index is busy (another process holds its writer): the search waits a while, then answers from the
    index as it is, without the documents removed since; the next search brings it up to date."""
    from hyperfolio.store.keywords import engine

    writer, reader = backend.open(), backend.open()
    try:
        for doc in (north(), baltic()):
            writer.write_document(doc)
            writer.set_stage(doc.doc_id, STAGE_READY)
        assert {h[0].split(":")[0] for h in reader.keyword_search("turbines", 10)} == {"north", "baltic"}
        monkeypatch.setattr(engine, "WRITER_WAIT", 0.2)
        busy = engine.open_index(reader._keyword_index().folder).writer(heap_size=15_000_000, num_threads=1)
        writer.remove_document("north")
        assert {h[0].split(":")[0] for h in reader.keyword_search("turbines", 10)} == {"baltic"}
        assert "north" in reader._keyword_index().manifest().docs  # still in the index, left out of the answer
        busy.rollback()
        del busy
        gc.collect()  # the writer's lock goes with it
        assert {h[0].split(":")[0] for h in reader.keyword_search("turbines", 10)} == {"baltic"}
        assert "north" not in reader._keyword_index().manifest().docs
    finally:
        writer.close()
        reader.close()


# --------------------------------------------------------------------------- keyword search
KEYWORD_CASES = [
    ("Who operates offshore turbines in the North Sea?", None, "north:1:0"),
    ("Was Baltic maintenance outsourced?", None, "baltic:2:0"),
    ("annual generation TWh", None, "north:2:0"),
    ("Method", None, "north:2:1"),  # the heading alone matches
    ("turbines", ["baltic"], "baltic:2:0"),
    ("capacity", ["north"], "north:1:1"),
]


@pytest.mark.parametrize(("question", "scope", "top"), KEYWORD_CASES)
def test_keyword_search_top_hit(store, question, scope, top):
    for doc in (north(), baltic(), draft()):
        store.write_document(doc)
        store.set_stage(doc.doc_id, STAGE_READY)
    hits = store.keyword_search(question, 10, doc_ids=scope)
    assert hits[0][0] == top
    assert all(a[1] >= b[1] for a, b in zip(hits, hits[1:], strict=False))
    if scope:
        assert {h[0].split(":")[0] for h in hits} == set(scope)


def test_keyword_search_matches_scope_and_readiness(store):
    for doc in (north(), baltic(), draft()):
        store.write_document(doc)
    store.set_stage("north", STAGE_READY)
    store.set_stage("baltic", STAGE_READY)
    assert {h[0] for h in store.keyword_search("turbines capacity", 10)} == {
        "north:1:0",
        "north:1:1",
        "baltic:1:0",
        "baltic:2:0",
    }
    assert store.keyword_search("lighthouse", 10) == []  # only the unfinished draft says it
    store.set_stage("draft", STAGE_READY)
    assert [h[0] for h in store.keyword_search("lighthouse", 10)] == ["draft:1:0"]
    assert len(store.keyword_search("turbines capacity", 2)) == 2
    assert store.keyword_search("turbines", 0) == [] and store.keyword_search("turbines", -1) == []
    assert store.keyword_search("", 5) == [] and store.keyword_search("?!", 5) == []
    assert isinstance(store.keyword_search('"NEAR(" AND OR * turbines', 5), list)  # query syntax is harmless
    # a question of stop words only is searched as it is
    assert {h[0] for h in store.keyword_search("the", 5)} == {"north:1:0", "baltic:1:0", "baltic:2:0"}
    assert store.keyword_search("turbines", 5, doc_ids=["nope"]) == []


# --------------------------------------------------------------------------- vectors
def test_vectors(store):
    for doc in (north(), baltic(), draft()):
        store.write_document(doc)
    store.set_stage("north", STAGE_READY)
    store.set_stage("baltic", STAGE_READY)
    eye = np.eye(4, dtype=np.float32)
    store.put_vectors(
        CHUNK_SPACE,
        [("north:1:0", "north"), ("north:1:1", "north"), ("baltic:1:0", "baltic"), ("draft:1:0", "draft")],
        eye,
    )
    assert [c.chunk_id for c in store.missing_vectors(CHUNK_SPACE, "north")] == ["north:2:0", "north:2:1"]
    assert [c.chunk_id for c in store.missing_vectors(ENTITY_SPACE, "baltic")] == CHUNK_IDS["baltic"]
    query = np.array([0.1, 0.8, 0.6, 0.9], dtype=np.float32)
    hits = store.vector_search(CHUNK_SPACE, query, 10)
    assert [h[0] for h in hits] == ["north:1:1", "baltic:1:0", "north:1:0"]  # the draft is not ready
    assert [round(h[1], 5) for h in hits] == [0.8, 0.6, 0.1]
    assert [h[0] for h in store.vector_search(CHUNK_SPACE, query, 1)] == ["north:1:1"]
    assert [h[0] for h in store.vector_search(CHUNK_SPACE, query, 5, doc_ids=["baltic", "nope"])] == ["baltic:1:0"]
    assert store.vector_search(CHUNK_SPACE, query, 5, doc_ids=["nope"]) == []
    assert store.vector_search(CHUNK_SPACE, query, 0) == [] and store.vector_search("nothing", query, 5) == []
    scores = store.vector_scores(CHUNK_SPACE, query, ["baltic:1:0", "draft:1:0", "nope", "north:1:0"])
    assert list(scores) == ["baltic:1:0", "north:1:0"] and scores["baltic:1:0"] == pytest.approx(0.6)
    assert store.vector_scores(CHUNK_SPACE, query, []) == {}
    store.put_vectors(CHUNK_SPACE, [("north:1:0", "north")], np.array([[0, 0, 0.6, 0.8]], dtype=np.float32))  # replaced
    assert store.vector_search(CHUNK_SPACE, query, 1)[0] == ("north:1:0", pytest.approx(1.08))
    queries = np.array([[0.1, 0.8, 0.6, 0.9], [0.9, 0.1, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    for scope in (None, ["baltic", "north"], ["nope"]):  # several questions' vectors at once, as each alone
        together = store.vector_search_many(CHUNK_SPACE, queries, 2, scope)
        alone = [store.vector_search(CHUNK_SPACE, q, 2, scope) for q in queries]
        assert [[h[0] for h in hits] for hits in together] == [[h[0] for h in hits] for hits in alone]
        assert [h[1] for hits in together for h in hits] == pytest.approx([h[1] for hits in alone for h in hits])
    assert [h[0] for h in store.vector_search_many(CHUNK_SPACE, queries[:2], 1)[1]] == ["north:1:0"]
    assert store.vector_search_many(CHUNK_SPACE, queries[:0], 2) == []
    store.set_stage("draft", STAGE_READY)
    assert store.vector_search(CHUNK_SPACE, query, 10)[0][0] == "north:1:0"
    assert len(store.vector_search(CHUNK_SPACE, query, 10)) == 4
    store.clear_vectors(CHUNK_SPACE)
    assert store.vector_search(CHUNK_SPACE, query, 10) == []
    assert len(store.missing_vectors(CHUNK_SPACE, "north")) == 4
    with pytest.raises(ValueError):
        store.put_vectors(CHUNK_SPACE, [("north:1:0", "north")], eye)


# --------------------------------------------------------------------------- the hypergraph
def test_hypergraph_reads(store):
    fill(store)
    turbine, baltic_entity = store.get_entities(["e_turbine", "nope", "e_baltic"])
    assert turbine.description == "Turbines make power | Turbines in the Baltic"  # pooled over documents
    assert turbine.aliases == ["turbine", "WTG"] and turbine.concept == "equipment"
    assert baltic_entity.modality == "table"  # a richer modality replaces "text"
    assert store.get_entities(["e_chart"])[0].concept == ""
    fact, low = store.get_hyperedges(["h_fact3", "h_low1"])
    assert fact.relation == "operates_in" and fact.members == [("e_northwind", "head"), ("e_baltic", "tail")]
    assert low.members == [("e_northwind", "subject"), ("e_turbine", "object")] and low.relation == ""
    assert low.keywords == ["low", "kw"]
    assert store.hyperedge_strengths(["h_low1", "h_high1", "nope"]) == {"h_low1": 0.9, "h_high1": 0.7}
    assert store.incident_edges(["e_turbine"]) == {"e_turbine": ["h_low1", "h_refine", "h_low2"]}
    assert store.incident_edges(["e_turbine", "e_baltic"], levels=["low"]) == {
        "e_baltic": ["h_low2"],
        "e_turbine": ["h_low1", "h_low2"],
    }
    assert store.provenance("entity", ["e_baltic"]) == {
        "e_baltic": [("north:1:1", "north", 1), ("baltic:1:0", "baltic", 1), ("baltic:2:0", "baltic", 2)]
    }
    assert store.provenance("hyperedge", ["h_fact3"]) == {
        "h_fact3": [("north:1:0", "north", 1), ("baltic:1:0", "baltic", 1)]
    }
    # Within documents: the same rows, in the same order, only those documents' (a question's scope).
    assert store.provenance("entity", ["e_baltic", "e_turbine"], ["baltic"]) == {
        item: [row for row in rows if row[1] == "baltic"]
        for item, rows in store.provenance("entity", ["e_baltic", "e_turbine"]).items()
        if any(row[1] == "baltic" for row in rows)
    }
    assert store.provenance("entity", ["e_baltic"], ["north"]) == {"e_baltic": [("north:1:1", "north", 1)]}
    assert store.provenance("hyperedge", ["h_fact3"], ["nowhere"]) == {}
    assert store.entities_by_norm_name(["north sea", "nope"]) == {"north sea": "e_northsea"}
    assert store.entities_matching("The North Sea") == ["e_northsea"]
    assert store.entities_matching("MW") == ["e_1850", "e_1120"]  # contains, in insertion order
    assert store.entities_matching("zzz") == [] and store.entities_matching("!!") == []
    assert store.document_entities("baltic") == ["e_1120", "e_baltic", "e_northwind", "e_turbine"]
    assert store.document_hyperedges("baltic") == ["h_fact2", "h_fact3", "h_low2"]
    assert store.entity_pages(["e_turbine"]) == {"e_turbine": {("north", 1), ("baltic", 2)}}
    assert store.chunk_entities("north")["north:1:0"] == [
        ("e_northsea", "North Sea"),
        ("e_northwind", "Northwind"),
        ("e_turbine", "Wind turbine"),
    ]
    assert store.chunk_hyperedge_members("north") == {
        "north:1:1": [["e_1850", "e_baltic", "e_northsea"]],
        "north:1:0": [["e_northwind", "e_turbine"]],
    }
    assert store.chunk_hyperedge_members("north", levels=("fact",)) == {
        "north:1:1": [["e_1850", "e_northsea"]],
        "north:1:0": [["e_baltic", "e_northwind"]],
    }
    assert store.chunk_hyperedges("north:1:0") == ["h_fact3", "h_low1", "h_refine"]
    assert store.hyperedges_of_level("north", "fact") == ["h_fact1", "h_fact3"]
    assert store.hyperedges_of_level("north", "theme") == ["h_theme"]
    assert store.refine_signatures(["e_turbine", "e_northsea", "nope"]) == {
        "e_turbine": ("sig-1", ["h_refine"]),
        "e_northsea": ("sig-2", []),
    }
    store.set_refine_signature("e_turbine", "sig-3", ["h_refine", "h_low1"])
    assert store.refine_signatures(["e_turbine"]) == {"e_turbine": ("sig-3", ["h_refine", "h_low1"])}
    stats = store.graph_stats()
    assert stats["entities_by_modality"] == {"table": 2, "text": 4, "visual": 1}
    assert stats["hyperedges_by_level"] == {"fact": 3, "high": 1, "low": 2, "refine": 1, "theme": 1}
    assert stats["anchors_refined"] == 2


def test_write_graph_is_idempotent(store):
    fill(store)
    before = observe(store)
    build_graph(store)  # a resumed build writes the same graph again (and logs its decisions again)
    after = observe(store)
    for key in ("entities", "hyperedges", "provenance", "incident", "concept_chunk_pairs", "concept_edges_for"):
        assert after[key] == before[key], key


def test_builds_ledger(store):
    fill(store)
    assert store.builds() == [
        ("baltic", "extract", "baltic:1:0", "model", ""),
        ("north", "extract", "north:1:0", "offline", "no model"),
        ("north", "themes", "north:2:0", "model", ""),
    ]
    assert store.builds(how="offline") == [("north", "extract", "north:1:0", "offline", "no model")]
    assert store.builds(doc_id="baltic", how="offline") == []
    assert store.build_counts() == {"extract": {"model": 1, "offline": 1}, "themes": {"model": 1}}
    store.record_builds("north", [("extract", "north:1:0", "model", "")])  # a rebuild replaces the record
    assert store.builds("north") == [("north", "extract", "north:1:0", "model", "")]


def test_delete_hyperedges(store):
    fill(store)
    store.put_vectors(HYPEREDGE_SPACE, [(scoped_key("h_low2", "baltic"), "baltic")], vectors_for(["x"], seed=3))
    store.delete_hyperedges(["h_low1", "h_fact1"])
    store.delete_hyperedges([])
    assert [h.edge_id for h in store.get_hyperedges(["h_low1", "h_fact1", "h_low2"])] == ["h_low2"]
    assert "h_low1" not in store.chunk_hyperedges("north:1:0")
    assert store.incident_edges(["e_northwind"]) == {"e_northwind": ["h_fact3"]}
    assert [f.edge_id for f in store.facts_about(["e_northsea"])] == []
    hits = store.vector_search(HYPEREDGE_SPACE, np.ones(8, dtype=np.float32), 5)
    assert [h[0] for h in hits] == [scoped_key("h_low2", "baltic")]


def test_clear_document_graph_and_clear_graph(store):
    fill(store)
    store.clear_document_graph("north")
    assert store.document_entities("north") == [] and store.document_hyperedges("north") == []
    assert [e.entity_id for e in store.get_entities(["e_turbine", "e_chart"])] == ["e_turbine"]
    assert store.builds("north") == [] and store.decisions("north") == []
    assert store.count_chunks("north") == 4 and store.keyword_search("offshore", 5)  # chunks stay
    assert store.vector_search(ENTITY_SPACE, np.ones(8, dtype=np.float32), 5, doc_ids=["north"]) == []
    assert len(store.vector_search(CHUNK_SPACE, np.ones(8, dtype=np.float32), 20, doc_ids=["north"])) == 4
    store.clear_graph()
    stats = store.graph_stats()
    assert stats["entities_by_modality"] == {} and stats["hyperedges_by_level"] == {} and stats["concepts"] == 0
    assert store.vector_search(ENTITY_SPACE, np.ones(8, dtype=np.float32), 5) == []
    assert store.count_chunks() == 8 and store.refine_signatures(["e_turbine"]) == {}


# --------------------------------------------------------------------------- facts, decisions, concepts
def test_layers(store):
    fill(store)
    facts = store.facts_about(["e_baltic", "e_northsea"])
    assert [(f.edge_id, f.relation, f.tail_id, f.chunks) for f in facts] == [
        ("h_fact2", "has_capacity", "e_1120", ["baltic:1:0"]),
        ("h_fact1", "has_capacity", "e_1850", ["north:1:1"]),
    ]
    assert [f.edge_id for f in store.document_facts("north")] == ["h_fact1", "h_fact3"]
    store.relabel_fact("h_fact3", "runs_in")
    assert store.get_hyperedges(["h_fact3"])[0].relation == "runs_in"
    store.remove_evidence_links([("e_baltic", "north:1:1")])
    assert ("north:1:1", "north", 1) not in store.provenance("entity", ["e_baltic"])["e_baltic"]
    dropped = store.dropped_in(["baltic:1:0", "north:1:0"])
    assert [(d.fact, d.decision, d.evidence) for d in dropped] == [
        ("Baltic | has_capacity | 1,000 MW", "dropped", ["baltic:1:0"])
    ]
    assert store.dropped_in(["north:1:1"]) == []
    assert [d.kind for d in store.decisions()] == ["duplicate", "mutual", "temporal"]
    assert [d.decided_by for d in store.decisions("north")] == ["offline", "model"]
    assert store.decisions("north")[0].created_at > 0
    store.log_decisions([Decision("baltic", "duplicate", "merged", "x | y | z", "", "same", [], created_at=5.0)])
    assert store.decisions("baltic")[-1].created_at == 5.0  # a time given (an import) is kept
    assert store.reconcile_counts("north") == {"facts": 2, "kept": 1, "revised": 1}
    assert store.reconcile_counts("nope") == {}
    totals = store.reconcile_totals()
    assert list(totals)[: len(RECONCILE_COUNTS)] == list(RECONCILE_COUNTS)
    assert totals == {
        **dict.fromkeys(RECONCILE_COUNTS, 0),
        "facts": 4,
        "kept": 1,
        "revised": 1,
        "dropped": 1,
        "extra": 3,
    }
    region, capacity, equipment = concept_id("region"), concept_id("capacity"), concept_id("equipment")
    assert store.concepts_of(["e_baltic", "e_chart", "e_1120"]) == {"e_baltic": region, "e_1120": capacity}
    assert set(store.document_concepts("baltic")) == {region, capacity, equipment, concept_id("company")}
    assert store.concept_names([region, "nope"]) == {region: "region"}
    assert sorted(name for _, name in store.concepts_in("baltic")) == ["capacity", "company", "equipment", "region"]
    assert store.concept_members_in("north", [region], 1) == {region: ["North Sea"]}  # the best evidenced first
    assert store.concept_members_in("baltic", [region, equipment], 5) == {
        region: ["Baltic"],
        equipment: ["Wind turbine"],
    }
    assert store.relations_in("baltic") == ["operates_in", "has_capacity"]  # in the order concept edges were made
    assert store.concept_edges_for(["has_capacity"]) == [(region, "has_capacity", capacity, 2)]
    assert store.concept_edges_for(["has_capacity"], doc_ids=["north"]) == [(region, "has_capacity", capacity, 1)]
    assert store.concept_edges_for([]) == []
    assert store.concept_edges_for(["has_capacity"], touching=[capacity]) == [(region, "has_capacity", capacity, 2)]
    assert store.concept_edges_for(["has_capacity"], touching=[region, equipment]) == [
        (region, "has_capacity", capacity, 2)
    ]
    assert store.concept_edges_for(["has_capacity", "operates_in"], touching=[equipment]) == [
        e for e in store.concept_edges_for(["has_capacity", "operates_in"]) if equipment in (e[0], e[2])
    ]
    pairs = store.concept_chunk_pairs([capacity])
    assert pairs == [(capacity, "baltic:1:0"), (capacity, "north:1:1")]
    assert store.concept_chunk_pairs([capacity], doc_ids=["north"]) == [(capacity, "north:1:1")]
    for levels in ({capacity: 0}, {region: 0, capacity: 1, equipment: 1}, {equipment: 0, region: 0, capacity: 0}):
        for limit in (1, 2, 10):
            assert store.concept_top_chunks(levels, limit) == first_met(store, levels, limit, {"north", "baltic"})
    store.set_stage("baltic", STAGE_PARSED)  # no longer ready: its chunks drop out
    levels = {region: 1, capacity: 0}
    assert store.concept_top_chunks(levels, 10) == first_met(store, levels, 10, {"north"}) != []
    store.set_stage("baltic", STAGE_READY)
    assert store.concept_top_chunks({}, 5) == [] and store.concept_top_chunks({region: 0}, 0) == []
    layer = store.layer_stats()
    assert (layer["facts"], layer["concepts"], layer["concept_edges"]) == (3, 4, 2)
    assert layer["conflict_decisions"] == {"dropped": 1, "kept": 1, "merged": 1, "revised": 1}


def test_concept_top_chunks_equals_the_walk_on_many_concepts(store):
    """Many concepts sharing chunks, levels with ties and gaps, a document not ready: the store's ranking
    gives exactly the walk's first `limit` chunks, whatever the limit."""
    rng = np.random.default_rng(11)
    names = [f"concept {i}" for i in range(12)]
    for d in range(3):
        doc = f"d{d}"
        chunks = [chunk(doc, 1 + i // 5, i % 5, "text", f"text {doc} {i}") for i in range(15)]
        store.write_document(document(doc, [chunks[p * 5 : p * 5 + 5] for p in range(3)]))
        store.set_stage(doc, STAGE_READY if d < 2 else STAGE_PARSED)
        entities = []
        for i in range(20):
            name = f"{doc} thing {i}"
            entity = Entity(f"e_{doc}_{i}", name, "thing", "", "text", [], name, names[int(rng.integers(12))])
            where = sorted({c.chunk_id for c in rng.choice(chunks, size=int(rng.integers(1, 4)), replace=False)})
            entities.append((entity, where))
        store.write_graph(entities, [])
    ids = [concept_id(n) for n in names]
    store.rebuild_concepts(ids)
    for trial in range(30):
        reached = [str(c) for c in rng.choice(ids, size=int(rng.integers(1, 10)), replace=False)]
        levels = {c: int(rng.integers(0, 4)) for c in reached}
        for limit in (1, 3, 8, 25, 100):
            assert store.concept_top_chunks(levels, limit) == first_met(store, levels, limit, {"d0", "d1"}), trial


def first_met(store: Any, levels: dict[str, int], limit: int, ready: set[str]) -> list[tuple[str, int]]:
    """What a walk over the (concept, chunk) index in id order gives: each ready chunk at its best level,
    ties in the order first met (`concept_reach` over the whole collection)."""
    best: dict[str, int] = {}
    for concept, chunk_id in store.concept_chunk_pairs(list(levels)):
        if chunk_id.split(":")[0] in ready and levels[concept] < best.get(chunk_id, math.inf):
            best[chunk_id] = levels[concept]
    return sorted(best.items(), key=lambda kv: kv[1])[:limit]


def test_stage_times_and_stats(store):
    fill(store)
    assert store.stage_times("north") == {"chunk embedding": 0.25, "parse": 2.0}
    assert store.stage_times() == {"chunk embedding": 0.25, "parse": 4.0}
    assert store.stage_times("nope") == {}
    stats = store.stats()
    assert (stats["documents"], stats["pages"], stats["chunks"], stats["entities"], stats["hyperedges"]) == (
        3,
        5,
        8,
        7,
        8,
    )
    assert stats["chunks_by_modality"] == {"formula": 1, "image": 1, "table": 1, "text": 5}
    assert stats["documents_by_stage"] == {STAGE_PARSED: 1, STAGE_READY: 2}
    assert stats["vectors"] == 8 + 3 + 1
    assert stats["built_by"] == {"extract": {"model": 1, "offline": 1}, "themes": {"model": 1}}
    assert stats["stage_seconds"] == store.stage_times() and stats["database_bytes"] > 0 and stats["path"]


def test_remove_document_drops_only_what_it_alone_supported(store):
    fill(store)
    store.remove_document("north")
    assert store.get_document("north") is None and store.count_chunks() == 4
    assert store.keyword_search("offshore", 5) == []
    assert [h[0] for h in store.vector_search(CHUNK_SPACE, np.ones(8, dtype=np.float32), 20)] != []
    assert {h[0].split(":")[0] for h in store.vector_search(CHUNK_SPACE, np.ones(8, dtype=np.float32), 20)} == {
        "baltic"
    }
    kept = {e.entity_id for e in store.get_entities(list(ENTITIES))}
    assert kept == {"e_turbine", "e_baltic", "e_1120", "e_northwind"}  # each also evidenced in baltic
    edges = {h.edge_id for h in store.get_hyperedges(["h_low1", "h_high1", "h_fact1", "h_fact2", "h_fact3", "h_low2"])}
    assert edges == {"h_fact2", "h_fact3", "h_low2"}
    assert store.provenance("hyperedge", ["h_fact3"]) == {"h_fact3": [("baltic:1:0", "baltic", 1)]}
    assert store.entity_pages(["e_turbine"]) == {"e_turbine": {("baltic", 2)}}
    assert store.refine_signatures(["e_turbine", "e_northsea"]) == {"e_turbine": ("sig-1", ["h_refine"])}
    assert [d.doc_id for d in store.decisions()] == ["baltic"]
    assert store.builds("north") == [] and store.stage_times("north") == {}
    assert store.concept_names([concept_id("figure"), concept_id("region")]) == {concept_id("region"): "region"}
    assert store.vector_search(ENTITY_SPACE, np.ones(8, dtype=np.float32), 5, doc_ids=["north"]) == []


# --------------------------------------------------------------------------- both backends, every read, compared
def observe(store) -> dict[str, Any]:
    """Every read method's answer over the filled corpus, without timestamps and store paths."""
    docs = ["north", "baltic", "draft", "nope"]
    chunks = [c for ids in CHUNK_IDS.values() for c in ids]
    entities = [*ENTITIES, "nope"]
    edges = ["h_low1", "h_high1", "h_fact1", "h_fact2", "h_fact3", "h_refine", "h_theme", "h_low2", "nope"]
    concepts = [concept_id(n) for n in ("region", "capacity", "equipment", "company", "figure")]
    relations = ["has_capacity", "operates_in", "runs_in"]
    query = vectors_for(["q"], seed=7)[0]
    out: dict[str, Any] = {}
    out["documents"] = [dataclasses.replace(d, added_at=0.0) for d in store.list_documents()]
    out["document"] = [store.get_document(d) and dataclasses.replace(store.get_document(d), added_at=0.0) for d in docs]
    out["by_hash"] = [getattr(store.document_by_hash(f"sha-{d}"), "doc_id", None) for d in docs]
    out["by_source"] = [[i.doc_id for i in store.documents_by_source(f"/reports/{d}.pdf")] for d in docs]
    out["titles"] = store.titles()
    out["chunks"] = list(store.iter_chunks())
    out["chunks_of"] = [list(store.iter_chunks(d)) for d in docs]
    out["get_chunks"] = store.get_chunks(list(reversed(chunks)) + ["nope"])
    out["page_chunk_texts"] = store.page_chunk_texts([("north", 2), ("north", 1), ("baltic", 2), ("draft", 1)])
    out["pages"] = [store.get_pages(d) for d in docs]
    out["reconcile_counts"] = [store.reconcile_counts(d) for d in docs]
    out["meta_items"] = {k: v for k, v in store.meta_items().items() if k not in LOCAL_META}  # each its own
    out["count_chunks"] = [store.count_chunks(), *[store.count_chunks(d) for d in docs]]
    out["keywords"] = {}
    for question in ["turbines capacity", "Baltic", "annual generation", "North Sea 1,850 MW", "Review", "lighthouse"]:
        for scope in (None, ["baltic"], ["north", "draft"]):
            hits = store.keyword_search(question, 20, doc_ids=scope)
            out["keywords"][(question, str(scope))] = (hits[0][0] if hits else None, {h[0] for h in hits})
    out["vector_search"] = [
        store.vector_search(CHUNK_SPACE, query, 5),
        store.vector_search(CHUNK_SPACE, query, 20, doc_ids=["baltic", "draft"]),
        store.vector_search(ENTITY_SPACE, query, 5),
        store.vector_search(ENTITY_SPACE, query, 5, doc_ids=["baltic"]),
        store.vector_search(HYPEREDGE_SPACE, query, 5),
    ]
    out["vector_scores"] = store.vector_scores(CHUNK_SPACE, query, [*reversed(chunks), "nope"])
    out["missing_vectors"] = [
        [c.chunk_id for c in store.missing_vectors(space, d)] for space in (CHUNK_SPACE, ENTITY_SPACE) for d in docs
    ]
    out["entities"] = store.get_entities(entities)
    out["hyperedges"] = store.get_hyperedges(edges)
    out["strengths"] = store.hyperedge_strengths(edges)
    out["incident"] = [
        store.incident_edges(entities),
        *[store.incident_edges(entities, [lv]) for lv in ("low", "fact")],
    ]
    out["provenance"] = [store.provenance("entity", entities), store.provenance("hyperedge", edges)]
    out["by_norm_name"] = store.entities_by_norm_name(["north sea", "baltic", "1,850 mw", "nope"])
    out["matching"] = [store.entities_matching(n) for n in ("North Sea", "mw", "sea", "turbines", "", "zzz")]
    out["document_graph"] = [(store.document_entities(d), store.document_hyperedges(d)) for d in docs]
    out["entity_pages"] = store.entity_pages(entities)
    out["chunk_entities"] = [store.chunk_entities(d) for d in docs]
    out["chunk_members"] = [store.chunk_hyperedge_members(d, lv) for d in docs for lv in (("low", "high"), ("fact",))]
    out["chunk_hyperedges"] = [store.chunk_hyperedges(c) for c in chunks]
    out["of_level"] = [store.hyperedges_of_level(d, lv) for d in docs for lv in ("low", "high", "fact", "theme")]
    out["refine"] = store.refine_signatures(entities)
    out["graph_stats"] = store.graph_stats()
    out["builds"] = [store.builds(), store.builds("north"), store.builds(how="model"), store.build_counts()]
    out["facts_about"] = store.facts_about(entities)
    out["document_facts"] = [store.document_facts(d) for d in docs]
    out["decisions"] = [dataclasses.replace(d, created_at=0.0) for d in store.decisions()]
    out["decisions_of"] = [[dataclasses.replace(x, created_at=0.0) for x in store.decisions(d)] for d in docs]
    out["dropped_in"] = [dataclasses.replace(d, created_at=0.0) for d in store.dropped_in(chunks)]
    out["reconcile_totals"] = store.reconcile_totals()
    out["concepts_of"] = store.concepts_of(entities)
    out["document_concepts"] = [store.document_concepts(d) for d in docs]
    out["concept_names"] = store.concept_names(concepts)
    out["concepts_in"] = [list(store.concepts_in(d)) for d in docs]
    out["concept_members_in"] = [store.concept_members_in(d, concepts, 2) for d in docs]
    out["relations_in"] = [store.relations_in(d) for d in docs]
    out["concept_edges_for"] = [
        list(store.concept_edges_for(relations)),
        list(store.concept_edges_for(relations, ["baltic"])),
    ]
    out["concept_chunk_pairs"] = [
        list(store.concept_chunk_pairs(concepts)),
        list(store.concept_chunk_pairs(concepts, ["baltic", "north"])),
    ]
    out["layer_stats"] = store.layer_stats()
    out["stage_times"] = [store.stage_times(), *[store.stage_times(d) for d in docs]]
    stats = store.stats()
    out["stats"] = {k: v for k, v in stats.items() if k not in ("path", "database_bytes")}
    out["meta"] = [store.get_meta("embedder"), store.get_meta("nope")]
    return out


def assert_same(a: Any, b: Any, where: str) -> None:
    """Equal values, floats to 1e-5 (float32 sums differ in their last bits), dataclasses field by field."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{where}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6), f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def test_backends_agree(both):
    sqlite, postgres = both
    for opened in both:
        fill(opened)
        opened.relabel_fact("h_fact3", "runs_in")
    assert_same(observe(sqlite), observe(postgres), "filled")
    for opened in both:
        opened.remove_evidence_links([("e_baltic", "north:1:1")])
        opened.rebuild_concepts([concept_id("region")])
        opened.remove_document("north")
    assert_same(observe(sqlite), observe(postgres), "after removing north")
    for opened in both:
        opened.clear_document_graph("baltic")
    assert_same(observe(sqlite), observe(postgres), "after clearing baltic's graph")


# --------------------------------------------------------------------------- PostgreSQL only
@pytest.fixture
def pg(pg_url):
    from hyperfolio.store.postgres import PostgresStore

    opened = PostgresStore(pg_url)
    yield opened
    opened.close()


def test_postgres_bm25_scores_are_fts5s(tmp_path, pg):
    """Same formula, same statistics: on plain English the scores agree with FTS5's to rounding."""
    sqlite = SQLiteStore(tmp_path / "col")
    try:
        for opened in (sqlite, pg):
            for doc in (north(), baltic(), draft()):
                opened.write_document(doc)
            opened.set_stage("north", STAGE_READY)
            opened.set_stage("baltic", STAGE_READY)
        for question in ("turbines capacity in the Baltic", "annual generation figure", "North Sea operations review"):
            expected, got = sqlite.keyword_search(question, 10), pg.keyword_search(question, 10)
            assert [h[0] for h in got] == [h[0] for h in expected]
            assert [h[1] for h in got] == pytest.approx([h[1] for h in expected], rel=1e-9)
    finally:
        sqlite.close()


def test_postgres_stores_text_with_nul_bytes(pg):
    """A broken text layer may hold NUL, which PostgreSQL text and jsonb refuse: it is stored as U+FFFD."""
    doc = document(
        "odd", [[chunk("odd", 1, 0, "text", "wind\x00turbines", meta={"raw": "a\x00b", "path": "c:\\u0000"})]]
    )
    doc.title = "Odd\x00title"
    pg.write_document(doc)
    pg.set_stage("odd", STAGE_READY)
    (stored,) = pg.get_chunks(["odd:1:0"])
    assert stored.text == "wind\ufffdturbines" and stored.meta == {"raw": "a\ufffdb", "path": "c:\\u0000"}
    assert pg.get_document("odd").title == "Odd\ufffdtitle"
    assert [h[0] for h in pg.keyword_search("turbines", 5)] == ["odd:1:0"]


def test_postgres_approximate_search_above_the_exact_limit(pg, monkeypatch):
    """A space larger than EXACT_SEARCH_MAX gets an HNSW index; scoped and ready filters still fill k."""
    from psycopg import sql

    from hyperfolio.store import postgres_vectors

    monkeypatch.setattr(postgres_vectors, "EXACT_SEARCH_MAX", 300)
    pg.write_document(document("big", [[chunk("big", 1, 0, "text", "x")]]))
    pg.write_document(document("small", [[chunk("small", 1, 0, "text", "y")]]))
    pg.write_document(document("late", [[chunk("late", 1, 0, "text", "z")]]))
    for doc in ("big", "small"):
        pg.set_stage(doc, STAGE_READY)
    data = vectors_for(["x"] * 1200, dim=32, seed=5)
    items = [(f"b{i}", "big") for i in range(800)] + [(f"s{i}", "small") for i in range(200)]
    items += [(f"l{i}", "late") for i in range(200)]
    pg.put_vectors("scale", items, data)
    assert pg._query("SELECT indexed FROM vector_spaces WHERE space = 'scale'") == [(True,)]
    query = vectors_for(["q"], dim=32, seed=6)[0]
    with pg._lock, pg._conn().transaction(), pg._conn().cursor() as cur:
        statement, params = pg._nearest(cur, "scale", 32, 10, None)
        plan = "\n".join(r[0] for r in cur.execute(sql.SQL("EXPLAIN ") + statement, params(query)).fetchall())
    assert "vectors_hnsw_scale" in plan, plan
    ready = np.arange(1000)  # "late" is not ready
    exact = [items[i][0] for i in ready[np.argsort(-(data[ready] @ query))][:10]]
    found = [h[0] for h in pg.vector_search("scale", query, 10)]
    assert len(found) == 10 and len(set(found) & set(exact)) >= 8 and not any(f.startswith("l") for f in found)
    scores = [h[1] for h in pg.vector_search("scale", query, 10)]
    assert scores == sorted(scores, reverse=True)
    several = vectors_for(["q", "r", "s"], dim=32, seed=7)  # one transaction, the settings made once
    assert pg.vector_search_many("scale", several, 10) == [pg.vector_search("scale", q, 10) for q in several]
    scoped = pg.vector_search("scale", query, 5, doc_ids=["small"])  # 200 vectors: searched exactly
    small = np.arange(800, 1000)
    assert [h[0] for h in scoped] == [items[i][0] for i in small[np.argsort(-(data[small] @ query))][:5]]
    with pytest.raises(StoreError, match="32-dimensional"):
        pg.put_vectors("scale", [("b0", "big")], np.ones((1, 8), dtype=np.float32))
    pg.clear_vectors("scale")
    pg.put_vectors("scale", [("b0", "big")], np.ones((1, 8), dtype=np.float32))  # an emptied space takes a new size
    assert pg.vector_search("scale", np.ones(8, dtype=np.float32), 3)[0][0] == "b0"


def test_postgres_bulk_load_builds_the_index_once_at_the_end(pg, monkeypatch):
    from hyperfolio.store import postgres_vectors

    monkeypatch.setattr(postgres_vectors, "EXACT_SEARCH_MAX", 100)
    pg.write_document(document("big", [[chunk("big", 1, 0, "text", "x")]]))
    pg.set_stage("big", STAGE_READY)
    data = vectors_for(["x"] * 300, dim=16, seed=3)
    query = vectors_for(["q"], dim=16, seed=4)[0]
    exact = [f"b{i}" for i in np.argsort(-(data @ query))[:5]]

    def indexed() -> list[tuple]:
        return pg._query("SELECT indexed FROM vector_spaces WHERE space = 'bulk'")

    with pytest.raises(KeyboardInterrupt), pg.bulk():
        pg.put_vectors("bulk", [(f"b{i}", "big") for i in range(150)], data[:150])
        raise KeyboardInterrupt  # an interrupted load leaves the index to the next one
    assert indexed() == [(False,)]
    with pg.bulk():
        with pg.bulk():  # nested: only the outermost end builds
            pg.put_vectors("bulk", [(f"b{i}", "big") for i in range(150, 300)], data[150:])
        assert indexed() == [(False,)]
        assert [h[0] for h in pg.vector_search("bulk", query, 5)] == exact  # searched exactly meanwhile
    assert indexed() == [(True,)]
    assert len(set(h[0] for h in pg.vector_search("bulk", query, 5)) & set(exact)) >= 4


def test_postgres_index_build_memory_is_raised_never_lowered(pg, monkeypatch):
    """An HNSW build gets at least INDEX_BUILD_MEMORY; a server (or session) configured with more keeps it."""
    from hyperfolio.store import postgres_vectors

    monkeypatch.setattr(postgres_vectors, "EXACT_SEARCH_MAX", 50)
    pg.write_document(document("big", [[chunk("big", 1, 0, "text", "x")]]))
    seen = []
    for configured, space in (("64MB", "small-mem"), ("3GB", "large-mem")):
        pg._conn().execute(f"SET maintenance_work_mem = '{configured}'")  # as the server's setting would be
        with pg.transaction() as cur:
            pg._claim_space(cur, space, 8)
            cur.executemany(
                "INSERT INTO vectors(space, item_id, doc_id, vec) VALUES (%s, %s, 'big', %s)",
                [(space, f"v{i}", v) for i, v in enumerate(vectors_for(["x"] * 60, dim=8, seed=2))],
            )
            pg._index_if_large(cur, space, 8)
            seen.append(cur.execute("SELECT current_setting('maintenance_work_mem')").fetchone()[0])
        assert pg._query("SELECT indexed FROM vector_spaces WHERE space = %s", (space,)) == [(True,)]
    assert seen == [postgres_vectors.INDEX_BUILD_MEMORY, "3GB"]


def test_postgres_concurrent_writers(pg_url):
    """Two store objects writing at once (as two processes would): one wins a duplicate, graphs merge."""
    from hyperfolio.store.postgres import PostgresStore

    first, second = PostgresStore(pg_url), PostgresStore(pg_url)
    errors: list[BaseException] = []
    outcomes: list[str] = []

    def write(opened) -> None:
        try:
            opened.write_document(north())
            outcomes.append("written")
        except DuplicateDocument:
            outcomes.append("duplicate")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=write, args=(s,)) for s in (first, second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and sorted(outcomes) == ["duplicate", "written"]
        first.write_document(baltic())

        def graph(opened, rounds: int) -> None:
            try:
                for _ in range(rounds):
                    build_graph(opened)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=graph, args=(s, 3)) for s in (first, second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert first.get_entities(["e_turbine"])[0].description == "Turbines make power | Turbines in the Baltic"
        assert first.graph_stats()["hyperedges_by_level"] == {"fact": 3, "high": 1, "low": 2, "refine": 1, "theme": 1}
        assert len(second.decisions()) == 3 * 6
    finally:
        first.close()
        second.close()


def test_postgres_copy_to(pg, pg_url_factory, tmp_path):
    fill(pg)
    target = pg_url_factory()
    copy = pg.copy_to(target)
    try:
        assert_same(observe(pg), observe(copy), "copy")
        copy.write_document(document("later", [[chunk("later", 1, 0, "text", "after the copy")]]))
        copy.log_decisions([Decision("later", "mutual", "kept", "x", "", "r")])
        assert copy.decisions()[-1].doc_id == "later"  # identities continue past the copied rows
        assert pg.get_document("later") is None
        with pytest.raises(StoreError, match="not empty"):
            pg.copy_to(target)
    finally:
        copy.close()
    with pytest.raises(StoreError, match="only to another PostgreSQL"):
        pg.copy_to(tmp_path / "variant")


def test_postgres_store_exists_and_remove_store(pg_url):
    from hyperfolio.store.postgres import PostgresStore, remove_store, store_exists

    assert not store_exists(pg_url)
    opened = PostgresStore(pg_url)
    opened.write_document(north())
    opened.close()
    assert store_exists(pg_url)
    remove_store(pg_url)
    assert not store_exists(pg_url)
    reopened = PostgresStore(pg_url)  # a new, empty collection in the same database
    try:
        assert reopened.list_documents() == [] and reopened.keyword_search("turbines", 5) == []
    finally:
        reopened.close()
    with pytest.raises(StoreError, match="cannot connect"):
        store_exists(pg_url.replace("/hf_", "/missing_"))


def test_postgres_reconnects_after_the_server_drops_it(pg, pg_server):
    import psycopg

    pg.write_document(north())
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (pg._conn().info.dbname,),
        )
    time.sleep(0.2)
    assert pg.count_chunks() == 4  # a read finds the connection dropped and runs again on a new one
    pg.set_stage("north", STAGE_READY)


# --------------------------------------------------------------------------- a whole collection on each backend
@pytest.mark.slow
def test_collection_answers_the_same_on_both_backends(tmp_path, pg_url, embedder):
    from hyperfolio.collection import RETRIEVAL_MODES, Collection
    from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report
    from hyperfolio.store.postgres import PostgresStore

    pdf = write_sample_report(tmp_path / "northwind-report.pdf")
    lite = Collection(tmp_path / "sqlite", embedder=embedder)
    server = Collection(pg_url, embedder=embedder, folder=tmp_path / "postgres")
    assert isinstance(server.store, PostgresStore)
    try:
        timings = {}
        for col in (lite, server):
            started = time.perf_counter()
            report = col.add([pdf])
            timings[type(col.store).__name__] = time.perf_counter() - started
            assert [r.status for r in report.results] == ["added"], report.results
        assert_same(lite.store.graph_stats(), server.store.graph_stats(), "graph")
        differing = {}
        for mode in RETRIEVAL_MODES:
            tops = [
                [i.chunk.chunk_id for i in col.ask(SAMPLE_QUESTION, mode=mode).evidence.items[:3]]
                for col in (lite, server)
            ]
            if mode in ("bm25", "dense", "hybrid"):
                assert tops[0] == tops[1], mode
            elif tops[0] != tops[1]:
                differing[mode] = tops
        if differing:  # the graph modes are reported, not asserted
            warnings.warn(f"graph modes differ between SQLite and PostgreSQL: {differing}", stacklevel=1)
        print(f"add seconds per backend: {timings}")
    finally:
        lite.close()
        server.close()


def test_claims(backend):
    one, two = backend.open(), backend.open()
    try:
        assert one.claim("doc-a", "worker-1", 60) is None
        assert one.claim("doc-a", "worker-1", 60) is None  # renewing one's own claim
        assert two.claim("doc-a", "worker-2", 60) == "worker-1"
        assert two.claim("doc-b", "worker-2", 60) is None  # other documents are free
        two.release("doc-a", "worker-2")  # not its claim: nothing happens
        assert two.claim("doc-a", "worker-2", 60) == "worker-1"
        one.release("doc-a", "worker-1")
        assert two.claim("doc-a", "worker-2", 0.2) is None
        time.sleep(0.4)  # worker-2 stopped renewing (it died): the claim lapses
        assert one.claim("doc-a", "worker-1", 60) is None
    finally:
        one.close()
        two.close()


def test_claims_are_renewed_while_held(backend):
    from hyperfolio.store.claims import Claims

    one, two = backend.open(), backend.open()
    held = Claims(one, seconds=0.4, owner="worker-1")
    try:
        assert held.take("doc-a") is None
        time.sleep(1.0)  # more than twice the claim's life: only renewals keep it
        assert two.claim("doc-a", "worker-2", 60) == "worker-1"
        held.release("doc-a")
        assert two.claim("doc-a", "worker-2", 60) is None
        assert held.take("doc-a") == "worker-2" and not held.lost
    finally:
        held.close()
        one.close()
        two.close()


def test_a_dead_local_processs_claim_is_taken_at_once(backend):
    import socket
    import subprocess
    import sys

    from hyperfolio.store.claims import Claims

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_owner = f"{socket.gethostname()}:{gone.stdout.strip()}:abc123"  # a process that has exited
    live_owner = f"{socket.gethostname()}:{os.getpid()}:def456"  # this one, another object
    elsewhere = "other-host:1:xyz"  # on another machine: only its lapse frees it
    one = backend.open()
    claims = Claims(one, seconds=60)
    try:
        for owner, key in ((dead_owner, "a"), (live_owner, "b"), (elsewhere, "c")):
            assert one.claim(key, owner, 60) is None
        assert claims.take("a") is None
        assert claims.take("b") == live_owner
        assert claims.take("c") == elsewhere
    finally:
        claims.close()
        one.close()


def test_sqlite_readers_append_what_a_writer_added(tmp_path, monkeypatch):
    """A reader's in-memory vectors follow another connection's writes: appended when only vectors were
    added or documents became ready, loaded again after a deletion or a replacement; always ranking as a
    store opened afresh does."""
    from hyperfolio.store import sqlite as backend
    from hyperfolio.store import sqlite_vectors

    loads: list[str] = []
    real_load = sqlite_vectors.load

    def counted(db, space):
        loads.append(space)
        return real_load(db, space)

    monkeypatch.setattr(backend, "load_vectors", counted)  # the store's first look
    monkeypatch.setattr(sqlite_vectors, "load", counted)  # a refresh that must start over
    writer, reader = SQLiteStore(tmp_path / "col"), SQLiteStore(tmp_path / "col")
    rng = np.random.default_rng(9)
    query = rng.standard_normal(8).astype(np.float32)

    def add(doc: str, n: int, ready: bool = True) -> None:
        writer.write_document(document(doc, [[chunk(doc, 1, i, "text", f"t{i}") for i in range(n)]]))
        writer.put_vectors(CHUNK_SPACE, [(f"{doc}:1:{i}", doc) for i in range(n)], rng.standard_normal((n, 8)))
        if ready:
            writer.set_stage(doc, STAGE_READY)

    def agree() -> None:
        fresh = SQLiteStore(tmp_path / "col")
        try:
            for scope in (None, ["d0"], ["d1", "d3"]):
                assert reader.vector_search(CHUNK_SPACE, query, 50, scope) == fresh.vector_search(
                    CHUNK_SPACE, query, 50, scope
                ), scope
        finally:
            fresh.close()

    try:
        add("d0", 30)
        agree()
        assert loads.count(CHUNK_SPACE) == 2  # the reader's first look, and the fresh store's
        add("d1", 20)
        add("d2", 10, ready=False)  # not searchable yet
        add("d3", 5)
        agree()
        writer.set_stage("d2", STAGE_READY)  # its vectors are older than d3's: ties still break by storage order
        agree()
        assert loads.count(CHUNK_SPACE) == 4  # two fresh stores; the reader only appended
        tie = np.ones((2, 8), dtype=np.float32)
        writer.put_vectors(CHUNK_SPACE, [("d1:1:0", "d1"), ("d3:1:0", "d3")], tie)  # replaced: a deletion
        agree()
        assert loads.count(CHUNK_SPACE) == 6  # the reader loaded again, as it must
        writer.remove_document("d0")
        agree()
        assert len(reader.vector_search(CHUNK_SPACE, query, 100)) == 20 + 10 + 5
    finally:
        writer.close()
        reader.close()


def test_conversations_keep_their_turns_in_order_per_owner(backend):
    store = backend.open()
    mine, theirs = store.create_conversation("key-a"), store.create_conversation("key-b")
    assert store.add_turn(mine.conversation_id, {"question": "What was revenue in 2023?", "answer": "$5"}) == 1
    assert store.add_turn(mine.conversation_id, {"question": "and in 2022?", "standalone": "What was ..."}) == 2
    reopened = backend.open()  # another process, or the service after a restart
    found = reopened.get_conversation(mine.conversation_id)
    assert found is not None and found.owner == "key-a"
    assert found.title == "What was revenue in 2023?"  # the first question titles the thread
    assert [t["question"] for t in found.turns] == ["What was revenue in 2023?", "and in 2022?"]
    assert [c.conversation_id for c in reopened.list_conversations("key-a")] == [mine.conversation_id]
    assert [c.conversation_id for c in reopened.list_conversations("key-b")] == [theirs.conversation_id]
    assert reopened.delete_conversation(mine.conversation_id) is True
    assert reopened.get_conversation(mine.conversation_id) is None
    assert reopened.delete_conversation(mine.conversation_id) is False
    assert reopened.get_conversation("no-such-thread") is None
