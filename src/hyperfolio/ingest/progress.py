"""Where an `add` stands and how long the rest will take, from the collection's progress callbacks.

The CLI's bar and the service's job events both read a `Tracker`, so they count the same pages: a file's
pages are its quick count until it is parsed, then its parsed count (a .docx has no pages of its own: one
page up front, its virtual pages once read), and a file skipped or failed leaves the total; so the bar ends
where the summary does. Pages count as they are parsed.

The time left comes from rates measured stage by stage, not from the elapsed time over the pages done
(which, after a first file that started the workers and loaded the models, said 5 minutes for one):
seconds per page the writer waited for parsing, per chunk embedded, and per chunk of what follows (the
hypergraph), each over its latest measurements. The first measurement of each stage carries the run's
one-time costs and is set aside once there are others; later files are parsed ahead while the writer
works on earlier ones, so their parsing costs only what is measured of it. A file's chunks are known once
it is parsed; until then its pages times the chunks per page seen so far stand in, so the estimate is
rough while few files are done and their documents differ.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

INDEXED = frozenset({"added", "resumed", "replaced"})  # statuses whose pages the summary counts


@dataclass
class Rate:
    """Seconds per unit (page, chunk) of one stage, from its latest `window` measurements: a stage's speed
    changes during a run (at first the parsing workers take cores from the writer, then they are done)."""

    window: int = 4
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
    parse: Rate = field(default_factory=Rate)  # seconds per page from a file's start to its first chunk
    embed: Rate = field(default_factory=Rate)  # seconds per chunk embedded
    rest: Rate = field(default_factory=Rate)  # seconds per chunk from the last embedding to the file's end
    _file_began: float = 0.0
    _marks: dict[str, float] = field(default_factory=dict)  # when the current file's parse ended, rest began...
    _chunk_pages: tuple[int, int] = (0, 0)  # chunks and pages of files embedded so far

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

    def file_started(self, path: str) -> None:
        self.current, self.busy, self.parsed, self.chunks, self.stage = path, True, 0, (0, 0), "reading"
        self._file_began, self._marks = self.clock(), {}

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
            self.embed.add(count - done_before, now - self._marks.get("embedded", now))
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
            self.rest.add(chunks, now - self._marks["embedded"])
            embedded, counted = self._chunk_pages
            self._chunk_pages = (embedded + self.chunks[1], counted + pages)

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
            return left + (total - done) * embed + total * rest
        pages_now = self.plan.get(self.current, 0)
        if self.parse.steady is None and self.parsed:  # no steady rate yet: this file's own so far
            parse = (now - self._file_began) / self.parsed
        return left + (pages_now - self.parsed) * parse + pages_now * index
