"""The service gives back what it freed: glibc keeps memory freed between live blocks until trimmed."""

from __future__ import annotations

import threading
import time

import psutil
import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")

from fastapi.testclient import TestClient  # noqa: E402

from hyperfolio.server.app import ServerConfig, create_app  # noqa: E402
from hyperfolio.server.memory import MemoryTrimmer, malloc_trim  # noqa: E402

pytestmark = pytest.mark.skipif(malloc_trim() is None, reason="the C library here has no malloc_trim")


def scattered(kept: list[bytes]) -> None:
    """~200 MB allocated on a thread and freed, one block in 50 kept: the freed pages lie between them."""
    blocks = [bytes(2000) for _ in range(100_000)]
    kept.extend(blocks[::50])


def test_a_trim_returns_memory_freed_between_live_blocks():
    process, kept = psutil.Process(), []
    worker = threading.Thread(target=scattered, args=(kept,))
    worker.start()
    worker.join()
    before = process.memory_info().rss
    trimmer = MemoryTrimmer(seconds=0.05)
    trimmer.start()
    deadline = time.monotonic() + 10
    while trimmer.trims < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    trimmer.stop()
    assert trimmer.trims >= 1
    assert before - process.memory_info().rss > 100 * 2**20, "freed memory was not returned"
    assert len(kept) == 2000


def test_the_service_trims_while_it_runs_and_stops_with_it(tmp_path):
    app = create_app(ServerConfig(root=tmp_path, mcp=False, warm=False))
    state = app.state.service
    state.trimmer.seconds = 0.05
    with TestClient(app) as client:
        assert client.get("/api/health").status_code == 200
        deadline = time.monotonic() + 10
        while state.trimmer.trims < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert state.trimmer.trims >= 2
    trims = state.trimmer.trims
    time.sleep(0.2)
    assert state.trimmer.trims == trims  # stopped with the service
    with TestClient(app):  # the same app served again: its lifespan starts trimming again
        deadline = time.monotonic() + 10
        while state.trimmer.trims < trims + 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert state.trimmer.trims >= trims + 2
