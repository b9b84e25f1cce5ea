"""A newcomer's first hour: the README's CLI quickstart in a fresh home, one-line errors with their exit
codes, interrupts that say how to resume, and questions about documents not fully indexed."""

from __future__ import annotations

import json
import os
import queue
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperfolio.cli import app
from hyperfolio.collection import Collection
from hyperfolio.config import Settings

README = Path(__file__).resolve().parents[1] / "README.md"
# One name, a different kind in each document (tests/store/test_related_documents.py has the mechanism).
HARBOUR = "# Harbour Notes\n\nGrain ships call in spring. Aurora Bay is a port on the northern coast.\n"
FLEET = "# Fleet Notes\n\nThe fleet sails in spring. Aurora Bay is a vessel of the northern fleet.\n"
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
def test_newcomer_walks_through_the_readme_quickstart(tmp_path, docx_writer):
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
    assert "into the collection demo" in demo and str(demo_dir) in demo  # it says where it indexed
    assert "-c demo" in demo  # and the next commands name that collection as every face does
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
    _one_name_one_collection(env, tmp_path)
    _related_documents_check_clean(env, tmp_path)
    _one_page_count(env, tmp_path, docx_writer)


def _one_name_one_collection(env: dict[str, str], cwd: Path) -> None:
    """Issue 26, item 5: the name the demo printed is the collection every face means by it."""
    listed = hyperfolio(["list", "-c", "demo"], env, cwd)
    assert listed.returncode == 0 and "Northwind" in listed.stdout, listed.stderr
    everything = hyperfolio(["collections", "--json"], env, cwd)
    assert everything.returncode == 0, everything.stderr
    assert {c["name"] for c in json.loads(everything.stdout)} == {"demo", "default"}
    assert not (cwd / "demo").exists()  # nothing made in the current folder


def _related_documents_check_clean(env: dict[str, str], cwd: Path) -> None:
    """Issue 26, item 1: two documents that name one thing differently leave a collection that checks clean."""
    notes = cwd / "notes"
    notes.mkdir()
    (notes / "harbour.md").write_text(HARBOUR)
    (notes / "fleet.md").write_text(FLEET)
    for name in ("harbour.md", "fleet.md"):
        added = hyperfolio(["add", str(notes / name), "-c", "notes"], env, cwd)
        assert added.returncode == 0, added.stderr
    checked = hyperfolio(["check", "-c", "notes"], env, cwd)
    assert checked.returncode == 0 and "collection OK" in checked.stdout, checked.stdout + checked.stderr


def _one_page_count(env: dict[str, str], cwd: Path, docx_writer) -> None:
    """Issue 26, item 4: a Word file with a page break is one page before it is read and two after; the
    bar, the summary, `list` and `stats` end on the same count."""
    docx_writer(cwd / "notes" / "crew.docx")
    added = hyperfolio(["add", str(cwd / "notes" / "crew.docx"), "-c", "notes"], {**env, "COLUMNS": "80"}, cwd)
    assert added.returncode == 0, added.stderr
    shown = added.stdout + added.stderr
    bar = re.findall(r"(\d+)/(\d+) pages", shown)
    summary = re.search(r"(\d+) pages? indexed", shown)
    assert bar and summary, shown
    assert bar[-1] == (summary.group(1), summary.group(1)) == ("2", "2"), shown
    listed = hyperfolio(["list", "-c", "notes", "--json"], env, cwd)
    crew = next(d for d in json.loads(listed.stdout) if d["source"].endswith("crew.docx"))
    assert crew["num_pages"] == 2, crew
    stats = hyperfolio(["stats", "-c", "notes", "--json"], env, cwd)
    assert json.loads(stats.stdout)["pages"] == 4, stats.stdout  # two Markdown notes of a page each, and crew


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
    assert default.exit_code == 1 and "no collection named 'default'" in default.output
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


VOCABULARY = (
    "turbine harbour dredging quarterly revenue region station megawatt inspection blade crew vessel tonnage "
    "channel survey budget forecast contract maintenance outage capacity grid tariff storage emission permit"
).split()


def _long_reports(folder: Path, pages: list[int], pdf_writer) -> None:
    """PDFs of full pages of varied words: long chunks, so one embedding run takes seconds on a small CPU."""
    folder.mkdir()
    rng = random.Random(26)
    for n, count in enumerate(pages):
        lines = [" ".join(rng.choice(VOCABULARY) for _ in range(12)) + "." for _ in range(20 * count)]
        texts = [f"# Report {n} part {p}\n" + "\n".join(lines[20 * p : 20 * p + 20]) for p in range(count)]
        pdf_writer(folder / f"report-{n}.pdf", texts, title=f"Report {n}")


class _Lines:
    """Reads a process's stdout on a thread, so a test can wait for a line with a deadline."""

    def __init__(self, stream) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, pattern: str, seconds: float) -> str | None:
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                line = self._queue.get(timeout=max(deadline - time.time(), 0.01))
            except queue.Empty:
                break
            if line is None:
                return None
            self.seen.append(line)
            if re.search(pattern, line):
                return line
        return None


# Each stage is told by the line `add` prints for it off a terminal; the signal comes while a later file
# is still to do, so `add` cannot have finished. Ctrl-C at a terminal reaches the whole process group (the
# parsing worker too); SIGTERM (`kill PID`) the writer alone.
STAGES = {
    "parsing": r"report-0\.pdf: parsing [1-9]\d*/",
    "embedding": r"report-1\.pdf: embedding 0/",  # the model is loaded: the signal lands in a run of it
    "hypergraph": r"report-1\.pdf: extracting",
}


@pytest.mark.long
@pytest.mark.parametrize(
    ("stage", "signum"),
    [
        pytest.param(stage, signum, id=f"{stage}-{signum.name}")
        for stage, signum in [
            ("parsing", signal.SIGINT),
            ("embedding", signal.SIGINT),
            ("hypergraph", signal.SIGINT),
            ("embedding", signal.SIGTERM),
        ]
    ],
)
def test_an_interrupted_add_says_what_finished_and_how_to_resume(tmp_path, model_cache, pdf_writer, stage, signum):
    docs = tmp_path / "docs"
    _long_reports(docs, [40, 24, 2], pdf_writer)
    col = tmp_path / "col"
    env = {**fresh_env(tmp_path), "HYPERFOLIO_CACHE": str(model_cache)}
    cmd = [sys.executable, "-m", "hyperfolio", "add", str(docs), "-c", str(col), "-w", "1"]
    proc = subprocess.Popen(
        cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    lines = _Lines(proc.stdout)
    try:
        assert lines.wait_for(STAGES[stage], 600), f"no {stage} line:\n{''.join(lines.seen)}"
        sent = time.monotonic()
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    err = proc.stderr.read()
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), "".join(lines.seen) + err
    assert took < 5.0, f"{took:.1f} s to stop"  # a bound on behaviour (the embedding run in flight is dropped)
    assert "Traceback" not in err, err
    message = " ".join(err.split())
    assert "interrupted:" in message and "of 3 files finished" in message and "cut off part-way" in message, err
    assert f"to finish, run again: hyperfolio add {docs} -c {col}" in message, err
    # Asking now names the document that was cut off (cut off while parsing the first file, nothing is written).
    written = Collection(col).documents()
    if written:
        asked = hyperfolio(["ask", "Which region had the largest turbine outage?", "-c", str(col)], env, tmp_path)
        assert asked.returncode == 0, asked.stderr
        for doc in [d for d in written if d.status != "ready"]:
            assert "not fully indexed" in asked.stderr and doc.title in asked.stderr
    again = hyperfolio(["add", str(docs), "-c", str(col), "-w", "1"], env, tmp_path)
    assert again.returncode == 0, again.stderr
    documents = Collection(col).documents()
    assert len(documents) == 3 and all(d.status == "ready" for d in documents)


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One model cache for the interrupt tests: the ONNX graph is built and the static model distilled once."""
    return tmp_path_factory.mktemp("model-cache")


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


class _SignalInFinaliser:
    """Sends this process SIGINT from a finaliser: Python raises the KeyboardInterrupt there, prints it as
    "Exception ignored" and drops it, as it does in any `__del__`, weakref callback or generator the
    garbage collector closes while the signal comes."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100_000):  # the handler runs at a loop's back edge, inside this finaliser
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped KeyboardInterrupt
def test_a_ctrl_c_that_lands_in_a_finaliser_still_stops_the_add(tmp_path, monkeypatch):
    """The SIGINT the old test saw end in exit 0: raised inside a finaliser, it was dropped and `add` ran on."""
    import hyperfolio.collection as collection

    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(3):
        (docs / f"note-{n}.md").write_text(f"# Note {n}\n\nThe osprey of lake {n} eats fish.\n")
    original, fired = collection.embedding_text, []

    def embedding_text(section_path, text):
        if not fired:  # the first chunk embedded
            fired.append(True)
            _SignalInFinaliser()  # made and dropped: its finaliser runs now
        return original(section_path, text)

    monkeypatch.setattr(collection, "embedding_text", embedding_text)
    col = tmp_path / "col"
    result = runner.invoke(app, ["add", str(docs), "-c", str(col), "-w", "0"], env={"COLUMNS": "200"})
    assert fired and result.exit_code == 130, result.output
    assert "interrupted: 0 of 3 files finished; note-0.md was cut off part-way" in " ".join(result.output.split())
    assert [d.status for d in Collection(col).documents()] == ["parsed"]  # the rest was never started


def test_a_ctrl_c_while_the_cli_loads_is_one_line_not_a_traceback():
    """The signal lands while the CLI's libraries import (here: the import of the CLI module itself raises it)."""
    script = (
        "import sys\n"
        "class Interrupting:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'hyperfolio.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupting())\n"
        "from hyperfolio.__main__ import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines() == [
        "interrupted while starting; nothing was done"
    ], done.stderr
