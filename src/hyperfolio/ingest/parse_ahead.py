"""Parsing the next files on the executor while the writer works on the current one.

Each file becomes a `FileJob`. A PDF is split into page batches, each parsed by the task
function `parse_part` wherever the executor runs it; the writer waits for a job's batches in
order, then joins them (`finish_document`). Jobs enter the window in the order given and at
most `window_pages` pages are parsed ahead, which bounds memory on long folders.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperfolio.config import ParseOptions
from hyperfolio.errors import ParseError
from hyperfolio.ingest.executors import Executor, InlineExecutor
from hyperfolio.model import Document
from hyperfolio.parse import file_kind, finish_document, page_count, read_file, read_pages
from hyperfolio.timing import StageTimes

log = logging.getLogger(__name__)

MAX_BATCH_PAGES = 8


def parse_part(source: str | bytes, name: str, options: ParseOptions, numbers: Sequence[int]) -> Any:
    """Task function: pass 1 of some pages of a PDF. `source` is the file's bytes or its path."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    return read_pages(Path(name), data, options, numbers)


@dataclass
class FileJob:
    """One file on its way into the collection."""

    path: Path
    data: bytes = b""
    content_hash: str = ""
    pages: int = 0
    error: Exception | None = None  # unreadable file: reported when the writer reaches it
    parse: bool = True  # False when the store already holds this content
    parts: list[Future] = field(default_factory=list)
    prepared: bool = False

    def read(self) -> None:
        """Bytes, hash and page count; a failure is kept for the writer to report in order."""
        self.prepared = True
        try:
            self.data = read_file(self.path)
            self.content_hash = hashlib.sha256(self.data).hexdigest()
            self.pages = page_count(self.path, self.data)
        except Exception as exc:
            self.error = exc


class ParseAhead:
    """Keeps the executor busy with the pages of upcoming files."""

    def __init__(self, executor: Executor, options: ParseOptions, window_pages: int | None = None) -> None:
        self.executor = executor
        self.options = options
        self.completed = 0  # batches parsed: a pool that breaks before any is done never started
        workers = max(executor.workers, 1)
        self.window_pages = window_pages if window_pages is not None else 32 * workers

    def fill(self, jobs: Sequence[FileJob], prepare: Callable[[FileJob], None]) -> None:
        """Start parsing jobs from the front of `jobs` (the current one first) while the window has room.

        `prepare` reads a job and decides whether it needs parsing (the writer knows what is stored).
        An in-process executor parses nothing ahead: work starts only for the current job.
        """
        ahead = 0
        for index, job in enumerate(jobs):
            if index > 0 and (self.executor.workers == 0 or ahead >= self.window_pages):
                return
            if not job.prepared:
                prepare(job)
            if job.error is None and job.parse and not job.parts and self._is_pdf(job):
                self._submit(job)
            if not job.error and job.parse:
                ahead += job.pages

    def _is_pdf(self, job: FileJob) -> bool:
        return file_kind(job.path) == "pdf" and job.pages > 0

    def _submit(self, job: FileJob) -> None:
        workers = max(self.executor.workers, 1)
        size = max(1, min(MAX_BATCH_PAGES, math.ceil(job.pages / (2 * workers))))
        source = self.executor.share(job.path, job.data)
        for start in range(0, job.pages, size):
            numbers = list(range(start, min(start + size, job.pages)))
            job.parts.append(self.executor.submit(parse_part, source, str(job.path), self.options, numbers))

    def document(self, job: FileJob, times: StageTimes, on_page: Callable[[int, int], None] | None = None) -> Document:
        """The job's parsed document, once its batches are done; parse seconds go to `times`."""
        parts = self._parts(job, on_page)
        for part in parts:
            times.merge(part.times)
        with times.stage("assemble" if parts else "text"):
            return finish_document(job.path, job.data, self.options, parts or None, on_page=on_page)

    def _parts(self, job: FileJob, on_page: Callable[[int, int], None] | None) -> list[Any]:
        retried = False
        while True:
            parts: list[Any] = []
            try:
                for future in job.parts:
                    parts.append(future.result())
                    self.completed += 1
                    if on_page is not None:
                        on_page(sum(len(p.pages) for p in parts), job.pages)
                return parts
            except BrokenProcessPool as exc:
                if self.completed == 0 and not retried:
                    # The workers died at start-up: most often a script without an
                    # `if __name__ == "__main__":` guard, which worker processes re-run.
                    log.warning("worker processes could not start (%s); parsing in this process instead", exc)
                    self.executor.close()
                    self.executor = InlineExecutor()
                elif retried:
                    raise ParseError(str(job.path), "the PDF parser crashed on this file (its worker died)") from exc
                else:  # some file crashed a worker: try this one again alone, on fresh workers
                    self.executor.close()
                retried = True
                job.parts = []
                self._submit(job)
