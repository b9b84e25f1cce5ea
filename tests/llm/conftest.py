"""Fixtures of the model-client tests."""

from __future__ import annotations

import pytest

from hyperfolio.llm.openai_compat import OpenAICompatClient


@pytest.fixture
def make_client(fake_llm):
    made: list[OpenAICompatClient] = []

    def make(**kw) -> OpenAICompatClient:
        kw.setdefault("timeout", 2.0)
        kw.setdefault("max_retries", 2)
        kw.setdefault("backoff", 0.001)
        kw.setdefault("max_retry_wait", 0.5)
        client = OpenAICompatClient(kw.pop("base_url", fake_llm.url), kw.pop("model", "fake-model"), **kw)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
