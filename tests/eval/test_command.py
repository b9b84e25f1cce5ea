"""The `eval` command's argument handling (no indexing: that is covered by test_runner)."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from hyperfolio.cli.evaluation import eval_command


def app() -> typer.Typer:
    cli = typer.Typer()
    cli.command("eval")(eval_command)
    cli.command("noop")(lambda: None)  # two commands, so "eval" is addressed by name as in the real CLI
    return cli


def test_unknown_strategy_is_rejected(tmp_path: Path) -> None:
    result = CliRunner().invoke(app(), ["eval", "--strategies", "bm25,magic", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "magic" in result.output


def test_missing_dataset_is_skipped_with_a_message(tmp_path: Path) -> None:
    missing = tmp_path / "absent.jsonl"
    result = CliRunner().invoke(app(), ["eval", "--dataset", f"jsonl:{missing}", "--out", str(tmp_path)])
    assert result.exit_code == 0
    assert "skipped" in result.output and "absent.jsonl" in result.output


def test_collection_needs_single_dataset(tmp_path: Path) -> None:
    args = ["eval", "--dataset", "mmlongbench", "--dataset", "qasper", "--collection", str(tmp_path / "c")]
    result = CliRunner().invoke(app(), args)
    assert result.exit_code == 2
