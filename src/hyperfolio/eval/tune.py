"""`hyperfolio tune`: fit the `auto` ranker to a user's own labelled questions.

Questions come as JSONL — `question`, `doc` (a document of the collection: file name, title or id)
and the gold: `evidence_pages` (1-based) or `evidence_paragraphs` (text). The report compares the
ranker in use before with the new one: cross-validated with whole documents held out where there
are at least two documents (the honest figure), and on the questions it was fitted to.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hyperfolio.collection import Collection
from hyperfolio.errors import HyperfolioError
from hyperfolio.eval import metrics as m
from hyperfolio.eval.datasets import EvalQuestion
from hyperfolio.eval.ranker_training import (
    QuestionRows,
    collect,
    cross_validate,
    fit,
    order_by,
)
from hyperfolio.eval.runner import score_package
from hyperfolio.retrieve.auto import candidate_package
from hyperfolio.retrieve.ranker import RankerSet, layout_of

K_VALUES = (1, 5, 10)


def load_labelled(path: str | Path) -> list[EvalQuestion]:
    """Labelled questions from JSONL; one clear error naming the line for a bad row."""
    file = Path(path).expanduser()
    if not file.exists():
        raise HyperfolioError(f"{file}: no such file of labelled questions")
    questions: list[EvalQuestion] = []
    for number, line in enumerate(file.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise HyperfolioError(f"{file}:{number}: not JSON ({exc})") from exc
        question, doc = str(row.get("question") or "").strip(), str(row.get("doc") or "").strip()
        pages = row.get("evidence_pages") or []
        paragraphs = row.get("evidence_paragraphs") or []
        if not question or not doc or not (pages or paragraphs):
            raise HyperfolioError(f"{file}:{number}: needs question, doc and evidence_pages or evidence_paragraphs")
        questions.append(
            EvalQuestion(
                qid=str(row.get("qid") or f"{file.stem}-{number}"),
                doc_ref=doc,
                question=question,
                answers=[str(a) for a in row.get("answers", [row.get("answer")]) if a],
                evidence_pages=[int(p) for p in pages],
                evidence_paragraphs=[str(p) for p in paragraphs],
            )
        )
    if not questions:
        raise HyperfolioError(f"{file}: no questions")
    return questions


@dataclass
class TuneReport:
    questions: int
    documents: int
    evidence: str  # "pages" or "paragraphs"
    before: dict[int, float | None]  # recall@k with the ranker in use before
    fitted: dict[int, float | None]  # recall@k of the new ranker on the questions it was fitted to
    held_out: dict[int, float | None] | None  # recall@k with whole documents held out (None: one document)
    ranker: RankerSet
    changed: dict[str, tuple[float, float]] = field(default_factory=dict)  # feature -> (before, after) weight

    def table(self) -> str:
        rows = [("before", self.before), ("after (held-out documents)", self.held_out), ("after (fitted)", self.fitted)]
        head = "| ranker | " + " | ".join(f"R@{k}" for k in K_VALUES) + " |"
        lines = [head, "|" + " --- |" * (len(K_VALUES) + 1)]
        for name, recall in rows:
            if recall is not None:
                lines.append(f"| {name} | " + " | ".join(_pct(recall.get(k)) for k in K_VALUES) + " |")
        return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def ranking_recall(
    rows: Sequence[QuestionRows],
    orders: dict[str, list[tuple[int, float]]],
    evidence: str,
    doc_ids: dict[str, str],
) -> dict[int, float | None]:
    """Mean recall@1/5/10 of the questions' candidates in these orders (page or paragraph recall)."""
    per_k: dict[int, list[float | None]] = {k: [] for k in K_VALUES}
    for r in rows:
        package = candidate_package(r.question.question, "auto", r.candidates, orders[r.question.qid], {})
        recall, _ = score_package(r.question, package, evidence, K_VALUES, doc_ids[r.question.doc_ref])
        for k in K_VALUES:
            per_k[k].append(recall[k])
    return {k: m.mean(v) for k, v in per_k.items()}


def ranking_document_recall(
    rows: Sequence[QuestionRows], orders: dict[str, list[tuple[int, float]]], doc_ids: dict[str, str]
) -> float | None:
    """Share of questions whose top-ranked candidate is from their gold document: with candidates from the
    whole collection, whether the ranker found the right document at all (1.0 when scoped to it)."""
    hits = []
    for r in rows:
        order = orders[r.question.qid]
        top = r.candidates.chunks[order[0][0]].doc_id if order else None
        hits.append(None if top is None else float(top == doc_ids[r.question.doc_ref]))
    return m.mean(hits)


def tune(collection: Collection, questions: Sequence[EvalQuestion], folds: int = 5, save: bool = True) -> TuneReport:
    """Fit rankers to these questions (one per document layout they cover), report before/after, and
    (with `save`) keep them in the collection; layouts the questions do not cover keep their ranker."""
    infos = {q.doc_ref: collection.resolve(q.doc_ref) for q in questions}
    doc_ids = {ref: info.doc_id for ref, info in infos.items()}
    evidence = "pages" if any(q.evidence_pages for q in questions) else "paragraphs"
    rows = collect(
        questions,
        lambda q, exclude: collection.candidates(q.question, doc=doc_ids[q.doc_ref], exclude=exclude),
        evidence,
        ["auto"],
    )["auto"]
    layout = {r.question.qid: layout_of(infos[r.question.doc_ref].kind) for r in rows}
    current = collection.ranker
    rankers = dict(current.rankers)
    held: dict[str, list[tuple[int, float]]] = {}
    for name in sorted(set(layout.values())):
        mine = [r for r in rows if layout[r.question.qid] == name]
        rankers[name] = fit(mine)
        if len({r.group for r in mine}) >= 2:
            held.update(cross_validate(mine, folds=folds).ranking)
    tuned = RankerSet(rankers, {"tuned_on": len(questions)})

    def orders(chosen: RankerSet) -> dict[str, list[tuple[int, float]]]:
        return {r.question.qid: order_by(chosen.for_layout(layout[r.question.qid]), r.candidates) for r in rows}

    before = ranking_recall(rows, orders(current), evidence, doc_ids)
    fitted = ranking_recall(rows, orders(tuned), evidence, doc_ids)
    covered = [r for r in rows if r.question.qid in held]
    held_out = ranking_recall(covered, held, evidence, doc_ids) if covered else None
    old = current.weights()
    new = tuned.weights(next(iter(sorted(set(layout.values())))))
    changed = {f: (old.get(f, 0.0), w) for f, w in new.items() if abs(old.get(f, 0.0) - w) > 1e-9}
    tuned.meta.update({"held_out_recall": held_out, "fitted_recall": fitted})
    if save:
        collection.use_ranker(tuned, save=True)
    return TuneReport(len(questions), len(set(doc_ids.values())), evidence, before, fitted, held_out, tuned, changed)
