"""Retrieval strategies, selected by name."""

from __future__ import annotations

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


def make_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ValueError(f"unknown retrieval mode {name!r}; choose one of {', '.join(STRATEGIES)}") from None


__all__ = ["Query", "RetrievalContext", "Strategy", "STRATEGIES", "make_strategy"]
