"""Where task functions run: here, in worker processes, or on a Ray cluster.

Every executor takes a plain function and its arguments and hands back a
`concurrent.futures.Future`, so the scheduler does not care which one it has. `share`
turns a file's bytes into an argument the workers can read cheaply: the path for processes
on this machine, an object in Ray's store for a cluster.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from hyperfolio.errors import HyperfolioError


class Executor(Protocol):
    name: str
    workers: int

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future: ...

    def share(self, path: Path, data: bytes) -> Any: ...

    def close(self, abandon: bool = False) -> None:
        """Stop the workers; `abandon`: after an error or interrupt, without waiting for running tasks."""


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class InlineExecutor:
    """Runs each task at once, in this process: no start-up cost, no parallelism."""

    name = "in-process"
    workers = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except Exception as exc:  # the caller sees it when it asks for the result; Ctrl-C goes through
            future.set_exception(exc)
        return future

    def share(self, path: Path, data: bytes) -> Any:
        return data

    def close(self, abandon: bool = False) -> None:
        pass


def _init_worker(memory_mb: int = 0) -> None:
    """One thread per worker for the native libraries (the pool is the parallelism), at most
    `memory_mb` of address space (a page made to exhaust memory fails its file, not the machine;
    OCR processes started here inherit the limit), and no worker outlives the writer: killed or
    crashed, its workers exit too. Ctrl-C at a terminal reaches every process of the group: a worker
    ignores it (it was started with SIGINT blocked, so one that came while it started is dropped too),
    and the writer, which handles it, stops the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if memory_mb > 0:
        import resource

        limit = memory_mb * 2**20
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    for key in ("OMP_THREAD_LIMIT", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[key] = "1"
    parent = multiprocessing.parent_process()
    if parent is not None:

        def watch() -> None:
            parent.join()  # returns when the parent process is gone
            os._exit(1)

        threading.Thread(target=watch, name="hyperfolio-parent-watch", daemon=True).start()


class ProcessExecutor:
    """A pool of worker processes on this machine, started on first use."""

    name = "processes"

    def __init__(self, workers: int, memory_mb: int = 0) -> None:
        self.workers = workers
        self.memory_mb = memory_mb  # each worker's address space (0: unlimited)
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        if self._pool is None:
            # spawn: the writer holds threads and open databases a fork must not copy
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=context, initializer=_init_worker, initargs=(self.memory_mb,)
            )
        # A worker starts here (the pool starts them as tasks come) with SIGINT blocked: see `_init_worker`.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return self._pool.submit(fn, *args)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def share(self, path: Path, data: bytes) -> Any:
        return str(path)  # workers read the file themselves: no copy through a pipe

    def close(self, abandon: bool = False) -> None:
        """`abandon` kills the workers: neither the shutdown nor this process's exit then waits for the
        pages they were parsing (seconds for a batch of heavy pages); the writer parses them again on resume."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if abandon:
            _kill_workers(pool)
        pool.shutdown(wait=not abandon, cancel_futures=True)


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    kill = getattr(pool, "kill_workers", None)  # Python 3.14
    if kill is not None:
        kill()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()


def make_executor(workers: int | None = None, ray: str | None = None, memory_mb: int = 0) -> Executor:
    """The executor for `--workers N` (0: in-process; None: one per core) or `--ray auto|local|ADDRESS`;
    `memory_mb` bounds each local worker process."""
    if ray:
        from hyperfolio.ingest.ray_executor import RayExecutor

        return RayExecutor(ray)
    count = default_workers() if workers is None else workers
    if count < 0:
        raise HyperfolioError(f"--workers must be 0 (in-process) or more, not {count}")
    return InlineExecutor() if count == 0 else ProcessExecutor(count, memory_mb)
