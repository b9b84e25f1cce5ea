"""Choose the abstention floor (`min_anchor_share`) by cross-validation with whole documents held out.

Every question of the dev sets given — MMLongBench-Doc's unanswerable ones too — is asked of its own
document; the share of the question's anchors (names, years, quantities) found in the evidence the
answer reads, and the best passage's score, are the signals (`hyperfolio.answer.support`). Each fold's
floors are the grid values with the best abstention F1 on the other folds' documents, among those
abstaining on at most 10% of the answerable questions of every set; the figures are the held-out
folds', pooled.

    python benchmarks/abstention.py --set mmlongbench:bench-out/dev-mm --set financebench:bench-out/dev-fb \
        --set qasper:bench-out/dev-qasper

Needs ../shared/data (or $HYPERFOLIO_DATA) and a collection per set (`hyperfolio eval --dataset NAME
--collection DIR` builds one); prints what it skips.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hyperfolio import Collection
from hyperfolio.answer.expected import core_question
from hyperfolio.answer.passages import passages
from hyperfolio.answer.support import anchor_share
from hyperfolio.components import extractive_answerer
from hyperfolio.config import Settings
from hyperfolio.eval.datasets import DatasetMissing, load_dataset
from hyperfolio.eval.ranker_training import assign_folds
from hyperfolio.eval.runner import EvalProgress, index_documents

GRID = (0.0, 0.01, 0.2, 0.34, 0.5, 0.6, 0.67, 0.75, 0.99)  # anchor share floors
SCORE_GRID = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3)  # best-passage score floors (`min_answer_score`)
MAX_WRONGLY = 0.10  # answerable questions abstained on, at most


@dataclass(frozen=True)
class Signal:
    dataset: str
    doc: str
    answerable: bool
    share: float
    best: float  # the best passage's score


@dataclass(frozen=True)
class Outcome:
    precision: float
    recall: float
    wrongly: float

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


Floors = tuple[float, float]  # (anchor share, best score)


def abstains(signal: Signal, floors: Floors) -> bool:
    return signal.best < floors[1] or signal.share < floors[0]


def outcome(signals: list[Signal], floors: Floors) -> Outcome:
    abstained = [s for s in signals if abstains(s, floors)]
    hits = sum(not s.answerable for s in abstained)
    unanswerable = sum(not s.answerable for s in signals)
    answerable = len(signals) - unanswerable
    return Outcome(
        hits / len(abstained) if abstained else 0.0,
        hits / unanswerable if unanswerable else 0.0,
        (len(abstained) - hits) / answerable if answerable else 0.0,
    )


def within_limit(signals: list[Signal], floors: Floors) -> bool:
    """At most MAX_WRONGLY of the answerable questions abstained on, in every dataset."""
    return all(
        outcome([s for s in signals if s.dataset == name], floors).wrongly <= MAX_WRONGLY
        for name in {s.dataset for s in signals}
    )


def choose(signals: list[Signal]) -> Floors:
    allowed = [(a, b) for a in GRID for b in SCORE_GRID if within_limit(signals, (a, b))]
    return max(allowed, key=lambda f: (outcome(signals, f).f1, -f[0], -f[1]))


def gather(dataset: str, collection_dir: Path, k: int) -> list[Signal]:
    data = load_dataset(dataset, tempfile.mkdtemp(prefix="abstention-"), unanswerable=True)
    settings = Settings.load(collection_dir / "settings.toml")
    found = []
    with Collection(collection_dir, settings=settings) as col:
        answerer = extractive_answerer(settings, col.embedder)
        wanted = {q.doc_ref for q in data.questions}
        doc_ids, _ = index_documents(col, [p for p in data.documents if p.name in wanted], EvalProgress())
        for q in data.questions:
            doc = doc_ids.get(q.doc_ref)
            if doc is None:
                continue
            evidence = col.retrieve(q.question, mode="auto", k=k, doc=doc)
            read = [p for item in evidence.items for p in passages(item)][: answerer.max_candidates]
            core = core_question(q.question)
            best = float(answerer.score(core, read).max()) if read else 0.0
            found.append(Signal(dataset, f"{dataset}/{q.doc_ref}", q.answerable, anchor_share(core, read), best))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--set", action="append", required=True, help="DATASET:COLLECTION, e.g. mmlongbench:bench-out/dev-mm"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--k", type=int, default=10, help="evidence items the answer reads")
    args = parser.parse_args()
    signals: list[Signal] = []
    for spec in args.set:
        name, _, folder = spec.partition(":")
        try:
            signals += gather(name, Path(folder), args.k)
        except DatasetMissing as exc:
            print(f"skipped {name}: {exc}")
    if not signals:
        sys.exit(0)
    fold_of = assign_folds([s.doc for s in signals], args.folds)
    held: list[Signal] = []
    chosen: list[Floors] = []
    abstained_on: dict[int, Floors] = {}
    for fold in sorted(set(fold_of.values())):
        floor = choose([s for s in signals if fold_of[s.doc] != fold])
        mine = [s for s in signals if fold_of[s.doc] == fold]
        chosen.append(floor)
        result = outcome(mine, floor)
        print(
            f"fold {fold}: floors {floor} chosen on the other folds; held out: {len(mine)} questions, "
            f"precision {100 * result.precision:.1f}, recall {100 * result.recall:.1f}, "
            f"answerable abstained {100 * result.wrongly:.1f}"
        )
        for s in mine:
            abstained_on[id(s)] = floor
        held.extend(mine)
    # Pooled: each question judged with its own fold's floor.
    abstained = [s for s in held if abstains(s, abstained_on[id(s)])]
    hits = sum(not s.answerable for s in abstained)
    unanswerable = sum(not s.answerable for s in held)
    answerable = len(held) - unanswerable
    print(
        f"held-out folds pooled ({len(held)} questions, {unanswerable} unanswerable): abstention precision "
        f"{100 * hits / max(len(abstained), 1):.1f}, recall {100 * hits / max(unanswerable, 1):.1f}, "
        f"answerable abstained {100 * (len(abstained) - hits) / max(answerable, 1):.1f}"
    )
    for name in dict.fromkeys(s.dataset for s in held):
        mine = [s for s in held if s.dataset == name]
        gave_up = [s for s in mine if abstains(s, abstained_on[id(s)])]
        asked = sum(s.answerable for s in mine)
        print(
            f"  {name}: {len(mine)} questions; answerable abstained "
            f"{100 * sum(s.answerable for s in gave_up) / max(asked, 1):.1f}; unanswerable abstained "
            f"{100 * sum(not s.answerable for s in gave_up) / max(len(mine) - asked, 1):.1f}"
        )
    best = choose(signals)
    print(f"(anchor share, best score) floors chosen on all questions: {best}; per fold: {chosen}")
    for score in SCORE_GRID:  # what the score floor alone changes, at the chosen anchor floor
        result = outcome(signals, (best[0], score))
        print(
            f"  all questions, floors ({best[0]}, {score}): precision {100 * result.precision:.1f}, "
            f"recall {100 * result.recall:.1f}, answerable abstained {100 * result.wrongly:.1f}"
        )


if __name__ == "__main__":
    main()
