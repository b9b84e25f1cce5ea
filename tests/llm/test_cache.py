"""The persistent response cache: a re-run with the same inputs makes no HTTP call."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest
from fake_openai_server import FakeLLM, Reply
from pydantic import BaseModel

from hyperfolio.llm.cache import ResponseCache, cache_key
from hyperfolio.llm.messages import image_part, user_message
from hyperfolio.llm.openai_compat import OpenAICompatClient
from hyperfolio.llm.usage import UsageMeter
from hyperfolio.store.sqlite import DB_NAME, SQLiteStore


class Keywords(BaseModel):
    low: list[str]
    high: list[str]


ASK = [user_message("Which entities and themes does this question mention?")]
KEYWORDS = {"low": ["Hyper-M2RAG"], "high": ["multimodal retrieval"]}


@pytest.fixture
def db(tmp_path):
    return tmp_path  # a collection directory: the records live in its database


def client_for(url, cache, usage=None, **kw) -> OpenAICompatClient:
    return OpenAICompatClient(url, "fake-model", cache=cache, usage=usage, backoff=0.001, **kw)


def test_second_identical_call_makes_no_request(fake_llm, db):
    with ResponseCache(db) as cache, UsageMeter(db) as usage, client_for(fake_llm.url, cache, usage) as client:
        fake_llm.script(Reply.json(KEYWORDS))
        first = client.complete_json(ASK, Keywords, stage="keywords")
        second = client.complete_json(ASK, Keywords, stage="keywords")
        assert first == second == Keywords.model_validate(KEYWORDS)
        assert len(fake_llm.requests) == 1
        stage = usage.snapshot()["keywords"]
        assert (stage.calls, stage.cache_hits) == (1, 1)
        assert cache.hits == 1 and len(cache) == 1


def test_cache_survives_a_new_process_and_ignores_the_server_address(fake_llm, db):
    with ResponseCache(db) as cache, client_for(fake_llm.url, cache) as client:
        fake_llm.script(Reply.json(KEYWORDS), Reply("plain answer"))
        client.complete_json(ASK, Keywords)
        assert client.complete(ASK) == "plain answer"
    # A fresh cache object on the same file, and the same model behind another address.
    with FakeLLM() as other, ResponseCache(db) as cache, client_for(other.url, cache) as client:
        assert client.complete_json(ASK, Keywords).low == ["Hyper-M2RAG"]
        assert client.complete(ASK) == "plain answer"
        assert other.requests == []


def test_model_messages_schema_and_parameters_are_part_of_the_key(fake_llm, db):
    fake_llm.default = Reply.json(KEYWORDS)
    with ResponseCache(db) as cache, client_for(fake_llm.url, cache) as client:
        client.complete_json(ASK, Keywords)
        client.complete_json(ASK, Keywords, temperature=0.7)
        client.complete_json([user_message("another question")], Keywords)
        client.complete(ASK)  # no schema: a different request
        assert len(fake_llm.requests) == 4
    with ResponseCache(db) as cache, OpenAICompatClient(fake_llm.url, "other-model", cache=cache) as client:
        client.complete_json(ASK, Keywords)
        assert len(fake_llm.requests) == 5


def test_a_failed_call_is_not_cached(fake_llm, db):
    with ResponseCache(db) as cache, client_for(fake_llm.url, cache, max_retries=0) as client:
        fake_llm.script(Reply.error(503), Reply("recovered"))
        with pytest.raises(Exception, match="HTTP 503"):
            client.complete(ASK)
        assert len(cache) == 0
        assert client.complete(ASK) == "recovered"


def test_a_corrupt_entry_is_discarded_and_fetched_again(fake_llm, db):
    fake_llm.default = Reply.json(KEYWORDS)
    with ResponseCache(db) as cache, client_for(fake_llm.url, cache) as client:
        client.complete_json(ASK, Keywords)
        with sqlite3.connect(db / DB_NAME) as raw:
            raw.execute("UPDATE model_cache SET response = '{\"low\": 3}'")
        assert client.complete_json(ASK, Keywords).high == ["multimodal retrieval"]
        assert len(fake_llm.requests) == 2


def test_images_are_hashed_in_the_key():
    one = [{"role": "user", "content": [{"type": "text", "text": "x"}, image_part(b"\x89PNG" + b"a" * 4000)]}]
    same = [{"role": "user", "content": [{"type": "text", "text": "x"}, image_part(b"\x89PNG" + b"a" * 4000)]}]
    other = [{"role": "user", "content": [{"type": "text", "text": "x"}, image_part(b"\x89PNG" + b"b" * 4000)]}]
    assert cache_key("m", one) == cache_key("m", same) != cache_key("m", other)
    assert cache_key("m", one, None, {"temperature": 0}) != cache_key("m", one, None, {"temperature": 1})
    assert cache_key("m", one, {"type": "object"}) != cache_key("m", one)


def test_shares_the_collection_database(tmp_path):
    store = SQLiteStore(tmp_path)
    with ResponseCache(tmp_path) as cache:  # the collection's own database file
        assert cache.where == str(store.path)
        cache.put("k", "m", "reply", 3, 4)
        got = cache.get("k")
        assert (got.response, got.prompt_tokens, got.completion_tokens) == ("reply", 3, 4)
    mode = sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode.lower() == "wal"


def test_thread_safe(db):
    with ResponseCache(db) as cache:

        def work(i: int) -> str | None:
            cache.put(f"k{i}", "m", f"v{i}")
            hit = cache.get(f"k{i}")
            return hit.response if hit else None

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(work, range(200))) == [f"v{i}" for i in range(200)]
        assert len(cache) == 200
        assert cache.clear(model="m") == 200
