"""A running service for the server tests: uvicorn on a free loopback port, in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(app) -> Iterator[str]:  # noqa: ANN001 - any ASGI app
    """Serve `app` on loopback until the block ends; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test service did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def serve_app():  # noqa: ANN201
    """`with serve_app(app) as url:` runs an ASGI app on a free loopback port for the block."""
    return running


@pytest.fixture(scope="session")
def encrypted_pdf(pdf_writer):  # noqa: ANN201
    """`encrypted_pdf(path, pages, password)`: a text PDF, one string per page, saved under AES-256 with
    `password` as its user password (and another as the owner's), as the server tests upload them."""
    import pymupdf

    def write(path: Path, pages: list[str], password: str) -> Path:
        plain = pdf_writer(path.with_name(f"plain-{path.name}"), pages)
        with pymupdf.open(plain) as doc:
            doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw="owner-Kp4-unrelated")
        plain.unlink()
        return path

    return write
