"""The evidence picture shows the question's entities and what ties them to the answer's passages, without
a document's boilerplate, near-duplicate names or other documents' hyperedges (issue 31, item 4)."""

from __future__ import annotations

import json

import pytest

from hyperfolio import Collection

QUESTION = "What ethical standards did Osprey Shipping report at the Rotterdam terminal?"


def _review(i: int) -> str:
    body = {
        2: "Osprey Shipping reported high ethical standards at the Rotterdam terminal with Borealis Logistics. "
        "Borealis Logistics kept high ethical standards too, and its ethical standards were audited by Kestrel "
        "Assurance.",
        3: "Kestrel Assurance found the ethical standards of Borealis Logistics sound at the Rotterdam terminal.",
    }.get(i, f"Aurora Ferries crossed the Baltic Sea with Helios Marine on route {i} of the Nordic network.")
    return f"{body}\nHalcyon Audit Partners checked section {i} with Aurora Ferries in week {i + 10}."


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory, embedder, pdf_writer):
    root = tmp_path_factory.mktemp("evidence-picture")
    review = pdf_writer(root / "review.pdf", [_review(i) for i in range(1, 9)])
    other = root / "other.md"
    other.write_text(
        "# Codes\n\nMeridian Bank published ethical standards for its branches in Lisbon. Meridian Bank "
        "trains staff on ethical standards every year.\n"
    )
    col = Collection(root / "col", embedder=embedder)
    col.add([review, other])
    yield col, root
    col.close()


def test_the_evidence_picture_marks_the_question_and_drops_boilerplate(reviewed):
    col, root = reviewed
    picture = col.visualize(root / "evidence.png", query=QUESTION)
    assert picture.path.exists() and picture.path.stat().st_size > 0
    mapping = json.loads(picture.mapping.read_text())
    entities = {e["name"]: e for e in mapping["entities"].values()}
    asked = {name for name, e in entities.items() if e.get("asked")}
    assert "Osprey Shipping" in asked and "Rotterdam" in asked
    assert "Halcyon Audit Partners" not in entities  # on every page of an eight-page review: its furniture
    evidence = col.retrieve(QUESTION, mode="dual")
    passages = {f"{i.chunk.doc_id} p.{i.chunk.page}" for i in evidence.items[:5]}
    drawn = {page for h in mapping["hyperedges"].values() for page in h["pages"]}
    assert drawn and drawn <= passages  # only what the answer's passages say, none of the graph's elsewhere
    # "ethical standards" is drawn as "high ethical standards", the one name that holds all its words.
    assert "ethical standards" not in entities
    folded = [e for e in entities.values() if "ethical standards" in e.get("also", [])]
    assert [e["name"] for e in folded] == ["high ethical standards"]
    first = mapping["hyperedges"]["H1"]["members"]
    assert any(m.split(" ", 1)[1] in asked for m in first)  # what ties the question to the answer comes first
