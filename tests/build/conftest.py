"""Fixtures for the language-model build path: the fake OpenAI-compatible server, loaded by file path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


def _server_module():
    name = "fake_openai_server"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "models" / "fake_openai_server.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fake_openai_server = _server_module()


@pytest.fixture
def llm_server():
    """A started fake server (`.url`, `.handler`, `.requests`, `.script(...)`)."""
    server = fake_openai_server.FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()
