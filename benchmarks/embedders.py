"""Embedding throughput of `minilm` and `model2vec` on the same chunk texts.

Texts are chunk texts from a dev collection (default: the MMLongBench eval
collection), or Qasper paragraphs when no collection exists. Model loading (and the
one-time model2vec distillation) is timed apart from throughput. Recall for each
embedder comes from the eval runs, not from here.

    python benchmarks/embedders.py [--collection eval-out/minilm/collections/mmlongbench-minilm] [--n 2000]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from hyperfolio.collection import embedding_text
from hyperfolio.eval.datasets import data_root
from hyperfolio.models.embed_local import make_embedder
from hyperfolio.store.sqlite import SQLiteStore


def load_texts(collection: Path | None, n: int, seed: int) -> tuple[list[str], str]:
    if collection is not None and (collection / "hyperfolio.db").exists():
        store = SQLiteStore(collection)
        texts = [embedding_text(c.section_path, c.text) for c in store.iter_chunks() if c.text.strip()]
        store.close()
        origin = f"chunks of {collection}"
    else:
        papers_file = data_root() / "qasper_dev" / "papers.json"
        if not papers_file.exists():
            raise SystemExit(f"no texts: give --collection or make {papers_file} available")
        papers = json.loads(papers_file.read_text())
        texts = [p for paper in papers.values() for s in paper["full_text"] for p in s["paragraphs"] if p]
        origin = "Qasper paragraphs"
    random.Random(seed).shuffle(texts)
    return texts[:n], origin


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, default=Path("eval-out/minilm/collections/mmlongbench-minilm"))
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    texts, origin = load_texts(args.collection, args.n, args.seed)
    words = sum(len(t.split()) for t in texts) / max(len(texts), 1)
    print(f"{len(texts)} texts from {origin}, mean {words:.0f} words")
    print()
    print("| embedder | dim | load s | texts/s | total s |")
    print("|---|---|---|---|---|")
    for name in ("minilm", "model2vec"):
        embedder = make_embedder(name)
        began = time.perf_counter()
        embedder.embed(["warm-up"])
        load = time.perf_counter() - began
        began = time.perf_counter()
        vectors = embedder.embed(texts)
        total = time.perf_counter() - began
        assert vectors.shape == (len(texts), embedder.dim)
        print(f"| {name} | {embedder.dim} | {load:.1f} | {len(texts) / total:.0f} | {total:.1f} |", flush=True)
    print()
    print(
        "Recall for each embedder: eval-out/minilm/*.md and eval-out/model2vec/*.md "
        "(see benchmarks/README.md for the eval commands)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
