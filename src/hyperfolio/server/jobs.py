"""Ingestion jobs: uploads indexed one job at a time, in the order they came, with live events.

A job's events (planned pages, the stage of each file, pages parsed, chunks embedded, the time
left, each file's result, the end) are kept in order with a sequence number, so any number of listeners
can follow one (server-sent events) and a listener that reconnects resumes where it stopped.

The password of an encrypted upload travels with its job through the queue, in memory only: it is
no part of the job record, so no summary, event, log line or file ever holds it. A service stopped
before such a job ran resumes the upload without it, and the file then fails asking for it.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hyperfolio.collection import STAGE_READY, AddProgress, AddResult, Collection
from hyperfolio.ingest.progress import Tracker
from hyperfolio.parse.unlock import NEEDED

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
# Finished jobs kept to be read back: a service whose uploads never stop must not keep every job it ran
# (a job and its events take a few KB; a 30-minute soak ran 4,000).
KEEP_FINISHED = 256
# The library's NEEDED names the CLI's option; a client of the service sends the upload's field.
PASSWORD_NEEDED = "encrypted: a password is needed (send it with the upload, in the 'password' field)"


@dataclass
class Upload:
    """A received file: its own name (shown, never used as a path) and where it was stored."""

    name: str
    path: Path
    pages: int
    encrypted: bool = False  # needs the upload's password to be read


@dataclass
class Job:
    job_id: str
    collection: str
    files: list[Upload]
    status: str = QUEUED
    created: float = field(default_factory=time.time)
    started: float = 0.0
    finished: float = 0.0
    events: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    changed: threading.Condition = field(default_factory=threading.Condition, repr=False)

    def emit(self, kind: str, **data: Any) -> None:
        with self.changed:
            self.events.append({"seq": len(self.events) + 1, "type": kind, "time": time.time(), **data})
            self.changed.notify_all()

    def events_after(self, seq: int) -> list[dict[str, Any]]:
        with self.changed:
            return self.events[seq:]

    @property
    def over(self) -> bool:
        return self.status in (DONE, FAILED)

    def summary(self) -> dict[str, Any]:
        pages_done = sum(r["pages"] for r in self.results if r["status"] != "failed")
        seconds = (self.finished or time.time()) - self.started if self.started else 0.0
        return {
            "job_id": self.job_id,
            "collection": self.collection,
            "status": self.status,
            "files": [{"name": f.name, "pages": f.pages} for f in self.files],
            "created": self.created,
            "seconds": round(seconds, 3),
            "pages_done": pages_done,
            "results": self.results,
            "failures": [{"name": r["name"], "reason": r["reason"]} for r in self.results if r["status"] == "failed"],
            "error": self.error,
        }


def forget_upload(path: Path) -> None:
    """Delete the service's copy of an uploaded file and the fresh directory it was stored in."""
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def unfinished_uploads(col: Collection, upload_dir: Path) -> list[Upload]:
    """Uploads the service stored but did not finish indexing (it stopped while they were queued or
    being indexed): indexing them again resumes where the store left off."""
    ready = {Path(d.source) for d in col.documents() if d.status == STAGE_READY}
    found = [p for p in sorted(upload_dir.glob("*/*")) if p.is_file() and p.resolve() not in ready]
    return [Upload(p.name, p, 0) for p in found]


class JobProgress(AddProgress):
    """Turns the collection's progress callbacks into job events: pages as the CLI counts them (`Tracker`),
    pages per second and the time left."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.names = {str(f.path): f.name for f in job.files}
        self.tracker = Tracker(time.time)

    def _tick(self, stage: str, **data: Any) -> None:
        t = self.tracker
        elapsed = time.time() - self.job.started
        left = t.seconds_left()
        self.job.emit(
            "progress",
            file=self.names.get(t.current, Path(t.current).name),
            stage=stage,
            pages_done=t.pages_done,
            pages_total=t.pages_total,
            file_pages_done=t.parsed,
            file_pages=t.plan.get(t.current, 0),
            pages_per_second=round(t.pages_done / elapsed, 3) if elapsed > 0 else 0.0,
            **({"seconds_left": round(left, 1)} if left is not None else {}),
            **data,
        )

    def planned(self, pages: dict[str, int]) -> None:
        self.tracker.planned(pages)
        self.job.emit(
            "planned", pages_total=self.tracker.pages_total, files=[self.names.get(p, Path(p).name) for p in pages]
        )

    def preparing(self, what: str) -> None:
        """Its own event: no file is being worked on yet."""
        self.tracker.preparing(what)
        self.job.emit("preparing", stage=what)

    def file_started(self, path: str) -> None:
        self.tracker.file_started(path)
        self._tick("reading")

    def pages_parsed(self, done: int, total: int) -> None:
        self.tracker.pages_parsed(done, total)
        self._tick("parsing")

    def chunks_embedded(self, count: int, total: int = 0) -> None:
        self.tracker.chunks_embedded(count, total)
        self._tick("embedding", chunks_done=count, chunks_total=total)

    def graph_stage(self, stage: str) -> None:
        self.tracker.graph_stage(stage)
        self._tick(stage)

    def file_finished(self, result: AddResult) -> None:
        if result.status in ("failed", "skipped"):
            forget_upload(Path(result.path))  # nothing in the store refers to this copy
        self.tracker.file_finished(result.path, result.status, result.pages, result.chunks)
        row = asdict(result)
        row["name"] = self.names.get(result.path, Path(result.path).name)
        if row["reason"] == NEEDED:
            row["reason"] = PASSWORD_NEEDED
        del row["path"]  # where the service keeps it is nobody's business
        self.job.results.append(row)
        self.job.emit("file", **row)


class JobQueue:
    """One thread indexes the jobs in order through each collection's writer handle."""

    def __init__(self, writer_of: Any, workers: int = 0) -> None:
        self._writer_of = writer_of  # name -> Collection
        self._workers = workers
        self.keep_finished = KEEP_FINISHED
        self._jobs: dict[str, Job] = {}
        self._queue: queue.Queue[tuple[Job, str | None] | None] = queue.Queue()  # a job and its password
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hyperfolio-ingest", daemon=True)
        self._thread.start()

    def submit(self, collection: str, files: list[Upload], password: str | None = None) -> Job:
        """Queue `files`; `password` (for their encrypted ones) rides in the queue beside the job, not in it."""
        job = Job(uuid.uuid4().hex[:16], collection, files)
        with self._lock:
            self._jobs[job.job_id] = job
            self._forget_finished()
        job.emit("queued", position=self._queue.qsize() + 1)
        self._queue.put((job, password))
        return job

    def _forget_finished(self) -> None:
        """Drop the finished jobs past the latest `keep_finished` (under the lock)."""
        finished = sorted((j for j in self._jobs.values() if j.over), key=lambda j: j.finished)
        for job in finished[: max(0, len(finished) - self.keep_finished)]:
            del self._jobs[job.job_id]

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def jobs(self, collection: str | None = None) -> list[Job]:
        with self._lock:
            found = list(self._jobs.values())
        return [j for j in found if collection is None or j.collection == collection]

    def busy(self) -> bool:
        return any(not j.over for j in self.jobs())

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._process(*item)

    def _process(self, job: Job, password: str | None = None) -> None:
        job.status, job.started = RUNNING, time.time()
        job.emit("started")
        try:
            col: Collection = self._writer_of(job.collection)
            paths = [f.path for f in job.files]
            report = col.add(paths, progress=JobProgress(job), workers=self._workers, password=password)
            job.status = DONE
            job.finished = time.time()
            job.emit(
                "done",
                status=DONE,
                pages=report.pages,
                seconds=round(report.seconds, 3),
                pages_per_second=round(report.pages / report.seconds, 3) if report.seconds else 0.0,
                failed=len(report.failed),
            )
        except Exception as exc:  # a bug or a broken store: the job fails, the service goes on
            log.exception("ingestion job %s failed", job.job_id)
            job.status, job.error, job.finished = FAILED, f"{type(exc).__name__}: {exc}", time.time()
            job.emit("done", status=FAILED, error=job.error)

    def close(self) -> None:
        """Stop after the running job (its work so far is kept; `add` resumes the rest)."""
        self._queue.put(None)
        self._thread.join(timeout=1.0)
