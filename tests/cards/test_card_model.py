"""The model's card over real HTTP against the fake server: a good reply fills the card field by field and
marks it the model's; broken JSON, invalid fields and a timeout keep the offline card's fields with one
warning; an SEC cover's form, registrant and period are never overridden; and the card's stored form
stays readable for cards made before models and themes."""

from __future__ import annotations

import json
import logging

import pytest
from fake_openai_server import Reply

from hyperfolio import Settings
from hyperfolio.cards.card import DocumentCard, stored_card
from hyperfolio.cards.card_model import STAGE, CardReply, LLMCarder, merge, printed
from hyperfolio.cards.offline import OfflineCarder, card_for
from hyperfolio.cards.themes import top_themes
from hyperfolio.llm.fence import TAG_PREFIX
from hyperfolio.llm.openai_compat import OpenAICompatClient
from hyperfolio.llm.usage import UsageMeter
from hyperfolio.model import Hyperedge
from hyperfolio.parse import parse_file

from .conftest import write_slides

DECK_REPLY = {
    "title": "Quarterly Market Update",
    "organisation": "Contoso Sales",
    "doc_type": "slide deck",
    "fiscal_year": 2024,
    "quarter": "Q2",
    "date": "2024-04-15",
    "aliases": ["CSO"],
}


def _client(server, timeout: float = 2.0, usage: UsageMeter | None = None) -> OpenAICompatClient:
    return OpenAICompatClient(
        server.url, "fake-model", timeout=timeout, max_retries=0, backoff=0.001, structured="json_schema", usage=usage
    )


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def _fields(card: DocumentCard) -> dict:
    data = card.to_dict()
    data.pop("made_by")
    return data


@pytest.fixture
def printed_deck(tmp_path):
    """A deck whose title slide prints what DECK_REPLY says: a model may only give what the cover prints."""
    slides = [
        [("Quarterly Market Update", 40), ("Contoso Sales (CSO)", 20), ("April 15, 2024", 16)],
        [("Agenda", 36), ("Numbers", 20)],
    ]
    return write_slides(tmp_path / "deck.pdf", slides)


def test_a_good_reply_fills_the_card_and_marks_it_the_models(printed_deck, fake_llm, caplog):
    document = parse_file(printed_deck)
    offline = card_for(document)
    assert offline.made_by == "offline" and not offline.aliases and offline.quarter is None
    fake_llm.script(Reply.json(DECK_REPLY))
    with UsageMeter() as usage, _client(fake_llm, usage=usage) as client, caplog.at_level(logging.WARNING):
        card = LLMCarder(client).card(document)
        assert usage.snapshot()[STAGE].calls == 1
    assert card.made_by == "model" and not _warnings(caplog)
    assert (card.organisation, card.doc_type, card.fiscal_year, card.quarter, card.date, card.aliases) == (
        "Contoso Sales",
        "slide deck",
        2024,
        2,
        "2024-04-15",
        ["CSO"],
    )
    assert card.toc == offline.toc and card.doc_id == document.doc_id  # what the model is not asked stays
    (request,) = fake_llm.chat_requests
    asked = request["messages"][1]["content"]
    assert "Quarterly Market Update" in asked and "Agenda" in asked  # the first pages' text
    assert asked.count(f"<{TAG_PREFIX}") == 2  # the pages and the offline guess, each fenced
    assert '"doc_type": "slide deck"' in asked  # the offline guess rides along
    assert request["response_format"]["json_schema"]["name"] == "CardReply"


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(Reply("the card: {{{ title: not json at all"), id="broken-json"),
        pytest.param(Reply.json({"doc_type": "memo", "fiscal_year": 1850, "quarter": 7}), id="invalid-fields"),
        pytest.param(Reply.json({"title": "", "date": "March 2020", "aliases": "RAIL"}), id="junk-fields"),
    ],
)
def test_a_reply_without_a_valid_field_keeps_the_offline_card_with_one_warning(
    report, fake_llm, fake_client, caplog, reply
):
    document = parse_file(report)
    offline = card_for(document)
    fake_llm.default = reply  # a broken reply is sent back once to be corrected: it stays broken
    with caplog.at_level(logging.WARNING):
        card = LLMCarder(fake_client).card(document)
    assert card == offline and card.made_by == "offline"
    (warning,) = _warnings(caplog)
    assert str(report) in warning


def test_an_invalid_field_keeps_the_offline_value_while_valid_ones_win(report, fake_llm, fake_client, caplog):
    document = parse_file(report)
    offline = card_for(document)
    assert offline.doc_type == "report" and offline.fiscal_year == 2020
    fake_llm.script(Reply.json({"title": "The State of Regional Rail", "doc_type": "white paper", "quarter": 9}))
    with caplog.at_level(logging.WARNING):
        card = LLMCarder(fake_client).card(document)
    assert card.made_by == "model" and card.title == "The State of Regional Rail" != offline.title
    assert (card.doc_type, card.quarter, card.fiscal_year) == ("report", None, 2020)
    (warning,) = _warnings(caplog)
    assert "doc_type" in warning and "quarter" in warning and str(report) in warning


def test_a_value_the_cover_does_not_print_keeps_the_offline_one(report, fake_llm, fake_client, caplog):
    # A small model writes what is likely: the end of the month for a release dated March 9, a name
    # close to the publisher's. Neither is on the cover, so neither replaces the rules' reading.
    document = parse_file(report)
    offline = card_for(document)
    assert offline.date == "2020-03-09"
    unprinted = {"organisation": "Northwind Rail Research", "date": "2020-03-31", "fiscal_year": 2019}
    fake_llm.script(Reply.json(unprinted))
    with caplog.at_level(logging.WARNING):
        card = LLMCarder(fake_client).card(document)
    assert card == offline and card.made_by == "offline"
    (warning,) = _warnings(caplog)
    assert warning.count("not on the cover") == 3 and str(report) in warning
    assert printed("date", "2020-03-09", "FOR RELEASE MARCH 9, 2020") and printed("title", "a  B.", "x A b y")


def test_a_timeout_keeps_the_offline_card_with_one_warning(report, fake_llm, caplog):
    document = parse_file(report)
    fake_llm.default = Reply.slow(3.0, json.dumps(DECK_REPLY))
    with _client(fake_llm, timeout=0.3) as client, caplog.at_level(logging.WARNING):
        card = LLMCarder(client).card(document)
    assert card == card_for(document)
    (warning,) = _warnings(caplog)
    assert str(report) in warning and "offline card stands" in warning


def test_an_sec_covers_form_registrant_and_period_are_not_overridden(ten_q, fake_llm, fake_client):
    document = parse_file(ten_q)
    offline = card_for(document)
    assert (offline.doc_type, offline.organisation, offline.fiscal_year, offline.quarter, offline.date) == (
        "10-Q",
        "Contoso Bank & Co.",
        2023,
        2,
        "2023-06-30",
    )
    wrong = {
        "title": "Quarterly Report",
        "organisation": "Contoso",
        "doc_type": "report",
        "fiscal_year": 2022,
        "quarter": 1,
        "date": "2022-03-31",
        "aliases": ["CBCO"],  # the offline card read no symbol: the model's may fill the gap
    }
    fake_llm.script(Reply.json(wrong))
    card = LLMCarder(fake_client).card(document)
    assert _fields(card) == _fields(offline) | {"aliases": ["CBCO"]}
    assert card.made_by == "model"
    # The same reply for a cover that is no filing wins field by field.
    plain = merge(DocumentCard(title="Contoso quarterly", doc_type="report"), CardReply(**wrong))
    assert (plain.card.doc_type, plain.card.fiscal_year, plain.card.quarter) == ("report", 2022, 1)
    assert plain.card.organisation == "Contoso" and plain.taken


def test_the_merge_reads_loose_values_and_names_what_it_rejected():
    offline = DocumentCard(title="Fleet Report", doc_type="other", fiscal_year=2021)
    reply = CardReply(doc_type="Form 10-K", fiscal_year="FY2023", quarter="3", date="2023-02-30", aliases=["", "OSP"])
    merged = merge(offline, reply)
    assert (merged.card.doc_type, merged.card.fiscal_year, merged.card.quarter) == ("10-K", 2023, 3)
    assert merged.card.aliases == ["OSP"] and merged.card.date is None
    assert set(merged.rejected) == {"date"}  # 30 February is no date
    only_quarter = merge(DocumentCard(title="Fleet Report"), CardReply(quarter=2))
    assert only_quarter.card.quarter is None  # a quarter of no year names no period
    named = merge(DocumentCard(), CardReply(organisation=" Contoso Bank & Co. ", title="   "))
    assert named.card.organisation == "Contoso Bank & Co." and named.card.title == "" and "title" in named.rejected


def test_cards_stored_before_models_and_themes_still_read():
    old = {"title": "Fleet Report", "organisation": "Osprey", "doc_type": "report", "fiscal_year": 2023}
    card = stored_card({"card": old}, "d1")
    assert card is not None and (card.made_by, card.themes, card.doc_id) == ("offline", [], "d1")
    card.themes = ["container shipping", "Rotterdam"]
    assert "Rotterdam" not in card.text() and "Fleet Report" in card.text()  # shown, not matched (held out)
    again = DocumentCard.from_dict(card.to_dict())
    assert again == card and again.to_dict()["made_by"] == "offline"
    with pytest.raises(ValueError):
        DocumentCard(made_by="someone")
    filing = DocumentCard("PepsiCo 10-K", "PepsiCo, Inc.", "10-K", 2022, themes=["beverages", "snacks", "a", "b"])
    assert filing.label() == "10-K · FY2022" and DocumentCard("Notes").label() == ""


def test_top_themes_rank_labels_by_how_many_chunk_themes_put_them_first():
    names = {"e1": "Osprey Shipping Company", "e2": "Rotterdam", "e3": "8,500 TEU", "e4": "Aurora", "e5": "Osprey"}
    types = {"e3": "quantity"}
    edges = [
        Hyperedge("t1", "theme", "fleet", ["container shipping", "vessels"], members=[("e1", "key"), ("e3", "key")]),
        Hyperedge("t2", "theme", "port", ["container shipping"], members=[("e2", "key"), ("e1", "key")]),
        Hyperedge("t3", "theme", "ship", ["capacity"], members=[("e4", "key"), ("e5", "key"), ("e2", "key")]),
    ]
    themes = top_themes(edges, names, types)
    # container shipping: 0.8 + 0.8; Osprey Shipping Company: 1 + 1/2; Rotterdam: 1 + 1/3; Aurora: 1; capacity 0.8
    assert themes == ["container shipping", "Osprey Shipping Company", "Rotterdam", "Aurora", "capacity"]
    assert "8,500 TEU" not in themes and "Osprey" not in themes  # a value; a part of a label chosen already
    assert len(top_themes(edges, names, types, limit=2)) == 2 and top_themes([], names) == []
    assert top_themes(edges, names, types, skip=["Container Shipping"])[0] == "Osprey Shipping Company"


def test_top_themes_are_subjects_not_months_legal_forms_or_markup():
    names = {"e1": "December", "e2": "INLINEFORM0", "e3": "Company", "e4": "TextTiling", "e5": "BIBREF12"}
    edges = [
        Hyperedge("t1", "theme", "a", ["November"], members=[("e1", "key"), ("e2", "key"), ("e4", "key")]),
        Hyperedge("t2", "theme", "b", ["session segmentation"], members=[("e3", "key"), ("e5", "key")]),
    ]
    assert top_themes(edges, names) == ["TextTiling", "session segmentation"]


def test_the_carder_is_the_models_only_when_the_extract_role_has_one(fake_llm, tmp_path):
    from hyperfolio.components import component
    from hyperfolio.llm.registry import ModelSet

    parts = _parts(Settings(), tmp_path)
    assert isinstance(component("carder", parts), OfflineCarder)
    with_model = Settings.load(None, models={"base_url": fake_llm.url, "answer_model": "fake-model"})
    assert isinstance(component("carder", _parts(with_model, tmp_path)), OfflineCarder)  # answering only
    extract = Settings.load(None, models={"base_url": fake_llm.url, "extract_model": "fake-model"})
    parts = _parts(extract, tmp_path)
    assert isinstance(component("carder", parts), LLMCarder)
    assert isinstance(parts.models, ModelSet)
    parts.models.close()


def _parts(settings: Settings, folder):
    from hyperfolio.components import Parts
    from hyperfolio.llm.registry import ModelSet

    return Parts(settings, ModelSet(settings), None, lambda: None, lambda _: None, lambda _: None)  # type: ignore[arg-type]
