"""Fitting the `auto` ranker from labelled questions, and judging it honestly.

A question's candidates are labelled by its gold evidence (a chunk on a gold page, or a chunk that
holds a gold paragraph). The ranker is a logistic regression on standardised features, each
question weighted equally (its positives and its negatives each carry half its weight), so long
documents with many candidates do not drown short ones. Every figure it is judged by comes from
cross-validation with whole documents held out: the documents of a fold are never seen in fitting.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from hyperfolio.errors import HyperfolioError
from hyperfolio.eval.datasets import EvalQuestion
from hyperfolio.eval.metrics import paragraph_matches
from hyperfolio.retrieve.auto import order_rows
from hyperfolio.retrieve.feature_table import FEATURES, feature_columns
from hyperfolio.retrieve.features import Candidates
from hyperfolio.retrieve.ranker import LinearRanker

# `auto` and its ablations: the feature groups (and the candidates only they find) each leaves out.
AUTO_VARIANTS: dict[str, tuple[str, ...]] = {
    "auto": (),
    "auto-nograph": ("graph", "walk", "concept", "theme"),  # flat sources and layout features only
    "auto-nowalk": ("walk",),  # all but the random walk over the hypergraph
    "auto-noconcept": ("concept",),
    "auto-notheme": ("theme",),
}
DEFAULT_C = 0.5  # inverse regularisation strength of the logistic regression


@dataclass
class QuestionRows:
    """One question's candidates and labels under one variant."""

    question: EvalQuestion
    group: str  # the document it belongs to: folds never split a document
    candidates: Candidates
    labels: np.ndarray
    seconds: float = 0.0  # time to gather the candidates and their features

    @property
    def trainable(self) -> bool:
        return bool(self.labels.any()) and not bool(self.labels.all())


def label(question: EvalQuestion, candidates: Candidates, evidence: str) -> np.ndarray:
    """1 for candidates that are gold evidence: on a gold page, or holding a gold paragraph."""
    if evidence == "pages":
        gold = set(question.evidence_pages)
        return np.array([float(c.page in gold) for c in candidates.chunks])
    paragraphs = [p for group in question.evidence_groups for p in group]
    return np.array([float(any(paragraph_matches(p, c.text) for p in paragraphs)) for c in candidates.chunks])


def collect(
    questions: Sequence[EvalQuestion],
    gather: Callable[[EvalQuestion, tuple[str, ...]], Candidates],
    evidence: str,
    variants: Sequence[str],
    on_question: Callable[[], None] | None = None,
) -> dict[str, list[QuestionRows]]:
    """Candidates and labels of every question under every variant (`gather` asks the collection)."""
    out: dict[str, list[QuestionRows]] = {v: [] for v in variants}
    for question in questions:
        for variant in variants:
            began = time.perf_counter()
            candidates = gather(question, AUTO_VARIANTS[variant])
            seconds = time.perf_counter() - began
            rows = QuestionRows(question, question.doc_ref, candidates, label(question, candidates, evidence), seconds)
            out[variant].append(rows)
        if on_question is not None:
            on_question()
    return out


def fit(
    rows: Sequence[QuestionRows],
    exclude: Sequence[str] = (),
    c: float = DEFAULT_C,
    question_weights: Sequence[float] | None = None,
) -> LinearRanker:
    """A logistic ranker over the columns of the groups not excluded, each question weighted equally, or
    by `question_weights` (one per question: so that sets or scopes can weigh what the caller decides)."""
    try:  # training only: queries never import it, and the default install leaves it out
        from sklearn.linear_model import LogisticRegression
    except ModuleNotFoundError as exc:
        raise HyperfolioError(
            "fitting a ranker needs scikit-learn, which the default install leaves out: pip install 'hyperfolio[train]'"
        ) from exc

    columns = feature_columns(exclude)
    x, y, weights = training_matrix(rows, columns, question_weights)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    model = LogisticRegression(C=c, max_iter=2000)
    model.fit((x - mean) / scale, y, sample_weight=weights)
    return LinearRanker(
        features=[FEATURES[i][0] for i in columns],
        mean=[round(float(v), 6) for v in mean],
        scale=[round(float(v), 6) for v in scale],
        coef=[round(float(v), 6) for v in model.coef_[0]],
        intercept=round(float(model.intercept_[0]), 6),
        exclude=list(exclude),
        meta={
            "questions": sum(r.trainable for r in rows),
            "candidates": int(len(y)),
            "positives": int(y.sum()),
            "C": c,
        },
    )


def training_matrix(
    rows: Sequence[QuestionRows], columns: Sequence[int], question_weights: Sequence[float] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels and sample weights of the trainable questions: a question's positives and its
    negatives each carry half its weight (1, or its `question_weights` entry), scaled to a mean of 1 a
    question so that C means the same whatever the weights."""
    given = [1.0] * len(rows) if question_weights is None else list(question_weights)
    if len(given) != len(rows):
        raise ValueError("one weight per question's rows")
    usable = [(r, w) for r, w in zip(rows, given, strict=True) if r.trainable and w > 0]
    if not usable:
        raise ValueError("no question has both evidence and non-evidence among its candidates")
    x = np.vstack([r.candidates.matrix[:, list(columns)] for r, _ in usable])
    y = np.concatenate([r.labels for r, _ in usable])
    weights = np.concatenate([w * _question_weights(r.labels) for r, w in usable])
    return x, y, weights * len(usable) / weights.sum()


def _question_weights(labels: np.ndarray) -> np.ndarray:
    positives = max(1.0, float(labels.sum()))
    negatives = max(1.0, float(len(labels) - labels.sum()))
    return np.where(labels > 0, 0.5 / positives, 0.5 / negatives)


def assign_folds(groups: Sequence[str], folds: int, seed: int = 13) -> dict[str, int]:
    """Documents dealt into `folds` folds in a seeded shuffle: deterministic, whole documents only."""
    distinct = sorted(set(groups))
    random.Random(seed).shuffle(distinct)
    count = max(2, min(folds, len(distinct)))
    return {doc: i % count for i, doc in enumerate(distinct)}


@dataclass
class HeldOut:
    """Rankings of every question, each from a ranker that never saw its document."""

    ranking: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # qid -> (row, score) best first
    fold: dict[str, int] = field(default_factory=dict)  # qid -> fold
    rankers: list[LinearRanker] = field(default_factory=list)  # one per fold


def cross_validate(
    rows: Sequence[QuestionRows],
    exclude: Sequence[str] = (),
    folds: int = 5,
    c: float = DEFAULT_C,
    seed: int = 13,
    doc_ids: dict[str, str] | None = None,
) -> HeldOut:
    """A fold's questions ranked by a ranker fitted on the other folds'. With `doc_ids` (group -> doc id),
    candidates came from a whole collection: the fold's documents' candidates are dropped from the
    training questions too, so no ranker sees any part of a document it is judged on."""
    fold_of = assign_folds([r.group for r in rows], folds, seed)
    out = HeldOut()
    for fold in sorted(set(fold_of.values())):
        unseen = {doc_ids[group] for group, f in fold_of.items() if f == fold} if doc_ids else set()
        ranker = fit([without_documents(r, unseen) for r in rows if fold_of[r.group] != fold], exclude, c)
        out.rankers.append(ranker)
        for r in rows:
            if fold_of[r.group] == fold:
                out.ranking[r.question.qid] = order_by(ranker, r.candidates)
                out.fold[r.question.qid] = fold
    return out


def without_documents(rows: QuestionRows, doc_ids: set[str]) -> QuestionRows:
    """The rows without the candidates of these documents (so a ranker never sees a held-out document)."""
    keep = [i for i, c in enumerate(rows.candidates.chunks) if c.doc_id not in doc_ids]
    if len(keep) == len(rows.candidates.chunks):
        return rows
    candidates = rows.candidates
    kept = replace(
        candidates,
        chunks=[candidates.chunks[i] for i in keep],
        matrix=candidates.matrix[keep],
        sources=[candidates.sources[i] for i in keep],
    )
    return replace(rows, candidates=kept, labels=rows.labels[keep])


def order_by(ranker: LinearRanker, candidates: Candidates) -> list[tuple[int, float]]:
    return order_rows(candidates, ranker.score(candidates.matrix))
