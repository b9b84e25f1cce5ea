"""What a model builds is at least as good as the offline graph: table facts always kept, model facts
matched to the page with numbers and units folded, drops counted, and `build --rebuild` replacing a
document's graph instead of merging into it. The model is the fake server, scripted the way a small
real model writes (values with units and currency added, one invented fact)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai_server import Reply

from hyperfolio import Collection, Settings
from hyperfolio.hypergraph.grounding import PageText
from hyperfolio.sample import write_sample_report

# Page 2 of the sample report as a 1.5B model wrote it: "97.3 M$" for the cell "97.3", "1,850 MW" for
# "1,850", and one fact naming a region the page never mentions.
PAGE_2 = {
    "entities": [
        {"name": "Baltic region", "type": "region", "modality": "table", "chunk_refs": [2]},
        {"name": "North Sea", "type": "region", "modality": "table", "chunk_refs": [2]},
        {"name": "97.3 M$", "type": "amount", "modality": "table", "chunk_refs": [2]},
        {"name": "1,850 MW", "type": "quantity", "modality": "table", "chunk_refs": [2]},
    ],
    "facts": [
        {"head": "Baltic region", "relation": "revenue in 2024", "tail": "97.3 M$", "chunk_refs": [2]},
        {"head": "North Sea", "relation": "installed capacity", "tail": "1,850 MW", "chunk_refs": [2]},
        {"head": "Atlantis", "relation": "revenue in 2024", "tail": "12.0 M$", "chunk_refs": [2]},
    ],
}
FIRST_AND_LAST_PAGE = {"entities": [{"name": "Northwind Renewables", "type": "organization"}], "facts": []}
TRENDS_PAGE = {"entities": [{"name": "Generation Trends", "type": "section"}], "facts": []}


def respond(request: dict) -> Reply:
    """Extraction replies by page; every other stage is refused, so it runs offline (deterministic)."""
    text = json.dumps(request)
    if "low_edges" not in text:
        return Reply.error(400, "this test scripts extraction only")
    if "Page: 2" in text:
        return Reply.json(PAGE_2)
    return Reply.json(TRENDS_PAGE if "Page: 3" in text else FIRST_AND_LAST_PAGE)


def model_settings(url: str) -> Settings:
    return Settings.load(
        None, models={"base_url": url, "extract_model": "fake-model", "max_retries": 0, "timeout": 5.0}
    )


def facts_of(col: Collection, table_only: bool = False) -> set[tuple[str, str, str]]:
    """(head, relation, tail) of every fact, by entity names; `table_only`: those stated in a table."""
    store = col.store
    doc = col.documents()[0].doc_id
    tables = {c.chunk_id for c in store.iter_chunks(doc) if c.modality == "table"}
    rows = store.document_facts(doc)
    evidence = store.provenance("hyperedge", [f.edge_id for f in rows])
    rows = [f for f in rows if not table_only or {c for c, _, _ in evidence.get(f.edge_id, [])} & tables]
    names = {e.entity_id: e.name for e in store.get_entities([i for f in rows for i in (f.head_id, f.tail_id)])}
    return {(names[f.head_id], f.relation, names[f.tail_id]) for f in rows}


@pytest.fixture
def report(tmp_path: Path) -> Path:
    return write_sample_report(tmp_path / "northwind.pdf")


def test_grounding_folds_numbers_units_case_and_hyphenation():
    page = PageText(
        "Region | Capacity (MW) | Revenue ($M)\nBaltic | 1,120 | 97.3\nA cross-\npage summary of Organisations."
    )
    for stated in ("1,120 MW", "1120", "97.30", "$97.3 million", "Baltic region", "cross page", "organizations"):
        assert page.supports(stated), stated
    for absent in ("97.4", "1,210 MW", "Atlantis", "Caspian region", ""):
        assert not page.supports(absent), absent


def test_model_pages_keep_every_table_fact_and_matched_model_facts(tmp_path, embedder, llm_server, report):
    offline = Collection(tmp_path / "offline", embedder=embedder)
    offline.add([report])
    offline_table_facts = facts_of(offline, table_only=True)
    offline.close()
    assert len(offline_table_facts) >= 8  # two columns of four regions

    llm_server.handler = respond
    col = Collection(tmp_path / "model", settings=model_settings(llm_server.url), embedder=embedder)
    col.add([report])
    facts = facts_of(col)
    assert offline_table_facts <= facts, offline_table_facts - facts
    # The model's own facts, written with units and currency the page does not put beside the number.
    assert ("Baltic region", "revenue_in_2024", "97.3 M$") in facts
    assert ("North Sea", "installed_capacity", "1,850 MW") in facts
    assert not any("Atlantis" in (head, tail) for head, _, tail in facts)
    extraction = col.stats()["extraction"]
    assert extraction["unmatched_facts"] == 1 and extraction["table_facts_added"] >= len(offline_table_facts)
    col.close()


def test_rebuild_replaces_a_documents_graph_instead_of_merging(tmp_path, embedder, llm_server, report):
    llm_server.handler = respond
    fresh = Collection(tmp_path / "fresh", settings=model_settings(llm_server.url), embedder=embedder)
    fresh.add([report])
    clean = (fresh.stats()["entities"], facts_of(fresh))
    fresh.close()

    col = Collection(tmp_path / "col", embedder=embedder)  # offline first
    col.add([report])
    offline = (col.stats()["entities"], facts_of(col))
    col.close()
    assert offline != clean, "the fixture cannot tell a replacement from a merge"

    col = Collection(tmp_path / "col", settings=model_settings(llm_server.url), embedder=embedder)
    assert len(col.build_graph(rebuild=True)) == 1
    assert (col.stats()["entities"], facts_of(col)) == clean
    col.close()


def cli_env(url: str) -> dict[str, str]:
    return {
        "HYPERFOLIO_MODELS_BASE_URL": url,
        "HYPERFOLIO_MODELS_EXTRACT_MODEL": "fake-model",
        "HYPERFOLIO_MODELS_MAX_RETRIES": "0",
        "HYPERFOLIO_MODELS_TIMEOUT": "5",
        "COLUMNS": "300",
    }


def test_add_says_per_document_what_the_model_built(tmp_path, llm_server, report):
    from typer.testing import CliRunner

    from hyperfolio.cli import app

    llm_server.handler = respond
    result = CliRunner().invoke(app, ["add", str(report), "-c", str(tmp_path / "col")], env=cli_env(llm_server.url))
    assert result.exit_code == 0, result.output
    # Four pages extracted by the model; the other stages were refused, so they fell back offline.
    line = next(x for x in result.output.splitlines() if x.strip().startswith("northwind.pdf: model built"))
    assert "4 of 4 extract" in line and "model call" in line, line
    assert "fell back offline" in line, line


def test_add_exits_3_when_the_configured_model_built_nothing(tmp_path, llm_server, report):
    from typer.testing import CliRunner

    from hyperfolio.cli import app
    from hyperfolio.cli.ingest import MODEL_BUILT_NOTHING

    llm_server.default = Reply.error(500, "model crashed")
    result = CliRunner().invoke(app, ["add", str(report), "-c", str(tmp_path / "col")], env=cli_env(llm_server.url))
    assert result.exit_code == MODEL_BUILT_NOTHING == 3, result.output
    assert "the configured model built nothing" in result.output
    assert "0 of 4 extract (4 fell back offline)" in result.output
    # Indexed all the same: the offline graph answers.
    asked = CliRunner().invoke(app, ["ask", "What was the revenue of the Baltic region?", "-c", str(tmp_path / "col")])
    assert asked.exit_code == 0, asked.output
    assert "answered extractively (no language model is configured for answers)" in asked.output
