"""Flow control towards one model server: how many requests to send at once, and when to stop.

`AdaptiveLimit` holds the number of requests in flight. When the server says how many parallel
slots it has (llama.cpp's /props, a probe), the limit is that number. Otherwise it starts at one
and climbs additively while each step up raises the server's measured throughput (tokens per
second across all requests) by at least 15 %; a single-slot server therefore settles at one
instead of queueing requests that time out. A timeout, 429 or 503 halves it (multiplicative
decrease). One limit is shared by every role that talks to the same server.

`CircuitBreaker` turns a stage offline after several failed calls in a row, with one warning,
instead of letting every page wait through the whole retry ladder; after a cool-down it lets one
call through again and closes when that call succeeds.

Both live on the client's event loop (one loop per ModelSet), so they use asyncio primitives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

GAIN_TO_CLIMB = 1.15  # a step up in concurrency must raise throughput by this factor to be kept


@dataclass
class _Window:
    limit: int
    started: float | None = None
    completions: int = 0
    tokens: int = 0


class AdaptiveLimit:
    """Requests in flight to one server: fixed at its slot count when known, else learned (AIMD)."""

    def __init__(self, ceiling: int, slots: int | None = None) -> None:
        self.ceiling = max(1, int(ceiling))
        self.slots: int | None = None
        self.limit = 1
        self.in_flight = 0
        self.settled = False
        self._best: tuple[int, float] | None = None  # (limit, tokens/s) of the best window so far
        self._window: _Window | None = None
        self._cond: asyncio.Condition | None = None
        if slots:
            self.set_slots(slots)

    def set_slots(self, slots: int) -> None:
        """The server said how many requests it serves at once: use that, stop learning."""
        self.slots = max(1, int(slots))
        self.limit = min(self.ceiling, self.slots)
        self.settled = True
        self._window = None

    # ------------------------------------------------------------------ acquire / release
    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def acquire(self) -> None:
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            if self._window is None and not self.settled:
                self._window = _Window(self.limit)

    async def release(self) -> None:
        cond = self._condition()
        async with cond:
            self.in_flight = max(0, self.in_flight - 1)
            cond.notify_all()

    # ------------------------------------------------------------------ feedback
    def succeeded(self, tokens: int) -> None:
        """A request finished with `tokens` generated; maybe step the limit up."""
        window = self._window
        if self.settled or window is None or window.limit != self.limit:
            return
        if window.started is None:  # the window opens at its first completion: steady state only
            window.started = time.monotonic()
            return
        window.completions += 1
        window.tokens += max(1, tokens)
        if window.completions < 2 * self.limit:
            return
        elapsed = max(1e-6, time.monotonic() - window.started)
        rate = window.tokens / elapsed
        self._window = None
        if self._best is not None and rate < self._best[1] * GAIN_TO_CLIMB:
            self.limit = self._best[0]  # more requests at once did not help: this server is saturated
            self.settled = True
            log.info("model server saturates at %d request(s) in flight (%.1f tokens/s)", self.limit, self._best[1])
            return
        self._best = (self.limit, rate)
        if self.limit < self.ceiling:
            self.limit += 1
            self._wake()
        else:
            self.settled = True

    def overloaded(self) -> None:
        """A timeout, 429 or 503: halve the limit and stop climbing."""
        before = self.limit
        self.limit = max(1, self.limit // 2)
        self.settled = True
        self._window = None
        if self.limit < before:
            log.info("model server overloaded: %d -> %d request(s) in flight", before, self.limit)

    def _wake(self) -> None:
        cond = self._cond
        if cond is None:
            return

        async def notify() -> None:
            async with cond:
                cond.notify_all()

        with contextlib.suppress(RuntimeError):  # no loop running: nobody can be waiting
            asyncio.get_running_loop().create_task(notify())


@dataclass
class _StageState:
    failures: int = 0
    opened_at: float | None = None
    trial: bool = False  # one call let through after the cool-down
    times_opened: int = 0


@dataclass
class CircuitBreaker:
    """Per stage: after `threshold` failed calls in a row, calls fail fast for `cooldown` seconds."""

    threshold: int = 3
    cooldown: float = 120.0
    _stages: dict[str, _StageState] = field(default_factory=dict)

    def allow(self, stage: str) -> bool:
        """May a call of `stage` go to the server now?"""
        state = self._stages.get(stage)
        if state is None or state.opened_at is None:
            return True
        if state.trial:
            return False
        if time.monotonic() - state.opened_at >= self.cooldown:
            state.trial = True
            return True
        return False

    def succeeded(self, stage: str) -> None:
        state = self._stages.setdefault(stage, _StageState())
        if state.opened_at is not None:
            log.warning("the model answers again: stage %s uses it again", stage)
        state.failures, state.opened_at, state.trial = 0, None, False

    def failed(self, stage: str, reason: str) -> bool:
        """Count a failed call; True when this failure opened the circuit (warned once, here)."""
        state = self._stages.setdefault(stage, _StageState())
        state.failures += 1
        if state.opened_at is not None:
            state.opened_at, state.trial = time.monotonic(), False  # the trial failed: wait again
            return False
        if state.failures < self.threshold:
            return False
        state.opened_at = time.monotonic()
        state.times_opened += 1
        log.warning(
            "the model failed %d calls in a row in stage %s (%s); that stage continues offline "
            "and tries the model again in %.0f s",
            state.failures,
            stage,
            reason,
            self.cooldown,
        )
        return True

    def is_open(self, stage: str) -> bool:
        state = self._stages.get(stage)
        return state is not None and state.opened_at is not None
