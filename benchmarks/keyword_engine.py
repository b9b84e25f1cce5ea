"""The keyword engine on a collection: how long its index takes to make, how fast it answers, and how often
pruning changes a top k.

For each query (five words of a random chunk, or the dev questions with --dev), BM25 top k is taken as
the store serves it (tantivy's candidates, `depth(k)` of them rescored exactly) and with a candidate depth
of `--exact-depth` (so deep that the exact top k is all but certainly among them): the share of queries
whose top k is identical, in order, and the mean overlap. Latency p50/p95 over the whole collection and
scoped to a random document, k = 10 and 50 (the depth `auto` reads). `--rebuild` makes the index again
from the chunks first and prints its chunks/s.

    python benchmarks/keyword_engine.py bench-out/synthetic-1000000-minilm --queries 200
    python benchmarks/keyword_engine.py postgresql://localhost:5432/synthetic_1000000_minilm --rebuild
"""

from __future__ import annotations

import argparse
import random
import time
from unittest import mock

from hyperfolio.eval.metrics import percentile
from hyperfolio.store import open_store
from hyperfolio.store.keywords import engine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("location", help="a collection folder or a postgresql:// URL")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-depth", type=int, default=20_000)
    parser.add_argument("--rebuild", action="store_true", help="make the keyword index again from the chunks")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    store = open_store(args.location)
    try:
        if args.rebuild:
            began = time.perf_counter()
            chunks = store._rebuild_keywords()
            seconds = time.perf_counter() - began
            print(f"index made from {chunks:,} chunks in {seconds:.0f} s ({chunks / seconds:,.0f} chunks/s)")
        else:
            began = time.perf_counter()
            store.catch_up_keywords()
            print(f"index brought up to date in {time.perf_counter() - began:.1f} s")
        docs = [d.doc_id for d in store.list_documents()]
        queries = []
        for doc in rng.sample(docs, min(len(docs), args.queries)):
            chunk = next(iter(store.iter_chunks(doc)))
            words = chunk.text.split()
            queries.append((" ".join(rng.sample(words, min(5, len(words)))), doc))
        while len(queries) < args.queries:
            queries.append(queries[len(queries) % max(len(docs), 1)])
        for k in (10, 50):
            for scoped in (False, True):
                times = []
                for question, doc in queries:
                    began = time.perf_counter()
                    store.keyword_search(question, k, [doc] if scoped else None)
                    times.append((time.perf_counter() - began) * 1000)
                where = "one document" if scoped else "collection"
                print(f"k={k:<3} {where:<13} p50 {percentile(times, 50):7.1f} ms  p95 {percentile(times, 95):7.1f} ms")
        same = overlap = 0.0
        for question, _ in queries:
            served = [c for c, _ in store.keyword_search(question, 10)]
            with mock.patch.object(engine, "depth", lambda k: args.exact_depth):
                exact = [c for c, _ in store.keyword_search(question, 10)]
            same += served == exact
            overlap += len(set(served) & set(exact)) / max(len(exact), 1)
        n = len(queries)
        print(
            f"top 10 identical to depth {args.exact_depth:,}: {100 * same / n:.1f}% of {n} queries;"
            f" mean overlap {100 * overlap / n:.1f}%"
        )
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
