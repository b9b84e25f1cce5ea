"""The CLI as a user runs it: exit codes, JSON output, errors naming the file and the reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from hyperfolio.cli import app

runner = CliRunner()

DOC = """# Field Guide

## Birds

The osprey eats fish almost exclusively and nests near water.

## Trees

The English oak can live for more than a thousand years.
"""


@pytest.fixture
def collection(tmp_path):
    path = tmp_path / "docs"
    path.mkdir()
    (path / "guide.md").write_text(DOC)
    col = tmp_path / "col"
    result = runner.invoke(app, ["add", str(path / "*.md"), "--collection", str(col)])
    assert result.exit_code == 0, result.output
    assert "added" in result.output and "pages/s" in result.output
    return col


def test_ask_json_has_answer_and_page_citation(collection):
    result = runner.invoke(app, ["ask", "What does the osprey eat?", "-c", str(collection), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "fish" in data["answer"]
    assert data["sufficient"] is True
    assert data["citations"][0]["page"] == 1
    assert data["citations"][0]["title"] == "Field Guide"
    assert data["evidence"]["items"]


def test_retrieve_stats_list_remove(collection):
    result = runner.invoke(app, ["retrieve", "oak tree age", "-c", str(collection), "--mode", "bm25", "--json"])
    assert result.exit_code == 0, result.output
    assert "oak" in json.loads(result.output)["items"][0]["text"]
    stats = json.loads(runner.invoke(app, ["stats", "-c", str(collection), "--json"]).output)
    assert stats["documents"] == 1 and stats["chunks"] >= 1
    listed = runner.invoke(app, ["list", "-c", str(collection)])
    assert "Field Guide" in listed.output and "kind" in listed.output
    removed = runner.invoke(app, ["remove", "guide.md", "-c", str(collection)])
    assert removed.exit_code == 0, removed.output
    assert json.loads(runner.invoke(app, ["stats", "-c", str(collection), "--json"]).output)["documents"] == 0


def test_add_reports_bad_files_and_exits_nonzero(tmp_path):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"not a pdf at all")
    good = tmp_path / "good.md"
    good.write_text(DOC)
    result = runner.invoke(app, ["add", str(bad), str(good), "-c", str(tmp_path / "col")])
    assert result.exit_code == 1
    assert "bad.pdf" in result.output and "failed" in result.output
    assert "1 added, 1 failed" in result.output


def test_unknown_mode_and_unknown_document_are_clear_errors(collection):
    result = runner.invoke(app, ["ask", "osprey", "-c", str(collection), "--mode", "nonsense"])
    assert result.exit_code == 1
    assert "unknown retrieval mode" in result.output
    result = runner.invoke(app, ["ask", "osprey", "-c", str(collection), "--doc", "nope.pdf"])
    assert result.exit_code == 1
    assert "nope.pdf" in result.output


def test_demo_answers_with_a_page_citation(tmp_path):
    result = runner.invoke(app, ["demo", "--collection", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Answer:" in text
    assert "North Sea" in text
    assert "p.2" in text


def test_dual_mode_and_build_command(collection):
    result = runner.invoke(app, ["ask", "What does the osprey eat?", "-c", str(collection), "--mode", "dual", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "fish" in data["answer"]
    assert data["evidence"]["strategy"] == "dual"
    assert data["evidence"]["keywords"]["low"]
    notes = collection.parent / "ports.md"
    notes.write_text("# Ports\n\nRotterdam and Antwerp compete for the Maersk Line and Hapag-Lloyd services.\n")
    assert runner.invoke(app, ["add", str(notes), "-c", str(collection)]).exit_code == 0
    shown = runner.invoke(
        app, ["ask", "Which ports compete for Maersk Line?", "-c", str(collection), "--mode", "dual", "--evidence"]
    )
    assert shown.exit_code == 0 and "hypergraph evidence" in shown.output, shown.output
    assert "Rotterdam" in shown.output
    built = runner.invoke(app, ["build", "-c", str(collection)])
    assert built.exit_code == 0 and "0 documents built" in built.output  # already built by `add`
    stats = json.loads(runner.invoke(app, ["stats", "-c", str(collection), "--json"]).output)
    assert stats["entities"] > 0 and stats["hyperedges_by_level"]


def test_concept_mode_with_knobs_and_the_conflicts_command(tmp_path):
    doc = tmp_path / "fleet.md"
    doc.write_text(
        "# Fleet\n\n## Operations\n\nThe Osprey fleet capacity is 412,000 TEU.\n\n"
        "## Outlook\n\nThe Osprey fleet capacity is 390,000 TEU, and it is revised from the fleet capacity above.\n"
    )
    col = str(tmp_path / "col")
    assert runner.invoke(app, ["add", str(doc), "-c", col]).exit_code == 0
    result = runner.invoke(
        app, ["retrieve", "fleet capacity", "--mode", "concept", "-c", col, "--set", "scoring=keyword", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["strategy"] == "concept"
    bad = runner.invoke(app, ["retrieve", "fleet capacity", "--mode", "concept", "-c", col, "--set", "nope=1"])
    assert bad.exit_code == 1 and "unknown setting" in bad.output
    # The knobs are typed against the mode the call runs: without --mode, the collection's default_mode
    # (before: typed against "no mode", so a `dual` knob was refused by a collection whose default is dual).
    (tmp_path / "col" / "settings.toml").write_text('default_mode = "dual"\n')
    dual = runner.invoke(app, ["retrieve", "fleet capacity", "-c", col, "--set", "entity_threshold=0.4", "--json"])
    assert dual.exit_code == 0 and json.loads(dual.output)["strategy"] == "dual", dual.output
    wrong = runner.invoke(app, ["retrieve", "fleet capacity", "-c", col, "--set", "entity_threshold=high"])
    assert wrong.exit_code == 1 and "entity_threshold" in wrong.output, wrong.output
    listed = runner.invoke(app, ["conflicts", "-c", col, "--json"])
    assert listed.exit_code == 0, listed.output
    decisions = json.loads(listed.output)
    assert any(d["decision"] == "dropped" and "412,000 TEU" in d["fact"] for d in decisions)
    assert all(d["reason"] for d in decisions)
    missing = runner.invoke(app, ["conflicts", "-c", col, "--doc", "nope.pdf"])
    assert missing.exit_code == 1 and "nope.pdf" in missing.output


def test_bm25_question_loads_no_embedding_stack(collection):
    """A cold `ask --mode bm25` process never imports onnxruntime or a tokenizer, nor builds an embedder."""
    code = (
        "import sys\n"
        "from hyperfolio.cli import main\n"
        f"sys.argv = ['hyperfolio', 'ask', '--mode', 'bm25', '--json', '-c', {str(collection)!r}, 'What eats fish?']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('onnxruntime', 'tokenizers', 'torch', 'model2vec') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "osprey" in done.stdout
    assert "HEAVY []" in done.stdout


def test_serve_access_log_hides_api_keys():
    import logging

    from hyperfolio.cli.serving import hide_keys

    record = logging.LogRecord(
        "uvicorn.access", 20, "", 0, '%s - "%s %s"', ("1.2.3.4", "GET", "/api/jobs/j/events?key=s3cret&x=1"), None
    )
    assert hide_keys(record)
    assert "s3cret" not in record.getMessage() and "key=***&x=1" in record.getMessage()
