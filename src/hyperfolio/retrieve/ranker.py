"""The learned ranker behind `auto`: a logistic model over candidate features, small and deterministic.

Weights are plain JSON (feature names, standardisation, coefficients), so scoring needs only NumPy
and the file can ship inside the package (`auto_ranker.json`, fitted with document-held-out
cross-validation on the development sets) or live in a collection (`hyperfolio tune`).

Documents come in two layouts that ask different things of a ranker: paged ones (PDFs: questions
cite a page, and what else a page holds counts) and flowing ones (Markdown, HTML, text: evidence is
a passage). A `RankerSet` holds one ranker per layout; a candidate is scored by its document's.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from hyperfolio.errors import HyperfolioError
from hyperfolio.retrieve.feature_table import FEATURE_INDEX

PACKAGED = "auto_ranker.json"
COLLECTION_FILE = "ranker.json"  # a collection's own weights, written by `hyperfolio tune`


class _SavedAsJson:
    """Weights kept as one JSON file, whether a single ranker's or a set's."""

    def to_json(self) -> str:
        raise NotImplementedError

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.write_text(self.to_json() + "\n")
        return target


def _not_weights(origin: str, exc: Exception) -> HyperfolioError:
    return HyperfolioError(f"{origin}: not valid ranker weights ({exc})")


@dataclass
class LinearRanker(_SavedAsJson):
    features: list[str]  # the columns it reads, by name
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float = 0.0
    exclude: list[str] = field(default_factory=list)  # feature groups (and their candidates) left out
    meta: dict[str, Any] = field(default_factory=dict)  # what it was trained on, cross-validated figures

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in FEATURE_INDEX]
        if unknown:
            raise HyperfolioError(f"ranker weights name unknown features: {', '.join(unknown)}")
        self._columns = np.array([FEATURE_INDEX[f] for f in self.features], dtype=int)
        self._mean = np.asarray(self.mean, dtype=np.float64)
        self._scale = np.asarray(self.scale, dtype=np.float64)
        self._coef = np.asarray(self.coef, dtype=np.float64)

    def score(self, matrix: np.ndarray) -> np.ndarray:
        """Log-odds that each candidate row is evidence."""
        if matrix.shape[0] == 0:
            return np.zeros(0)
        x = (matrix[:, self._columns] - self._mean) / self._scale
        return x @ self._coef + self.intercept

    def weights(self) -> dict[str, float]:
        """Coefficient per feature (on standardised features): what the ranker leans on."""
        return dict(zip(self.features, self.coef, strict=True))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str, origin: str = "ranker weights") -> LinearRanker:
        try:
            data = json.loads(text)
            return cls(**data)
        except (ValueError, TypeError) as exc:
            raise _not_weights(origin, exc) from exc


PAGED_KINDS = frozenset({"pdf"})  # document kinds whose pages are real pages
ANY_LAYOUT = "*"


def layout_of(doc_kind: str) -> str:
    """'paged' for documents with real pages (PDFs), 'flowing' for text split into virtual pages."""
    return "paged" if doc_kind in PAGED_KINDS else "flowing"


@dataclass
class RankerSet(_SavedAsJson):
    """One ranker per document layout ("paged", "flowing"), or one for any ("*")."""

    rankers: dict[str, LinearRanker]
    meta: dict[str, Any] = field(default_factory=dict)

    def for_layout(self, layout: str) -> LinearRanker:
        ranker = self.rankers.get(layout) or self.rankers.get(ANY_LAYOUT)
        if ranker is None:  # a set tuned on one layout only: its ranker serves the other too
            ranker = next(iter(self.rankers.values()))
        return ranker

    @property
    def exclude(self) -> list[str]:
        """Feature groups none of its rankers reads."""
        return sorted(set.intersection(*(set(r.exclude) for r in self.rankers.values())))

    def weights(self, layout: str = ANY_LAYOUT) -> dict[str, float]:
        return self.for_layout(layout).weights()

    def to_json(self) -> str:
        return json.dumps({"rankers": {k: asdict(r) for k, r in self.rankers.items()}, "meta": self.meta}, indent=1)

    @classmethod
    def from_json(cls, text: str, origin: str = "ranker weights") -> RankerSet:
        """A set, or a single ranker's weights (which then serve every layout)."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise _not_weights(origin, exc) from exc
        if isinstance(data, dict) and "rankers" in data:
            try:
                rankers = {k: LinearRanker(**v) for k, v in data["rankers"].items()}
            except TypeError as exc:
                raise _not_weights(origin, exc) from exc
            if not rankers:
                raise HyperfolioError(f"{origin}: holds no ranker")
            return cls(rankers, data.get("meta", {}))
        return cls({ANY_LAYOUT: LinearRanker.from_json(text, origin)})


def load_ranker(collection_dir: str | Path | None = None) -> RankerSet:
    """The collection's own weights when `hyperfolio tune` wrote some, else the packaged ones."""
    if collection_dir is not None:
        own = Path(collection_dir) / COLLECTION_FILE
        if own.exists():
            return RankerSet.from_json(own.read_text(), str(own))
    text = resources.files("hyperfolio.retrieve").joinpath(PACKAGED).read_text()
    return RankerSet.from_json(text, PACKAGED)
