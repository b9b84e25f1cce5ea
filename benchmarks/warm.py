"""How long a collection takes to become warm (`Collection.warm(wait=True)`: every vector space loaded, the
large spaces' graphs made or taken up), opened twice: the first open makes and saves the graphs a collection
lacks, the second takes them up (`store/graph_files.py`). Prints seconds, the process's peak memory and
the saved graphs' sizes.

    python benchmarks/warm.py bench-out/synthetic-100000-minilm-int8-128-dev
    python benchmarks/warm.py bench-out/synthetic-100000-minilm-int8-128-dev --fresh   # graphs deleted first
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import time
from pathlib import Path

from hyperfolio import Collection
from hyperfolio.store.sqlite import GRAPH_FOLDER


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", type=Path, help="a SQLite collection's folder")
    parser.add_argument("--fresh", action="store_true", help="delete its saved graphs first")
    args = parser.parse_args()
    graphs = args.collection / GRAPH_FOLDER
    if args.fresh:
        shutil.rmtree(graphs, ignore_errors=True)
    for attempt in ("first open", "reopened"):
        began = time.perf_counter()
        with Collection(args.collection) as col:
            col.warm(wait=True)
            warm = time.perf_counter() - began
            asked = time.perf_counter()
            col.retrieve("revenue growth of the company", mode="auto", k=10)
            first = (time.perf_counter() - asked) * 1000
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(f"{attempt}: warm in {warm:.1f} s, then a first auto search {first:.0f} ms; peak memory {peak:.2f} GiB")
    for path in sorted(graphs.glob("*.faiss")):
        print(f"  {path.name}: {path.stat().st_size / 2**20:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
