"""Congestion control at growing document size: what pruning keeps, and how long drawing takes.

For dev documents of increasing size (and growing prefixes of the longest one's pages), builds
the document's drawable hypergraph, prunes it to the budget, and renders one layout of each kind
plus the dual view; prints entities / hyperedges / regions before and after, the visual cost
against its budget, and rendering seconds.

    python benchmarks/viz_pruning.py --dev eval-out/dual/mm [--docs 6]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from hyperfolio.store.sqlite import SQLiteStore
from hyperfolio.viz import Budget, document_graph, prune, render
from hyperfolio.viz.congestion import visual_cost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, required=True, help="a collection with its hypergraph")
    parser.add_argument("--docs", type=int, default=6)
    args = parser.parse_args()
    store = SQLiteStore(args.dev)
    docs = sorted(store.list_documents(), key=lambda d: (d.num_pages, d.doc_id))
    if not docs:
        print(f"skipped: no documents in {args.dev}")
        return 0
    step = max(1, (len(docs) - 1) // max(1, args.docs - 1))
    chosen = docs[::step][: args.docs]
    budget = Budget()
    canvas = f"{budget.width:.0f}x{budget.height:.0f}"
    print(f"budget: canvas {canvas}, gamma {budget.gamma}, at most {budget.max_groups} regions")
    print(
        "| document | pages | entities | hyperedges | regions | cost / budget | after: entities | hyperedges |"
        " regions | cost / budget | set-force s | bi-inc s | dual s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for info in chosen:
            graph = document_graph(store, info.doc_id, info.title)
            before = (len(graph.entities), len(graph.edges), len(graph.groups()), visual_cost(graph, budget))
            if not graph.entities:
                continue
            report = prune(graph, "", budget)
            times = []
            for layouts in (["set-force"], ["bi-inc"], ["set-force", "bi-inc"]):
                began = time.perf_counter()
                render(graph, layouts, Path(tmp) / f"{info.doc_id}-{'-'.join(layouts)}.png")
                times.append(time.perf_counter() - began)
            print(
                f"| {info.title[:40]} | {info.num_pages} | {before[0]} | {before[1]} | {before[2]} | "
                f"{before[3] / budget.limit:.1f} | {len(graph.entities)} | {len(graph.edges)} | "
                f"{len(graph.groups())} | "
                f"{report.cost_after / budget.limit:.2f} | {times[0]:.2f} | {times[1]:.2f} | {times[2]:.2f} |",
                flush=True,
            )
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
