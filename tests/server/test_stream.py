"""Answers stream to the caller as the language model writes them (a scripted OpenAI-compatible server)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")

from fake_openai_server import Reply  # noqa: E402  (registered by tests/conftest.py)
from fastapi.testclient import TestClient  # noqa: E402

from hyperfolio.answer.model import partial_answer  # noqa: E402
from hyperfolio.collection import Collection  # noqa: E402
from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report  # noqa: E402
from hyperfolio.server.app import ServerConfig, create_app  # noqa: E402

ANSWER = 'The North Sea had the highest installed capacity, 1,850 MW ("net").'


def test_partial_answer_reads_an_unfinished_json_reply():
    reply = json.dumps({"answer": ANSWER + " \u00e9", "citations": [1], "sufficient": True})
    shown = [partial_answer(reply[:n]) for n in range(len(reply) + 1)]
    assert shown[-1] == ANSWER + " \u00e9"
    assert all(shown[-1].startswith(s) for s in shown)  # never a wrong character, only a shorter prefix
    assert partial_answer('{"citations": [1], "answer') == ""


def test_ask_stream_sends_the_answer_as_it_is_written(tmp_path, fake_llm):
    root = tmp_path / "root"
    with Collection(root / "docs") as col:  # indexed offline: only the answer comes from the model
        assert col.add([write_sample_report(tmp_path / "report.pdf")]).results[0].ok
    (root / "docs" / "settings.toml").write_text(
        f'[models]\nbase_url = "{fake_llm.url}"\nanswer_model = "fake-model"\nmax_retries = 0\n'
    )
    fake_llm.handler = lambda request: Reply.json(
        {"answer": ANSWER, "citations": [1], "sufficient": True}, piece_delay=0.01
    )
    with TestClient(create_app(ServerConfig(root=root, mcp=False))) as client:
        body = {"question": SAMPLE_QUESTION, "mode": "bm25"}
        with client.stream("POST", "/api/collections/docs/ask/stream", json=body) as stream:
            lines = list(stream.iter_lines())
    events = [line[6:].strip() for line in lines if line.startswith("event:")]
    data = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert events[0] == "evidence" and events[-1] == "answer", events
    deltas = [d["text"] for e, d in zip(events, data, strict=True) if e == "delta"]
    assert len(deltas) >= 5, deltas  # the answer arrived in pieces, not at once
    assert deltas[-1] == ANSWER and all(ANSWER.startswith(d) for d in deltas)
    assert len(set(deltas)) == len(deltas)  # each event says something new
    final = data[-1]
    assert final["answerer"] != "extractive" and final["answer"].startswith(ANSWER.rstrip("."))
    assert final["citations"][0]["page"] == 2
    assert fake_llm.chat_requests[-1]["stream"] is True
