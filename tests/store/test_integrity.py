"""`Collection.check` and `hyperfolio check`, on both backends.

One small real collection per backend (two Markdown files and the sample PDF, with the offline hypergraph)
is built once per module; each test gets a copy, plants one corruption with plain SQL, foreign keys not
enforced (as a hand edit, another tool or an interrupted older version leaves a database), and asserts the
check finds exactly the kinds that corruption leaves behind, with their counts; then that `repair` leaves a
collection that passes and still answers.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperfolio import Collection
from hyperfolio.cli import app
from hyperfolio.hypergraph.layers import THEME
from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report
from hyperfolio.store.integrity import MIN_MEMBERS, IntegrityReport, Unfinished
from hyperfolio.store.keywords.engine import open_index
from hyperfolio.store.sql.dialect import postgres_sql as pg
from hyperfolio.store.sqlite import DB_NAME

BACKENDS = ["sqlite", "postgres"]

WIND = """# Wind Report

## Capacity

Northwind operates 42 turbines on the Dogger Bank site. The site produced 380 GWh in 2023.

## Staff

The company employs 1,250 people, most of them in Aberdeen.
"""

BAKERY = """# Bakery Handbook

## Bread

Sourdough needs a starter that is fed daily with flour and water.

## Cakes

A sponge cake rises because whipped eggs trap air.
"""

# A question per document and what its answer's chunk says.
QUESTIONS = {
    "wind.md": ("How many turbines does Northwind operate on the Dogger Bank site?", "42 turbines"),
    "bakery.md": ("What does a sourdough starter need?", "flour and water"),
    "northwind-report.pdf": (SAMPLE_QUESTION, "1,850"),
}
MODES = ("auto", "bm25", "dense", "hybrid", "dual", "concept", "topdown")


# --------------------------------------------------------------------------- a built collection per backend
@dataclass
class Template:
    backend: str
    location: str  # a collection directory, or a database URL
    docs: Path
    database: str = ""  # PostgreSQL: the database copies are made from


def _admin(pg_server: Any) -> Any:
    import psycopg

    return psycopg.connect(pg_server.get_uri(), autocommit=True)


@pytest.fixture(scope="module", params=BACKENDS)
def template(request, tmp_path_factory, embedder) -> Iterator[Template]:
    """The collection every test of the module copies, built once per backend."""
    root = tmp_path_factory.mktemp(f"integrity-{request.param}")
    docs = root / "docs"
    docs.mkdir()
    (docs / "wind.md").write_text(WIND)
    (docs / "bakery.md").write_text(BAKERY)
    write_sample_report(docs / "northwind-report.pdf")
    name = ""
    if request.param == "sqlite":
        location = str(root / "col")
    else:
        server = request.getfixturevalue("pg_server")
        name = f"hf_template_{uuid.uuid4().hex[:12]}"
        with _admin(server) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        location = server.get_uri(database=name)
    col = Collection(location, embedder=embedder, folder=root / "folder")
    try:
        report = col.add([docs])
        assert [r.status for r in report.results] == ["added"] * 3, report.results
    finally:
        col.close()
    yield Template(request.param, location, docs, name)
    if name:
        with _admin(request.getfixturevalue("pg_server")) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def copy(request, template, tmp_path) -> Iterator[str]:
    """A copy of the template collection: its location."""
    if template.backend == "sqlite":
        shutil.copytree(template.location, tmp_path / "col")
        yield str(tmp_path / "col")
        return
    server = request.getfixturevalue("pg_server")
    name = f"hf_{uuid.uuid4().hex[:16]}"
    with _admin(server) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template.database}"')
    yield server.get_uri(database=name)
    with _admin(server) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def col(copy, tmp_path, embedder) -> Iterator[Collection]:
    opened = Collection(copy, embedder=embedder, folder=tmp_path / "folder")
    yield opened
    opened.close()


class Raw:
    """Plain SQL on a collection's database (written with `?`), foreign keys not enforced."""

    def __init__(self, backend: str, location: str) -> None:
        self.backend = backend
        if backend == "sqlite":
            self.db: Any = sqlite3.connect(Path(location) / DB_NAME, isolation_level=None)  # foreign keys off
        else:
            import psycopg

            self.db = psycopg.connect(location, autocommit=True)
            self.db.execute("SET session_replication_role = replica")  # no foreign key triggers fire

    def run(self, sql: str, *params: Any) -> int:
        cursor = self.db.execute(sql if self.backend == "sqlite" else pg(sql), params)
        return cursor.rowcount

    def rows(self, sql: str, *params: Any) -> list[tuple]:
        return list(self.db.execute(sql if self.backend == "sqlite" else pg(sql), params).fetchall())

    def one(self, sql: str, *params: Any) -> Any:
        return self.rows(sql, *params)[0][0]


@pytest.fixture
def raw(template, copy) -> Iterator[Raw]:
    opened = Raw(template.backend, copy)
    yield opened
    opened.db.close()


# --------------------------------------------------------------------------- helpers
def found(report: IntegrityReport) -> dict[str, int]:
    return {f.kind: f.count for f in report.findings}


def expected(**counts: int) -> dict[str, int]:
    """The kinds a corruption leaves, those with nothing to count left out."""
    return {kind: n for kind, n in counts.items() if n}


def doc_id(raw: Raw, name: str) -> str:
    return raw.one("SELECT doc_id FROM documents WHERE source LIKE ?", "%" + name)


def vectors_of(raw: Raw, space: str, item: str) -> int:
    """How many vectors of `space` belong to `item` (a graph item has one per document: '<item>|<doc>')."""
    keys = [r[0] for r in raw.rows("SELECT item_id FROM vectors WHERE space = ?", space)]
    return sum(1 for key in keys if key == item or key.startswith(item + "|"))


def assert_answers(col: Collection, skip: tuple[str, ...] = ()) -> None:
    """Every mode still retrieves, only chunks that exist; the flat modes find each document's answer."""
    for name, (question, answer) in QUESTIONS.items():
        if name in skip:
            continue
        for mode in MODES:
            items = col.retrieve(question, mode=mode, k=5).items
            assert items, (mode, question)
            ids = [i.chunk.chunk_id for i in items]
            assert len(col.store.get_chunks(ids)) == len(set(ids)), mode
            if mode in ("bm25", "dense", "hybrid", "auto"):
                assert any(answer in i.chunk.text for i in items), (mode, question, [i.chunk.text for i in items])


def repair_passes(col: Collection, skip: tuple[str, ...] = ()) -> IntegrityReport:
    """--repair leaves nothing wrong, a fresh check agrees, and questions are still answered."""
    report = col.check(repair=True)
    assert report.ok, report.findings
    assert report.repaired
    assert col.check().ok
    assert_answers(col, skip)
    return report


# --------------------------------------------------------------------------- the checks
def test_the_minimum_members_are_the_build_stages():
    assert MIN_MEMBERS == {THEME: 0}  # themes may have no key entity; every other level is written with two


def test_a_built_collection_passes(col):
    report = col.check()
    assert report.findings == [] and report.ok
    assert report.summary() == "collection OK"
    assert col.check(repair=True).repaired == {}


def test_a_deleted_hyperedge_leaves_its_members_provenance_and_vectors(col, raw):
    edge = raw.one("SELECT edge_id FROM hyperedges WHERE level = 'low' ORDER BY edge_id LIMIT 1")
    members = raw.one("SELECT COUNT(*) FROM incidence WHERE edge_id = ?", edge)
    provenance = raw.one("SELECT COUNT(*) FROM provenance WHERE item_kind = 'hyperedge' AND item_id = ?", edge)
    vectors = vectors_of(raw, "hyperedge", edge)
    assert raw.run("DELETE FROM hyperedges WHERE edge_id = ?", edge) == 1
    report = col.check()
    assert found(report) == expected(
        orphan_incidence=members, provenance_missing_item=provenance, orphan_vectors=vectors
    )
    incidence = next(f for f in report.findings if f.kind == "orphan_incidence")
    assert incidence.repairable and all(e.startswith(edge + " -> ") for e in incidence.examples)
    assert "run hyperfolio check --repair" in report.summary()
    repair_passes(col)
    assert raw.one("SELECT COUNT(*) FROM incidence WHERE edge_id = ?", edge) == 0


def test_a_deleted_chunk_leaves_provenance_vector_keyword_row_and_concept_evidence(col, raw):
    chunk = raw.one("SELECT chunk_id FROM concept_evidence ORDER BY chunk_id LIMIT 1")
    provenance = raw.one("SELECT COUNT(*) FROM provenance WHERE chunk_id = ?", chunk)
    evidence = raw.one("SELECT COUNT(*) FROM concept_evidence WHERE chunk_id = ?", chunk)
    assert provenance and evidence
    assert raw.run("DELETE FROM chunks WHERE chunk_id = ?", chunk) == 1
    # SQLite's copy of the collection holds the index made before the chunk went; a PostgreSQL copy is
    # another database, whose index is made (from the chunks as they are now) at its first search.
    extra = int(raw.backend == "sqlite")
    assert found(col.check()) == expected(
        provenance_missing_chunk=provenance, orphan_concept_evidence=evidence, orphan_vectors=1, keyword_extra=extra
    )
    repair_passes(col)


def _tamper_keyword_index(col: Collection, change) -> None:
    """Change the keyword index behind the store's back (a lost or doubled entry), as a bad disk might."""
    col.store.catch_up_keywords()
    index = col.store._keyword_index()
    writer = open_index(index.folder).writer(heap_size=15_000_000, num_threads=1)
    change(writer)
    writer.commit()
    writer.wait_merging_threads()
    index._open().reload()  # this process's searcher sees it at once


def test_a_dropped_keyword_entry_is_found_and_the_index_rebuilt(col, raw):
    chunk, text = raw.rows("SELECT chunk_id, text FROM chunks WHERE text LIKE ? ORDER BY chunk_id", "%42 turbines%")[0]
    _tamper_keyword_index(col, lambda writer: writer.delete_documents_by_term("chunk", chunk))
    assert chunk not in [c for c, _ in col.store.keyword_search("Dogger Bank turbines", 20)]
    assert found(col.check()) == expected(keyword_missing=1, keyword_stats=1)
    report = repair_passes(col)
    assert report.repaired["keyword_missing"] == raw.one("SELECT COUNT(*) FROM chunks")
    assert col.store.keyword_search("Dogger Bank turbines", 5)[0][0] == chunk
    assert "42 turbines" in text


def test_a_keyword_entry_written_twice_is_extra(col, raw):
    import tantivy

    chunk, doc = raw.rows("SELECT chunk_id, doc_id FROM chunks ORDER BY chunk_id LIMIT 1")[0]
    twice = tantivy.Document(chunk=chunk, doc=doc, words="again", counts=b"again\n", length=1, order=0)
    _tamper_keyword_index(col, lambda writer: writer.add_document(twice))
    assert found(col.check()) == {"keyword_extra": 1, "keyword_stats": 1}
    repair_passes(col)


def test_a_stage_changed_by_hand_takes_the_document_out_of_the_index_at_the_check(col, raw):
    """An edit that bypasses the store changes no epoch: the check compares the documents anyway."""
    doc = raw.one("SELECT doc_id FROM chunks WHERE text LIKE ?", "%flour and water%")
    before = col.store.keyword_search("sourdough starter flour", 5)
    assert before and before[0][0].startswith(doc)
    raw.run("UPDATE doc_status SET stage = 'parsed' WHERE doc_id = ?", doc)
    report = col.check()
    assert not report.findings and report.unfinished, report
    assert not [c for c, _ in col.store.keyword_search("sourdough starter flour", 5) if c.startswith(doc)]


def test_an_orphan_vector(col, raw):
    raw.run(
        "INSERT INTO vectors(space, item_id, doc_id, vec) SELECT space, 'Egone|' || doc_id, doc_id, vec"
        " FROM vectors WHERE space = 'entity' ORDER BY item_id LIMIT 1"
    )
    report = col.check()
    assert found(report) == {"orphan_vectors": 1}
    assert report.findings[0].examples[0].startswith("entity Egone|")
    repair_passes(col)


def test_a_chunk_without_vector_is_embedded_again(col, raw):
    chunk = raw.one("SELECT chunk_id FROM chunks WHERE text LIKE ?", "%flour and water%")
    assert raw.run("DELETE FROM vectors WHERE space = 'chunk' AND item_id = ?", chunk) == 1
    assert found(col.check()) == {"chunks_without_vector": 1}
    report = repair_passes(col)
    assert report.repaired["chunks_without_vector"] == 1
    question = QUESTIONS["bakery.md"][0]
    assert chunk in [i.chunk.chunk_id for i in col.retrieve(question, mode="dense", k=3).items]


def test_a_hyperedge_left_with_one_member(col, raw):
    edge, entity = raw.rows(
        "SELECT i.edge_id, i.entity_id FROM incidence i JOIN hyperedges h ON h.edge_id = i.edge_id"
        " WHERE h.level = 'low' ORDER BY i.edge_id, i.entity_id LIMIT 1"
    )[0]
    raw.run("DELETE FROM incidence WHERE edge_id = ? AND entity_id = ?", edge, entity)
    report = col.check()
    assert found(report) == {"too_few_members": 1}
    assert report.findings[0].examples == [f"{edge} (low)"]
    repair_passes(col)
    assert raw.one("SELECT COUNT(*) FROM hyperedges WHERE edge_id = ?", edge) == 0
    assert vectors_of(raw, "hyperedge", edge) == 0


def test_a_deleted_concept_leaves_its_links_evidence_edges_and_vectors(col, raw):
    concept = raw.one("SELECT head_id FROM concept_edges ORDER BY head_id LIMIT 1")
    links = raw.one("SELECT COUNT(*) FROM entity_concepts WHERE concept_id = ?", concept)
    evidence = raw.one("SELECT COUNT(*) FROM concept_evidence WHERE concept_id = ?", concept)
    edges = raw.one("SELECT COUNT(*) FROM concept_edges WHERE head_id = ? OR tail_id = ?", concept, concept)
    vectors = vectors_of(raw, "concept", concept)
    assert raw.run("DELETE FROM concepts WHERE concept_id = ?", concept) == 1
    assert found(col.check()) == expected(
        orphan_entity_concepts=links,
        orphan_concept_evidence=evidence,
        orphan_concept_edges=edges,
        orphan_vectors=vectors,
    )
    repair_passes(col)


def test_a_deleted_document_leaves_everything_it_had(col, raw):
    doc = doc_id(raw, "bakery.md")
    counts = {
        table: raw.one(f"SELECT COUNT(*) FROM {table} WHERE doc_id = ?", doc)
        for table in ("pages", "chunks", "vectors", "concept_edges", "doc_status", "stage_times", "reconcile_stats")
    }
    records = sum(
        raw.one(f"SELECT COUNT(*) FROM {table} WHERE doc_id = ?", doc)
        for table in ("doc_status", "stage_times", "conflict_log", "reconcile_stats", "model_builds")
    )
    assert counts["pages"] and counts["chunks"] and counts["doc_status"] and counts["stage_times"]
    assert raw.run("DELETE FROM documents WHERE doc_id = ?", doc) == 1
    assert found(col.check()) == expected(
        orphan_pages=counts["pages"],
        orphan_chunks=counts["chunks"],
        orphan_concept_edges=counts["concept_edges"],
        orphan_records=records,
        orphan_vectors=counts["vectors"],
    )
    repair_passes(col, skip=("bakery.md",))
    left = [raw.one(f"SELECT COUNT(*) FROM {table} WHERE doc_id = ?", doc) for table in ("provenance", *counts)]
    assert left == [0] * len(left)  # as if it had been removed
    texts = [i.chunk.text for i in col.retrieve(QUESTIONS["bakery.md"][0], mode="bm25", k=10).items]
    assert not any("flour and water" in t for t in texts)


def test_an_unfinished_document_is_a_note_not_a_problem(col, raw, template):
    doc = doc_id(raw, "wind.md")
    raw.run("UPDATE doc_status SET stage = 'parsed' WHERE doc_id = ?", doc)
    report = col.check()
    source = str(template.docs / "wind.md")
    assert report.ok and report.findings == []
    assert report.unfinished == [Unfinished(doc, source, "parsed")]
    assert report.summary() == "collection OK; 1 document not fully indexed: hyperfolio add finishes it"
    data = report.to_dict()
    assert data["ok"] and data["findings"] == []
    assert data["unfinished"] == [{"doc_id": doc, "source": source, "status": "parsed", "indexing_by": ""}]
    repaired = col.check(repair=True)
    assert repaired.repaired == {} and repaired.findings == [] and len(repaired.unfinished) == 1
    assert col.store.get_document(doc).status == "parsed"  # not indexed by the check
    assert col.add([source]).results[0].status == "resumed"
    after = col.check()
    assert after.findings == [] and after.unfinished == [] and after.summary() == "collection OK"
    assert_answers(col)


@pytest.mark.parametrize("template", ["postgres"], indirect=True)
def test_an_unregistered_vector_space_is_registered(col, raw):
    dim = raw.one("SELECT dim FROM vector_spaces WHERE space = 'theme'")
    raw.run("DELETE FROM vector_spaces WHERE space = 'theme'")
    assert col.store.vector_search("theme", col.graph_embedder.embed(["wind turbines"])[0], 3) == []
    assert found(col.check()) == {"unregistered_vector_spaces": 1}
    repair_passes(col)
    assert raw.one("SELECT dim FROM vector_spaces WHERE space = 'theme'") == dim
    assert col.store.vector_search("theme", col.graph_embedder.embed(["wind turbines"])[0], 3)


# --------------------------------------------------------------------------- the command
@pytest.mark.parametrize("template", ["sqlite"], indirect=True)
def test_the_command_reports_repairs_and_exits_by_the_result(copy, raw):
    runner = CliRunner()
    clean = runner.invoke(app, ["check", "-c", copy])
    assert clean.exit_code == 0, clean.output
    assert clean.output.strip().endswith("collection OK")

    edge = raw.one("SELECT edge_id FROM hyperedges WHERE level = 'high' ORDER BY edge_id LIMIT 1")
    raw.run("DELETE FROM hyperedges WHERE edge_id = ?", edge)
    raw.run("UPDATE doc_status SET stage = 'embedded' WHERE doc_id = ?", doc_id(raw, "bakery.md"))
    broken = runner.invoke(app, ["check", "-c", copy], env={"COLUMNS": "200"})
    assert broken.exit_code == 1, broken.output
    assert "hyperedge members pointing at missing hyperedges or entities" in broken.stdout
    assert edge in broken.stdout and "deletes those rows" in broken.stdout
    assert "3 problems found (3 repairable: run hyperfolio check --repair)" in broken.stdout
    assert "hyperfolio add " in broken.stderr and "bakery.md -c " in broken.stderr

    as_json = runner.invoke(app, ["check", "-c", copy, "--json"])
    assert as_json.exit_code == 1
    data = json.loads(as_json.stdout)
    assert not data["ok"] and {f["kind"] for f in data["findings"]} == {
        "orphan_incidence",
        "provenance_missing_item",
        "orphan_vectors",
    }
    assert [d["source"].endswith("bakery.md") for d in data["unfinished"]] == [True]

    repaired = runner.invoke(app, ["check", "-c", copy, "--repair"], env={"COLUMNS": "200"})
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: hyperedge members pointing at missing hyperedges or entities" in repaired.stdout
    assert repaired.stdout.strip().endswith("collection OK; 1 document not fully indexed: hyperfolio add finishes it")
    again = json.loads(runner.invoke(app, ["check", "-c", copy, "--json"]).stdout)
    assert again["ok"] and again["findings"] == [] and len(again["unfinished"]) == 1

    missing = runner.invoke(app, ["check", "-c", str(Path(copy).parent / "nowhere")])
    assert missing.exit_code == 1 and "no collection at" in missing.stderr


@pytest.mark.parametrize("template", ["sqlite"], indirect=True)
def test_the_command_notes_an_unfinished_document_outside_the_table(copy, raw, template):
    """Not a problem (it is what another `add` at work looks like, and `add` resumes a cut-off one): exit 0, no
    problem table; but said plainly, with the command that finishes it."""
    raw.run("UPDATE doc_status SET stage = 'parsed' WHERE doc_id = ?", doc_id(raw, "wind.md"))
    result = CliRunner().invoke(app, ["check", "-c", copy], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "collection OK; 1 document not fully indexed: hyperfolio add finishes it"
    source = str(template.docs / "wind.md")
    assert "1 document not fully indexed" in result.stderr and "interrupted" in result.stderr
    assert f"hyperfolio add {source} -c " in result.stderr


def test_a_document_being_indexed_now_is_told_from_an_interrupted_one(col, raw, template):
    """The live claim of a running `add` (this process, on this host) names who is indexing the document;
    a claim whose process is gone does not, and the note then says how to finish it."""
    from hyperfolio.store.claims import Claims, worker_name

    doc = doc_id(raw, "wind.md")
    raw.run("UPDATE doc_status SET stage = 'parsed' WHERE doc_id = ?", doc)
    key = col.store.get_document(doc).content_hash
    running = Claims(col.store, owner=worker_name())
    assert running.take(key) is None
    try:
        (shown,) = col.check().unfinished
        assert shown.indexing_by == f"process {os.getpid()} on {socket.gethostname()}", shown
    finally:
        running.close()
    assert col.check().unfinished[0].indexing_by == ""  # released: an interrupted add's leftover
    gone = Claims(col.store, owner=f"{socket.gethostname()}:{2**22 + 12345}:dead00")  # no such process
    assert gone.take(key) is None
    assert col.check().unfinished[0].indexing_by == ""
    gone.close()
