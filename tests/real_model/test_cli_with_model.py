"""`hyperfolio add` and `ask` as a user runs them: a new process, the model only from the environment.

This is the path the Python-API tests cannot cover: settings read from HYPERFOLIO_MODELS_* and
Rich printing a model's answer in a process without a terminal.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest

from hyperfolio.collection import Collection
from hyperfolio.llm.usage import read_usage
from hyperfolio.store.base import STAGE_READY

pytestmark = [pytest.mark.real_model, pytest.mark.long]

QUESTION = "Which treatment works filters the water from Greywater Reservoir?"
TIMEOUT = 600  # seconds; extraction on one CPU thread is the slow part


def hyperfolio(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `python -m hyperfolio ARGS` with this interpreter, so the child sees the same install."""
    return subprocess.run(
        [sys.executable, "-m", "hyperfolio", *args],
        env={**env, "COLUMNS": "400"},  # Rich wraps at 80 columns without a terminal
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def shown(result: subprocess.CompletedProcess[str]) -> str:
    """Everything the process said, so a failure explains itself."""
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


@pytest.fixture(scope="module")
def cli_collection(tmp_path_factory: pytest.TempPathFactory, model_env: dict[str, str], small_pdf: Path) -> Path:
    """A collection built by `hyperfolio add` (failing here, not in each test, when the add fails)."""
    directory = tmp_path_factory.mktemp("real-model-cli") / "collection"
    result = hyperfolio(["add", str(small_pdf), "-c", str(directory)], model_env)
    assert result.returncode == 0, shown(result)
    assert "1 file: 1 added, 0 failed" in result.stdout, shown(result)
    assert re.search(rf"^  {re.escape(small_pdf.name)}: model built \d+ of \d+ extract", result.stdout, re.M), shown(
        result
    )
    return directory


def test_cli_add_calls_the_model(cli_collection: Path, small_pdf: Path) -> None:
    """The model settings came from the environment alone, and every page made it in."""
    with pymupdf.open(small_pdf) as pdf:
        pages = pdf.page_count
    usage = read_usage(cli_collection)
    extract = usage.get("extract")
    assert extract is not None and extract.calls >= 1, f"add made no extract call: {usage}"
    assert extract.completion_tokens > 0, extract

    with Collection(cli_collection) as col:
        docs = col.documents()
    assert [(Path(d.source).name, d.num_pages, d.status) for d in docs] == [(small_pdf.name, pages, STAGE_READY)]


def test_cli_ask_prints_a_cited_answer(cli_collection: Path, model_env: dict[str, str], small_pdf: Path) -> None:
    """A user sees an answer and citations they can check against the PDF."""
    with pymupdf.open(small_pdf) as pdf:
        title, pages = pdf.metadata["title"], pdf.page_count
    before = read_usage(cli_collection).get("answer")

    result = hyperfolio(["ask", QUESTION, "-c", str(cli_collection)], model_env)

    assert result.returncode == 0, shown(result)
    match = re.search(r"^Answer: (.+)$", result.stdout, re.M)
    assert match and match.group(1).strip(), shown(result)
    # Citation lines read "  [1] <title> p.<page> ...".
    cited = [int(p) for p in re.findall(rf"^\s+\[\d+\] {re.escape(title)} p\.(\d+)\b", result.stdout, re.M)]
    assert cited and all(1 <= page <= pages for page in cited), shown(result)
    # Who answered is said: the model, or the extractive answerer with the model's failure.
    assert re.search(
        r"^answered (by the language model|extractively, because the model failed)", result.stdout, re.M
    ), shown(result)
    after = read_usage(cli_collection).get("answer")
    asked = after.calls - (before.calls if before else 0) if after else 0
    assert asked >= 1, f"the answer model was not asked: {after}"
