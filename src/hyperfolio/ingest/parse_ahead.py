"""Parsing the next files on the executor while the writer works on the current one.

Each file becomes a `FileJob`. A PDF is split into page batches, each parsed by the task
function `parse_part` wherever the executor runs it; the writer waits for a job's batches in
order, then joins them (`finish_document`). Jobs enter the window in the order given, and the
window is bounded in pages, files and bytes, which bounds memory on long folders.

A worker that dies (a file that crashes MuPDF, the machine out of memory) breaks the whole
pool: the pool is replaced, and each file whose batches were lost is parsed again on a
single-worker pool of its own, so only a file that crashes the parser by itself fails.

An encrypted file is hashed as it is on disk (its identity) and decrypted here, only when it needs
parsing; its workers get the decrypted bytes, never its path, and never the password.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperfolio.config import ParseOptions
from hyperfolio.errors import HyperfolioError, ParseError
from hyperfolio.ingest.executors import Executor, InlineExecutor, ProcessExecutor
from hyperfolio.model import Document
from hyperfolio.parse import file_kind, finish_document, page_count, read_file, read_pages
from hyperfolio.parse.limits import check_limits, check_pages, check_size
from hyperfolio.parse.unlock import Password, is_encrypted, unlock_file
from hyperfolio.timing import StageTimes

if TYPE_CHECKING:  # the cover reader imports PyMuPDF: not for whoever only asks
    from hyperfolio.parse.cover import Cover

log = logging.getLogger(__name__)

MAX_BATCH_PAGES = 8
WINDOW_FILES_PER_WORKER = 4
WINDOW_BYTES = 256 * 2**20
LOST = (BrokenProcessPool, CancelledError)  # a batch that died with its pool, not with an error of its own


def _source_bytes(source: str | bytes, name: str, fingerprint: tuple[int, int]) -> bytes:
    """A task's file: `source` is its bytes or its path; a path must still match `fingerprint` (size,
    mtime), else the file changed while being indexed."""
    if isinstance(source, bytes):
        return source
    stat = os.stat(source)
    if (stat.st_size, stat.st_mtime_ns) != fingerprint:
        raise ParseError(name, "the file changed while it was being indexed; add it again")
    return Path(source).read_bytes()


def _cover_of(job: FileJob, parts: Sequence[Any]) -> Cover | None:
    """The card's cover from the first pages pass 1 read for the index: no second reading of the file."""
    from hyperfolio.cards.cover import pdf_cover

    try:
        return pdf_cover(job.path, job.data, [page for part in parts for page in part.pages], job.pages)
    except Exception as exc:  # the card reads the cover itself, and reports what is wrong
        log.debug("%s: no cover from the parsed pages: %s", job.path, exc)
        return None


def parse_part(
    source: str | bytes, name: str, options: ParseOptions, numbers: Sequence[int], fingerprint: tuple[int, int]
) -> Any:
    """Task function: pass 1 of some pages of a PDF (`source` and `fingerprint`: `_source_bytes`)."""
    data = _source_bytes(source, name, fingerprint)
    try:
        return read_pages(Path(name), data, options, numbers)
    except HyperfolioError:
        raise
    except MemoryError:
        raise ParseError(
            name,
            f"needs more memory than a parsing worker may use ({options.worker_memory_mb:,} MB: "
            "parse.worker_memory_mb)",
        ) from None
    except Exception as exc:  # travels back as a plain, picklable error naming the file
        raise ParseError(name, f"{type(exc).__name__}: {exc}") from None


@dataclass
class FileJob:
    """One file on its way into the collection."""

    path: Path
    data: bytes = b""
    content_hash: str = ""
    fingerprint: tuple[int, int] = (0, 0)  # size and modification time when read
    pages: int = 0
    error: Exception | None = None  # unreadable file: reported when the writer reaches it
    parse: bool = True  # False when the store (or an earlier file of this run) holds this content
    parts: list[Future] = field(default_factory=list)
    cover: Cover | None = None  # the PDF's cover for its card, from its first pass-1 pages
    generation: int = 0  # which pool the parts went to
    prepared: bool = False
    password: Password | None = field(default=None, repr=False)  # for encrypted files; kept nowhere else
    locked: bool = False  # encrypted and not yet decrypted: `data` is the file's own bytes, `pages` unknown
    unlocked: bool = False  # `data` is decrypted: the file on disk is not what the parsers may read

    def read(self, options: ParseOptions | None = None) -> None:
        """Bytes, hash and page count; a failure is kept for the writer to report in order.

        An encrypted file is only hashed: whether it needs parsing (and so its password) is decided
        after, so a file already in the collection is never asked for its password again."""
        self.prepared = True
        self.locked = self.unlocked = False
        try:
            stat = self.path.stat()
            if options is not None:  # a file too large is refused before its bytes are read
                check_size(self.path, stat.st_size, options)
            self.data = read_file(self.path)
            self.fingerprint = (stat.st_size, stat.st_mtime_ns)
            self.content_hash = hashlib.sha256(self.data).hexdigest()
            if is_encrypted(self.path, self.data):
                self.locked, self.pages = True, 0
            else:
                self.pages = page_count(self.path, self.data)
        except Exception as exc:
            self.error = exc

    def check(self, options: ParseOptions) -> None:
        """The resource limits of parse/limits.py on the bytes the parsers will read; a file beyond
        one is kept failed, like a read error, and never reaches a parser."""
        if self.error is not None or self.locked:
            return
        try:
            check_limits(self.path, file_kind(self.path), self.data, options)
            check_pages(self.path, self.pages, options)
        except ParseError as exc:
            self.error = exc

    def unlock(self) -> None:
        """Decrypt a locked job with its password (a prompt is asked here) and count the plain pages;
        the hash stays that of the file's own bytes. A failure is kept like a read error."""
        if not self.locked or self.error is not None:
            return
        try:
            self.data = unlock_file(self.path, self.data, self.password)
            self.locked, self.unlocked = False, True
            self.pages = page_count(self.path, self.data)
        except Exception as exc:
            self.error = exc

    @property
    def pdf(self) -> bool:
        return file_kind(self.path) == "pdf" and self.pages > 0


class ParseAhead:
    """Keeps the executor busy with the pages of upcoming files."""

    def __init__(self, executor: Executor, options: ParseOptions, window_pages: int | None = None) -> None:
        self.executor = executor
        self.options = options
        workers = max(executor.workers, 1)
        self.window_pages = window_pages if window_pages is not None else 32 * workers
        self.window_files = WINDOW_FILES_PER_WORKER * workers + 1
        self.generation = 0
        self._workers_start: bool | None = None  # learned the first time a pool breaks

    def fill(self, jobs: Sequence[FileJob], prepare: Callable[[FileJob], None]) -> None:
        """Start parsing jobs from the front of `jobs` (the current one first) while the window has room.

        `prepare` reads a job and decides whether it needs parsing (the writer knows what is stored);
        an encrypted job that does is then decrypted. An in-process executor parses nothing ahead:
        the writer parses each file when it reaches it.
        """
        pages = held = 0
        seen: set[str] = set()
        for index, job in enumerate(jobs):
            if index > 0 and (
                self.executor.workers == 0
                or pages >= self.window_pages
                or held >= WINDOW_BYTES
                or index >= self.window_files
            ):
                return
            if not job.prepared:
                prepare(job)
                if job.content_hash in seen:  # the same content twice in one run: the second is skipped
                    job.parse = False
                if not job.parse:
                    job.data = b""  # nothing to parse: keep no bytes
                else:
                    job.unlock()
                    job.check(self.options)
            seen.add(job.content_hash)
            if job.error is None and job.parse:
                if not job.parts and job.pdf and self.executor.workers > 0:
                    self._submit(job, self.executor)
                pages += job.pages
                held += len(job.data)

    def _submit(self, job: FileJob, executor: Executor) -> None:
        workers = max(executor.workers, 1)
        size = max(1, min(MAX_BATCH_PAGES, math.ceil(job.pages / (2 * workers))))
        source = executor.share(job.path, job.data)
        if job.unlocked and isinstance(source, str):  # a path: the workers would read the encrypted file
            source = job.data
        job.generation = self.generation
        batches = [list(range(start, min(start + size, job.pages))) for start in range(0, job.pages, size)]
        job.parts = [
            executor.submit(parse_part, source, str(job.path), self.options, numbers, job.fingerprint)
            for numbers in batches
        ]

    def document(self, job: FileJob, times: StageTimes, on_page: Callable[[int, int], None] | None = None) -> Document:
        """The job's parsed document, once its batches are done; parse seconds go to `times`. `on_page` hears
        of pages as they are parsed, last of all the count the document has (a format without pages has
        its virtual pages only now, where its quick count said one)."""
        if job.locked:  # not decrypted ahead (prepared by hand): now, or its reason
            job.unlock()
            if job.error is not None:
                raise job.error
        parts = self._read_here(job, on_page) if job.pdf and not job.parts else self._parts(job, on_page)
        for part in parts:
            times.merge(part.times)
        if parts:
            job.cover = _cover_of(job, parts)
        with times.stage("assemble" if parts else "text"):
            doc = finish_document(
                job.path, job.data, self.options, parts or None, on_page=on_page, content_hash=job.content_hash
            )
        if on_page is not None:
            on_page(len(doc.pages), len(doc.pages))
        return doc

    @staticmethod
    def cover(job: FileJob) -> Cover | None:
        """The job's cover, made from the pages parsing read (None: not a PDF, or it could not be made; the card
        reads it then)."""
        return job.cover

    def _read_here(self, job: FileJob, on_page: Callable[[int, int], None] | None) -> list[Any]:
        """In this process, page by page, with progress (no workers, or none that can start)."""
        return [read_pages(job.path, job.data, self.options, range(job.pages), on_page=on_page)]

    def _parts(self, job: FileJob, on_page: Callable[[int, int], None] | None) -> list[Any]:
        try:
            return self._collect(job, on_page)
        except LOST:
            pass
        if job.generation == self.generation:  # the pool this job used broke: replace it
            self.executor.close(abandon=True)
            self.generation += 1
        if not self._workers_can_start():
            log.warning(
                "worker processes could not start (a script that adds with workers needs an "
                '`if __name__ == "__main__":` guard); parsing in this process instead'
            )
            self.executor = InlineExecutor()
            return self._read_here(job, on_page)
        alone = ProcessExecutor(1, self.options.worker_memory_mb)
        try:
            self._submit(job, alone)
            return self._collect(job, on_page)
        except LOST as exc:
            raise ParseError(str(job.path), "the PDF parser crashed on this file (its worker process died)") from exc
        finally:
            alone.close(abandon=True)
            job.generation = -1

    def _collect(self, job: FileJob, on_page: Callable[[int, int], None] | None) -> list[Any]:
        parts: list[Any] = []
        for future in job.parts:
            parts.append(future.result())
            if on_page is not None:
                on_page(sum(len(p.pages) for p in parts), job.pages)
        return parts

    def _workers_can_start(self) -> bool:
        """Whether a fresh worker process can run a task at all (once per run)."""
        if self._workers_start is None:
            if not isinstance(self.executor, ProcessExecutor):
                self._workers_start = True
            else:
                probe = ProcessExecutor(1, self.options.worker_memory_mb)
                try:
                    probe.submit(os.getpid).result()
                    self._workers_start = True
                except LOST:
                    self._workers_start = False
                finally:
                    probe.close(abandon=True)
        return self._workers_start
