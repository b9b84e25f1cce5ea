"""A line of progress for model work: the stage, calls done and left, tokens per second, time left.

Long model stages used to show a bar frozen at 0 pages/s with no word about why; this tells the
user what the model is doing and how long it will take, from the calls finished so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hyperfolio.llm.usage import UsageMeter


def clock(seconds: float) -> str:
    """12 s, 3m05s, 1h02m."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class ModelProgress:
    """Turns (calls done, calls in all) of one stage into a progress line for `report`."""

    def __init__(self, usage: UsageMeter, report: Callable[[str], None], stage: str = "extracting") -> None:
        self.usage = usage
        self.report = report
        self.stage = stage
        self.started = time.monotonic()
        self._tokens_at_start = usage.total().completion_tokens

    def line(self, done: int, total: int) -> str:
        elapsed = time.monotonic() - self.started
        tokens = self.usage.total().completion_tokens - self._tokens_at_start
        parts = [f"{self.stage} with the model: {done}/{total} calls"]
        if elapsed > 0 and tokens:
            parts.append(f"{tokens / elapsed:.1f} tokens/s")
        if 0 < done < total:
            parts.append(f"about {clock(elapsed / done * (total - done))} left")
        return ", ".join(parts)

    def calls(self, done: int, total: int) -> None:
        self.report(self.line(done, total))
