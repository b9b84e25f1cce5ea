"""Who built what: for each page (and chunk theme) of a document, the model or the offline path.

When a model fails (down, too slow, broken output) the build does not stop: that page is built
offline. The ledger records it, `hyperfolio stats` counts it, and `hyperfolio build --retry-model`
rebuilds the documents that have offline-built parts once the model is back; the response cache
makes the parts the model already built free, so only the failed ones cost model calls.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

MODEL = "model"
OFFLINE = "offline"


@dataclass(frozen=True)
class Outcome:
    doc_id: str
    stage: str  # extract, themes, ...
    item: str  # "p.3" for a page, a chunk id for a chunk's theme
    how: str  # MODEL or OFFLINE
    reason: str = ""  # why offline: the model's error in one line


@dataclass
class BuildLedger:
    """Outcomes of one build run, collected from the stages (thread-safe), written by the collection."""

    outcomes: list[Outcome] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def model(self, doc_id: str, stage: str, item: str) -> None:
        self._add(Outcome(doc_id, stage, item, MODEL))

    def offline(self, doc_id: str, stage: str, item: str, reason: str) -> None:
        self._add(Outcome(doc_id, stage, item, OFFLINE, " ".join(reason.split())[:300]))

    def _add(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)

    def offline_items(self) -> list[Outcome]:
        with self._lock:
            return [o for o in self.outcomes if o.how == OFFLINE]


def page_item(page: int) -> str:
    return f"p.{page}"
