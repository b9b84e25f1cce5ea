"""The OpenAI-compatible client over real HTTP against the fake server."""

from __future__ import annotations

import asyncio
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fake_openai_server import Reply
from pydantic import BaseModel

from hyperfolio.config import ModelOptions, Settings
from hyperfolio.llm.errors import (
    ModelConfigError,
    ModelConnectionError,
    ModelHTTPError,
    ModelOutputError,
    ModelTimeoutError,
)
from hyperfolio.llm.json_repair import JSONRepairError, parse_json_reply
from hyperfolio.llm.messages import user_message
from hyperfolio.llm.protocols import ChatModel, StructuredChatModel, VisionModel
from hyperfolio.llm.registry import ModelSet, make_chat_model, resolve_endpoint


class Entity(BaseModel):
    name: str
    type: str


class Extraction(BaseModel):
    entities: list[Entity]


GOOD = {"entities": [{"name": "Hypergraph", "type": "concept"}]}
ASK = [{"role": "system", "content": "You extract entities."}, {"role": "user", "content": "Page 1 text."}]


# ------------------------------------------------------------------ structured output
def test_structured_output_happy_path(fake_llm, make_client):
    client = make_client(api_key="sk-test")
    assert isinstance(client, ChatModel) and isinstance(client, VisionModel)
    assert isinstance(client, StructuredChatModel)
    fake_llm.script(Reply.json(GOOD))
    result = client.complete_json(ASK, Extraction, stage="extract")
    assert result == Extraction.model_validate(GOOD)
    (request,) = fake_llm.requests
    assert request["model"] == "fake-model"
    assert request["temperature"] == 0.0
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Extraction"
    assert "entities" in fmt["json_schema"]["schema"]["properties"]
    assert request["messages"] == ASK  # no extra prompting when the server enforces the schema
    assert fake_llm.headers[0]["Authorization"] == "Bearer sk-test"
    assert client.structured_mode == "json_schema"


def test_json_schema_refused_like_llama_cpp_falls_back_and_remembers(fake_llm, make_client):
    fake_llm.reject_formats = {"json_schema"}  # HTTP 500, as llama-cpp-python's server does
    client = make_client()
    fake_llm.script(Reply.json(GOOD), Reply.json(GOOD))
    assert client.complete_json(ASK, Extraction).entities[0].name == "Hypergraph"
    kinds = [r["response_format"]["type"] for r in fake_llm.requests]
    assert kinds == ["json_schema", "json_object"]
    second = fake_llm.requests[1]
    assert second["response_format"]["schema"]["properties"]["entities"]  # schema travels with json_object
    assert "JSON" in second["messages"][-1]["content"]  # and the prompt asks for JSON
    assert client.structured_mode == "json_object_schema"

    fake_llm.reset()
    client.complete_json([*ASK, {"role": "user", "content": "again"}], Extraction)
    assert [r["response_format"]["type"] for r in fake_llm.requests] == ["json_object"]  # no new probe


def test_server_without_response_format_gets_plain_prompting(fake_llm, make_client):
    fake_llm.reject_formats = {"json_schema", "json_object"}
    fake_llm.reject_status = 400
    client = make_client()
    fake_llm.script(Reply.json(GOOD))
    assert client.complete_json(ASK, Extraction) == Extraction.model_validate(GOOD)
    last = fake_llm.requests[-1]
    assert "response_format" not in last
    # The schema rides in the prompt as the shape of the JSON wanted, not as a bulky JSON Schema.
    assert '{"entities": [{"name": string, "type": string}, ...]}' in last["messages"][-1]["content"]
    assert "$defs" not in last["messages"][-1]["content"]
    assert client.structured_mode == "prompt"


def test_outage_during_probe_is_not_remembered_as_refusal(fake_llm, make_client):
    client = make_client(max_retries=0)
    fake_llm.default = Reply.error(503, "overloaded")
    with pytest.raises(ModelHTTPError):
        client.complete_json(ASK, Extraction)
    assert client.structured_mode == "json_schema"  # the next call probes again


@pytest.mark.parametrize(
    "content",
    [
        "```json\n" + '{"entities": [{"name": "Hypergraph", "type": "concept"}]}' + "\n```",
        'Sure! Here is the JSON: {"entities": [{"name": "Hypergraph", "type": "concept"},],} Hope it helps.',
        "{'entities': [{'name': 'Hypergraph', 'type': 'concept'}]}",
        '<think>first {the plan}</think>{"entities": [{"name": "Hypergraph", "type": "concept"}]}',
    ],
    ids=["fenced", "prose-and-trailing-commas", "single-quotes", "think-block"],
)
def test_malformed_json_is_repaired(fake_llm, make_client, content):
    client = make_client()
    fake_llm.script(Reply(content))
    assert client.complete_json(ASK, Extraction).entities[0].name == "Hypergraph"
    assert len(fake_llm.requests) == 1


def test_invalid_reply_is_retried_once_with_the_error(fake_llm, make_client):
    client = make_client()
    fake_llm.script(Reply('{"entities": [{"name": "Hypergraph"}]}'), Reply.json(GOOD))
    assert client.complete_json(ASK, Extraction) == Extraction.model_validate(GOOD)
    assert len(fake_llm.requests) == 2
    follow_up = fake_llm.requests[1]["messages"]
    assert follow_up[-2] == {"role": "assistant", "content": '{"entities": [{"name": "Hypergraph"}]}'}
    assert "entities.0.type" in follow_up[-1]["content"]


def test_unrepairable_json_raises_a_clear_error(fake_llm, make_client):
    client = make_client()
    fake_llm.script(Reply("I cannot do that, Dave."), Reply('{"entities": [{"name": '))
    with pytest.raises(ModelOutputError) as info:
        client.complete_json(ASK, Extraction, stage="extract")
    message = str(info.value)
    assert "fake-model" in message and fake_llm.url in message and "stage extract" in message
    assert "invalid JSON after repair" in message
    assert info.value.raw.startswith('{"entities"')
    assert len(fake_llm.requests) == 2


def test_reply_that_never_matches_the_schema_names_the_field(fake_llm, make_client):
    client = make_client()
    fake_llm.default = Reply('{"entities": [{"name": "x"}]}')
    with pytest.raises(ModelOutputError, match=r"does not match the Extraction schema: entities\.0\.type"):
        client.complete_json(ASK, Extraction)


def test_complete_with_raw_schema_returns_json_text(fake_llm, make_client):
    client = make_client()
    fake_llm.script(Reply("```\n[1, 2, 3,]\n```"))
    assert client.complete(ASK, schema={"type": "array", "items": {"type": "integer"}}) == "[1, 2, 3]"


def test_parse_json_reply_unit():
    assert parse_json_reply('{"a": True, "b": None, "c": "it\'s"}') == {"a": True, "b": None, "c": "it's"}
    assert parse_json_reply('text [1, {"x": "a}b"}] more') == [1, {"x": "a}b"}]
    assert parse_json_reply('{"text": "line one\nline two"}') == {"text": "line one\nline two"}
    with pytest.raises(JSONRepairError, match="no JSON"):
        parse_json_reply("nothing here")
    with pytest.raises(JSONRepairError, match="empty"):
        parse_json_reply("   ")


# ------------------------------------------------------------------ transport: timeouts, 429, 5xx
def test_timeout_is_retried_then_reported(fake_llm, make_client):
    client = make_client(timeout=0.3, max_retries=1)
    fake_llm.default = Reply.slow(5.0)
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError) as info:
        client.complete(ASK, stage="answer")
    assert time.monotonic() - started < 2.0
    message = str(info.value)
    assert "no reply within 0.3 s, then 0.6 s" in message and "fake-model" in message and fake_llm.url in message
    assert "2 attempts" in message
    assert len(fake_llm.requests) == 2


def test_slow_reply_then_success(fake_llm, make_client):
    client = make_client(timeout=0.3)
    fake_llm.script(Reply.slow(5.0), Reply("fine"))
    assert client.complete(ASK) == "fine"


def test_429_honours_retry_after(fake_llm, make_client):
    client = make_client()
    fake_llm.script(Reply.error(429, "slow down", retry_after="0.3"), Reply("after the wait"))
    started = time.monotonic()
    assert client.complete(ASK) == "after the wait"
    assert time.monotonic() - started >= 0.28
    assert len(fake_llm.requests) == 2


def test_retry_after_is_capped(fake_llm, make_client):
    client = make_client(max_retry_wait=0.1)
    fake_llm.script(Reply.error(429, retry_after="30"), Reply("ok"))
    started = time.monotonic()
    assert client.complete(ASK) == "ok"
    assert time.monotonic() - started < 1.5


def test_5xx_is_retried(fake_llm, make_client):
    client = make_client()
    fake_llm.script(Reply.error(503, "busy"), Reply.error(502, "bad gateway"), Reply("third time"))
    assert client.complete(ASK) == "third time"
    assert len(fake_llm.requests) == 3


def test_5xx_exhausted_names_status_and_body(fake_llm, make_client):
    client = make_client(max_retries=1)
    fake_llm.default = Reply.error(500, "CUDA out of memory")
    with pytest.raises(ModelHTTPError) as info:
        client.complete(ASK)
    assert info.value.status == 500
    assert "HTTP 500" in str(info.value) and "CUDA out of memory" in str(info.value)
    assert len(fake_llm.requests) == 2


def test_4xx_is_not_retried(fake_llm, make_client):
    client = make_client()
    fake_llm.default = Reply.error(401, "invalid api key")
    with pytest.raises(ModelHTTPError, match="HTTP 401.*invalid api key"):
        client.complete(ASK)
    assert len(fake_llm.requests) == 1


def test_unreachable_server_is_a_connection_error(make_client):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = make_client(base_url=f"http://127.0.0.1:{port}", max_retries=1)
    assert client.base_url == f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ModelConnectionError, match=f"127.0.0.1:{port}/v1.*connection failed"):
        client.complete(ASK)


# ------------------------------------------------------------------ concurrency, async, vision
def test_async_concurrency_is_bounded(fake_llm, make_client):
    client = make_client(concurrency=2)
    fake_llm.default = Reply.slow(0.15, "ok")

    async def many() -> list[str]:
        return await asyncio.gather(*(client.acomplete([user_message(f"q{i}")]) for i in range(6)))

    assert asyncio.run(many()) == ["ok"] * 6
    assert fake_llm.max_in_flight == 2


def test_sync_calls_from_threads_share_the_limit(fake_llm, make_client):
    client = make_client(concurrency=3)
    fake_llm.default = Reply.slow(0.1, "ok")
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: client.complete([user_message(f"t{i}")]), range(8)))
    assert results == ["ok"] * 8
    assert fake_llm.max_in_flight == 3


def test_complete_json_many_keeps_order(fake_llm, make_client):
    client = make_client(concurrency=4)
    fake_llm.handler = lambda req: {"entities": [{"name": req["messages"][-1]["content"], "type": "page"}]}
    batch = [[user_message(f"page {i}")] for i in range(5)]
    results = client.complete_json_many(batch, Extraction, stage="extract")
    assert [r.entities[0].name for r in results] == [f"page {i}" for i in range(5)]


def test_acomplete_json_from_a_running_loop(fake_llm, make_client):
    client = make_client()
    fake_llm.script(Reply.json(GOOD))
    result = asyncio.run(client.acomplete_json(ASK, Extraction, stage="extract"))
    assert result.entities[0].type == "concept"


def test_vision_sends_images_as_data_urls(fake_llm, make_client):
    client = make_client(role="vision")
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
    fake_llm.script(Reply("a bar chart"))
    assert client.describe("What does this figure show?", [png]) == "a bar chart"
    parts = fake_llm.requests[0]["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "What does this figure show?"}
    assert parts[1]["type"] == "image_url"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")


def test_models_lists_server_models(make_client):
    assert make_client().models() == ["fake-model"]


# ------------------------------------------------------------------ settings and registry
@pytest.fixture
def clean_env(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    import os

    for name in list(os.environ):
        if name.startswith("HYPERFOLIO_MODELS_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_nothing_configured_is_offline(clean_env):
    clean_env.setenv("OPENAI_API_KEY", "sk-somebody-elses")  # a key alone turns nothing on
    settings = Settings.load()
    assert all(make_chat_model(role, settings) is None for role in ("extract", "keywords", "answer", "vision"))
    assert not ModelSet(settings).configured


def test_settings_from_env_file_and_openai_fallbacks(clean_env, tmp_path, fake_llm):
    path = tmp_path / "settings.toml"
    path.write_text('[models]\nmodel = "base-model"\ntimeout = 5\nvision_model = "eyes"\n')
    clean_env.setenv("HYPERFOLIO_MODELS_EXTRACT_MODEL", "extractor")
    clean_env.setenv("HYPERFOLIO_MODELS_CONCURRENCY", "3")
    clean_env.setenv("OPENAI_BASE_URL", fake_llm.url)
    clean_env.setenv("OPENAI_API_KEY", "sk-env")
    settings = Settings.load(path)
    assert settings.models.timeout == 5.0 and settings.models.concurrency == 3
    assert settings.models.base_url == fake_llm.url and settings.models.api_key == "sk-env"
    assert "sk-env" not in repr(settings)
    assert resolve_endpoint("extract", settings).model == "extractor"
    assert resolve_endpoint("answer", settings).model == "base-model"
    assert resolve_endpoint("vision", settings).model == "eyes"
    clean_env.setenv("HYPERFOLIO_MODELS_BASE_URL", "http://127.0.0.1:1/v1")
    assert Settings.load(path).models.base_url == "http://127.0.0.1:1/v1"  # HYPERFOLIO_* beats OPENAI_*

    with ModelSet(settings, tmp_path) as models:
        client = models.get("extract")
        assert client is not None and client.model == "extractor" and client.concurrency == 3
        fake_llm.script(Reply.json(GOOD))
        assert client.complete_json(ASK, Extraction).entities[0].name == "Hypergraph"
        assert models.snapshot()["extract"].calls == 1


def test_vision_needs_its_own_model_and_a_model_needs_a_server():
    assert resolve_endpoint("vision", ModelOptions(base_url="http://x/v1", model="m")) is None
    with pytest.raises(ModelConfigError, match="no server"):
        resolve_endpoint("answer", ModelOptions(model="m"))
    hosted = resolve_endpoint("answer", ModelOptions(model="m", api_key="k"))
    assert hosted.base_url == "https://api.openai.com/v1" and "k" not in repr(hosted)
