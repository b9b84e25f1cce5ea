"""Per-stage accounting of calls, cache hits, tokens and seconds."""

from __future__ import annotations

import threading

import pytest
from fake_openai_server import Reply
from pydantic import BaseModel

from hyperfolio.llm.cache import ResponseCache
from hyperfolio.llm.messages import image_part, user_message
from hyperfolio.llm.openai_compat import OpenAICompatClient
from hyperfolio.llm.usage import IMAGE_TOKENS, UsageMeter, estimate_tokens, read_usage


class Answer(BaseModel):
    answer: str


@pytest.fixture
def db(tmp_path):
    return tmp_path  # a collection directory: the records live in its database


def test_tokens_per_stage_come_from_the_server(fake_llm, db):
    fake_llm.script(
        Reply.json({"answer": "42"}, usage={"prompt_tokens": 120, "completion_tokens": 8}),
        Reply.json({"answer": "43"}, usage={"prompt_tokens": 100, "completion_tokens": 6}),
        Reply("k1, k2", usage={"prompt_tokens": 30, "completion_tokens": 4}),
    )
    with UsageMeter(db) as usage, OpenAICompatClient(fake_llm.url, "fake-model", usage=usage) as client:
        client.complete_json([user_message("q1")], Answer, stage="answer")
        client.complete_json([user_message("q2")], Answer, stage="answer")
        client.complete([user_message("q3")], stage="keywords")
        snap = usage.snapshot()
    assert (snap["answer"].calls, snap["answer"].prompt_tokens, snap["answer"].completion_tokens) == (2, 220, 14)
    assert (snap["keywords"].calls, snap["keywords"].total_tokens) == (1, 34)
    assert not snap["answer"].estimated
    assert snap["answer"].seconds > 0


def test_missing_usage_block_is_estimated_and_marked(fake_llm):
    fake_llm.script(Reply("x" * 40, usage=False))
    usage = UsageMeter()
    with OpenAICompatClient(fake_llm.url, "fake-model", usage=usage, role="extract") as client:
        client.complete([user_message("y" * 400)])
    stage = usage.snapshot()["extract"]  # the role is the default stage
    assert stage.estimated and stage.estimated_calls == 1
    assert stage.completion_tokens == 10
    assert 100 <= stage.prompt_tokens <= 110


def test_retries_and_cache_hits_are_counted(fake_llm, db):
    fake_llm.script(Reply.error(500, "hiccup"), Reply.json({"answer": "a"}))
    with (
        ResponseCache(db) as cache,
        UsageMeter(db) as usage,
        OpenAICompatClient(fake_llm.url, "fake-model", cache=cache, usage=usage, backoff=0.001) as client,
    ):
        client.structured_support  # noqa: B018 - touching state must not make calls
        client.complete([user_message("q")], stage="answer")
        client.complete([user_message("q")], stage="answer")
        stage = usage.snapshot()["answer"]
    assert (stage.calls, stage.retries, stage.cache_hits) == (1, 1, 1)


def test_totals_accumulate_in_the_database(db):
    with UsageMeter(db) as usage:
        usage.record("extract", prompt_tokens=10, completion_tokens=5, seconds=0.5)
        usage.record_hit("extract")
    with UsageMeter(db) as usage:  # a second run adds to the first
        usage.record("extract", prompt_tokens=1, completion_tokens=1, seconds=0.25, estimated=True)
        assert usage.snapshot()["extract"].calls == 1  # the snapshot is this run only
        assert usage.totals()["extract"].calls == 2
    totals = read_usage(db)
    extract = totals["extract"]
    assert (extract.calls, extract.cache_hits, extract.prompt_tokens, extract.completion_tokens) == (2, 1, 11, 6)
    assert extract.seconds == pytest.approx(0.75) and extract.estimated_calls == 1
    assert extract.to_dict()["total_tokens"] == 17
    assert read_usage(db / "elsewhere") == {}


def test_thread_safe_counting(db):
    with UsageMeter(db) as usage:

        def work() -> None:
            for _ in range(50):
                usage.record("extract", prompt_tokens=2, completion_tokens=1)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert usage.total().calls == 400 and usage.total().prompt_tokens == 800
    assert read_usage(db)["extract"].completion_tokens == 400


def test_estimate_tokens():
    assert estimate_tokens("abcdefgh") == 2
    message = {"role": "user", "content": [{"type": "text", "text": "a" * 36}, image_part(b"png")]}
    assert estimate_tokens([message]) == 10 + IMAGE_TOKENS
