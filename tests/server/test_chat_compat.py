"""A collection as a chat model: the official `openai` and `ollama` clients against a running service.

One service on loopback serves two collections of the indexed sample report: `docs`, answered
offline, and `llm`, answered by a scripted OpenAI-compatible model (so a reply streams as it is written).
A second service over the same root asks for an API key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")
openai = pytest.importorskip("openai", reason="pip install -e '.[test]' installs the openai client")
ollama = pytest.importorskip("ollama", reason="pip install -e '.[test]' installs the ollama client")

from fake_openai_server import FakeLLM, Reply  # noqa: E402  (registered by tests/conftest.py)

from hyperfolio.collection import Collection  # noqa: E402
from hyperfolio.sample import SAMPLE_QUESTION, SAMPLE_TITLE, write_sample_report  # noqa: E402
from hyperfolio.server.app import ServerConfig, create_app  # noqa: E402
from hyperfolio.version import package_version  # noqa: E402

KEY = "chat-key-5f1c"
DOCS = "hyperfolio/docs:bm25"  # lexical retrieval: no embedding model loads in the service
MODEL_ANSWER = "The North Sea had the highest installed capacity, 1,850 MW [1]."
PARAGRAPHS_QUESTION = "How large were the regions in 2024, and the company?"  # answered in paragraphs
PARAGRAPHS_ANSWER = (
    "[1] The North Sea had 1,850 MW [1], the Baltic 1,120 MW [1].\n\n"
    "Installed capacity reached 4,470 MW [2]; revenue was $412.6 million [2]."
)
REVENUE = "What was the revenue in 2024?"
LINK = re.compile(
    r"<(http://127\.0\.0\.1:\d+/api/collections/\w+/documents/\w+/pages/(\d+)/image\?box=[\d,.-]+(?:&quote=[^>]+)?)>"
)


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeLLM]:
    server = FakeLLM().start()

    def answer(request: dict[str, Any]) -> Reply:
        paragraphs = PARAGRAPHS_QUESTION in str(request["messages"][-1]["content"])
        written, cited = (PARAGRAPHS_ANSWER, [1, 2]) if paragraphs else (MODEL_ANSWER, [1])
        return Reply.json({"answer": written, "citations": cited, "sufficient": True}, piece_delay=0.01)

    server.handler = answer
    yield server
    server.stop()


@pytest.fixture(scope="module")
def root(tmp_path_factory, embedder, model_server) -> Path:  # noqa: ANN001 - the session's embedder
    made = tmp_path_factory.mktemp("chat")
    report = write_sample_report(made / "report.pdf")
    for name in ("docs", "llm"):
        with Collection(made / "root" / name, embedder=embedder) as col:
            assert col.add([report]).results[0].ok
    (made / "root" / "llm" / "settings.toml").write_text(
        f'[models]\nbase_url = "{model_server.url}"\nanswer_model = "fake-model"\nmax_retries = 0\n'
    )
    return made / "root"


@pytest.fixture(scope="module")
def url(root, serve_app) -> Iterator[str]:  # noqa: ANN001
    with serve_app(create_app(ServerConfig(root=root, mcp=False, warm=False))) as base:
        yield base


@pytest.fixture(scope="module")
def keyed_url(root, serve_app) -> Iterator[str]:  # noqa: ANN001
    with serve_app(create_app(ServerConfig(root=root, api_key=KEY, mcp=False, warm=False))) as base:
        yield base


@pytest.fixture(scope="module")
def client(url) -> Iterator[Any]:  # noqa: ANN001
    with openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


@pytest.fixture(scope="module")
def ollama_client(url) -> Any:  # noqa: ANN001
    return ollama.Client(host=url, timeout=60)


def ask(client: Any, *messages: str, model: str = DOCS, **extra: Any) -> Any:
    """A chat completion of alternating user and assistant messages (the last a user's)."""
    roles = ["user", "assistant"] * len(messages)
    chat = [{"role": role, "content": text} for role, text in zip(roles, messages, strict=False)]
    return client.chat.completions.create(model=model, messages=chat, **extra)


def streamed(client: Any, *messages: str, model: str = DOCS, **extra: Any) -> tuple[list[str], list[Any]]:
    """The content pieces of a streamed completion, and every chunk."""
    chunks = list(ask(client, *messages, model=model, stream=True, **extra))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    return pieces, chunks


# ---------------------------------------------------------------------- OpenAI
def test_models_lists_every_collection(client):
    listed = client.models.list()
    assert [m.id for m in listed.data] == ["hyperfolio/docs", "hyperfolio/llm"]
    assert all(m.object == "model" and m.owned_by == "hyperfolio" and m.created > 0 for m in listed.data)
    assert client.models.retrieve("hyperfolio/docs").id == "hyperfolio/docs"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("hyperfolio/missing")


def test_chat_answers_with_numbered_citations_and_linked_sources(client, url):
    completion = ask(client, SAMPLE_QUESTION)
    content = completion.choices[0].message.content
    answer, _, sources = content.partition("\n\nSources:\n")
    assert "North Sea" in answer and "[1]" in answer, content
    first = sources.splitlines()[0]
    assert first.startswith(f"- [1] {SAMPLE_TITLE}, p. 2: <{url}/api/collections/docs/documents/"), first
    link = LINK.search(first)
    assert link is not None and link.group(2) == "2"
    assert "&quote=North+Sea&quote=1,850" in link.group(1)  # the answering row's cells marked in the box
    page = httpx.get(link.group(1))
    assert page.status_code == 200 and page.headers["content-type"] == "image/png"
    assert completion.choices[0].finish_reason == "stop" and completion.object == "chat.completion"
    extra = completion.model_extra["hyperfolio"]
    assert extra["collection"] == "docs" and extra["mode"] == "bm25" and extra["standalone"] == SAMPLE_QUESTION
    cited = extra["citations"][0]
    assert (cited["number"], cited["page"], cited["image_url"]) == (1, 2, link.group(1))
    assert extra["evidence"]["strategy"] == "bm25" and extra["evidence"]["items"]
    assert extra["followup"] is None
    usage = completion.usage  # words, not tokens
    assert usage.prompt_tokens == len(SAMPLE_QUESTION.split())
    assert usage.completion_tokens == len(content.split())
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_chat_streams_the_same_reply_in_chunks(client):
    whole = ask(client, SAMPLE_QUESTION).choices[0].message.content
    pieces, chunks = streamed(client, SAMPLE_QUESTION, stream_options={"include_usage": True})
    assert "".join(pieces) == whole
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    finish, usage = chunks[-2], chunks[-1]
    assert finish.choices[0].finish_reason == "stop"
    assert finish.model_extra["hyperfolio"]["citations"][0]["page"] == 2
    assert usage.choices == [] and usage.usage.completion_tokens == len(whole.split())


def test_a_follow_up_is_asked_as_a_standalone_question(client):
    first = ask(client, REVENUE).choices[0].message.content
    completion = ask(client, REVENUE, first, "and in 2023?", model="hyperfolio/docs", extra_body={"mode": "bm25"})
    extra = completion.model_extra["hyperfolio"]
    assert extra["question"] == "and in 2023?"
    assert "2023" in extra["standalone"] and "revenue" in extra["standalone"].lower(), extra["standalone"]
    assert "2024" not in extra["standalone"]
    assert extra["followup"]["how"] == "period" and extra["followup"]["standalone"] == extra["standalone"]
    assert extra["evidence"]["question"] == extra["standalone"] and extra["mode"] == "bm25"
    _, chunks = streamed(client, REVENUE, first, "and in 2023?")
    streamed_extra = chunks[-1].model_extra["hyperfolio"]
    assert streamed_extra["standalone"] == extra["standalone"] and streamed_extra["followup"] == extra["followup"]
    assert streamed_extra["answer"] == extra["answer"]
    why = ask(client, REVENUE, first, "why?", model="hyperfolio/docs:bm25").model_extra["hyperfolio"]
    cited = completion.model_extra["hyperfolio"]["citations"][0]["doc_id"]
    assert why["followup"]["how"] == "why" and why["followup"]["doc"] == [cited]  # read off the Sources links


def test_a_model_answer_streams_as_it_is_written(client, model_server):
    pieces, chunks = streamed(client, SAMPLE_QUESTION, model="hyperfolio/llm:bm25")
    assert len(pieces) >= 5, pieces  # the answer arrived as the model wrote it, not at once
    answer = chunks[-1].model_extra["hyperfolio"]["answer"]
    assert answer == "The North Sea had the highest installed capacity, 1,850 MW. [1]"
    content = "".join(pieces)
    assert content.startswith(answer + "\n\nSources:\n- [1] "), content  # the model's own marker never shown
    assert model_server.chat_requests[-1]["stream"] is True
    whole = ask(client, SAMPLE_QUESTION, model="hyperfolio/llm:bm25").choices[0].message.content
    assert whole == content


def test_a_model_answer_in_paragraphs_streams_once(client):
    pieces, chunks = streamed(client, PARAGRAPHS_QUESTION, model="hyperfolio/llm:bm25")
    extra = chunks[-1].model_extra["hyperfolio"]
    answer = extra["answer"]
    assert extra["answerer"] == "llm", extra["answerer"]
    bare = "The North Sea had 1,850 MW, the Baltic 1,120 MW. Installed capacity reached 4,470 MW; revenue was"
    bare += " $412.6 million."  # the model's paragraphs and markers as the finished answer reads them
    assert re.fullmatch(re.escape(bare) + r" (\[\d\])+", answer), answer  # its own markers numbered afresh
    content = "".join(pieces)
    assert content.startswith(answer + "\n\nSources:\n- [1] "), content  # the answer once, not again after it
    assert content.count("North Sea had") == 1 and len(pieces) >= 10, pieces
    whole = ask(client, PARAGRAPHS_QUESTION, model="hyperfolio/llm:bm25").choices[0].message.content
    assert whole == content


def test_openai_errors_have_openai_shape(client, url):
    with pytest.raises(openai.NotFoundError) as missing:
        ask(client, SAMPLE_QUESTION, model="hyperfolio/missing")
    assert missing.value.status_code == 404 and missing.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        ask(client, SAMPLE_QUESTION, model="hyperfolio/docs:no-such-mode")
    with pytest.raises(openai.BadRequestError) as last:
        client.chat.completions.create(model=DOCS, messages=[{"role": "assistant", "content": "hello"}])
    assert "last message" in last.value.message
    with pytest.raises(openai.BadRequestError):
        ask(client, SAMPLE_QUESTION, extra_body={"mode": "sideways"})
    refused = httpx.post(f"{url}/v1/chat/completions", json={"model": DOCS, "messages": []})
    assert refused.status_code == 400 and set(refused.json()["error"]) >= {"message", "type", "code"}


# ---------------------------------------------------------------------- Ollama
def test_ollama_tags_and_version(ollama_client, url):
    models = ollama_client.list().models
    assert [m.model for m in models] == ["hyperfolio/docs:latest", "hyperfolio/llm:latest"]
    assert models[0].size > 0 and models[0].details.family == "hyperfolio" and len(models[0].digest) == 64
    assert models[0].details.parameter_size == "1 document"
    assert httpx.get(f"{url}/api/version").json() == {"version": package_version()}
    shown = ollama_client.show("hyperfolio/docs:latest")
    assert shown.details.family == "hyperfolio" and shown.modelinfo["hyperfolio.collection"] == "docs"
    missing = httpx.post(f"{url}/api/show", json={"model": "hyperfolio/nope"})
    assert missing.status_code == 404 and "error" in missing.json()


def test_ollama_chat_whole_and_streamed(ollama_client, url):
    messages = [{"role": "user", "content": SAMPLE_QUESTION}]
    whole = ollama_client.chat(model="hyperfolio/docs:bm25", messages=messages, stream=False)
    assert whole.done and whole.done_reason == "stop" and whole.message.role == "assistant"
    assert f"\n\nSources:\n- [1] {SAMPLE_TITLE}, p. 2: <" in whole.message.content
    assert whole.eval_count == len(whole.message.content.split())
    other = [{"role": "user", "content": "Which region leads in installed capacity?"}]  # not a cached answer
    parts = list(ollama_client.chat(model="hyperfolio/llm:bm25", messages=other, stream=True))
    assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True] and len(parts) >= 6
    assert "".join(p.message.content for p in parts).startswith("The North Sea had the highest")
    raw = httpx.post(f"{url}/api/chat", json={"model": "hyperfolio/docs", "messages": messages}, timeout=60)
    lines = [json.loads(line) for line in raw.text.splitlines()]  # streamed by default, ":latest" optional
    assert raw.headers["content-type"].startswith("application/x-ndjson") and lines[-1]["done"] is True
    assert lines[-1]["hyperfolio"]["citations"][0]["page"] == 2


def test_ollama_errors_have_ollama_shape(ollama_client):
    with pytest.raises(ollama.ResponseError) as missing:
        ollama_client.chat(model="hyperfolio/missing", messages=[{"role": "user", "content": "why?"}])
    assert missing.value.status_code == 404 and "hyperfolio/missing" in missing.value.error
    with pytest.raises(ollama.ResponseError) as last:
        ollama_client.chat(model="hyperfolio/docs", messages=[{"role": "system", "content": "be brief"}])
    assert last.value.status_code == 400 and "last message" in last.value.error


# ---------------------------------------------------------------------- API key
def test_an_api_key_guards_the_compatible_endpoints(keyed_url):
    stranger = openai.OpenAI(base_url=f"{keyed_url}/v1", api_key="wrong", max_retries=0)
    with stranger, pytest.raises(openai.AuthenticationError) as refused:
        stranger.models.list()
    assert refused.value.status_code == 401 and refused.value.code == "invalid_api_key"
    with openai.OpenAI(base_url=f"{keyed_url}/v1", api_key=KEY, max_retries=0) as member:
        assert ask(member, SAMPLE_QUESTION).choices[0].message.content
    with pytest.raises(ollama.ResponseError) as unkeyed:
        ollama.Client(host=keyed_url).list()
    assert unkeyed.value.status_code == 401 and "API key" in unkeyed.value.error
    keyed = ollama.Client(host=keyed_url, headers={"Authorization": f"Bearer {KEY}"})
    assert [m.model for m in keyed.list().models][0] == "hyperfolio/docs:latest"
    for path in ("/api/version", "/api/tags", "/v1/models"):
        assert httpx.get(f"{keyed_url}{path}").status_code == 401, path
    assert httpx.post(f"{keyed_url}/api/chat", json={}).status_code == 401
    assert httpx.get(f"{keyed_url}/api/health").status_code == 200
