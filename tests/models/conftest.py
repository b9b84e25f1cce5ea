"""Fixtures for model plug-in tests: `fake_llm`, an OpenAI-compatible server on 127.0.0.1.

The server module is registered as `fake_openai_server` in sys.modules, so tests may write
`from fake_openai_server import Reply`. Tests elsewhere can load it the same way (by file path).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


def _load_server_module():
    name = "fake_openai_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("fake_openai_server.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fake_openai_server = _load_server_module()


@pytest.fixture
def fake_llm():
    """A started FakeLLM (`.url`, `.requests`, `.script(...)`, `.reject_formats`, `.max_in_flight`)."""
    server = fake_openai_server.FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()
