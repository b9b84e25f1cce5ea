"""Freed memory given back to the system while the service runs.

glibc keeps what a process frees in its arenas for reuse and returns it only now and then. A service whose
documents come and go while questions are answered frees from many threads at once (a vector matrix loaded
again, a keyword searcher replaced, an ingest's parse buffers), and its resident memory creeps up though
nothing is held: in a soak of chat clients with uploads and removals, +84 MiB in 7 minutes, all of it
returned by one `malloc_trim(0)`. So the service calls it every `TRIM_SECONDS` on a thread of its own;
where the C library has no `malloc_trim` (macOS, musl) nothing runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

TRIM_SECONDS = 30.0


def malloc_trim() -> Callable[[], int] | None:
    """glibc's `malloc_trim(0)`, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: int(trim(0))


class MemoryTrimmer:
    """A daemon thread returning freed memory every `seconds` until `stop`."""

    def __init__(self, seconds: float = TRIM_SECONDS) -> None:
        self.seconds = seconds
        self.trims = 0  # how many times memory was trimmed (a test reads it)
        self._trim = malloc_trim()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self._trim is not None

    def start(self) -> None:
        """Start trimming (again, after a `stop`: an app's lifespan may run more than once)."""
        if self._trim is None or (self._thread is not None and self._thread.is_alive()):
            return
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(self._stopped,), name="hyperfolio-memory-trim")
        self._thread.daemon = True
        self._thread.start()

    def _run(self, stopped: threading.Event) -> None:
        assert self._trim is not None
        while not stopped.wait(self.seconds):
            try:
                self._trim()
            except OSError as exc:  # never expected; the service must not stop over it
                log.warning("returning freed memory failed: %s", exc)
                return
            self.trims += 1

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
