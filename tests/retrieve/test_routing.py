"""Routing by document cards: a question asked of the whole collection that names its organisation (and
period) is ranked over that organisation's filing only; one that names none searches everything; cards
are made at ingest, and `check --repair` makes them for documents indexed before cards."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_openai_server import Reply
from tests.conftest import write_filing

from hyperfolio import Collection
from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.answer.model import ACROSS_RULE, LLMAnswerer
from hyperfolio.cards.card import CARD_KEY
from hyperfolio.retrieve.routing import quota_order

FILINGS = {  # file -> (registrant, fiscal year, revenue)
    "northwind-2021.pdf": ("NORTHWIND TRADERS CORPORATION", 2021, "4,120"),
    "northwind-2022.pdf": ("NORTHWIND TRADERS CORPORATION", 2022, "4,870"),
    "contoso-2022.pdf": ("CONTOSO PHARMACEUTICALS INC.", 2022, "9,310"),
}


def _filing(path: Path, registrant: str, year: int, revenue: str) -> Path:
    return write_filing(
        path,
        registrant,
        year,
        f"Item 7. Management's Discussion and Analysis. Total net revenue for the fiscal year was "
        f"${revenue} million, and operating expenses grew with headcount. Revenue in {year - 1} was lower.",
    )


@pytest.fixture(scope="module")
def filings(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("routing")
    paths = [_filing(root / name, *facts) for name, facts in FILINGS.items()]
    col = Collection(root / "col", embedder=embedder)
    report = col.add(paths)
    assert not report.failed, [r.reason for r in report.failed]
    yield col
    col.close()


def test_ingest_keeps_each_documents_card_and_names_a_filing_by_its_cover(filings):
    info = filings.resolve("northwind-2022.pdf")
    assert info.title == "NORTHWIND TRADERS CORPORATION Form 10-K for fiscal year 2022"  # not the SEC's name
    assert info.meta["parsed_title"] != info.title
    card = info.meta[CARD_KEY]
    assert (card["organisation"], card["doc_type"], card["fiscal_year"]) == (
        "NORTHWIND TRADERS CORPORATION",
        "10-K",
        2022,
    )


def test_a_question_naming_its_company_and_year_is_ranked_over_that_filing(filings):
    wanted = filings.resolve("northwind-2022.pdf").doc_id
    evidence = filings.retrieve("What was Northwind's total net revenue in fiscal 2022?", mode="auto", k=3)
    assert [d["doc_id"] for d in evidence.meta["routed_to"]] == [wanted]
    assert {item.chunk.doc_id for item in evidence.items} == {wanted}
    candidates = filings.candidates("What was Northwind's total net revenue in fiscal 2022?")
    assert candidates.meta["routed_to"] == [wanted]  # training sees what `auto` ranks


def test_a_company_named_without_a_year_keeps_all_its_filings(filings):
    evidence = filings.retrieve("How did Northwind's revenue develop?", mode="auto", k=10)
    routed = {d["doc_id"] for d in evidence.meta["routed_to"]}
    assert routed == {filings.resolve(n).doc_id for n in ("northwind-2021.pdf", "northwind-2022.pdf")}


def test_a_question_naming_no_organisation_searches_every_document(filings):
    evidence = filings.retrieve("What was total net revenue in fiscal 2022?", mode="auto", k=10)
    assert "routed_to" not in evidence.meta
    assert len({item.chunk.doc_id for item in evidence.items}) > 1


def test_repair_makes_the_cards_of_documents_indexed_before_cards(filings):
    doc_id = filings.resolve("contoso-2022.pdf").doc_id
    card = filings.store.get_document(doc_id).meta[CARD_KEY]
    filings.store.update_document_meta(doc_id, {CARD_KEY: None})  # as a document indexed before cards
    found = filings.check()
    assert [(f.kind, f.count) for f in found.findings] == [("documents_without_card", 1)]
    repaired = filings.check(repair=True)
    assert repaired.ok and repaired.repaired["documents_without_card"] == 1
    assert filings.store.get_document(doc_id).meta[CARD_KEY] == card


def test_a_question_across_two_years_brings_evidence_from_each_filing(filings):
    evidence = filings.retrieve("Compare Northwind's total net revenue in fiscal 2021 and fiscal 2022.", k=2)
    both = {filings.resolve(n).doc_id for n in ("northwind-2021.pdf", "northwind-2022.pdf")}
    assert {d["doc_id"] for d in evidence.meta["routed_to"]} == both and evidence.meta["across_documents"]
    assert {item.chunk.doc_id for item in evidence.items} == both  # one place each, whatever the scores


def test_a_question_naming_every_document_of_the_collection_still_gets_a_share_from_each(filings):
    # Nothing is narrowed, yet each named filing owes evidence: the route stands, marked across.
    evidence = filings.retrieve(
        "Compare Northwind's total net revenue in fiscal 2021 and fiscal 2022 with Contoso's in fiscal 2022.", k=3
    )
    every = {d.doc_id for d in filings.documents()}
    assert {d["doc_id"] for d in evidence.meta["routed_to"]} == every and evidence.meta["across_documents"]
    assert {item.chunk.doc_id for item in evidence.items} == every


def test_the_quota_keeps_each_documents_best_and_the_score_order():
    order = [(0, 0.9), (1, 0.8), (2, 0.7), (3, 0.6), (4, 0.5)]
    doc_of = ["a", "a", "a", "b", "b"]
    assert quota_order(order, doc_of, ["a", "b"], 2) == [(0, 0.9), (3, 0.6), (1, 0.8), (2, 0.7), (4, 0.5)]
    assert quota_order(order, doc_of, ["a", "b"], 4) == [(0, 0.9), (1, 0.8), (3, 0.6), (4, 0.5), (2, 0.7)]
    assert quota_order(order, doc_of, ["a"], 3) == order  # one document: the order as it was


def test_the_offline_answer_across_two_filings_gives_a_part_from_each_named_by_its_title(filings):
    answer = filings.ask("Compare Northwind's total net revenue in fiscal 2021 and fiscal 2022.")
    titles = [filings.resolve(n).title for n in ("northwind-2021.pdf", "northwind-2022.pdf")]
    assert all(f"{title}: " in answer.text for title in titles), answer.text
    assert "4,120" in answer.text and "4,870" in answer.text  # each filing's own figure
    assert {c.doc_id for c in answer.citations} == {
        filings.resolve(n).doc_id for n in ("northwind-2021.pdf", "northwind-2022.pdf")
    }


def test_a_model_asked_across_filings_is_told_to_answer_for_each(filings, fake_llm, fake_client):
    question = "Compare Northwind's total net revenue in fiscal 2021 and fiscal 2022."
    evidence = filings.retrieve(question)
    fake_llm.script(Reply.json({"answer": "4,120 then 4,870", "citations": [1, 2], "sufficient": True}))
    LLMAnswerer(fake_client, ExtractiveAnswerer()).answer(question, evidence)
    (request,) = fake_llm.chat_requests
    assert ACROSS_RULE in request["messages"][-1]["content"]
    single = filings.retrieve("What was Northwind's total net revenue in fiscal 2022?")
    fake_llm.script(Reply.json({"answer": "4,870", "citations": [1], "sufficient": True}))
    LLMAnswerer(fake_client, ExtractiveAnswerer()).answer("What was it?", single)
    assert ACROSS_RULE not in fake_llm.chat_requests[-1]["messages"][-1]["content"]


def test_the_card_text_feature_finds_the_document_whose_card_says_the_question(filings):
    from hyperfolio.retrieve.base import Query
    from hyperfolio.retrieve.routing import card_text_scores

    ctx = filings.parts.retrieval_context(filings._texts)
    scores = card_text_scores(Query("Which pharmaceuticals company filed this?"), ctx)
    contoso = filings.resolve("contoso-2022.pdf").doc_id
    assert max(scores, key=scores.get) == contoso and 0 < scores[contoso] <= 1
    assert set(scores) == {d.doc_id for d in filings.documents()}
