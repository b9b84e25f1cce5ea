"""Commands that change what a collection holds: `add` (with its live progress, its summary and what
Ctrl-C leaves), `estimate` (what an `add` would cost), `build` (the hypergraph again) and `remove`."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from hyperfolio.cli.options import CollectionOpt, JsonOpt, collection_flag, location, open_existing
from hyperfolio.cli.printers import console, counted, errors, print_json
from hyperfolio.cli.progress import BarProgress
from hyperfolio.collection import AddReport, Collection
from hyperfolio.errors import HyperfolioError
from hyperfolio.llm.progress import clock

# `add`'s exit code when a configured model built no part of any file (all fell back offline): the
# files are indexed and searchable, but not as asked; 1 stays "a file failed".
MODEL_BUILT_NOTHING = 3


PasswordOpt = Annotated[
    str | None,
    typer.Option(
        "--password",
        envvar="HYPERFOLIO_PASSWORD",
        help="Password of encrypted PDFs and Office files (without it, you are asked for each one at a terminal).",
        show_default=False,
    ),
]


def _ask_password(path: Path, attempt: int) -> str | None:
    """Asks at a terminal for an encrypted file's password (again after a wrong one); None gives up."""
    if not sys.stdin.isatty():
        return None
    if attempt:
        errors.print(f"[yellow]wrong password for {path.name}[/yellow]")
    try:
        answer = typer.prompt(f"password for {path.name} (empty: skip it)", hide_input=True, default="")
    except (EOFError, typer.Abort):
        return None
    return answer or None


def add(
    paths: Annotated[list[str], typer.Argument(help="Files, folders or glob patterns.")],
    collection: CollectionOpt = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", "-w", help="Processes that parse pages and embed chunks (default: one per core; 0: here)."
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray", help="Parse on Ray: local (start one here), auto (join this machine's cluster) or an address."
        ),
    ] = None,
    password: PasswordOpt = None,
) -> None:
    """Index documents: PDF, Word, PowerPoint, Excel/CSV, images, Markdown, HTML, text. Exit code 1 if any
    file failed, 3 if a configured model built nothing (all fell back offline). Interrupted (Ctrl-C), it
    keeps what was indexed: the same command again resumes."""
    bar = BarProgress(console)
    try:
        col = Collection(location(collection))
        with _remembering_signals(bar), Live(bar, console=console, refresh_per_second=4, transient=False) as live:
            # The CLI parses on one worker per core unless told otherwise (the API stays in-process).
            chosen = workers if workers is not None else (col.settings.workers or -1)

            def prompt(path: Path, attempt: int) -> str | None:
                live.stop()  # the live lines would redraw over the question
                try:
                    return _ask_password(path, attempt)
                finally:
                    live.start()

            report = col.add(paths, progress=bar, workers=chosen, ray=ray, password=password or prompt)
            bar.stop_if_signalled()
        if not console.is_terminal:  # off a terminal rich leaves the last drawing without its line end
            console.line()
        _say_added(report, col.label)
        _say_offline_parts(col)
        col.close()
    except BaseException as exc:  # Ctrl-C or SIGTERM, wherever it lands, ends as 130 or 143 with how to resume
        signalled = _interrupt_in(exc)
        if signalled is None:
            raise
        _say_interrupted(bar, paths, collection)
        code = signalled.code if isinstance(signalled, SystemExit) and isinstance(signalled.code, int) else 130
        raise typer.Exit(code) from None
    if report.failed:
        raise typer.Exit(1)
    if report.model_built_nothing:
        raise typer.Exit(MODEL_BUILT_NOTHING)


@contextmanager
def _remembering_signals(bar: BarProgress) -> Iterator[None]:
    """Ctrl-C and SIGTERM during `add` are remembered as well as raised. Python raises them wherever the main
    thread is, and where that is a finaliser (a `__del__`, a weakref callback, a generator the garbage
    collector closes) it prints the exception and drops it: `add` then ran on to its end and exited 0. The
    progress callbacks raise a remembered signal again at the next step, so every stage stops."""

    def handler(signum: int, frame: Any) -> None:
        bar.signalled = signum
        bar.stop_if_signalled()

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handled in previous.items():
            signal.signal(signum, handled)


def _interrupt_in(exc: BaseException | None) -> BaseException | None:
    """The Ctrl-C or SIGTERM behind an exception: itself, or the cause of an error it became (a signal
    arriving while a native library loads turns into that library's ImportError)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _say_added(report: AddReport, where: str) -> None:
    """The summary of an `add`: what happened to how many files, unsupported files by name, failures."""
    by_status: dict[str, int] = {}
    for result in report.results:
        if result.status != "unsupported":
            by_status[result.status] = by_status.get(result.status, 0) + 1
    done = ", ".join(f"{n} {status}" for status, n in by_status.items() if status != "failed") or "nothing indexed"
    console.print(
        f"{counted(sum(by_status.values()), 'file')}: {done}, {by_status.get('failed', 0)} failed; "
        f"{counted(report.pages, 'page')} indexed in {report.seconds:.1f}s "
        f"({report.pages / max(report.seconds, 1e-6):.2f} pages/s) into {where}",
        soft_wrap=True,
        highlight=False,
    )
    unsupported = [r for r in report.results if r.status == "unsupported"]
    if unsupported:
        names = ", ".join(Path(r.path).name for r in unsupported[:12]) + (" …" if len(unsupported) > 12 else "")
        console.print(
            f"[yellow]not indexed, unsupported type:[/yellow] {counted(len(unsupported), 'file')} ({names})",
            soft_wrap=True,
            highlight=False,
        )
    for result in report.results:
        if result.built:
            console.print(f"  {Path(result.path).name}: {result.model_summary()}", soft_wrap=True, highlight=False)
    if report.model_built_nothing:
        errors.print(
            "[red]the configured model built nothing:[/red] every part fell back to the offline path "
            "(reasons: `hyperfolio stats`, the lines above); fix the server and run `hyperfolio build --retry-model`",
            soft_wrap=True,
        )
    for result in report.failed:
        if not Path(result.path).is_file():
            errors.print(
                f"[red]failed[/red] {escape(result.path)}: {escape(result.reason)}", soft_wrap=True, highlight=False
            )


def _say_interrupted(bar: BarProgress, paths: list[str], collection: str | None) -> None:
    """After Ctrl-C or SIGTERM: what was finished, what was cut off, and how to resume."""
    t = bar.tracker
    current = f"; {bar.name} was cut off part-way" if t.busy else ""
    again = " ".join(f'"{p}"' if " " in p else p for p in paths)
    errors.print(
        f"[yellow]interrupted:[/yellow] {t.files_done} of {counted(len(t.plan), 'file')} finished{current}. "
        f"What was indexed is kept; to finish, run again: hyperfolio add {again}{collection_flag(collection)}",
        soft_wrap=True,
        highlight=False,
    )


def _say_offline_parts(col: Collection) -> None:
    """One line per stage about parts the model failed to build, and how to redo them."""
    parts = col.offline_parts()
    if not parts:
        return
    by_stage: dict[str, int] = {}
    for _, stage, _, _ in parts:
        by_stage[stage] = by_stage.get(stage, 0) + 1
    counts = ", ".join(f"{n} {stage}" for stage, n in sorted(by_stage.items()))
    reason = parts[-1][3]
    errors.print(
        f"[yellow]built offline because the model failed:[/yellow] {counts} (last reason: {reason}). "
        "To redo just these with the model later: `hyperfolio build --retry-model`.",
        soft_wrap=True,
    )


def estimate(
    paths: Annotated[list[str], typer.Argument(help="Files, folders or glob patterns.")],
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Model calls, tokens, time and price that adding these files would take (nothing is added)."""
    col = open_existing(collection)
    work = col.estimate(paths)
    col.close()
    if as_json:
        print_json(work.to_dict())
        return
    table = Table(
        title=", ".join(
            [counted(work.documents, "document"), counted(work.pages, "page"), counted(work.chunks, "chunk")]
        )
    )
    for column in ("stage", "calls", "prompt tokens", "reply tokens", "how"):
        table.add_column(column, justify="right" if "tokens" in column or column == "calls" else "left")
    for stage in work.stages:
        table.add_row(
            stage.stage, str(stage.calls), f"{stage.prompt_tokens:,}", f"{stage.completion_tokens:,}", stage.note
        )
    console.print(table)
    if work.server:
        console.print(f"server: {work.server}", soft_wrap=True, highlight=False)
    if not work.stages:
        console.print("no language model is configured: adding runs offline, with no model calls")
    elif work.seconds is not None:
        console.print(f"model work: about {clock(work.seconds)} ({work.calls} calls, {work.tokens:,} tokens)")
    else:
        console.print(f"model work: {work.calls} calls, {work.tokens:,} tokens (configure a server to time it)")
    if work.price is not None:
        console.print(f"price: about {work.price:.4f} (from \\[models] price_input / price_output)")


def build(
    collection: CollectionOpt = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Rebuild every document's hypergraph.")] = False,
    retry_model: Annotated[
        bool,
        typer.Option("--retry-model", help="Redo the parts built offline because the model failed."),
    ] = False,
) -> None:
    """Build the hypergraph for documents indexed without one, or redo what the model failed to build."""
    col = open_existing(collection)
    reports = col.build_graph(rebuild=rebuild, retry_model=retry_model)
    for report in reports:
        console.print(
            f"{report.doc_id}: {report.entities} entities, hyperedges {report.edges}, "
            f"anchors refined {report.refine.refined} ({report.seconds:.1f}s)"
        )
    console.print(f"{counted(len(reports), 'document')} built; {col.stats()['hyperedges_by_level']}")
    _say_offline_parts(col)


def remove(
    refs: Annotated[list[str], typer.Argument(help="Document ids, file names or titles.")],
    collection: CollectionOpt = None,
) -> None:
    """Remove documents and everything only they supported."""
    col = open_existing(collection)
    failed = False
    for ref in refs:
        try:
            info = col.remove(ref)
            console.print(f"removed {info.doc_id} ({info.title})")
        except HyperfolioError as exc:
            errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
            failed = True
    if failed:
        raise typer.Exit(1)
