"""Export a collection as a bundle and import it into another backend: the same content, the same answers."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from hyperfolio.collection import Collection
from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report
from hyperfolio.store.base import SPACES, Store
from hyperfolio.store.bundle import BUNDLE_VERSION, BundleError, export_bundle, import_bundle
from hyperfolio.store.sql.keywords import LOCAL_META

MODES = ("auto", "bm25", "dense", "hybrid", "dual", "concept", "topdown")  # every vector travels: every mode


@pytest.fixture(scope="module")
def source(tmp_path_factory, embedder):
    """The sample report indexed into a SQLite collection, and its bundle."""
    base = tmp_path_factory.mktemp("bundle")
    pdf = write_sample_report(base / "northwind-report.pdf")
    col = Collection(base / "source", embedder=embedder)
    report = col.add([pdf])
    assert [r.status for r in report.results] == ["added"], report.results
    col.models.records.put_reply("a-key", "some-model", '{"answer": "paid for once"}', 120, 8)
    col.models.usage.record("extract", prompt_tokens=120, completion_tokens=8, seconds=1.5)
    exported = col.export_bundle(base / "bundle")
    try:
        yield col, exported.directory
    finally:
        col.close()


def _content(store: Store) -> dict:
    """The store's content, compared by value (documents, chunks, graph items with provenance)."""
    docs = store.list_documents()
    ids = [d.doc_id for d in docs]
    entity_ids = sorted({e for d in ids for e in store.document_entities(d)})
    edge_ids = sorted({h for d in ids for h in store.document_hyperedges(d)})
    return {
        "documents": [dataclasses.astuple(d) for d in docs],  # status, meta and when it was added too
        "pages": {d: store.get_pages(d) for d in ids},
        "reconcile_counts": {d: store.reconcile_counts(d) for d in ids},
        "meta": {k: v for k, v in store.meta_items().items() if k not in LOCAL_META},  # the store's own
        "chunks": [repr(c) for c in store.iter_chunks()],
        "entities": sorted(repr(e) for e in store.get_entities(entity_ids)),
        "hyperedges": sorted(
            repr((h.edge_id, h.level, h.description, h.keywords, h.strength, sorted(h.members), h.relation))
            for h in store.get_hyperedges(edge_ids)
        ),
        "entity_provenance": {k: sorted(v) for k, v in store.provenance("entity", entity_ids).items()},
        "edge_provenance": {k: sorted(v) for k, v in store.provenance("hyperedge", edge_ids).items()},
        "decisions": store.decisions(),
        "builds": store.builds(),
        "concepts": sorted(c for d in ids for c in store.document_concepts(d)),
    }


def _tops(col: Collection) -> dict[str, list[str]]:
    return {m: [i.chunk.chunk_id for i in col.ask(SAMPLE_QUESTION, mode=m).evidence.items[:3]] for m in MODES}


def _assert_round_trip(source_col: Collection, target: Collection, bundle: Path) -> None:
    report = target.import_bundle(bundle)
    assert report.counts["documents"] == 1 and report.counts["model_replies"] == 1
    assert _content(target.store) == _content(source_col.store)
    reply = target.models.records.reply("a-key")
    assert reply is not None and reply.response == '{"answer": "paid for once"}' and reply.prompt_tokens == 120
    assert target.models.usage.totals()["extract"].prompt_tokens >= 120
    assert target.store.get_meta("embedder") == source_col.store.get_meta("embedder")
    for space in SPACES:  # every vector, exactly, in the order it was stored
        before, after = list(source_col.store.iter_vectors(space)), list(target.store.iter_vectors(space))
        assert [(i, d) for i, d, _ in after] == [(i, d) for i, d, _ in before], space
        assert all(np.array_equal(a[2], b[2]) for a, b in zip(after, before, strict=True)), space
    assert _tops(target) == _tops(source_col)
    pictures = [c.image_path for c in target.store.iter_chunks() if c.image_path]
    assert pictures and all((target.path / p).is_file() for p in pictures)


@pytest.mark.slow
def test_sqlite_to_sqlite(source, tmp_path, embedder):
    col, bundle = source
    target = Collection(tmp_path / "target", embedder=embedder)
    try:
        _assert_round_trip(col, target, bundle)
    finally:
        target.close()


@pytest.mark.slow
def test_sqlite_to_postgres_and_back(source, tmp_path, pg_url, embedder):
    col, bundle = source
    server = Collection(pg_url, embedder=embedder, folder=tmp_path / "pg")
    try:
        _assert_round_trip(col, server, bundle)
        server.export_bundle(tmp_path / "from-postgres")
    finally:
        server.close()
    back = Collection(tmp_path / "back", embedder=embedder)
    try:
        _assert_round_trip(col, back, tmp_path / "from-postgres")
    finally:
        back.close()


def test_a_failed_import_leaves_nothing_behind(source, tmp_path, embedder):
    col, bundle = source
    broken = tmp_path / "broken"
    shutil.copytree(bundle, broken)
    lines = (broken / "hyperedges.jsonl").read_text().splitlines()
    lines[len(lines) // 2] = '{"edge_id": "half a line'  # a bundle cut off mid-write
    (broken / "hyperedges.jsonl").write_text("\n".join(lines) + "\n")
    target = Collection(tmp_path / "target", embedder=embedder)
    try:
        with pytest.raises(BundleError, match=r"hyperedges.jsonl line \d+: not valid JSON"):
            target.import_bundle(broken)
        assert target.store.list_documents() == [] and target.store.count_chunks() == 0
        assert target.store.graph_stats()["entities_by_modality"] == {}
        assert target.import_bundle(bundle).counts["documents"] == 1  # and the collection takes a good one
    finally:
        target.close()


def test_bundle_files_describe_the_graph(source):
    col, bundle = source
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["version"] == BUNDLE_VERSION
    assert manifest["embedder"] == col.store.get_meta("embedder")
    stats = col.store.graph_stats()
    hif = json.loads((bundle / "hypergraph.hif.json").read_text())
    assert hif["network-type"] == "undirected"
    assert len(hif["nodes"]) == manifest["counts"]["entities"] > 0
    assert len(hif["edges"]) == manifest["counts"]["hyperedges"] > 0
    edges = {h["edge"] for h in hif["edges"]}
    nodes = {n["node"] for n in hif["nodes"]}
    assert hif["incidences"] and all(i["edge"] in edges and i["node"] in nodes for i in hif["incidences"])
    graph = nx.read_graphml(bundle / "hypergraph.graphml")
    assert graph.number_of_nodes() == len(nodes) + len(edges)
    assert graph.number_of_edges() == len({(i["node"], i["edge"]) for i in hif["incidences"]})
    assert stats  # the source has a hypergraph to describe


def test_import_refuses_a_non_empty_target_and_another_version(source, tmp_path, embedder):
    col, bundle = source
    with pytest.raises(BundleError, match="not empty"):
        import_bundle(col.store, bundle)
    other = tmp_path / "v2"
    other.mkdir()
    for path in bundle.glob("*.json*"):
        (other / path.name).write_bytes(path.read_bytes())
    manifest = json.loads((other / "manifest.json").read_text())
    (other / "manifest.json").write_text(json.dumps({**manifest, "version": BUNDLE_VERSION + 1}))
    target = Collection(tmp_path / "target", embedder=embedder)
    try:
        with pytest.raises(BundleError, match="version"):
            import_bundle(target.store, other)
        with pytest.raises(BundleError, match="manifest"):
            import_bundle(target.store, tmp_path / "nowhere")
        assert target.store.list_documents() == []
    finally:
        target.close()


def test_export_refuses_a_non_empty_directory(source, tmp_path):
    col, _ = source
    (tmp_path / "taken.txt").write_text("x")
    with pytest.raises(BundleError, match="not empty"):
        export_bundle(col.store, tmp_path)


@pytest.mark.slow
def test_cli_exports_and_imports(source, tmp_path):
    from typer.testing import CliRunner

    from hyperfolio.cli import app

    col, _ = source
    runner = CliRunner()

    def said(result) -> str:  # Rich wraps long lines
        return " ".join(result.output.split())

    out = tmp_path / "cli-bundle"
    done = runner.invoke(app, ["export", str(out), "-c", str(col.path)])
    assert done.exit_code == 0, done.output
    assert "documents: 1" in said(done)
    done = runner.invoke(app, ["import", str(out), "-c", str(tmp_path / "copy")])
    assert done.exit_code == 0, done.output
    assert "chunks: " in said(done)
    again = runner.invoke(app, ["import", str(out), "-c", str(tmp_path / "copy")])
    assert again.exit_code == 1 and "not empty" in said(again)
    missing = runner.invoke(app, ["import", str(tmp_path / "nowhere"), "-c", str(tmp_path / "other")])
    assert missing.exit_code == 1 and "no such directory" in said(missing)
    taken = runner.invoke(app, ["export", str(out), "-c", str(col.path)])
    assert taken.exit_code == 1 and "not empty" in said(taken)
    nothing = runner.invoke(app, ["export", str(tmp_path / "b2"), "-c", str(tmp_path / "absent")])
    assert nothing.exit_code == 1 and "no collection" in said(nothing)


@pytest.mark.slow
def test_copy_store_across_backends(source, tmp_path, pg_url):
    """`copy_store` (what `Collection.variant` copies with) between SQLite and PostgreSQL, both ways."""
    from hyperfolio.store import copy_store

    col, _ = source
    server = copy_store(col.store, pg_url)
    try:
        assert _content(server) == _content(col.store)
        back = copy_store(server, tmp_path / "back")
        try:
            assert _content(back) == _content(col.store)
            assert [v[0] for v in back.iter_vectors(SPACES[0])] == [v[0] for v in col.store.iter_vectors(SPACES[0])]
        finally:
            back.close()
    finally:
        server.close()
