"""The service streams a real model's answer: llama.cpp writes it, the caller sees it grow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyperfolio.collection import Collection

pytestmark = [pytest.mark.real_model, pytest.mark.long]
fastapi = pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")

QUESTION = "How much drinking water did Greywater Reservoir supply in 2023?"


def test_ask_stream_with_a_real_model(tmp_path: Path, llama_server, small_pdf: Path) -> None:
    from fastapi.testclient import TestClient

    from hyperfolio.server.app import ServerConfig, create_app

    root = tmp_path / "root"
    with Collection(root / "docs") as col:  # indexed offline: the test is about answering
        assert col.add([small_pdf]).results[0].ok
    (root / "docs" / "settings.toml").write_text(
        f'[models]\nbase_url = "{llama_server.base_url}"\nanswer_model = "{llama_server.model}"\nmax_tokens = 256\n'
    )
    with TestClient(create_app(ServerConfig(root=root, mcp=False))) as client:
        body = {"question": QUESTION, "mode": "hybrid", "k": 3}
        with client.stream("POST", "/api/collections/docs/ask/stream", json=body) as stream:
            assert stream.status_code == 200
            lines = list(stream.iter_lines())
    events = [line[6:].strip() for line in lines if line.startswith("event:")]
    data = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert events[0] == "evidence" and events[-1] == "answer", (events, llama_server.log_tail())
    final = data[-1]
    assert final["citations"], final  # whatever the model wrote, the answer stays cited
    deltas = [d["text"] for e, d in zip(events, data, strict=True) if e == "delta"]
    if "model failed" not in final["answerer"]:  # the model's own answer: it was seen as it grew
        assert deltas, (final, llama_server.log_tail())
        assert all(later.startswith(earlier) for earlier, later in zip(deltas, deltas[1:], strict=False))
