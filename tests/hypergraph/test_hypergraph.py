"""The offline hypergraph: specific entities, hyperedges and anchors from generated documents."""

from __future__ import annotations

import sqlite3

import pytest

from hyperfolio import Collection, Settings
from hyperfolio.hypergraph.extract import PageUnit
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.merge import merge
from hyperfolio.model import Chunk

FLEET = (
    "# Fleet Report\n\n## Operations\n\n"
    "The Osprey Shipping Company operates container vessels from Rotterdam and Singapore. "
    "The Osprey Shipping Company carried 412,000 TEU in 2023.\n\n"
    "| Vessel | Capacity (TEU) | Built |\n| --- | --- | --- |\n| Aurora | 8,500 | 2015 |\n| Borealis | 9,200 | 2018 |\n"
    "\f\n## Outlook\n\n"
    "Rotterdam remains the home port of the Osprey Shipping Company, which expects 450,000 TEU in 2024.\n"
)
PORTS = (
    "# Port Notes\n\n## Europe\n\n"
    "Rotterdam handled record volumes for the Maersk Line and the Hapag-Lloyd alliance.\n\n\f\n"
    "## Asia\n\nSingapore and Rotterdam both expanded their automated terminals in 2023.\n"
)


# The generated documents are two pages long: let an entity on both be an anchor (the default tau is 3).
TWO_PAGE_ANCHORS = Settings.load(None, build={"anchor_min_pages": 2})


def graph_rows(col: Collection, sql: str) -> list[tuple]:
    db = sqlite3.connect(col.store.path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


@pytest.fixture
def fleet(tmp_path, embedder):
    (tmp_path / "fleet.md").write_text(FLEET)
    col = Collection(tmp_path / "col", settings=TWO_PAGE_ANCHORS, embedder=embedder)
    report = col.add([tmp_path / "fleet.md"])
    assert report.results[0].status == "added", report.results[0].reason
    yield col, tmp_path
    col.close()


def test_entities_of_every_modality(fleet):
    col, _ = fleet
    entities = dict(graph_rows(col, "SELECT name, modality FROM entities"))
    assert entities["Osprey Shipping Company"] == "text"
    assert "Rotterdam" in entities and "Singapore" in entities
    assert "412,000 TEU" in entities
    for name in ("Vessel", "Capacity (TEU)", "Built", "Aurora", "Borealis"):
        assert entities[name] == "table", name
    types = dict(graph_rows(col, "SELECT name, type FROM entities"))
    assert types["Aurora"] == "table_key" and types["Capacity (TEU)"] == "table_header"
    assert any(t == "table" for t in types.values())


def test_table_rows_are_n_ary_hyperedges_and_sentences_pairwise_or_group(fleet):
    col, _ = fleet
    rows = graph_rows(
        col,
        "SELECT h.level, h.description, group_concat(e.name, '|') FROM hyperedges h"
        " JOIN incidence i ON i.edge_id = h.edge_id JOIN entities e ON e.entity_id = i.entity_id GROUP BY h.edge_id",
    )
    aurora = [r for r in rows if "Aurora" in r[2].split("|") and r[0] != "fact"]
    assert aurora and aurora[0][0] == "high"
    assert {"Aurora", "Capacity (TEU)", "Built"} <= set(aurora[0][2].split("|"))
    assert "8,500" in aurora[0][1]
    sentence = [
        r
        for r in rows
        if r[0] == "high" and {"Osprey Shipping Company", "Rotterdam", "Singapore"} <= set(r[2].split("|"))
    ]
    assert sentence, rows
    assert any(r[0] == "low" and len(r[2].split("|")) == 2 for r in rows)


def test_cross_page_anchor_is_refined(fleet):
    col, _ = fleet
    refined = graph_rows(
        col,
        "SELECT h.description, group_concat(e.name, '|') FROM hyperedges h JOIN incidence i ON i.edge_id = h.edge_id"
        " JOIN entities e ON e.entity_id = i.entity_id WHERE h.level = 'refine' GROUP BY h.edge_id",
    )
    anchors = {r[0].split(" across pages")[0] for r in refined}
    assert {"Osprey Shipping Company", "Rotterdam"} <= anchors
    osprey = next(r for r in refined if r[0].startswith("Osprey Shipping Company"))
    assert "1, 2" in osprey[0]  # it spans both pages
    assert "Aurora" not in osprey[1]  # refinement links what the anchor meets, not the whole document


def test_adding_a_document_re_refines_only_the_anchors_it_touches(fleet):
    col, tmp_path = fleet
    before = dict(
        graph_rows(col, "SELECT e.name, r.updated_at FROM refine_state r JOIN entities e ON e.entity_id = r.anchor_id")
    )
    assert "Osprey Shipping Company" in before and "Rotterdam" in before
    (tmp_path / "ports.md").write_text(PORTS)
    col.add([tmp_path / "ports.md"])
    report = col.last_graph_report.refine
    after = dict(
        graph_rows(col, "SELECT e.name, r.updated_at FROM refine_state r JOIN entities e ON e.entity_id = r.anchor_id")
    )
    assert after["Osprey Shipping Company"] == before["Osprey Shipping Company"]  # not touched by the new document
    assert after["Rotterdam"] > before["Rotterdam"]  # its star gained edges from the new document
    assert report.refined >= 1
    # Rebuilding replaces each document's graph (its refinements too) with the same graph again.
    shape = "SELECT h.level, h.description FROM hyperedges h ORDER BY h.level, h.description"
    graph = (graph_rows(col, "SELECT name FROM entities ORDER BY name"), graph_rows(col, shape))
    rebuilt = col.build_graph(rebuild=True)
    assert len(rebuilt) == 2 and all(r.refine.refined >= 1 for r in rebuilt)
    assert (graph_rows(col, "SELECT name FROM entities ORDER BY name"), graph_rows(col, shape)) == graph


def test_removing_a_document_removes_what_only_it_supported(fleet):
    col, tmp_path = fleet
    (tmp_path / "ports.md").write_text(PORTS)
    col.add([tmp_path / "ports.md"])
    names = {r[0] for r in graph_rows(col, "SELECT name FROM entities")}
    assert "Maersk Line" in names and "Rotterdam" in names
    col.remove("ports.md")
    names = {r[0] for r in graph_rows(col, "SELECT name FROM entities")}
    assert "Maersk Line" not in names  # only the removed document named it
    assert "Rotterdam" in names and "Aurora" in names  # still supported by the fleet report
    refined = graph_rows(col, "SELECT description FROM hyperedges WHERE level = 'refine'")
    rotterdam = [d for (d,) in refined if d.startswith("Rotterdam")]
    assert rotterdam and all("Maersk" not in d for d in rotterdam)  # its refined edge was redone without them


def test_dual_mode_returns_structured_evidence(fleet):
    col, _ = fleet
    evidence = col.retrieve("What is the capacity of the Aurora vessel?", mode="dual", k=5)
    assert evidence.items and evidence.items[0].chunk.modality == "table"
    assert any(hit.entity.name == "Aurora" for hit in evidence.entities)
    assert any(hit.hyperedge.level == "high" and "Aurora" in hit.member_names for hit in evidence.hyperedges)
    assert evidence.meta["keywords"]["low"]
    answer = col.ask("What is the capacity of the Aurora vessel?", mode="dual")
    assert "8,500" in answer.text


def test_text_only_ablation_skips_tables_and_figures():
    chunk = Chunk(
        page=1,
        order=0,
        modality="table",
        text="t",
        table=[["A", "B"], ["x", "1"]],
        table_header_rows=1,
        chunk_id="d:1:0",
        doc_id="d",
    )
    text = Chunk(
        page=1, order=1, modality="text", text="Alpha Corp met Beta Corp in Paris.", chunk_id="d:1:1", doc_id="d"
    )
    unit = PageUnit("d", "Doc", 1, [chunk, text])
    full = merge(OfflineExtractor().extract_document([unit]))
    text_only = merge(OfflineExtractor(multimodal=False).extract_document([unit]))
    assert any(e.modality == "table" for e in full.entities.values())
    assert all(e.modality == "text" for e in text_only.entities.values())
    assert {e.name for e in text_only.entities.values()} >= {"Alpha Corp", "Beta Corp", "Paris"}


def test_words_in_any_script_stay_whole():
    from hyperfolio.phrases import content_words, key_phrases

    assert content_words("The Düsseldorf-Neuss route and the Île-de-France région") == [
        "düsseldorf-neuss",
        "route",
        "île-de-france",
        "région",
    ]
    assert "düsseldorf stadtbahn" in key_phrases("the düsseldorf stadtbahn network")
