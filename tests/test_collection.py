"""End-to-end through the public API: add, retrieve, ask, re-add, replace, remove."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperfolio import Collection, DocumentNotFound, HyperfolioError
from hyperfolio.answer.extractive import INSUFFICIENT

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


@pytest.fixture
def col(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "wind.md").write_text(WIND)
    (docs / "bakery.md").write_text(BAKERY)
    collection = Collection(tmp_path / "col", embedder=embedder)
    report = collection.add([docs])
    assert [r.status for r in report.results] == ["added", "added"], report.results
    yield collection
    collection.close()


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_each_mode_finds_the_right_chunk_with_a_citation(col, mode):
    evidence = col.retrieve("How many people does the company employ?", mode=mode, k=3)
    top = evidence.items[0]
    assert "1,250 people" in top.chunk.text
    assert top.citation.title == "Wind Report"
    assert top.citation.page >= 1
    assert top.citation.section_path[-1] == "Staff"
    assert set(evidence.by_modality()) <= {"text", "table", "image", "formula"}


def test_scoped_retrieval_stays_in_its_document(col):
    evidence = col.retrieve("turbines and flour", mode="hybrid", k=10, doc="bakery.md")
    assert evidence.items
    assert {i.citation.title for i in evidence.items} == {"Bakery Handbook"}
    from hyperfolio import HyperfolioError

    with pytest.raises(HyperfolioError, match="empty list"):
        col.retrieve("turbines", mode="auto", doc=[])


def test_ask_answers_extractively_with_citation(col):
    answer = col.ask("What does a sourdough starter need?")
    assert answer.sufficient
    assert "flour and water" in answer.text
    assert answer.citations and answer.citations[0].title == "Bakery Handbook"
    assert answer.answerer == "extractive"


def test_ask_says_plainly_when_evidence_is_insufficient(col):
    answer = col.ask("Who won the 1966 football world cup final?")
    assert not answer.sufficient
    assert answer.text == INSUFFICIENT
    assert answer.citations == []


def test_readding_is_a_noop_and_a_changed_file_replaces_the_old_version(col, tmp_path):
    before = col.stats()
    again = col.add([tmp_path / "docs" / "wind.md"])
    assert again.results[0].status == "skipped"
    assert col.stats()["chunks"] == before["chunks"]
    (tmp_path / "docs" / "wind.md").write_text(WIND.replace("42 turbines", "57 turbines"))
    changed = col.add([tmp_path / "docs" / "wind.md"])
    assert changed.results[0].status == "replaced"
    assert len(col.documents()) == 2
    texts = " ".join(i.chunk.text for i in col.retrieve("turbines Dogger Bank", mode="bm25").items)
    assert "57 turbines" in texts and "42 turbines" not in texts


def test_remove_forgets_the_document(col):
    info = col.remove("wind.md")
    assert info.title == "Wind Report"
    assert [d.title for d in col.documents()] == ["Bakery Handbook"]
    assert all(i.citation.title != "Wind Report" for i in col.retrieve("turbines", mode="bm25").items)
    with pytest.raises(DocumentNotFound):
        col.remove("wind.md")


def test_failures_are_reported_and_the_rest_goes_on(tmp_path, embedder):
    docs = tmp_path / "mixed"
    docs.mkdir()
    (docs / "good.md").write_text(WIND)
    (docs / "empty.txt").write_bytes(b"")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 this is not really a pdf")
    (docs / "notes.odt").write_bytes(b"PK\x03\x04")
    col = Collection(tmp_path / "col", embedder=embedder)
    report = col.add(
        [docs / "good.md", docs / "empty.txt", docs / "broken.pdf", docs / "notes.odt", docs / "missing.pdf"]
    )
    by_name = {Path(r.path).name: r for r in report.results}
    assert by_name["good.md"].status == "added"
    for name in ("empty.txt", "broken.pdf", "notes.odt", "missing.pdf"):
        assert by_name[name].status == "failed", name
        assert by_name[name].reason, name
    assert "empty" in by_name["empty.txt"].reason.lower()
    assert "unsupported" in by_name["notes.odt"].reason.lower()
    assert len(col.documents()) == 1
    col.close()


def test_pdf_page_citation(tmp_path, embedder, pdf_writer):
    pdf = pdf_writer(
        tmp_path / "report.pdf",
        [
            "# Annual Report\nThis report covers the fiscal year of the Osprey Shipping Company.",
            "# Fleet\nThe Osprey fleet counts 17 container vessels with an average age of nine years.",
            "# Outlook\nManagement expects moderate growth in Asian routes next year.",
        ],
    )
    col = Collection(tmp_path / "col", embedder=embedder)
    assert col.add([pdf]).results[0].status == "added"
    answer = col.ask("How many container vessels are in the fleet?", doc="report.pdf")
    assert answer.sufficient
    assert "17 container vessels" in answer.text
    assert answer.citations[0].page == 2
    assert answer.citations[0].bbox is not None
    col.close()


def test_async_twins(col):
    import asyncio

    async def run():
        evidence, answer = await asyncio.gather(
            col.aretrieve("sponge cake eggs", mode="bm25"), col.aask("Why does a sponge cake rise?")
        )
        return evidence, answer

    evidence, answer = asyncio.run(run())
    assert evidence.items[0].citation.title == "Bakery Handbook"
    assert "whipped eggs" in answer.text
    assert (asyncio.run(col.astats()))["documents"] == 2
    # The mode's knobs, as every face passes them (typed against the mode the call runs).
    grouped = asyncio.run(col.aretrieve("sponge cake eggs", mode="bm25", options={"by_modality": "yes"}))
    assert grouped.meta.get("by_modality") is True, grouped.meta  # "yes" typed as True for the layout knob
    with pytest.raises(HyperfolioError, match="no_such_knob"):
        asyncio.run(col.aask("Why does a sponge cake rise?", options={"no_such_knob": 1}))


def test_invalid_k_and_unfinished_documents_are_clear_errors(col):
    from hyperfolio import HyperfolioError

    with pytest.raises(HyperfolioError, match="k must be at least 1"):
        col.retrieve("turbines", k=-1)
    info = col.resolve("wind.md")
    col.store.set_stage(info.doc_id, "parsed")  # as after a crash mid-ingest
    with pytest.raises(HyperfolioError, match="not fully indexed"):
        col.retrieve("turbines", doc="wind.md")
    assert all(i.citation.title != "Wind Report" for i in col.retrieve("turbines Dogger Bank").items)
