"""Warm `Collection.ask(mode="auto")` latency per question, asked of the whole collection and of the
question's own document (p50 / p95 in ms); run it with the old code (PYTHONPATH) and the new on the
same collection to compare.

    python benchmarks/ask_scopes.py financebench eval-out/dev/fb --limit 60
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dev_args import dev_set_args

from hyperfolio.collection import Collection
from hyperfolio.eval.metrics import percentile


def main() -> int:
    parsed = dev_set_args(__doc__.split("\n\n")[0], limit=60)
    if parsed is None:
        return 0
    args, data = parsed
    with Collection(args.collection) as col:
        ids = {Path(d.source).name: d.doc_id for d in col.documents()}
        asked = [(q.question, ids[q.doc_ref]) for q in data.questions if q.doc_ref in ids][: args.limit]
        col.ask(asked[0][0], mode="auto")  # models loaded before the clock starts
        for scope in ("collection", "document"):
            times = []
            for question, doc in asked:
                began = time.perf_counter()
                col.ask(question, mode="auto", doc=doc if scope == "document" else None)
                times.append(1000 * (time.perf_counter() - began))
            p50, p95 = percentile(times, 50) or 0.0, percentile(times, 95) or 0.0
            print(f"{args.dataset} {scope}: n={len(times)} p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
