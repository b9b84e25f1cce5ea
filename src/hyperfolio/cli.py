"""Command-line face of hyperfolio (Typer + Rich). Talks only to `Collection`."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from hyperfolio.cli_common import (
    CollectionOpt,
    JsonOpt,
    collection_flag,
    console,
    counted,
    errors,
    fail,
    location,
    open_existing,
)
from hyperfolio.collection import AddProgress, AddReport, AddResult, Collection
from hyperfolio.config import SECRET_KEYS, Settings, data_home, unknown_variables, user_settings_file
from hyperfolio.errors import HyperfolioError
from hyperfolio.ingest.progress import Tracker
from hyperfolio.llm.progress import clock
from hyperfolio.render import answer_dict, evidence_dict
from hyperfolio.retrieve import STRATEGIES
from hyperfolio.store import display_name, is_server_location, local_folder
from hyperfolio.timing import StageTimes


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


# `add`'s exit code when a configured model built no part of any file (all fell back offline): the
# files are indexed and searchable, but not as asked; 1 stays "a file failed".
MODEL_BUILT_NOTHING = 3

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


ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode",
        "-m",
        help=f"Retrieval mode: {', '.join(STRATEGIES)}. Default: {Settings().default_mode}, or the collection's "
        "default_mode setting.",
        show_default=False,
    ),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="A retrieval knob for this call, KEY=VALUE (e.g. scoring=keyword, concepts=15)."),
]
DocOpt = Annotated[str | None, typer.Option("--doc", "-d", help="Scope to one document (id, file name or title).")]
KOpt = Annotated[int | None, typer.Option("--k", "-k", help="How many evidence chunks to retrieve.")]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="HYPERFOLIO_SERVER",
        help="Ask a running `hyperfolio serve` at this URL (its collection named like --collection's folder); "
        "HYPERFOLIO_API_KEY is sent as its key.",
    ),
]


def _knobs(pairs: list[str] | None) -> dict[str, Any] | None:
    """KEY=VALUE pairs; the collection types them against the mode it runs (unknown keys are an error)."""
    if not pairs:
        return None
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            fail(f"--set expects KEY=VALUE, not {pair!r}")
        values[key.strip()] = value.strip()
    return values


def _query(
    method: Any, question: str, mode: str | None, k: int | None, doc: str | None, knobs: list[str] | None = None
) -> Any:
    """Run `Collection.ask` or `.retrieve`, turning user mistakes into a clear error and exit code 1."""
    options = _knobs(knobs)
    try:
        return method(question, mode=mode, k=k, doc=doc, options=options)
    except (HyperfolioError, ValueError) as exc:
        fail(str(exc))


class _BarProgress(AddProgress):
    """The live lines of `add`, drawn from a `Tracker`: a bar over the pages with the time left, then what the
    current file is doing. Each line is fitted to the terminal with the essentials kept whole (file i/n,
    stage, k/n, time left): the rate and the bar give way first, then the middle of the file name."""

    def __init__(self, console: Console, clock: Callable[[], float] = time.perf_counter) -> None:
        self.console = console
        self.tracker = Tracker(clock)
        self.signalled = 0  # a Ctrl-C or SIGTERM that came during `add` (see `_remembering_signals`)
        self._planned = False
        self._said, self._said_key, self._said_at = "", "", -1e9

    @property
    def name(self) -> str:
        return Path(self.tracker.current).name

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, 20)
        if not self._planned:
            yield Text("adding: counting the pages", style="bold")
            return
        yield self._pages_line(width)
        if self.tracker.current:
            yield Text(self._file_line(width), no_wrap=True, overflow="ellipsis")
        elif self.tracker.stage:  # before the first file: the models loading
            yield Text(self.tracker.stage, no_wrap=True, overflow="ellipsis")

    def _pages_line(self, width: int) -> RenderableType:
        """'adding ━━━━━━  24/56 pages · about 1m08s left · 0:00:35 · 0.7 pages/s': the rate only where the
        bar keeps ten cells, the bar only where it has them."""
        t = self.tracker
        left, elapsed = t.seconds_left(), t.elapsed
        tail = f"{t.pages_done}/{t.pages_total} pages" + (f" · about {clock(left)} left" if left is not None else "")
        tail += f" · {int(elapsed) // 3600}:{int(elapsed) // 60 % 60:02d}:{int(elapsed) % 60:02d}"
        rate = f" · {t.pages_done / elapsed:.1f} pages/s" if t.pages_done and elapsed > 0 else ""
        if width - cell_len(tail + rate) - len("adding  ") >= 10:
            tail += rate
        room = width - cell_len(tail) - len("adding  ")
        line = Table.grid(padding=(0, 1))
        line.add_row(
            Text("adding", style="bold"),
            *([ProgressBar(max(t.pages_total, 1), t.pages_done, width=min(room, 40))] if room >= 10 else []),
            Text(tail, no_wrap=True, overflow="ellipsis"),
        )
        return line

    def _doing(self) -> str:
        t = self.tracker
        if t.stage == "parsing":
            return f"parsing {t.parsed}/{t.plan.get(t.current, 0)} pages"
        if t.stage == "embedding":
            return f"embedding {t.chunks[0]}/{t.chunks[1]} chunks"
        return t.stage

    def _file_line(self, width: int) -> str:
        """'file 2/7 name.pdf: embedding 40/80 chunks', the name shortened in its middle to fit `width`."""
        head, doing = f"file {self.tracker.file_number}/{len(self.tracker.plan)} ", f": {self._doing()}"
        room = max(width - cell_len(head) - cell_len(doing), 12)
        return head + _shortened(self.name, room) + doing

    def _note(self, key: str) -> None:
        """Without a terminal the lines are not redrawn: say what the current file is doing, a new stage
        at once, progress within a stage at most every 5 s."""
        if self.console.is_terminal:
            return
        now, doing = self.tracker.clock(), self._doing()
        if doing != self._said and (key != self._said_key or now - self._said_at >= 5.0):
            self.console.print(f"{self.name}: {doing}", soft_wrap=True, highlight=False, markup=False)
            self._said, self._said_key, self._said_at = doing, key, now

    def stop_if_signalled(self) -> None:
        """Raise a remembered Ctrl-C (KeyboardInterrupt) or SIGTERM (SystemExit 143) again."""
        if self.signalled == signal.SIGINT:
            raise KeyboardInterrupt
        if self.signalled:
            raise SystemExit(128 + self.signalled)

    def planned(self, pages: dict[str, int]) -> None:
        self.stop_if_signalled()
        self.tracker.planned(pages)
        self._planned = True

    def preparing(self, what: str) -> None:
        self.stop_if_signalled()
        self.tracker.preparing(what)
        if not self.console.is_terminal:
            self.console.print(what, soft_wrap=True, highlight=False, markup=False)

    def file_started(self, path: str) -> None:
        self.stop_if_signalled()
        self.tracker.file_started(path)
        self._note("reading")

    def pages_parsed(self, done: int, total: int) -> None:
        self.stop_if_signalled()
        self.tracker.pages_parsed(done, total)
        self._note("parsing")

    def chunks_embedded(self, count: int, total: int = 0) -> None:
        self.stop_if_signalled()
        self.tracker.chunks_embedded(count, total)
        self._note("embedding")

    def graph_stage(self, stage: str) -> None:
        self.stop_if_signalled()
        self.tracker.graph_stage(stage)
        self._note(stage.split(" (")[0].split(":")[0])

    def file_finished(self, result: AddResult) -> None:
        self.tracker.file_finished(result.path, result.status, result.pages, result.chunks)
        self._said, self._said_key = "", ""
        if result.status == "failed":
            self.console.print(
                f"[red]failed[/red] {escape(result.path)}: {escape(result.reason)}", soft_wrap=True, highlight=False
            )
        else:
            self.console.print(
                f"[green]{result.status}[/green] {escape(Path(result.path).name)} "
                f"({counted(result.pages, 'page')}, {counted(result.chunks, 'chunk')}, {result.seconds:.1f}s)"
                + (f" - {escape(result.reason)}" if result.reason else ""),
                soft_wrap=True,
            )
        self.stop_if_signalled()  # after counting the file: it is finished


def _shortened(name: str, cells: int) -> str:
    """`name` in at most `cells` terminal cells: its middle replaced by '…', its start and suffix kept."""
    if cell_len(name) <= cells:
        return name
    tail_cells = min((cells - 1) // 2, cell_len(Path(name).suffix) + 6)
    head, tail = "", ""
    for char in name:
        if cell_len(head + char) > cells - 1 - tail_cells:
            break
        head += char
    for char in reversed(name):
        if cell_len(char + tail) > tail_cells:
            break
        tail = char + tail
    return f"{head}…{tail}"


RootOpt = Annotated[
    Path | None,
    typer.Option(
        "--root",
        "-r",
        envvar="HYPERFOLIO_ROOT",
        help="Folder whose collections are served (each by its folder name). Default: the data root, "
        "~/.local/share/hyperfolio, where -c NAME finds them too.",
    ),
]
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


@app.command()
def add(
    paths: Annotated[list[str], typer.Argument(help="Files, folders or glob patterns.")],
    collection: CollectionOpt = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", "-w", help="Processes that parse pages (default: one per core; 0: all in this process)."
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
    bar = _BarProgress(console)
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
def _remembering_signals(bar: _BarProgress) -> Iterator[None]:
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


def _say_interrupted(bar: _BarProgress, paths: list[str], collection: str | None) -> None:
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


def _print_evidence(evidence: dict[str, Any]) -> None:
    """The evidence table, from `render.evidence_dict` (the service sends the same shape)."""
    table = Table(title=f"evidence ({evidence['strategy']})", show_lines=False)
    for name in ("#", "score", "modality", "citation", "text"):
        table.add_column(name, overflow="fold")
    for item in evidence["items"]:
        text = " ".join(item["text"].split())
        table.add_row(
            str(item["rank"]),
            f"{item['score']:.3f}",
            item["modality"],
            item["citation"]["label"],
            text[:160] + ("…" if len(text) > 160 else ""),
        )
    console.print(table)
    if evidence["hyperedges"]:
        graph = Table(title="hypergraph evidence", show_lines=False)
        for name in ("level", "members", "description", "pages"):
            graph.add_column(name, overflow="fold")
        for hit in evidence["hyperedges"][:8]:
            pages = ", ".join(f"p.{p['page']}" for p in hit["pages"][:6])
            graph.add_row(hit["level"], "; ".join(hit["members"][:6]), hit["description"][:140], pages)
        console.print(graph)
    meta = evidence["meta"]
    if "concepts" in meta:
        anchors = ", ".join(f"{name} ({score:.2f})" for name, score in meta["concepts"]) or "none"
        console.print(f"concept anchors: {anchors}")
        if meta.get("relations"):
            shown = "; ".join(f"{h} -{r}-> {t}" for h, r, t in meta["relations"][:8])
            console.print(f"relations: {shown}")
        if meta.get("expanded_concepts"):
            console.print(f"reached through relations: {', '.join(meta['expanded_concepts'][:10])}")


def _print_answer(answer: dict[str, Any]) -> None:
    """The answer and its numbered citations, from `render.answer_dict`."""
    style = "bold green" if answer["sufficient"] else "bold yellow"
    console.print(f"[{style}]Answer:[/{style}] {answer['answer']}")
    for number, citation in enumerate(answer["citations"], start=1):
        section = " > ".join(citation["section_path"])
        console.print(f"  [{number}] {citation['label']}" + (f" — {section}" if section else ""))
    console.print(f"[dim]{answered_by(answer.get('answerer') or 'extractive')}[/dim]", soft_wrap=True, highlight=False)
    if (answer.get("meta") or {}).get("citation_support") == "unsupported":
        errors.print(
            "[yellow]no cited evidence holds this answer's numbers or names: the model may have made it up; "
            "check the citations (or ask again with --evidence)[/yellow]",
            soft_wrap=True,
        )


def answered_by(answerer: str) -> str:
    """Which answerer answered, in words: the model, or the extractive one and why it stood in."""
    if answerer == "llm":
        return "answered by the language model (the answer role)"
    if answerer.startswith("extractive (") and answerer.endswith(")"):
        return f"answered extractively, because the {answerer[len('extractive (') : -1]}"
    if answerer == "extractive":
        return "answered extractively (no language model is configured for answers)"
    return f"answered by {answerer}"


def _ask_service(
    url: str,
    kind: str,
    collection: str | None,
    question: str,
    mode: str | None,
    k: int | None,
    doc: str | None,
    knobs: list[str] | None,
) -> dict[str, Any]:
    """Ask a running service (its collection of the same name as --collection's last part)."""
    from hyperfolio.server.client import ServiceClient

    client = ServiceClient(url, os.environ.get("HYPERFOLIO_API_KEY", ""))
    try:
        method = client.ask if kind == "ask" else client.retrieve
        return method(Path(location(collection)).name, question, mode=mode, k=k, doc=doc, options=_knobs(knobs))
    except HyperfolioError as exc:
        fail(str(exc))
    finally:
        client.close()


def _searchable(collection: str | None) -> Collection:
    """The collection to question: it must exist and hold documents, else asking it is a mistake to report."""
    col = open_existing(collection)
    if not col.titles():  # cheap: no chunk counts
        where = location(collection)
        flag = collection_flag(where)
        fail(f"the collection {display_name(where)} has no documents yet; add some: hyperfolio add FILES{flag}")
    return col


def _say_unfinished(meta: dict[str, Any], collection: str | None) -> None:
    """Names the documents not searched because their indexing was cut off or is still running."""
    for doc in meta.get("not_fully_indexed", []):
        errors.print(
            f"[yellow]not searched, not fully indexed ({doc['status']}):[/yellow] {doc['title']} ({doc['source']}); "
            f"finish it with: hyperfolio add {doc['source']}{collection_flag(collection)}",
            soft_wrap=True,
            highlight=False,
        )


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    collection: CollectionOpt = None,
    mode: ModeOpt = None,
    doc: DocOpt = None,
    k: KOpt = None,
    as_json: JsonOpt = False,
    show_evidence: Annotated[bool, typer.Option("--evidence", help="Also print the evidence table.")] = False,
    knobs: SetOpt = None,
    server: ServerOpt = None,
) -> None:
    """Answer a question with citations (document, page, region)."""
    if server:
        answer = _ask_service(server, "ask", collection, question, mode, k, doc, knobs)
    else:
        answer = answer_dict(_query(_searchable(collection).ask, question, mode, k, doc, knobs))
    _say_unfinished(answer["evidence"]["meta"], collection)
    if as_json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return
    if show_evidence:
        _print_evidence(answer["evidence"])
    _print_answer(answer)


@app.command()
def retrieve(
    question: Annotated[str, typer.Argument(help="The question.")],
    collection: CollectionOpt = None,
    mode: ModeOpt = None,
    doc: DocOpt = None,
    k: KOpt = None,
    as_json: JsonOpt = False,
    knobs: SetOpt = None,
    server: ServerOpt = None,
) -> None:
    """Show the ranked evidence for a question, without answering."""
    if server:
        evidence = _ask_service(server, "retrieve", collection, question, mode, k, doc, knobs)
    else:
        evidence = evidence_dict(_query(_searchable(collection).retrieve, question, mode, k, doc, knobs))
    _say_unfinished(evidence["meta"], collection)
    if as_json:
        print(json.dumps(evidence, indent=2, ensure_ascii=False))
    else:
        _print_evidence(evidence)


@app.command()
def stats(collection: CollectionOpt = None, as_json: JsonOpt = False) -> None:
    """Counts of documents, pages, chunks and index sizes."""
    col = open_existing(collection)
    data = col.stats()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    table = Table(title=f"collection {col.label}")
    table.add_column("what")
    table.add_column("value")
    times = StageTimes(dict(data.pop("stage_seconds", {})))
    for key, value in data.items():
        table.add_row(key, json.dumps(value) if isinstance(value, dict) else str(value))
    console.print(table)
    if times.seconds:
        pages = max(int(data.get("pages", 0)), 1)
        stages = Table(title="indexing time by stage (summed over documents and workers)")
        for name in ("stage", "seconds", "share", "ms per page"):
            stages.add_column(name, justify="left" if name == "stage" else "right")
        for stage, seconds in times.ordered():
            share = seconds / max(times.total, 1e-9)
            stages.add_row(stage, f"{seconds:.1f}", f"{share:.0%}", f"{1000 * seconds / pages:.0f}")
        stages.add_row("all", f"{times.total:.1f}", "100%", f"{1000 * times.total / pages:.0f}")
        console.print(stages)


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


@app.command()
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
        print(json.dumps(work.to_dict(), indent=2))
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


@app.command()
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


@app.command()
def conflicts(
    collection: CollectionOpt = None,
    doc: Annotated[str | None, typer.Option("--doc", "-d", help="Only this document's decisions.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Conflicting facts found while indexing, and what was decided (kept, revised, dropped) and why."""
    col = open_existing(collection)
    try:
        decisions = col.conflicts(doc)
    except HyperfolioError as exc:
        fail(str(exc))
    if as_json:
        from dataclasses import asdict

        print(json.dumps([asdict(d) for d in decisions], indent=2, ensure_ascii=False))
        return
    if not decisions:
        console.print("no conflicts recorded")
        return
    titles = col.titles()
    table = Table(title=counted(len(decisions), "decision"))
    for name in ("document", "kind", "decision", "fact", "weighed against", "why", "evidence"):
        table.add_column(name, overflow="fold")
    for d in decisions:
        pages = ", ".join(f"p.{c.rsplit(':', 2)[1]}" for c in d.evidence)
        table.add_row(titles.get(d.doc_id, d.doc_id), d.kind, d.decision, d.fact, d.other, d.reason, pages)
    console.print(table)


@app.command()
def viz(
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write: .png, .svg or .html (interactive).")],
    collection: CollectionOpt = None,
    doc: Annotated[str | None, typer.Option("--doc", "-d", help="Draw a document's hypergraph.")] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", help="Draw the evidence behind a question.")] = None,
    entity: Annotated[str | None, typer.Option("--entity", "-e", help="Draw an entity's neighbourhood.")] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout", "-l", help="set-hier, set-radial, set-force, bi-inc, ra-cen, cli-exp; two for a dual view"
        ),
    ] = None,
    mode: ModeOpt = "dual",
) -> None:
    """Draw part of the hypergraph with ids that match the exported mapping (<out>.json)."""
    col = open_existing(collection)
    try:
        picture = col.visualize(out, doc=doc, query=query, entity=entity, layout=layout, mode=mode or "dual")
    except HyperfolioError as exc:
        fail(str(exc))
    console.print(
        f"wrote {picture.path} ({picture.entities} entities, {picture.hyperedges} hyperedges; "
        f"{picture.pruned} entities pruned to fit) and the id mapping {picture.mapping}"
    )


@app.command(name="probe-layouts")
def probe_layouts(
    collection: CollectionOpt = None,
    k: Annotated[int, typer.Option("--k", "-k", help="Probes per layout pair.")] = 15,
    doc: Annotated[str | None, typer.Option("--doc", "-d", help="Make the probes from this document.")] = None,
) -> None:
    """Pick the dual view the configured vision model reads best, and keep it as the default."""
    try:
        choice = open_existing(collection).probe_layouts(k, doc)
    except HyperfolioError as exc:
        fail(str(exc))
    for result in choice.results:
        console.print(f"  {result.pair[0]} + {result.pair[1]}: {result.correct}/{result.asked}")
    console.print(f"dual view: {choice.pair[0]} + {choice.pair[1]} ({choice.reason}; {choice.probes} probes)")


@app.command(name="list")
def list_documents(collection: CollectionOpt = None, as_json: JsonOpt = False) -> None:
    """List the indexed documents."""
    col = open_existing(collection)
    docs = col.documents()
    if as_json:
        from dataclasses import asdict

        print(json.dumps([asdict(d) for d in docs], indent=2))
        return
    table = Table(title=counted(len(docs), "document"))
    table.add_column("id", no_wrap=True)
    table.add_column("file", overflow="fold")
    table.add_column("title", overflow="fold")
    for name in ("pages", "chunks", "status"):
        table.add_column(name, justify="right" if name != "status" else "left")
    for d in docs:
        table.add_row(d.doc_id, Path(d.source).name, d.title, str(d.num_pages), str(d.num_chunks), d.status)
    console.print(table)


@app.command(name="collections")
def list_collections(
    root: Annotated[
        Path | None, typer.Option("--root", "-r", help="Folder to look in. Default: the data root.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the collections under the data root: the names -c, the service, the web app and MCP take."""
    from hyperfolio.store import COLLECTION_NAME, open_store, store_exists
    from hyperfolio.store.base import STAGE_READY

    folder = (root or data_home()).expanduser()
    rows: list[dict[str, Any]] = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not (COLLECTION_NAME.fullmatch(path.name) and store_exists(path)):
            continue
        store = open_store(path)
        try:
            docs = store.list_documents()
        finally:
            store.close()
        rows.append(
            {
                "name": path.name,
                "documents": len(docs),
                "pages": sum(d.num_pages for d in docs),
                "unfinished": sum(d.status != STAGE_READY for d in docs),
                "path": str(path),
            }
        )
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{counted(len(rows), 'collection')} in {folder}")
    for name in ("name", "documents", "pages", "path"):
        table.add_column(name, justify="right" if name in ("documents", "pages") else "left", overflow="fold")
    for row in rows:
        unfinished = f" ({row['unfinished']} unfinished)" if row["unfinished"] else ""
        table.add_row(row["name"], f"{row['documents']:,}{unfinished}", f"{row['pages']:,}", row["path"])
    console.print(table)
    if not rows:
        console.print("none yet: hyperfolio add FILES -c NAME makes one (or hyperfolio demo)", highlight=False)


@app.command()
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


def _print_bundle(report: Any) -> None:
    for name, count in report.counts.items():
        console.print(f"{name}: {count}")
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {note}")


@app.command(name="export")
def export(
    out_dir: Annotated[Path, typer.Argument(help="New directory for the bundle (JSON Lines, HIF, GraphML).")],
    collection: CollectionOpt = None,
) -> None:
    """Write a collection as a bundle another backend can import."""
    col = open_existing(collection)
    try:
        report = col.export_bundle(out_dir)
    finally:
        col.close()
    console.print(f"exported to {out_dir}")
    _print_bundle(report)


@app.command(name="import")
def import_(
    bundle_dir: Annotated[Path, typer.Argument(help="A bundle written by `hyperfolio export`.")],
    collection: CollectionOpt = None,
) -> None:
    """Load a bundle into a new, empty collection (vectors as exported; re-embedded if the bundle has none)."""
    from hyperfolio.store.bundle import read_manifest

    if not bundle_dir.is_dir():
        fail(f"{bundle_dir}: no such directory")
    read_manifest(bundle_dir)  # before opening the target, which would create it
    col = Collection(location(collection))
    try:
        report = col.import_bundle(bundle_dir)
    finally:
        col.close()
    console.print(f"imported into {location(collection)}")
    _print_bundle(report)


@app.command()
def demo(
    collection: Annotated[
        str,
        typer.Option(
            "--collection",
            "-c",
            help="The demo collection: a name (under ~/.local/share/hyperfolio) or a folder path. Default: demo.",
        ),
    ] = "demo",
    question: Annotated[str | None, typer.Option("--question", "-q", help="Ask this instead.")] = None,
) -> None:
    """Generate a sample report, index it and answer a question about it, offline."""
    from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report

    if is_server_location(collection):
        fail("the demo builds a collection folder: give -c a name or a folder path", code=2)
    where = Path(location(collection))
    where.mkdir(parents=True, exist_ok=True)
    pdf = write_sample_report(where / "sample-report.pdf")
    console.print(f"sample document: {pdf}", highlight=False, soft_wrap=True)
    col = Collection(where)
    report = col.add([pdf])
    for result in report.results:
        if not result.ok:
            fail(f"{result.path}: {result.reason}")
        console.print(
            f"{result.status}: {Path(result.path).name} ({counted(result.pages, 'page')}, "
            f"{counted(result.chunks, 'chunk')}) into the collection {col.label}",
            highlight=False,
            soft_wrap=True,
        )
    q = question or SAMPLE_QUESTION
    console.print(f"[bold]Question:[/bold] {q}")
    _print_answer(answer_dict(col.ask(q)))
    flag = collection_flag(str(where))
    console.print(
        f"\n[bold]Next[/bold] (this collection, {col.label}: {where}):\n"
        f'  hyperfolio ask "Which region had the lowest revenue?"{flag}\n'
        f"  hyperfolio list{flag}\n"
        f"  hyperfolio viz -o demo.png{flag}\n"
        "[bold]Your own documents[/bold] (the default collection, ~/.local/share/hyperfolio/default):\n"
        "  hyperfolio add ~/Documents/reports/\n"
        '  hyperfolio ask "your question"',
        highlight=False,
        soft_wrap=True,
    )


@app.command(name="config")
def config_show(
    action: Annotated[str, typer.Argument(help="show: the effective settings and where each came from.")] = "show",
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the effective settings of a collection: each value and the layer that set it (defaults, the
    user settings file, the collection's settings.toml, HYPERFOLIO_* variables)."""
    if action != "show":
        fail(f"unknown config action {action!r}; use: hyperfolio config show")
    where = location(collection)
    folder = local_folder(where) if is_server_location(where) else Path(where)
    settings, sources = Settings.resolve(folder / "settings.toml")
    rows = []
    for key, value in _flat(settings.to_dict()):
        shown = "***" if key.rsplit(".", 1)[-1] in SECRET_KEYS and value else value
        rows.append({"key": key, "value": shown, "source": sources.get(key, "default")})
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"settings of {display_name(where)}")
    for name in ("key", "value", "source"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(
            row["key"], json.dumps(row["value"]), row["source"], style=None if row["source"] == "default" else "bold"
        )
    console.print(table)
    console.print(
        f"files read (later wins): {user_settings_file()}, {folder / 'settings.toml'}; then HYPERFOLIO_* variables",
        highlight=False,
        soft_wrap=True,
    )


def _flat(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in values.items():
        if isinstance(value, dict):
            out.extend(_flat(value, f"{prefix}{key}."))
        else:
            out.append((f"{prefix}{key}", value))
    return out


@app.command()
def serve(
    root: RootOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on; beyond loopback a key is required.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", "-p", help="Port to listen on.")] = 8765,
    api_key: Annotated[
        str, typer.Option("--api-key", envvar="HYPERFOLIO_API_KEY", help="Bearer token every API call must send.")
    ] = "",
    cors: Annotated[
        list[str] | None, typer.Option("--cors-origin", help="A web origin allowed to call the API (repeatable).")
    ] = None,
    max_upload_mb: Annotated[float, typer.Option("--max-upload-mb", help="Largest file accepted.")] = 200.0,
    max_pages: Annotated[int, typer.Option("--max-pages", help="Most pages accepted per document.")] = 2000,
    workers: Annotated[
        int, typer.Option("--workers", "-w", help="Parse processes per upload (0: parse on the ingest thread).")
    ] = 0,
    mcp: Annotated[bool, typer.Option("--mcp/--no-mcp", help="Also serve the MCP endpoint at /mcp.")] = True,
) -> None:
    """Serve the HTTP API, the web app (/) and MCP (/mcp) over the collections under --root."""
    try:
        import uvicorn

        from hyperfolio.server.app import ServerConfig, create_app
    except ImportError as exc:
        fail(f"the service needs its extra: pip install 'hyperfolio[serve]' ({exc.name} is missing)")
    config = ServerConfig(
        root=root or data_home(),
        host=host,
        port=port,
        api_key=api_key,
        cors_origins=list(cors or []),
        max_upload_mb=max_upload_mb,
        max_pages=max_pages,
        workers=workers,
        mcp=mcp,
    )
    try:
        service = create_app(config)
    except HyperfolioError as exc:
        fail(str(exc))
    shown = f"[{host}]" if ":" in host else host
    console.print(
        f"hyperfolio serving {config.root} on http://{shown}:{port}/ — API schema /openapi.json"
        + (", MCP /mcp/" if mcp else "")
        + ("" if api_key else " (no key: loopback only)")
    )
    logging.getLogger("uvicorn.access").addFilter(_hide_keys)
    uvicorn.run(service, host=host, port=port, log_level=os.environ.get("HYPERFOLIO_LOG", "warning").lower())


def _hide_keys(record: logging.LogRecord) -> bool:
    """Access-log filter: the API key a browser sends as `?key=` (event streams cannot send headers)
    never reaches the log."""
    if isinstance(record.args, tuple):
        record.args = tuple(re.sub(r"([?&]key=)[^&\s]*", r"\1***", a) if isinstance(a, str) else a for a in record.args)
    return True


@app.command(name="mcp")
def mcp_stdio(
    root: RootOpt = None,
) -> None:
    """Serve the MCP tools over stdio, for an agent host to start (list, add, ask, retrieve, page, draw)."""
    try:
        from hyperfolio.server.mcp import run_stdio
    except ImportError as exc:
        fail(f"the MCP server needs its extra: pip install 'hyperfolio[serve]' ({exc.name} is missing)")
    run_stdio(root or data_home())


def _register_optional_commands() -> None:
    from hyperfolio.cli_check import check_command
    from hyperfolio.eval.command import eval_command, judge_command, tune_command

    app.command(name="eval", help="Measure retrieval on benchmark data (MMLongBench-Doc, Qasper, JSONL).")(eval_command)
    app.command(name="judge", help="Compare two strategies' answers with a language-model judge.")(judge_command)
    app.command(name="tune", help="Fit the auto ranker to your own labelled questions.")(tune_command)
    app.command(name="check", help="Find rows that point at nothing; --repair removes or rebuilds them.")(check_command)


_register_optional_commands()


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
