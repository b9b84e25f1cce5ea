"""The CLI with a PostgreSQL collection (`-c postgresql://...`): every everyday command, as a user runs it.

Each command is its own process with an empty home, so the collection's local folder (pictures,
settings) is made where a user's would be, under ~/.local/share/hyperfolio/servers/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report
from hyperfolio.store import display_name

pytestmark = pytest.mark.slow


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "hyperfolio", *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.needs("graphviz")
def test_every_everyday_command_on_a_postgres_collection(tmp_path, pg_url):
    home = tmp_path / "home"
    home.mkdir()
    pdf = write_sample_report(tmp_path / "northwind-report.pdf")
    added = run(home, "add", str(pdf), "-c", pg_url)
    assert added.returncode == 0, added.stderr[-2000:]
    assert "added" in added.stdout, added.stdout
    named = display_name(pg_url)  # the URL without a password, never the local folder
    assert f"into {named}" in added.stdout and "servers" not in added.stdout, added.stdout

    asked = run(home, "ask", SAMPLE_QUESTION, "-c", pg_url, "--json")
    assert asked.returncode == 0, asked.stderr[-2000:]
    answer = json.loads(asked.stdout)
    assert "1,850" in answer["answer"] and answer["citations"][0]["page"] == 2

    listed = run(home, "list", "-c", pg_url, "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["status"] == "ready", listed.stderr[-2000:]
    stats = run(home, "stats", "-c", pg_url, "--json")
    assert stats.returncode == 0 and json.loads(stats.stdout)["chunks"] > 0, stats.stderr[-2000:]
    titled = run(home, "stats", "-c", pg_url)
    assert f"collection {named}" in titled.stdout, titled.stdout
    drawn = run(home, "viz", "-o", str(tmp_path / "graph.png"), "-c", pg_url, "--query", SAMPLE_QUESTION)
    assert drawn.returncode == 0, drawn.stderr[-2000:]
    assert (tmp_path / "graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    conflicts = run(home, "conflicts", "-c", pg_url)
    assert conflicts.returncode == 0, conflicts.stderr[-2000:]
    exported = run(home, "export", str(tmp_path / "bundle"), "-c", pg_url)
    assert exported.returncode == 0 and (tmp_path / "bundle" / "manifest.json").is_file(), exported.stderr[-2000:]

    folders = list((home / ".local/share/hyperfolio/servers").iterdir())
    assert len(folders) == 1 and "password" not in folders[0].name  # one local folder, named without secrets
    assert not list(folders[0].glob("*.db"))  # the store and the model records are in PostgreSQL

    removed = run(home, "remove", answer["citations"][0]["doc_id"], "-c", pg_url)
    assert removed.returncode == 0, removed.stderr[-2000:]
    empty = run(home, "list", "-c", pg_url, "--json")
    assert json.loads(empty.stdout) == []
