"""Conversations over HTTP: a thread kept in the collection's store, asked in with follow-ups, listed,
read back after a restart, deleted."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")

from fastapi.testclient import TestClient  # noqa: E402

from hyperfolio.collection import Collection  # noqa: E402
from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report  # noqa: E402
from hyperfolio.server.app import ServerConfig, create_app  # noqa: E402

THREADS = "/api/collections/docs/conversations"


@pytest.fixture(scope="module")
def root(tmp_path_factory, embedder):
    """A service root holding the collection "docs" with the sample report indexed."""
    root = tmp_path_factory.mktemp("root")
    pdf = write_sample_report(tmp_path_factory.mktemp("pdf") / "sample-report.pdf")
    col = Collection(root / "docs", embedder=embedder)
    assert not col.add([pdf]).failed
    col.close()
    return root


def test_a_thread_is_asked_in_listed_kept_over_a_restart_and_deleted(root):
    with TestClient(create_app(ServerConfig(root=root, mcp=False, warm=False))) as client:
        made = client.post(THREADS)
        assert made.status_code == 201, made.text
        thread = made.json()["id"]
        first = client.post(f"{THREADS}/{thread}/ask", json={"question": SAMPLE_QUESTION}).json()
        assert first["short"] == "North Sea" and first["turn"] == 1 and first["conversation"] == thread
        second = client.post(f"{THREADS}/{thread}/ask", json={"question": "and in 2022?"}).json()
        assert second["question"] == "Which region had the highest installed capacity in 2022?"
        assert second["meta"]["followup"]["how"] == "period" and second["turn"] == 2
        listed = client.get(THREADS).json()
        assert [t["id"] for t in listed] == [thread] and listed[0]["title"] == SAMPLE_QUESTION
    with TestClient(create_app(ServerConfig(root=root, mcp=False, warm=False))) as client:  # a restart
        kept = client.get(f"{THREADS}/{thread}").json()
        assert [t["question"] for t in kept["turns"]] == [SAMPLE_QUESTION, "and in 2022?"]
        assert kept["turns"][1]["standalone"].endswith("in 2022?") and kept["turns"][0]["pages"]
        with client.stream("POST", f"{THREADS}/{thread}/ask/stream", json={"question": "why?"}) as streamed:
            assert streamed.status_code == 200
            events = [line[len("event: ") :] for line in streamed.iter_lines() if line.startswith("event: ")]
        assert events[0] == "evidence" and events[-1] == "answer"
        kept = client.get(f"{THREADS}/{thread}").json()["turns"]  # the streamed turn is kept too
        assert kept[2]["standalone"].startswith("Why is it North Sea: which region had")  # read against turn 2
        assert client.delete(f"{THREADS}/{thread}").json() == {"id": thread, "deleted": True}
        gone = client.get(f"{THREADS}/{thread}")
        assert gone.status_code == 404 and "no conversation" in gone.json()["detail"]
        assert client.post(f"{THREADS}/{thread}/ask", json={"question": "x"}).status_code == 404
        assert client.post(f"{THREADS}/{thread}/ask/stream", json={"question": "x"}).status_code == 404
        assert client.delete(f"{THREADS}/nope").status_code == 404
        assert client.get("/api/collections/nope/conversations").status_code == 404
