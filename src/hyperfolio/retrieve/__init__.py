"""Retrieval strategies, selected by name."""

from __future__ import annotations

from typing import Literal

from hyperfolio.retrieve.auto import AutoStrategy
from hyperfolio.retrieve.base import Query, RetrievalContext, Strategy
from hyperfolio.retrieve.concept import ConceptStrategy
from hyperfolio.retrieve.dual import DualStrategy
from hyperfolio.retrieve.flat import BM25Strategy, DenseStrategy, HybridStrategy
from hyperfolio.retrieve.topdown import TopDownStrategy

STRATEGIES: dict[str, type] = {
    "auto": AutoStrategy,
    "bm25": BM25Strategy,
    "dense": DenseStrategy,
    "hybrid": HybridStrategy,
    "dual": DualStrategy,
    "concept": ConceptStrategy,
    "topdown": TopDownStrategy,
}

# The modes as a type, for request models that validate a mode; the names of STRATEGIES, in its order
# (tests/retrieve/test_modes.py keeps the two equal).
RetrievalMode = Literal["auto", "bm25", "dense", "hybrid", "dual", "concept", "topdown"]


def make_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ValueError(f"unknown retrieval mode {name!r}; choose one of {', '.join(STRATEGIES)}") from None


__all__ = ["Query", "RetrievalContext", "RetrievalMode", "Strategy", "STRATEGIES", "make_strategy"]
