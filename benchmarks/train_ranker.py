"""Fit the ranker that ships with hyperfolio (`retrieve/auto_ranker.json`) on the development sets.

    python benchmarks/train_ranker.py --mm eval-out/dual/mm --qasper eval-out/dual/qasper \
        --out src/hyperfolio/retrieve/auto_ranker.json

Each dataset's collection must already be indexed (`hyperfolio eval --dataset ... --collection DIR`
does that). MMLongBench-Doc's PDFs train the ranker for paged documents, Qasper's papers (text) the
one for flowing documents: the two sets ask different things (a page, a paragraph), and one ranker
fitted on both is worse on each than its own (measured: Qasper R@1 29 against 36). Before fitting
on everything, the script prints each ranker's document-held-out cross-validated recall (the
figures `hyperfolio eval --strategies auto` reports too). Skips with a message when the data is
absent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyperfolio.collection import Collection
from hyperfolio.eval.datasets import DatasetMissing, load_dataset
from hyperfolio.eval.ranker_training import (
    AUTO_VARIANTS,
    DEFAULT_C,
    QuestionRows,
    collect,
    cross_validate,
    fit,
)
from hyperfolio.eval.tune import ranking_recall
from hyperfolio.retrieve.ranker import RankerSet

K_VALUES = (1, 5, 10)
LAYOUTS = {"mmlongbench": "paged", "qasper": "flowing"}


def gather_rows(spec: str, directory: Path, cache: Path, variant: str) -> tuple[list[QuestionRows], str, dict]:
    dataset = load_dataset(spec, cache_dir=cache)
    with Collection(directory) as col:
        names = {Path(d.source).name: d.doc_id for d in col.documents() if d.status == "ready"}
        questions = [q for q in dataset.questions if q.doc_ref in names]
        print(f"{spec}: {len(questions)} questions over {len({q.doc_ref for q in questions})} documents", flush=True)

        def gather(question, exclude):
            return col.candidates(question.question, doc=names[question.doc_ref], exclude=exclude)

        rows = collect(questions, gather, dataset.evidence, [variant])[variant]
    return rows, dataset.evidence, names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mm", type=Path, required=True, help="MMLongBench-Doc dev collection")
    parser.add_argument("--qasper", type=Path, required=True, help="Qasper dev collection")
    parser.add_argument("--out", type=Path, help="where to write the fitted weights")
    parser.add_argument("--variant", default="auto", choices=list(AUTO_VARIANTS))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--c", type=float, default=DEFAULT_C)
    parser.add_argument("--cache", type=Path, default=Path("eval-out/cache"))
    args = parser.parse_args()
    exclude = AUTO_VARIANTS[args.variant]
    try:
        parts = {
            "mmlongbench": gather_rows("mmlongbench", args.mm, args.cache, args.variant),
            "qasper": gather_rows("qasper", args.qasper, args.cache, args.variant),
        }
    except DatasetMissing as exc:
        print(f"skipped: {exc}")
        return 0
    rankers = {}
    for name, (part, evidence, doc_ids) in parts.items():
        held = cross_validate(part, exclude, args.folds, args.c)
        recall = ranking_recall(part, held.ranking, evidence, doc_ids)
        print(f"{name} held-out {args.variant}: " + ", ".join(f"R@{k} {100 * v:.1f}" for k, v in recall.items()))
        ranker = fit(part, exclude, args.c)
        ranker.meta.update({"trained_on": name, "folds": args.folds, "held_out_recall": recall})
        rankers[LAYOUTS[name]] = ranker
        top = sorted(ranker.weights().items(), key=lambda kv: -abs(kv[1]))[:10]
        print(f"  {LAYOUTS[name]} ranker, strongest features: " + ", ".join(f"{n} {w:+.2f}" for n, w in top))
    if args.out:
        RankerSet(rankers, {"source": "benchmarks/train_ranker.py", "C": args.c}).save(args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
