"""Command-line face of hyperfolio (Typer + Rich). Talks only to `Collection`.

This module holds the Typer app, its global options and the table of commands; each command group lives in
its own module (`ingest`, `questions`, `pictures`, `admin`, `check`, `serving`, `keys`, `evaluation`), what
they print in `printers`, the options they share in `options`, the live progress in `progress`."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from hyperfolio.cli import admin, chat, check, evaluation, ingest, keys, pictures, questions, serving
from hyperfolio.cli.printers import console, errors, fail
from hyperfolio.config import unknown_variables
from hyperfolio.errors import HyperfolioError


class _Commands(TyperGroup):
    """Every command's errors end as one line naming what is wrong (`--debug` shows the traceback)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except HyperfolioError as exc:
            if _debugging(ctx):
                raise
            fail(str(exc))
        except (OSError, MemoryError) as exc:
            if _debugging(ctx):
                raise
            fail(f"{type(exc).__name__}: {exc}")


def _debugging(ctx: Any) -> bool:
    return bool((ctx.obj or {}).get("debug")) or os.environ.get("HYPERFOLIO_DEBUG", "") not in {"", "0"}


app = typer.Typer(
    cls=_Commands,
    help="Ask questions of complex documents, offline, with cited answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from hyperfolio.version import package_version

        console.print(f"hyperfolio {package_version()}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show the full traceback of an error.")] = False,
    show_version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Ask questions of complex documents, offline, with cited answers."""
    ctx.obj = {"debug": debug}
    for line in unknown_variables():
        errors.print(f"[yellow]warning:[/yellow] {escape(line)}", soft_wrap=True, highlight=False)


# Every command in the order `hyperfolio --help` lists them: name, function, help (None: its docstring).
COMMANDS: tuple[tuple[str, Callable[..., None], str | None], ...] = (
    ("add", ingest.add, None),
    ("ask", questions.ask, None),
    ("chat", chat.chat, None),
    ("retrieve", questions.retrieve, None),
    ("stats", admin.stats, None),
    ("estimate", ingest.estimate, None),
    ("build", ingest.build, None),
    ("conflicts", admin.conflicts, None),
    ("viz", pictures.viz, None),
    ("probe-layouts", pictures.probe_layouts, None),
    ("list", admin.list_documents, None),
    ("collections", admin.list_collections, None),
    ("remove", ingest.remove, None),
    ("export", admin.export, None),
    ("import", admin.import_, None),
    ("demo", questions.demo, None),
    ("config", admin.config_show, None),
    ("serve", serving.serve, None),
    ("mcp", serving.mcp_stdio, None),
    ("eval", evaluation.eval_command, "Measure retrieval on benchmark data (MMLongBench-Doc, Qasper, JSONL)."),
    ("judge", evaluation.judge_command, "Compare two strategies' answers with a language-model judge."),
    ("tune", evaluation.tune_command, "Fit the auto ranker to your own labelled questions."),
    ("check", check.check_command, "Find rows that point at nothing; --repair removes or rebuilds them."),
)


def _register() -> None:
    for name, command, help_text in COMMANDS:
        app.command(name=name, help=help_text)(command)
    app.add_typer(keys.app, name="keys")  # a group: create, list, revoke, audit


_register()


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM ends the CLI like Ctrl-C: worker processes are stopped, what was written stays."""
    raise SystemExit(128 + signum)


def main() -> None:  # pragma: no cover - entry point for `python -m hyperfolio`
    from rich.logging import RichHandler

    signal.signal(signal.SIGTERM, _terminated)
    level = os.environ.get("HYPERFOLIO_LOG", "WARNING").upper()
    handler = RichHandler(console=errors, show_time=False, show_path=False, markup=False, rich_tracebacks=False)
    logging.basicConfig(
        level=level if level in logging.getLevelNamesMapping() else "WARNING", format="%(message)s", handlers=[handler]
    )
    app()
