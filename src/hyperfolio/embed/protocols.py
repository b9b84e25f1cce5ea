"""Embedder protocols: texts in, vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Texts in, L2-normalised float32 vectors out (one row per text)."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class LoadsModel(Protocol):
    """An embedder that loads (on a first use, also prepares) its model when first asked: `add` loads it
    before the first file, so no file's measured rate carries that one-time cost."""

    @property
    def loaded(self) -> bool: ...

    def load(self) -> None: ...


@dataclass(frozen=True)
class Recipe:
    """How to build an embedder anew in another process (a worker embedding chunks): its settings name
    and batch size, which is all a packaged local model needs; small and picklable, unlike the model."""

    name: str
    batch_size: int = 64


@runtime_checkable
class Portable(Protocol):
    """An embedder another process can rebuild, giving the same vectors: `recipe()` says how (None: this
    instance cannot be rebuilt elsewhere, as one read from a path of its own)."""

    def recipe(self) -> Recipe | None: ...
