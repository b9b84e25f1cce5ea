"""Cards through ingest and repair: a document's card names its top themes once its graph is built (none
while it has no graph); `check --repair` makes a missing card with its themes, gives an older card its
themes, and retitles a document whose title said nothing (the file's stem) by the rule ingest applies;
and a collection whose extract role has a model makes its cards with it."""

from __future__ import annotations

import pytest
from fake_openai_server import Reply
from tests.conftest import HashEmbedder, write_pdf

from hyperfolio import Collection, Settings
from hyperfolio.cards.card import CARD_KEY, DocumentCard
from hyperfolio.config import BuildOptions
from hyperfolio.ingest.cards import PARSED_TITLE, card_title, document_themes

FLEET = [
    "# Osprey Fleet Review 2023\n"
    "The Osprey Shipping Company runs container vessels out of Rotterdam. The Osprey Shipping Company "
    "ordered two container vessels for the Rotterdam service, and the Aurora joined the fleet in March.",
    "# Port Operations\n"
    "Rotterdam handled most of the Osprey Shipping Company cargo. Container volumes through Rotterdam grew, "
    "and the Aurora and the Borealis sailed the Rotterdam loop every week.",
]
FERRIES = [
    "# Baltic Ferry Traffic Survey\n"
    "Baltic Ferries Limited carried passengers between Tallinn and Helsinki. Baltic Ferries Limited added "
    "a night crossing from Tallinn, and the Helsinki terminal was rebuilt.",
]


def _settings(**build) -> Settings:
    return Settings(embedder=HashEmbedder.name, build=BuildOptions(graph_embedder=HashEmbedder.name, **build))


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    root = tmp_path_factory.mktemp("cards-repair")
    paths = [write_pdf(root / "osprey-fleet.pdf", FLEET), write_pdf(root / "baltic-ferries.pdf", FERRIES)]
    col = Collection(root / "col", settings=_settings(), embedder=HashEmbedder())
    report = col.add(paths)
    assert not report.failed, [r.reason for r in report.failed]
    yield col
    col.close()


def _card(col: Collection, name: str) -> dict:
    return col.resolve(name).meta[CARD_KEY]


def test_a_cards_themes_come_from_the_documents_theme_layer(collection):
    info = collection.resolve("osprey-fleet.pdf")
    card = info.meta[CARD_KEY]
    assert card["made_by"] == "offline"
    assert 1 <= len(card["themes"]) <= 5
    assert card["themes"] == document_themes(collection.store, info.doc_id, card["title"])
    assert card["title"] not in card["themes"]  # a heading read as an entity says nothing new
    assert "Osprey Shipping Company" in card["themes"] or "Rotterdam" in card["themes"], card["themes"]
    text = " ".join(FLEET).lower()
    assert all(label.lower() in text for label in card["themes"])  # labels of this document, not sentences
    assert card["themes"] != _card(collection, "baltic-ferries.pdf")["themes"]
    assert collection.check().ok


def test_repair_makes_a_missing_card_with_its_themes_and_retitles_a_document_named_by_its_file(collection):
    store = collection.store
    info = collection.resolve("osprey-fleet.pdf")
    card, title = info.meta[CARD_KEY], info.title
    assert title == card["title"] and title != "osprey-fleet"
    # As a document indexed before cards, whose parsed title was the file's name.
    store.update_document_meta(info.doc_id, {CARD_KEY: None, PARSED_TITLE: None})
    store.set_document_title(info.doc_id, "osprey-fleet")
    found = collection.check()
    assert [(f.kind, f.count) for f in found.findings] == [("documents_without_card", 1)]
    repaired = collection.check(repair=True)
    assert repaired.ok and repaired.repaired["documents_without_card"] == 1
    after = store.get_document(info.doc_id)
    assert after.meta[CARD_KEY] == card  # the card ingest made, themes included
    assert after.title == title and after.meta[PARSED_TITLE] == "osprey-fleet"
    assert collection.check(repair=True).repaired == {}  # nothing left to do


def test_repair_gives_an_older_card_its_themes_and_the_title_rule(collection):
    store = collection.store
    info = collection.resolve("baltic-ferries.pdf")
    card = info.meta[CARD_KEY]
    older = {k: v for k, v in card.items() if k not in ("themes", "made_by")}  # a card stored before themes
    store.update_document_meta(info.doc_id, {CARD_KEY: older})
    store.set_document_title(info.doc_id, "baltic-ferries")  # an older repair made cards but kept such titles
    assert [f.kind for f in collection.check().findings] == ["documents_without_card"]
    assert collection.check(repair=True).ok
    after = store.get_document(info.doc_id)
    assert after.meta[CARD_KEY] == card and after.title == card["title"]


def test_the_title_rule_is_one_for_ingest_and_repair():
    card = DocumentCard(title="The State of Regional Rail", doc_type="report")
    assert card_title("rail-2020", "/data/rail-2020.pdf", card) == "The State of Regional Rail"
    assert card_title("Regional Rail in 2020", "/data/rail-2020.pdf", card) is None  # a real title stays
    assert card_title("The State of Regional Rail", "/data/rail-2020.pdf", card) is None  # nothing to change
    filing = DocumentCard(title="NORTHWIND Form 10-K for fiscal year 2022", organisation="NORTHWIND", doc_type="10-K")
    assert card_title("UNITED STATES", "/data/nw.pdf", filing) == filing.title


def test_a_document_without_a_graph_has_no_themes(tmp_path):
    path = write_pdf(tmp_path / "baltic-ferries.pdf", FERRIES)
    col = Collection(tmp_path / "col", settings=_settings(hypergraph=False), embedder=HashEmbedder())
    try:
        assert not col.add([path]).failed
        assert _card(col, "baltic-ferries.pdf")["themes"] == []
        assert col.check().ok  # a card without themes because there is no graph is complete
    finally:
        col.close()


def test_a_configured_extract_model_makes_the_cards_at_ingest(tmp_path, fake_llm):
    reply = {"title": "Baltic Ferry Traffic Survey", "organisation": "Baltic Ferries Limited", "doc_type": "report"}
    fake_llm.handler = lambda request: Reply.json(reply if "CardReply" in str(request) else {})
    path = write_pdf(tmp_path / "baltic-ferries.pdf", FERRIES)
    settings = Settings.load(
        None,
        embedder=HashEmbedder.name,
        build={"graph_embedder": HashEmbedder.name, "hypergraph": False},
        models={"base_url": fake_llm.url, "extract_model": "fake-model", "max_retries": 0, "timeout": 5.0},
    )
    col = Collection(tmp_path / "col", settings=settings, embedder=HashEmbedder())
    try:
        assert not col.add([path]).failed
        card = _card(col, "baltic-ferries.pdf")
        assert card["made_by"] == "model" and card["organisation"] == "Baltic Ferries Limited"
        assert sum("CardReply" in str(r) for r in fake_llm.chat_requests) == 1
    finally:
        col.close()
