"""Where an `add` stands and how long the rest will take, from the collection's progress callbacks.

The CLI's bar and the service's job events both read a `Tracker`, so they count the same pages: a file's
pages are its quick count until it is parsed, then its parsed count (a .docx has no pages of its own: one
page up front, its virtual pages once read), and a file skipped or failed leaves the total; so the bar ends
where the summary does. Pages count as they are parsed.

The time left comes from rates measured stage by stage, not from the elapsed time over the pages done
(which, after a first file that started the workers and loaded the models, said 5 minutes for one):
seconds per page the writer waited for parsing, per chunk embedded, and per chunk of what follows (the
hypergraph), each over the latest files. Embedding is measured per whole file, not per batch: a file's
chunks are embedded longest first, so its last batches are its cheapest, and a rate from them forecast a
quarter to two fifths of the embedding the next files took (`benchmarks/progress_eta.py`). The current file's
chunks still to embed go at its latest batch's pace, shrunk by how the rest of earlier files compared
with their own latest batch (about half). The first measurement of each stage carries the run's one-time
costs: the first batch loads the model, so it counts at the pace of the second; the first file's parse
starts the workers, so it is set aside; and its hypergraph stage, which on a first use also distils the
graph embedder (tens of seconds), cannot be told apart from one file's work and is set aside once a second
file is done. Later files are parsed ahead while the writer works on earlier ones, so their parsing costs only
what is measured of it, at the median file's rate (one scanned document is not every document). A file's
chunks are known once it is parsed; until then its pages times the chunks per page seen so far stand in,
so the estimate is rough while few files are done and their documents differ.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

INDEXED = frozenset({"added", "resumed", "replaced"})  # statuses whose pages the summary counts


@dataclass
class Rate:
    """Seconds per unit (page, chunk) of one stage, from its latest `window` measurements: a stage's speed
    changes during a run (at first the parsing workers take cores from the writer, then they are done).
    `robust`: the median measurement's rate rather than the pooled one, for a stage where one file can cost
    ten times the others per unit (a scanned document's pages need OCR)."""

    window: int = 4
    robust: bool = False
    first: tuple[float, float] | None = None  # (units, seconds) of the first measurement
    recent: deque[tuple[float, float]] = field(default_factory=deque)  # of the later ones

    def add(self, units: float, seconds: float) -> None:
        if units <= 0:
            return
        if self.first is None:
            self.first = (units, seconds)
            return
        self.recent.append((units, seconds))
        if len(self.recent) > self.window:
            self.recent.popleft()

    @property
    def steady(self) -> float | None:
        """Seconds per unit without the first measurement; None until there is a second."""
        if self.robust and self.recent:
            return statistics.median(s / u for u, s in self.recent)
        units = sum(u for u, _ in self.recent)
        return sum(s for _, s in self.recent) / units if units else None

    @property
    def any(self) -> float | None:
        """The steady rate, else the first measurement's."""
        if self.recent:
            return self.steady
        return self.first[1] / self.first[0] if self.first else None


@dataclass
class Tracker:
    """The state of one `add`: files, pages, the current file's stage, and the rates measured so far."""

    clock: Callable[[], float] = time.perf_counter
    plan: dict[str, int] = field(default_factory=dict)  # pages per file: quick count, then parsed; 0 if not indexed
    files_done: int = 0
    pages_indexed: int = 0  # pages of finished files the summary counts
    current: str = ""
    busy: bool = False  # between the current file's start and its end
    parsed: int = 0  # pages of the current file parsed so far
    chunks: tuple[int, int] = (0, 0)  # the current file's chunks embedded, of how many
    stage: str = ""
    started: float = 0.0
    parse: Rate = field(default_factory=lambda: Rate(robust=True))  # s/page, a file's start to its first chunk
    embed: Rate = field(default_factory=Rate)  # seconds per chunk embedded, file by file
    rest: Rate = field(default_factory=Rate)  # seconds per chunk from the last embedding to the file's end
    _file_began: float = 0.0
    _marks: dict[str, float] = field(default_factory=dict)  # when the current file's parse ended, rest began...
    _chunk_pages: tuple[int, int] = (0, 0)  # chunks and pages of files embedded so far
    _batches: list[tuple[int, float]] = field(default_factory=list)  # the current file's (chunks, seconds)
    _tail: tuple[float, float] = (0.0, 0.0)  # finished files: seconds their batches left, and as forecast

    def __post_init__(self) -> None:
        self.started = self.clock()

    @property
    def pages_total(self) -> int:
        return sum(self.plan.values())

    @property
    def pages_done(self) -> int:
        """Pages of finished files, and of the current file as they are parsed."""
        return self.pages_indexed + self.parsed

    @property
    def file_number(self) -> int:
        """1-based number of the current file: the one being worked on, else the last one finished."""
        return max(self.files_done + self.busy, 1)

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    # ------------------------------------------------------------------ callbacks
    def planned(self, pages: dict[str, int]) -> None:
        self.plan = dict(pages)

    def preparing(self, what: str) -> None:
        self.stage = what

    def file_started(self, path: str) -> None:
        self.current, self.busy, self.parsed, self.chunks, self.stage = path, True, 0, (0, 0), "reading"
        self._file_began, self._marks, self._batches = self.clock(), {}, []

    def pages_parsed(self, done: int, total: int) -> None:
        self.parsed, self.stage = done, "parsing"
        if self.current:
            self.plan[self.current] = total

    def chunks_embedded(self, count: int, total: int) -> None:
        now = self.clock()
        if "parsed" not in self._marks:
            self._marks["parsed"] = now
            self.parse.add(self.plan.get(self.current, 0), now - self._file_began)
        done_before, _ = self.chunks
        if count > done_before:
            self._batches.append((count - done_before, now - self._marks.get("embedded", now)))
        self._marks["embedded"] = now
        self.chunks, self.stage = (count, total), "embedding"

    def graph_stage(self, stage: str) -> None:
        self._marks.setdefault("rest", self.clock())
        self.stage = stage

    def file_finished(self, path: str, status: str, pages: int, chunks: int) -> None:
        """`pages`: the file's count as stored (parsed, or from the store for a file met before)."""
        now = self.clock()
        self.files_done += 1
        self.busy, self.parsed, self.stage = False, 0, status
        self.plan[path] = pages if status in INDEXED else 0
        if status not in INDEXED:
            return
        self.pages_indexed += pages
        if "embedded" in self._marks:
            self._embedding_measured()
            self.rest.add(chunks, now - self._marks["embedded"])
            embedded, counted = self._chunk_pages
            self._chunk_pages = (embedded + self.chunks[1], counted + pages)

    def _embedding_measured(self) -> None:
        """The finished file's embedding as one measurement: its batches differ (longest chunks first), the
        files less. The run's first batch loads the model: it counts at the pace of the batch after it."""
        batches = list(self._batches)
        if not batches:
            return
        if self.embed.first is None and len(batches) > 1:
            (chunks, seconds), (next_chunks, next_seconds) = batches[:2]
            batches[0] = (chunks, min(seconds, chunks * next_seconds / next_chunks))
        self._learn_tail(batches)
        self.embed.add(sum(n for n, _ in batches), sum(s for _, s in batches))

    def _learn_tail(self, batches: list[tuple[int, float]]) -> None:
        """After each batch of a finished file, the seconds its remaining chunks took and those forecast at
        that batch's pace, summed over the files: their ratio shrinks the current file's forecast."""
        total, left, done = sum(n for n, _ in batches), sum(s for _, s in batches), 0
        seconds_left, forecast = self._tail
        for chunks, seconds in batches[:-1]:  # nothing is left after the last
            left, done = left - seconds, done + chunks
            seconds_left, forecast = seconds_left + left, forecast + (total - done) * seconds / chunks
        self._tail = (seconds_left, forecast)

    # ------------------------------------------------------------------ the forecast
    def seconds_left(self) -> float | None:
        """Seconds until the last file is done, from the measured rates; None until each stage has one,
        and once every file is done."""
        embed, rest = self.embed.any, self.rest.any
        chunks, pages = self._chunk_pages
        if embed is None or rest is None or not pages or self.files_done >= len(self.plan):
            return None
        parse = self.parse.steady or 0.0  # files after the first are parsed ahead, unless measured otherwise
        index = chunks / pages * (embed + rest)  # seconds per page from its first chunk to the file's end
        upcoming = list(self.plan.values())[self.files_done + self.busy :]
        left = sum(upcoming) * (parse + index)
        if not self.busy:
            return left
        now = self.clock()
        done, total = self.chunks
        if "rest" in self._marks or (total and done >= total):
            began = self._marks.get("rest", self._marks.get("embedded", now))
            return left + max(total * rest - (now - began), 0.0)
        if "parsed" in self._marks:
            return left + self._embedding_left(embed) + total * rest
        pages_now = self.plan.get(self.current, 0)
        if self.parse.steady is None and self.parsed:  # no steady rate yet: this file's own so far
            parse = (now - self._file_began) / self.parsed
        return left + (pages_now - self.parsed) * parse + pages_now * index

    def _embedding_left(self, embed: float) -> float:
        """Seconds to embed the current file's remaining chunks: at its latest batch's pace (the shorter
        chunks come last, so shrunk as the rest of earlier files was), else at the files' rate."""
        done, total = self.chunks
        if not self._batches:
            return (total - done) * embed
        chunks, seconds = self._batches[-1]
        seconds_left, forecast = self._tail
        return (total - done) * seconds / chunks * (seconds_left / forecast if forecast > 0 else 1.0)
