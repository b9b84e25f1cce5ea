"""One collection namespace: a bare name means the same collection on every face (CLI, service, web app,
MCP, demo, the Python API); a path stays a path; messages name a collection without secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperfolio.cli import app
from hyperfolio.collection import Collection
from hyperfolio.errors import HyperfolioError
from hyperfolio.server.library import Library
from hyperfolio.store import display_name, resolve_location

runner = CliRunner()


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty home as the current directory; the data root is under it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("XDG_DATA_HOME", "HYPERFOLIO_ROOT", "HYPERFOLIO_COLLECTION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_names_live_under_the_data_root_and_paths_stay_paths(home, monkeypatch):
    root = home / ".local/share/hyperfolio"
    assert resolve_location("reports") == str(root / "reports")
    assert resolve_location("./reports") == str(home / "reports")
    assert resolve_location("~/reports") == str(home / "reports")
    assert resolve_location("sub/reports") == str(home / "sub/reports")
    assert resolve_location(Path("reports")) == str(home / "reports")  # a Path is always a folder
    assert resolve_location(str(home / "x")) == str(home / "x")
    url = "postgresql://me@db.example/reports"
    assert resolve_location(url) == url
    assert resolve_location(resolve_location("./reports")) == str(home / "reports")  # read twice, same folder
    with pytest.raises(HyperfolioError, match=r"not a collection name.*\./my reports"):
        resolve_location("my reports")
    monkeypatch.setenv("HYPERFOLIO_ROOT", str(home / "elsewhere"))
    assert resolve_location("reports") == str(home / "elsewhere" / "reports")


def test_messages_name_a_collection_by_its_name_or_its_url_without_password(home):
    assert display_name(resolve_location("reports")) == "reports"
    assert display_name(str(home / "x")) == str(home / "x")
    assert display_name("postgresql://me:s3cret@db.example:5432/lib") == "postgresql://me@db.example:5432/lib"
    shown = display_name("postgresql://db.example/lib?sslmode=require&password=s3cret")
    assert "s3cret" not in shown and "sslmode=require" in shown


def test_a_bare_name_is_one_collection_on_every_face(home, sample_markdown):
    added = runner.invoke(app, ["add", str(sample_markdown), "-c", "reports", "-w", "0"])
    assert added.exit_code == 0, added.output
    assert "into reports" in added.output
    root = home / ".local/share/hyperfolio"
    assert (root / "reports" / "hyperfolio.db").is_file() and not (home / "reports").exists()

    listed = runner.invoke(app, ["list", "-c", "reports"])
    assert listed.exit_code == 0 and "1 document" in listed.output, listed.output
    library = Library(root)  # what `serve`, the web app and MCP open by default
    try:
        assert library.names() == ["reports"]
        assert library.reader("reports").titles()
    finally:
        library.close()
    with Collection("reports") as col:  # the Python API reads a bare name the same way
        assert col.path == root / "reports" and col.label == "reports"
        assert len(col.documents()) == 1

    shown = runner.invoke(app, ["collections", "--json"])
    assert shown.exit_code == 0, shown.output
    assert [(c["name"], c["documents"]) for c in json.loads(shown.output)] == [("reports", 1)]


def test_a_missing_name_says_where_names_live_and_points_at_a_folder_of_that_name(home, sample_markdown):
    missing = runner.invoke(app, ["list", "-c", "nope"])
    assert missing.exit_code == 1
    line = missing.output.strip()
    assert "no collection named 'nope'" in line and "hyperfolio collections" in line
    assert line.endswith("hyperfolio add FILES -c nope") and len(line.splitlines()) == 1

    assert runner.invoke(app, ["add", str(sample_markdown), "-c", "./legacy", "-w", "0"]).exit_code == 0
    old = runner.invoke(app, ["list", "-c", "legacy"])
    assert old.exit_code == 1 and "the folder ./legacy here is one: use -c ./legacy" in old.output
    assert runner.invoke(app, ["list", "-c", "./legacy"]).exit_code == 0
    assert not (home / ".local/share/hyperfolio/legacy").exists()  # asking created nothing

    bad = runner.invoke(app, ["list", "-c", "my reports"])
    assert bad.exit_code == 2 and "not a collection name" in bad.output


@pytest.fixture
def sample_markdown(tmp_path) -> Path:
    path = tmp_path / "docs" / "ospreys.md"
    path.parent.mkdir()
    path.write_text("# Ospreys\n\nThe osprey eats fish caught in shallow water.\n", encoding="utf-8")
    return path
