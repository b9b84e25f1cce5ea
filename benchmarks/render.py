"""Rendering time of the bottom-layer picture per top-down query (VizRAG reports about 0.2 s).

For MMLongBench-Doc questions scoped to their document, runs `--mode topdown` with and without
`render` and prints p50/p95 of the retrieval time, of the rendering alone, and the size of what
was drawn (after congestion control).

    python benchmarks/render.py --dev eval-out/dual/mm [--queries 50] [--layouts set-force,bi-inc]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hyperfolio.collection import Collection
from hyperfolio.eval.datasets import DatasetMissing, load_mmlongbench
from hyperfolio.eval.metrics import percentile


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, required=True, help="an MMLongBench dev collection with its graph")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--layouts", default="set-force,bi-inc", help="the picture's layout(s)")
    args = parser.parse_args()
    try:
        questions = load_mmlongbench().questions
    except DatasetMissing as exc:
        print(f"skipped: {exc}")
        return 0
    with Collection(args.dev) as col:
        names = {Path(d.source).name: d.doc_id for d in col.documents()}
        scoped = [(q.question, names[q.doc_ref]) for q in questions if q.doc_ref in names][: args.queries]
        if not scoped:
            print(f"skipped: no MMLongBench documents in {args.dev}")
            return 0
        col.retrieve(scoped[0][0], mode="topdown", doc=scoped[0][1], options={"render": True})  # warm-up
        plain, total, render, drawn = [], [], [], []
        for question, doc in scoped:
            began = time.perf_counter()
            col.retrieve(question, mode="topdown", doc=doc)
            plain.append(time.perf_counter() - began)
            began = time.perf_counter()
            evidence = col.retrieve(
                question, mode="topdown", doc=doc, options={"render": True, "layouts": args.layouts}
            )
            total.append(time.perf_counter() - began)
            if "render_seconds" in evidence.meta:
                render.append(evidence.meta["render_seconds"])
                drawn.append(len(evidence.hyperedges))
    print(f"{len(scoped)} questions, layouts {args.layouts}; seconds, p50 / p95:")
    print(f"  top-down retrieval alone     {percentile(plain, 50):.3f} / {percentile(plain, 95):.3f}")
    print(f"  with the picture             {percentile(total, 50):.3f} / {percentile(total, 95):.3f}")
    if render:
        print(f"  rendering alone              {percentile(render, 50):.3f} / {percentile(render, 95):.3f}")
        print(f"  pictures drawn: {len(render)} (hyperedges in the evidence: median {sorted(drawn)[len(drawn) // 2]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
