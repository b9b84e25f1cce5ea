"""The live progress of long commands: `add`'s lines (pages, time left, what the current file is doing) and
`eval`'s two bars (files indexed, questions run)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markup import escape
from rich.progress import Progress, TaskID
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from hyperfolio.cli.printers import counted
from hyperfolio.collection import AddProgress, AddResult
from hyperfolio.eval.runner import EvalProgress
from hyperfolio.ingest.progress import Tracker
from hyperfolio.llm.progress import clock


class BarProgress(AddProgress):
    """The live lines of `add`, drawn from a `Tracker`: a bar over the pages with the time left, then what the
    current file is doing. Each line is fitted to the terminal with the essentials kept whole (file i/n,
    stage, k/n, time left): the rate and the bar give way first, then the middle of the file name."""

    def __init__(self, console: Console, clock: Callable[[], float] = time.perf_counter) -> None:
        self.console = console
        self.tracker = Tracker(clock)
        self.signalled = 0  # a Ctrl-C or SIGTERM that came during `add` (see `ingest._remembering_signals`)
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
        return head + shortened(self.name, room) + doing

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


def shortened(name: str, cells: int) -> str:
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


class RichEvalProgress(EvalProgress):
    """Two Rich bars: files indexed (with pages/s) and queries run."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.index_task: TaskID | None = None
        self.query_task: TaskID | None = None
        self.pages = 0

    def indexing(self, total_files: int) -> None:
        self.index_task = self.progress.add_task("indexing", total=total_files, current="")

    def file_started(self, path: str) -> None:
        if self.index_task is not None:
            self.progress.update(self.index_task, current=Path(path).name)

    def file_finished(self, result: AddResult) -> None:
        if self.index_task is None:
            return
        self.progress.update(self.index_task, advance=1)
        if result.status == "failed":
            self.progress.console.print(f"[red]failed[/red] {Path(result.path).name}: {result.reason}")
        elif result.status != "skipped":
            self.progress.console.print(
                f"[green]{result.status}[/green] {Path(result.path).name} "
                f"({result.pages} pages, {result.chunks} chunks, {result.seconds:.1f}s)"
            )

    def querying(self, total_queries: int) -> None:
        if self.index_task is not None:
            self.progress.update(self.index_task, current="done")
        self.query_task = self.progress.add_task("querying", total=total_queries, current="")

    def query_finished(self, strategy: str) -> None:
        if self.query_task is not None:
            self.progress.update(self.query_task, advance=1, current=strategy)
