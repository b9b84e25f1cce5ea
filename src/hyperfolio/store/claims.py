"""Claims on documents, so that workers sharing a collection never index the same document at once.

A worker claims a document (by the hash of its content) before it parses, embeds or builds it, and
releases it when done. A claim lasts `CLAIM_SECONDS` and is renewed in the background while held, so
a worker that dies leaves a claim that lapses within that time; a worker on the same host takes a
dead process's claim at once (a killed `add` run again resumes straight away). The next `add` then
resumes the document where the dead worker stopped.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

from hyperfolio.store.base import DocumentStore

log = logging.getLogger(__name__)

CLAIM_SECONDS = 120.0  # how long a claim outlives its last renewal
RENEW_FRACTION = 0.25  # renewed every quarter of that


def worker_name() -> str:
    """Who claims: host, process and a token for this object (two in one process are two workers)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def died_here(owner: str) -> bool:
    """Whether a claim's owner was a process on this host that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def describe(owner: str) -> str:
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    return f"process {pid} on {host}" if pid else owner


class Claims:
    """The claims one worker holds on one store, renewed by a daemon thread until released."""

    def __init__(self, store: DocumentStore, seconds: float = CLAIM_SECONDS, owner: str | None = None) -> None:
        self.store = store
        self.seconds = seconds
        self.owner = owner or worker_name()
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: set[str] = set()  # claims another worker took over after a renewal came too late

    def take(self, key: str) -> str | None:
        """Claim `key`: None when this worker holds it now, else the current holder's name."""
        holder = self.store.claim(key, self.owner, self.seconds)
        if holder is not None and died_here(holder):
            log.info("taking over document %s from %s, which is gone", key[:12], describe(holder))
            holder = self.store.claim(key, self.owner, self.seconds, dead=holder)
        if holder is None:
            with self._lock:
                self._held.add(key)
                self.lost.discard(key)
                if self._thread is None:
                    self._wake = threading.Event()
                    self._thread = threading.Thread(
                        target=self._renew, args=(self._wake,), name="hyperfolio-claims", daemon=True
                    )
                    self._thread.start()
        return holder

    def release(self, key: str) -> None:
        with self._lock:
            self._held.discard(key)
        self.store.release(key, self.owner)

    def close(self) -> None:
        """Release every claim still held and stop renewing."""
        with self._lock:
            held, self._held = set(self._held), set()
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None:
            thread.join(timeout=5)
        for key in held:
            try:
                self.store.release(key, self.owner)
            except Exception as exc:  # a closed or unreachable store: the claims lapse on their own
                log.debug("claim on %s not released: %s", key, exc)

    def _renew(self, stop: threading.Event) -> None:
        while not stop.wait(self.seconds * RENEW_FRACTION):
            with self._lock:
                held = list(self._held)
            for key in held:
                try:
                    holder = self.store.claim(key, self.owner, self.seconds)
                except Exception as exc:  # the store is busy or reconnecting: try again next round
                    log.debug("claim on %s not renewed: %s", key, exc)
                    continue
                if holder is not None:
                    log.warning("another worker (%s) took over document %s", describe(holder), key[:12])
                    with self._lock:
                        self._held.discard(key)
                        self.lost.add(key)
