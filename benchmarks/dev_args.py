"""The command line the per-question benchmarks share: a dev set and its indexed collection, read or
skipped with one line when the data or the collection is absent."""

from __future__ import annotations

import argparse
from pathlib import Path

from hyperfolio.eval.datasets import DatasetMissing, EvalDataset, load_dataset


def dev_set_args(description: str, limit: int) -> tuple[argparse.Namespace, EvalDataset] | None:
    """`dataset collection [--limit N] [--cache DIR]` parsed, and the dataset loaded; None (after saying
    why) when the benchmark data or the collection is not there."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("dataset", help="mmlongbench, qasper or financebench")
    parser.add_argument("collection", type=Path)
    parser.add_argument("--limit", type=int, default=limit, help="only the first N questions (0: all)")
    parser.add_argument("--cache", type=Path, default=Path("eval-out/cache"), help="dataset cache (Qasper papers)")
    args = parser.parse_args()
    try:
        data = load_dataset(args.dataset, args.cache)
    except DatasetMissing as exc:
        print(f"skipped: {exc}")
        return None
    if not args.collection.exists():
        print(f"skipped: no collection at {args.collection}")
        return None
    return args, data
