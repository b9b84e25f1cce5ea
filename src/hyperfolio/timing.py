"""Where indexing time goes: seconds per stage, summed over pages, batches and workers.

Stage times are CPU-side wall seconds measured where the work runs (a worker process for
parsing and, with workers, chunk embedding; the writer for the rest), so with several workers
their sum exceeds the elapsed time. "embedding wait" is the writer's time waiting for the
workers' vectors after building the graph, "chunk embedding (writer)" the batches it took
back from them meanwhile (those no worker had started).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

# Display order; a stage not listed here sorts after these.
STAGES: tuple[str, ...] = (
    "text",
    "tables",
    "figures",
    "page ocr",
    "figure ocr",
    "assemble",
    "write",
    "chunk embedding",
    "chunk embedding (writer)",
    "extraction",
    "summaries",
    "merge",
    "reconcile",
    "graph writes",
    "refine",
    "graph embedding",
    "concepts",
    "themes",
    "embedding wait",
    "vector writes",
)


@dataclass
class StageTimes:
    """Seconds per stage; adding up what several measurements found."""

    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    def merge(self, other: StageTimes | Mapping[str, float]) -> None:
        for stage, seconds in (other.seconds if isinstance(other, StageTimes) else other).items():
            self.add(stage, seconds)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - began)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def ordered(self) -> list[tuple[str, float]]:
        rank = {name: i for i, name in enumerate(STAGES)}
        return sorted(self.seconds.items(), key=lambda kv: (rank.get(kv[0], len(STAGES)), kv[0]))
