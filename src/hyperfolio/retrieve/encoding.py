"""What one question costs to encode, paid once: query vectors, keywords and flat rankings per call.

A strategy that reads several sources (and `auto`, which reads them all) asks this memo instead of
its embedder or the store, so the question is embedded once per embedder, decomposed once, and
BM25 / dense rankings are fetched once per depth and scope. `TextCache` keeps what is derived from
indexed text (its words) across calls: a chunk id or a (document, page) never changes its text,
since document ids are content hashes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hyperfolio.embed.protocols import Embedder


@dataclass
class QueryMemo:
    """Per-question memo; a new `RetrievalContext` (one per call) starts an empty one."""

    vectors: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)
    values: dict[Hashable, Any] = field(default_factory=dict)

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """Rows for `texts`, embedding only those this embedder has not seen in this call."""
        key = id(embedder)
        missing = [t for t in dict.fromkeys(texts) if (key, t) not in self.vectors]
        if missing:
            for text, vector in zip(missing, embedder.embed(missing), strict=True):
                self.vectors[(key, text)] = vector
        if not texts:
            return np.zeros((0, getattr(embedder, "dim", 0)), dtype=np.float32)
        return np.stack([self.vectors[(key, t)] for t in texts])

    def value(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """`compute()` once per key in this call."""
        if key not in self.values:
            self.values[key] = compute()
        return self.values[key]


class TextCache:
    """Values derived from indexed texts, kept across questions up to `limit` entries (oldest out)."""

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self._values: dict[Hashable, Any] = {}

    def get(self, key: Hashable) -> Any | None:
        return self._values.get(key)

    def put(self, key: Hashable, value: Any) -> Any:
        if len(self._values) >= self.limit:
            for old in list(self._values)[: self.limit // 10]:  # dicts keep insertion order
                self._values.pop(old, None)  # another thread's question may have evicted it already
        self._values[key] = value
        return value
