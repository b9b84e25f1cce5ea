"""Conversations with a collection: follow-ups rewritten, asked where the thread was, and `hyperfolio chat`."""

from __future__ import annotations

import pytest
from tests.conftest import indexed, write_pdf
from typer.testing import CliRunner

from hyperfolio.cli import app

PAGES = [
    "# Results 2023\nOrbital Foods revenue in 2023 was $512 million, driven by frozen meals.",
    "# Results 2022\nOrbital Foods revenue in 2022 was $430 million after the Denver plant opened.",
    "# Profit\nNet income in 2022 was $61 million. Headcount reached 2,400 employees.",
    "# Outlook\nThe board expects slower growth as grain prices rise.",
]


@pytest.fixture(scope="module")
def col(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("conversation")
    pdf = write_pdf(root / "orbital.pdf", PAGES, title="Orbital Foods Annual Report")
    yield from indexed(root, embedder, pdf)


def test_a_followup_is_answered_from_its_own_page(col):
    conversation = col.conversation()
    first = conversation.ask("What was revenue in 2023?")
    assert first.citations[0].page == 1 and "followup" not in first.meta
    second = conversation.ask("and in 2022?")
    assert second.question == "What was revenue in 2022?"
    assert second.meta["followup"] == {
        "asked": "and in 2022?", "standalone": "What was revenue in 2022?", "how": "period", "doc": None,
    }  # fmt: skip
    assert second.citations[0].page == 2 and "430" in second.text
    third = conversation.ask("what about net income?")
    assert third.question == "What was net income in 2022?"
    assert third.citations[0].page == 3 and "61" in third.text
    assert [t.how for t in conversation.turns] == ["", "period", "subject"]


def test_history_given_as_turns_and_a_new_conversation_forgets(col):
    conversation = col.conversation()
    conversation.ask("What was revenue in 2023?")
    conversation.new()
    assert conversation.turns == []
    alone = conversation.ask("and in 2022?")
    assert alone.question == "and in 2022?"  # nothing to lean on: asked as written


def test_a_followup_about_the_answer_is_asked_of_the_cited_document(col):
    answer = col.ask("why?", history=col.conversation().turns)  # no history: nothing carried
    assert "followup" not in answer.meta
    conversation = col.conversation()
    conversation.ask("What was revenue in 2023?")
    why = conversation.ask("why?")
    assert why.question.startswith("Why was revenue in 2023")
    assert why.meta["followup"]["doc"] == [conversation.turns[0].doc_ids[0]]


def test_chat_at_the_terminal(col):
    lines = ["What was revenue in 2023?", "and in 2022?", "/page 4", "/sources", "/new", "/nope", "/quit"]
    result = CliRunner().invoke(app, ["chat", "-c", str(col.path)], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    assert "read as: What was revenue in 2022?" in result.output
    assert "430" in result.output
    assert ", page 4\nOutlook" in result.output and "grain prices" in result.output  # /page 4 of the cited document
    assert "evidence (auto)" in result.output  # /sources prints the evidence table
    assert "new conversation" in result.output and "unknown command /nope" in result.output


def test_a_why_asked_of_the_cited_document_does_not_hold_later_questions_to_it(col):
    conversation = col.conversation()
    conversation.ask("What was revenue in 2023?")
    assert conversation.ask("why?").meta["followup"]["doc"]  # asked of the cited document
    later = conversation.ask("What do grain prices mean for growth?")  # stands alone: the whole collection
    assert "followup" not in later.meta and conversation.turns[-1].scope == []


def test_a_kept_thread_numbers_its_turns_as_stored(col):
    kept = col.conversation(owner="ana", keep=True)
    kept.ask("What was revenue in 2023?")
    twin = col.conversation(kept.id, owner="ana")  # the same thread opened elsewhere (another request)
    kept.ask("and in 2022?")
    twin.ask("what about net income?")  # read against the turn it knew, numbered after both
    assert (kept.number, twin.number) == (2, 3)
    assert len(col.conversation(kept.id, owner="ana").turns) == 3
    col.delete_conversation(kept.id, owner="ana")
