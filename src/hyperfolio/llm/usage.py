"""Per-stage accounting of model calls: calls, cache hits, tokens, seconds, retries and rejected replies.

Token counts come from the server's `usage` block when it sends one; otherwise they are
estimated from characters (four to a token) and the call is counted as estimated. Totals are
accumulated in table `model_usage` of the collection database, so `hyperfolio stats` can show
them across runs, and kept in memory for progress displays (`snapshot()`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hyperfolio.llm.owned_records import RecordsUser
from hyperfolio.store import ModelRecordStore, model_records_from, store_exists
from hyperfolio.store.model_records import USAGE_COLUMNS

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 256  # a rough flat estimate for one image when the server reports nothing

_COLUMNS = USAGE_COLUMNS


@dataclass
class StageUsage:
    calls: int = 0  # HTTP requests that returned a reply
    cache_hits: int = 0  # replies served from the cache (no request, no tokens)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0  # time spent waiting on the server
    estimated_calls: int = 0  # calls whose token counts are estimates (no `usage` from the server)
    retries: int = 0  # attempts that failed and were tried again
    rejected: int = 0  # replies that parsed and validated but were refused by llm/reply_checks.py

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def estimated(self) -> bool:
        return self.estimated_calls > 0

    def add(self, other: StageUsage) -> None:
        for name in _COLUMNS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["total_tokens"] = self.total_tokens
        out["estimated"] = self.estimated
        return out


def estimate_tokens(messages_or_text: str | Sequence[Mapping[str, Any]]) -> int:
    """Characters / 4 of the text in a reply or a message list; each image counts IMAGE_TOKENS."""
    if isinstance(messages_or_text, str):
        return -(-len(messages_or_text) // CHARS_PER_TOKEN)
    chars = 0
    images = 0
    for message in messages_or_text:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, Mapping):
                    continue
                if part.get("type") == "text":
                    chars += len(str(part.get("text", "")))
                elif part.get("type") in {"image_url", "input_image", "image"}:
                    images += 1
        chars += 4  # role and separators
    return -(-chars // CHARS_PER_TOKEN) + images * IMAGE_TOKENS


class UsageMeter(RecordsUser):
    """Thread-safe per-stage counters; with a collection's model records, every record is also
    accumulated there (records opened from a location are closed with the meter)."""

    def __init__(self, records: ModelRecordStore | str | Path | None = None) -> None:
        super().__init__(records)
        self._lock = threading.Lock()
        self._stages: dict[str, StageUsage] = {}

    def record(
        self,
        stage: str,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        seconds: float = 0.0,
        estimated: bool = False,
        cache_hit: bool = False,
        retries: int = 0,
    ) -> None:
        delta = StageUsage(
            calls=0 if cache_hit else 1,
            cache_hits=1 if cache_hit else 0,
            prompt_tokens=0 if cache_hit else int(prompt_tokens),
            completion_tokens=0 if cache_hit else int(completion_tokens),
            seconds=float(seconds),
            estimated_calls=1 if estimated and not cache_hit else 0,
            retries=int(retries),
        )
        self._apply(stage, delta)

    def record_hit(self, stage: str) -> None:
        self.record(stage, cache_hit=True)

    def record_retry(self, stage: str, seconds: float = 0.0) -> None:
        self._apply(stage, StageUsage(retries=1, seconds=float(seconds)))

    def record_rejected(self, stage: str) -> None:
        """One reply refused for its content (an echo of the schema or prompt, a loop); its call is already counted."""
        self._apply(stage, StageUsage(rejected=1))

    def _apply(self, stage: str, delta: StageUsage) -> None:
        with self._lock:
            self._stages.setdefault(stage, StageUsage()).add(delta)
        if self._records is not None:
            self._records.add_usage(stage, {c: getattr(delta, c) for c in _COLUMNS})

    def snapshot(self) -> dict[str, StageUsage]:
        """This meter's counts since it was created (a copy), by stage."""
        with self._lock:
            return {stage: StageUsage(**asdict(u)) for stage, u in self._stages.items()}

    def total(self) -> StageUsage:
        out = StageUsage()
        for usage in self.snapshot().values():
            out.add(usage)
        return out

    def totals(self) -> dict[str, StageUsage]:
        """Counts accumulated in the database over every run (this meter's counts if it has none)."""
        if self._records is None:
            return self.snapshot()
        return _read(self._records)

    def reset(self) -> None:
        """Forget the counts, in memory and in the database."""
        with self._lock:
            self._stages.clear()
        if self._records is not None:
            self._records.reset_usage()


def _read(records: ModelRecordStore) -> dict[str, StageUsage]:
    return {stage: StageUsage(**counts) for stage, counts in records.usage().items()}


def read_usage(location: str | Path) -> dict[str, StageUsage]:
    """Accumulated usage by stage of the collection at `location` ({} if none recorded; nothing is created)."""
    if not store_exists(location):
        return {}
    records = model_records_from(location)[0]
    try:
        return _read(records)
    finally:
        records.close()
