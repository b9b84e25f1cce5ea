"""Shared fixtures: one embedder per test session, and small documents the tests generate."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from hyperfolio import Collection
from hyperfolio.config import Settings
from hyperfolio.embed.local import MiniLMEmbedder, Model2VecEmbedder, make_embedder
from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage


def _load_fake_server():
    """Register tests/llm/fake_openai_server.py as `fake_openai_server`, so tests can import it."""
    name = "fake_openai_server"
    if name not in sys.modules:
        path = Path(__file__).parent / "llm" / "fake_openai_server.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fake_openai_server = _load_fake_server()


class HashEmbedder:
    """Bag of hashed words: deterministic, instant, similar texts get similar vectors (a stand-in for the
    embedding model where a test is about something else)."""

    name = "hash-test"
    dim = 64

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


# Programs some tests need from the system, how each is found and how to install it (Debian).
SYSTEM_PROGRAMS: dict[str, tuple[tuple[str, ...], str]] = {
    "tesseract": (("tesseract",), "apt-get install tesseract-ocr tesseract-ocr-eng"),
    "graphviz": (("dot", "twopi", "fdp"), "apt-get install graphviz"),
    "chromium": (("chromium", "chromium-browser"), "apt-get install chromium"),
}


def missing_program(name: str) -> str | None:
    """Why a system program the tests need is absent (with its install command), or None when present."""
    programs, install = SYSTEM_PROGRAMS[name]
    found = [shutil.which(p) for p in programs]
    if any(found) if name == "chromium" else all(found):
        return None
    return f"needs {name} ({', '.join(p for p, f in zip(programs, found, strict=True) if not f)} not found): {install}"


def require_program(name: str) -> None:
    """Skip when a system program is missing, with its install command as the reason; fail in CI
    (CI=true), where .ci/run installs them, so a test that should run is never silently skipped."""
    reason = missing_program(name)
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def written_nowhere():
    """`check(folder, secret)`: no file under `folder` (database, its journal, uploads, images, caches)
    holds the secret's bytes, in UTF-8 or UTF-16."""

    def check(folder: Path, secret: str) -> None:
        needles = [secret.encode("utf-8"), secret.encode("utf-16-le")]
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert files
        for path in files:
            data = path.read_bytes()
            assert not any(n in data for n in needles), f"the password is in {path}"

    return check


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`@pytest.mark.needs("tesseract", "graphviz")`: see `require_program`."""
    for marker in item.iter_markers(name="needs"):
        for name in marker.args:
            require_program(name)


@pytest.fixture
def fake_llm():
    """A started fake OpenAI-compatible server on 127.0.0.1 (`.url`, `.requests`, `.script(...)`, `.handler`)."""
    server = fake_openai_server.FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm_server(fake_llm):
    return fake_llm


@pytest.fixture
def fake_client(fake_llm):
    """A client of the fake server that gives up at once: one attempt, short timeout, json_schema output."""
    from hyperfolio.llm.openai_compat import OpenAICompatClient

    made = OpenAICompatClient(
        fake_llm.url, "fake-model", timeout=2.0, max_retries=0, backoff=0.001, structured="json_schema"
    )
    yield made
    made.close()


@pytest.fixture(scope="session", autouse=True)
def one_model_cache() -> Iterator[None]:
    """Every test, and every process a test starts, builds the embedding models into one cache: a test that
    gives the user a new HOME would otherwise build the ONNX graph and distil the static model again (~20 s
    each). Tests about a first run on an empty cache set their own HYPERFOLIO_CACHE or drop it."""
    from hyperfolio.config import cache_dir

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYPERFOLIO_CACHE", str(cache_dir()))
        yield


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder | Model2VecEmbedder:
    """The default chunk embedder, as a collection made with default settings would load it (a
    collection records its embedder's name, so a test sharing this one must share the default's)."""
    return make_embedder(Settings().embedder)


@pytest.fixture(scope="session")
def minilm_fp32() -> MiniLMEmbedder:
    """Full-precision MiniLM on its whole 256-token window: the one sentence-transformers' vectors equal."""
    return MiniLMEmbedder()


def indexed(root: Path, embedder, *sources: Path) -> Iterator[Collection]:  # noqa: ANN001 - any embedder
    """A collection at `root / "col"` with `sources` added, every one indexed, closed after use (the body
    of a module fixture: `yield from indexed(...)`)."""
    col = Collection(root / "col", embedder=embedder)
    added = col.add(list(sources))
    assert not added.failed, [r.reason for r in added.failed]
    yield col
    col.close()


def text_evidence(question: str, texts: list[str], title: str = "Report") -> EvidencePackage:
    """Evidence of one text chunk per page of document "d", ranked in the order given."""
    items = []
    for rank, text in enumerate(texts, 1):
        chunk = Chunk(page=rank, order=0, modality="text", text=text, doc_id="d", chunk_id=f"d:{rank}:0")
        citation = Citation("d", title, rank, None, [], chunk.chunk_id, "text")
        items.append(EvidenceItem(chunk, 1.0 / rank, rank, citation))
    return EvidencePackage(question, "test", items)


def write_pdf(path: Path, pages: list[str], title: str | None = None) -> Path:
    """A text PDF, one string per page; a line starting with '# ' becomes a large heading."""
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        y = 72.0
        for line in text.split("\n"):
            size = 20 if line.startswith("# ") else 11
            body = line[2:] if line.startswith("# ") else line
            box = pymupdf.Rect(72, y, 540, y + 400)
            page.insert_textbox(box, body, fontsize=size, fontname="helv")
            lines = max(1, len(body) // 80 + 1)
            y += lines * size * 1.4 + 6
    if title:
        doc.set_metadata({"title": title})
    doc.save(path)
    doc.close()
    return path


def write_filing(path: Path, registrant: str, year: int, body: str) -> Path:
    """A two-page 10-K: the cover a card is read from (form, fiscal year, registrant), then `body` on page 2."""
    doc = pymupdf.open()
    cover = doc.new_page(width=612, height=792)
    lines = [
        ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 14),
        ("FORM 10-K", 16),
        ("ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934", 8),
        (f"For the fiscal year ended December 31, {year}", 8),
        (registrant, 14),
        ("(Exact name of registrant as specified in its charter)", 7),
    ]
    y = 60.0
    for text, size in lines:
        y += size * 1.6
        cover.insert_text((54, y), text, fontsize=size)
    doc.new_page(width=612, height=792).insert_textbox(pymupdf.Rect(54, 72, 558, 400), body, fontsize=10)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="session")
def pdf_writer():
    return write_pdf


def write_docx_with_a_page_break(path: Path) -> Path:
    """A Word file of two pages: counted as one page before it is read (Word files have no page count)."""
    import docx

    doc = docx.Document()
    doc.add_heading("Fleet", level=1)
    doc.add_paragraph("The Osprey is a dredger of 2,400 gross tonnes, built in 1998.")
    doc.add_page_break()
    doc.add_heading("Crew", level=1)
    doc.add_paragraph("Each vessel sails with a crew of twelve and a master.")
    doc.save(path)
    return path


@pytest.fixture(scope="session")
def docx_writer():
    return write_docx_with_a_page_break


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (headless), one per test module."""
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]' installs Playwright")
    require_program("chromium")
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()
