"""The model's rewrite of a follow-up, checked; the offline rules when it fails or drops what was asked."""

from fake_openai_server import Reply  # registered by tests/conftest.py

from hyperfolio.dialogue import Turn
from hyperfolio.dialogue.followups_model import LLMRewriter

HISTORY = [Turn(question="What was Acme's revenue in 2023?", short="$5.2 million", answer="$5.2 million [1]")]


def test_the_models_rewrite_is_used_when_it_keeps_what_the_followup_asked(fake_llm, fake_client):
    fake_llm.script(Reply.json({"question": "What was Acme's revenue in 2022?"}))
    rewrite = LLMRewriter(fake_client).rewrite("and in 2022?", HISTORY)
    assert (rewrite.standalone, rewrite.how) == ("What was Acme's revenue in 2022?", "model")
    prompt = fake_llm.requests[-1]["messages"][-1]["content"]
    assert "Q: What was Acme's revenue in 2023?\nA: $5.2 million\n</ev-" in prompt  # the turns fenced as data
    assert prompt.endswith("Question: and in 2022?")


def test_a_rewrite_that_drops_the_new_part_falls_back_to_the_rules(fake_llm, fake_client):
    fake_llm.script(Reply.json({"question": "What was Acme's revenue in 2023?"}))  # the old question again
    rewrite = LLMRewriter(fake_client).rewrite("and in 2022?", HISTORY)
    assert (rewrite.standalone, rewrite.how) == ("What was Acme's revenue in 2022?", "period")


def test_broken_json_or_a_failed_call_falls_back_to_the_rules(fake_llm, fake_client):
    fake_llm.script(Reply("{not json"), Reply("{still not"), Reply.error(500), Reply.error(500))
    for _ in range(2):
        rewrite = LLMRewriter(fake_client).rewrite("what about net income?", HISTORY)
        assert rewrite.standalone == "What was net income in 2023?"


def test_no_history_asks_no_model(fake_llm, fake_client):
    assert LLMRewriter(fake_client).rewrite("What is Acme?", []).standalone == "What is Acme?"
    assert fake_llm.requests == []


def test_a_model_rewrite_of_a_leaning_followup_is_asked_where_the_last_answer_was(fake_llm, fake_client):
    fake_llm.script(Reply.json({"question": "How did Acme's revenue change after 2023?"}))
    rewrite = LLMRewriter(fake_client).rewrite("How did it change?", HISTORY)
    assert (rewrite.standalone, rewrite.how) == ("How did Acme's revenue change after 2023?", "model-cited")
