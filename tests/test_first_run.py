"""A newcomer's first hour: the README's CLI quickstart in a fresh home, one-line errors with their exit
codes, interrupts that say how to resume, and questions about documents not fully indexed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperfolio.cli import app
from hyperfolio.collection import Collection
from hyperfolio.config import Settings

README = Path(__file__).resolve().parents[1] / "README.md"
runner = CliRunner()


def fresh_env(home: Path) -> dict[str, str]:
    """A user with an empty home: no settings, no collections, XDG defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPERFOLIO_", "XDG_", "OPENAI_"))}
    env["HOME"] = str(home)
    env["COLUMNS"] = "160"
    return env


def hyperfolio(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hyperfolio", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def quickstart_lines() -> list[str]:
    """The first shell block under "Quickstart: CLI" in the README, comments stripped."""
    text = README.read_text()
    section = text[text.index("## Quickstart: CLI") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the README's CLI quickstart has no bash block"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


@pytest.mark.slow
@pytest.mark.needs("graphviz")
def test_newcomer_walks_through_the_readme_quickstart(tmp_path):
    """Demo, then the README's quickstart commands in order, each exiting 0 with useful output."""
    home = tmp_path / "home"
    home.mkdir()
    env = fresh_env(home)
    lines = quickstart_lines()
    assert lines[0].startswith("hyperfolio demo") and len(lines) >= 5
    outputs: dict[str, str] = {}
    for line in lines:
        done = subprocess.run(["bash", "-c", line], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, f"{line}\n{done.stderr}"
        outputs[line] = done.stdout
    demo = outputs[lines[0]]
    demo_dir = home / ".local/share/hyperfolio/demo"
    assert f"into the collection {demo_dir}" in demo  # it says where it indexed
    assert f"-c {demo_dir}" in demo  # and the next commands use that collection
    assert "North Sea" in demo and "p.2" in demo
    asks = [line for line in lines if line.startswith("hyperfolio ask")]
    assert asks, "the quickstart asks nothing"
    for line in asks:
        assert "Answer:" in outputs[line] and "p." in outputs[line], outputs[line]
    assert "North Sea" in outputs[asks[0]]
    assert (home / ".local/share/hyperfolio/default/hyperfolio.db").is_file()  # `add` made the default collection
    listed = next(out for line, out in outputs.items() if line.startswith("hyperfolio list"))
    assert "Northwind" in listed and "1 document" in listed and "1 documents" not in listed
    if any(line.startswith("hyperfolio viz") for line in lines):
        assert (tmp_path / "why.png").stat().st_size > 1000
    shown = next(out for line, out in outputs.items() if line.startswith("hyperfolio config show"))
    assert "top_k" in shown and "default" in shown


def test_asking_a_missing_or_empty_collection_says_so_and_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    missing = tmp_path / "typo"
    for args in (["ask", "anything", "-c", str(missing)], ["list", "-c", str(missing)], ["stats", "-c", str(missing)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, result.output
        assert f"error: no collection at {missing}" in result.output
        assert "hyperfolio add FILES -c" in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert not missing.exists()  # a mistyped --collection creates nothing
    default = runner.invoke(app, ["ask", "anything"])
    assert default.exit_code == 1 and "no collection at" in default.output
    assert default.output.rstrip().endswith("hyperfolio add FILES")  # no -c for the default collection
    assert not (tmp_path / ".local/share/hyperfolio/default").exists()
    empty = tmp_path / "empty"
    Collection(empty).close()
    result = runner.invoke(app, ["ask", "anything", "-c", str(empty)])
    assert result.exit_code == 1 and "has no documents yet" in result.output, result.output


def _settings_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None, env: dict[str, str]) -> str:
    """The output of asking a collection whose settings file holds `text`, with `env` set; exit code 1."""
    col = tmp_path / "col"
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "a.md").write_text("# A\n\nThe osprey eats fish.\n")
    if not (col / "hyperfolio.db").exists():
        assert runner.invoke(app, ["add", str(tmp_path / "docs"), "-c", str(col), "-w", "0"]).exit_code == 0
    settings = col / "settings.toml"
    settings.unlink(missing_ok=True)
    if text is not None:
        settings.write_text(text)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = runner.invoke(app, ["ask", "What does the osprey eat?", "-c", str(col)])
    for key in env:
        monkeypatch.delenv(key)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_settings_mistakes_are_one_line_naming_file_key_and_value(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    settings = tmp_path / "col" / "settings.toml"
    typo = _settings_error(tmp_path, monkeypatch, "topk = 5\n", {})
    assert str(settings) in typo and "unknown setting 'topk'" in typo and "did you mean 'top_k'" in typo
    syntax = _settings_error(tmp_path, monkeypatch, "top_k = \n", {})
    assert str(settings) in syntax and "not valid TOML" in syntax and "line 1" in syntax
    wrong_type = _settings_error(tmp_path, monkeypatch, 'top_k = "ten"\n', {})
    assert str(settings) in wrong_type and "top_k = 'ten'" in wrong_type and "whole number" in wrong_type
    section = _settings_error(tmp_path, monkeypatch, "[parse]\nocr = maybe\n", {})
    assert "not valid TOML" in section
    boolean = _settings_error(tmp_path, monkeypatch, '[parse]\nocr = "maybe"\n', {})
    assert "[parse] ocr = 'maybe'" in boolean and "true or false" in boolean
    variable = _settings_error(tmp_path, monkeypatch, None, {"HYPERFOLIO_TOP_K": "abc"})
    assert variable == "error: HYPERFOLIO_TOP_K=abc: expects a whole number"
    secret = _settings_error(tmp_path, monkeypatch, "[models]\napi_key = 12345\n", {})
    assert "12345" not in secret and "api_key" in secret  # a key's value is never echoed


def test_debug_shows_the_traceback_and_the_user_file_sits_below_the_collections(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    user = tmp_path / ".config" / "hyperfolio" / "settings.toml"
    user.parent.mkdir(parents=True)
    user.write_text("topk = 5\n")
    env = fresh_env(tmp_path)
    col = tmp_path / "col"
    Collection(col, settings=Settings.load(user=False)).close()  # the user file would stop it opening
    plain = hyperfolio(["config", "show", "-c", str(col)], env, tmp_path)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    assert plain.stderr.strip() == f"error: user settings {user}: unknown setting 'topk' (did you mean 'top_k'?)"
    debug = hyperfolio(["--debug", "config", "show", "-c", str(col)], env, tmp_path)
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "ConfigError" in debug.stderr
    user.write_text('top_k = 7\nembedder = "model2vec"\n')
    (col / "settings.toml").write_text("top_k = 9\n")
    env["HYPERFOLIO_PARSE_OCR"] = "false"
    shown = hyperfolio(["config", "show", "-c", str(col), "--json"], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = {row["key"]: row for row in json.loads(shown.stdout)}
    assert rows["top_k"]["value"] == 9 and rows["top_k"]["source"] == f"collection settings {col / 'settings.toml'}"
    assert rows["embedder"]["value"] == "model2vec" and rows["embedder"]["source"] == f"user settings {user}"
    assert rows["parse.ocr"]["value"] is False and rows["parse.ocr"]["source"] == "environment"
    assert rows["rrf_k"]["source"] == "default"


def test_version_and_help_show_what_a_newcomer_looks_for():
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"hyperfolio {version('hyperfolio')}"
    helped = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "200"})
    assert "Default: auto" in re.sub(r"[│\s]+", " ", helped.output)  # however the help box wraps


def test_a_folder_lists_unsupported_files_and_counts_read_well(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nThe osprey eats fish.\n")
    (docs / "tool.exe").write_bytes(b"MZ\x00\x00")
    (docs / "notes.xyz").write_text("something")
    result = runner.invoke(app, ["add", str(docs), "-c", str(tmp_path / "col"), "-w", "0"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "1 file: 1 added, 0 failed; 1 page indexed" in result.output
    assert "not indexed, unsupported type: 2 files (notes.xyz, tool.exe)" in result.output
    listed = runner.invoke(app, ["list", "-c", str(tmp_path / "col")])
    assert "1 document" in listed.output and "1 documents" not in listed.output


def _slow_corpus(folder: Path, count: int) -> None:
    folder.mkdir()
    for n in range(count):
        paragraphs = "\n\n".join(
            f"Region {n} station {p} produced {n * 100 + p} megawatt hours in quarter {p % 4 + 1}." for p in range(150)
        )
        (folder / f"report-{n}.md").write_text(f"# Report {n}\n\n{paragraphs}\n")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_add_says_what_finished_and_how_to_resume(tmp_path, signum):
    docs = tmp_path / "docs"
    _slow_corpus(docs, 8)
    col = tmp_path / "col"
    env = fresh_env(tmp_path)
    cmd = [sys.executable, "-m", "hyperfolio", "add", str(docs), "-c", str(col), "-w", "0"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (col / "hyperfolio.db").exists() and any(d.status == "ready" for d in Collection(col).documents()):
            break  # the models are loaded: the signal lands in the work itself
        time.sleep(0.1)
    assert proc.poll() is None, "the ingest finished before it could be interrupted"
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), out + err
    assert "Traceback" not in err, err
    message = " ".join(err.split())
    assert "interrupted:" in message and "of 8 files finished" in message, err
    assert f"to finish, run again: hyperfolio add {docs} -c {col}" in message, err
    # Asking now names the document that was cut off, if one was.
    unfinished = [d for d in Collection(col).documents() if d.status != "ready"]
    asked = hyperfolio(["ask", "How much did region 0 produce?", "-c", str(col)], env, tmp_path)
    assert asked.returncode == 0, asked.stderr
    for doc in unfinished:
        assert "not fully indexed" in asked.stderr and doc.title in asked.stderr
    again = hyperfolio(["add", str(docs), "-c", str(col), "-w", "0"], env, tmp_path)
    assert again.returncode == 0, again.stderr
    assert all(d.status == "ready" for d in Collection(col).documents()) and len(Collection(col).documents()) == 8


def test_asking_names_a_document_not_fully_indexed(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Birds\n\nThe osprey eats fish almost exclusively.\n")
    (docs / "b.md").write_text("# Trees\n\nThe English oak can live for a thousand years.\n")
    col = Collection(tmp_path / "col", embedder=embedder)
    col.add([docs / "a.md", docs / "b.md"])
    oak = next(d for d in col.documents() if d.title == "Trees")
    col.store.set_stage(oak.doc_id, "parsed")  # as a crash between parsing and embedding leaves it
    col.close()
    result = runner.invoke(app, ["ask", "What does the osprey eat?", "-c", str(tmp_path / "col")])
    assert result.exit_code == 0, result.output
    assert "not searched, not fully indexed (parsed): Trees" in " ".join(result.output.split())
    assert f"hyperfolio add {docs / 'b.md'}" in " ".join(result.output.split())
