"""What the random walk over the hypergraph costs `auto`, per question scoped to its document.

Asks every dev question of a collection twice with `auto`, retrieval only: the first time a document is
asked, its walk graph is built (then kept while the documents and the graph stay the same); the second
time it is kept. Prints p50 / p95 of the whole retrieval and of the walk's own stage (`source:walk` in
the evidence's stage times), so "without the walk" is the same run's total less that stage. The
collection is warmed first, as the service does at start-up (the long documents' walk graphs are built
then: `retrieve.graph_walk.prebuild`), and the time that takes is printed; `--cold` skips it.

    HYPERFOLIO_DATA=../shared/data python benchmarks/walk_latency.py --dataset mmlongbench -c bench-out/new9-mm
    HYPERFOLIO_DATA=../shared/data python benchmarks/walk_latency.py --dataset financebench -c bench-out/new9-fb
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hyperfolio import Collection
from hyperfolio.eval.datasets import DatasetMissing, load_dataset
from hyperfolio.eval.metrics import percentile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="mmlongbench, qasper or financebench")
    parser.add_argument("-c", "--collection", type=Path, required=True, help="the dev set's indexed collection")
    parser.add_argument("--cold", action="store_true", help="do not warm the collection first")
    args = parser.parse_args()
    try:
        dataset = load_dataset(args.dataset, cache_dir=Path(tempfile.gettempdir()) / "hyperfolio-walk")
    except DatasetMissing as missing:
        raise SystemExit(f"skipped: {missing}") from None
    with Collection(args.collection) as col:
        by_name = {Path(d.source).name: d.doc_id for d in col.store.list_documents()}
        asked = [(q.question, by_name[q.doc_ref]) for q in dataset.questions if q.doc_ref in by_name]
        if not args.cold:
            began = time.perf_counter()
            col.warm()
            print(f"{args.dataset}: warmed in {time.perf_counter() - began:.1f} s")
        col.retrieve(asked[0][0], mode="auto", doc=asked[0][1])  # models loaded before anything is timed
        for label in ("first ask of each question", "asked again"):
            total, walk = [], []
            for question, doc_id in asked:
                began = time.perf_counter()
                evidence = col.retrieve(question, mode="auto", doc=doc_id)
                total.append(1000 * (time.perf_counter() - began))
                walk.append(1000 * evidence.meta.get("stage_seconds", {}).get("source:walk", 0.0))
            without = [t - w for t, w in zip(total, walk, strict=True)]
            print(
                f"{args.dataset}, {label} ({len(asked)} questions): auto p50 / p95 {percentile(total, 50):.1f} / "
                f"{percentile(total, 95):.1f} ms; the walk {percentile(walk, 50):.1f} / {percentile(walk, 95):.1f} "
                f"ms; without it {percentile(without, 50):.1f} / {percentile(without, 95):.1f} ms"
            )


if __name__ == "__main__":
    main()
