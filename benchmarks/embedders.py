"""Load time, throughput and query latency of the embedders: ONNX MiniLM (float and int8), model2vec, and
sentence-transformers on torch as a baseline when torch happens to be installed.

Texts are chunk texts from a dev collection (default: the MMLongBench eval collection), or Qasper paragraphs
when no collection exists; queries are Qasper questions (or made-up ones). "First load" runs in an empty cache
(`HYPERFOLIO_CACHE` is pointed at a temporary folder): it includes building the ONNX graph, quantising it
(int8, from the float graph built just before) or distilling the static model (model2vec, from that float graph).
"Cached load" is a new embedder on the filled cache. Vectors are compared with ONNX float's on the same texts.
Recall for each embedder comes from the eval runs, not from here.

    python benchmarks/embedders.py [--collection eval-out/minilm/collections/mmlongbench-minilm] [--n 500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hyperfolio.collection import embedding_text
from hyperfolio.embed.local import MiniLMEmbedder, Model2VecEmbedder, minilm_path
from hyperfolio.eval.datasets import data_root
from hyperfolio.store.sqlite import SQLiteStore


class Embedder(Protocol):
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class TorchMiniLM:
    """The pre-ONNX path: sentence-transformers on torch, loaded eagerly."""

    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        from sentence_transformers import SentenceTransformer

        self.batch_size = batch_size
        self.model: Any = SentenceTransformer(str(minilm_path()), device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )


@dataclass(frozen=True)
class Row:
    name: str
    dim: int
    first_load: float
    cached_load: float
    texts_per_s: float
    query_median_ms: float
    query_p95_ms: float
    cosine: str  # mean / min against ONNX float, or "ref"/"-"

    def markdown(self) -> str:
        return (
            f"| {self.name} | {self.dim} | {self.first_load:.1f} | {self.cached_load:.2f} | {self.texts_per_s:.0f} "
            f"| {self.query_median_ms:.1f} | {self.query_p95_ms:.1f} | {self.cosine} |"
        )


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


def load_queries(n: int, seed: int) -> list[str]:
    qa_file = data_root() / "qasper_dev" / "qa.jsonl"
    if qa_file.exists():
        questions = [json.loads(line)["question"] for line in qa_file.read_text().splitlines() if line.strip()]
    else:
        topics = "revenue capacity outlook turbine battery grid region cost margin forecast".split()
        questions = [f"what was the {t} in {2015 + i % 10}?" for i, t in enumerate(topics * 30)]
    random.Random(seed).shuffle(questions)
    return questions[:n]


def timed_load(make: Callable[[], Embedder]) -> tuple[Embedder, float]:
    began = time.perf_counter()
    embedder = make()
    embedder.embed(["warm-up"])
    return embedder, time.perf_counter() - began


def query_latency(embedder: Embedder, queries: list[str]) -> tuple[float, float]:
    took = []
    for query in queries:
        began = time.perf_counter()
        embedder.embed([query])
        took.append(time.perf_counter() - began)
    return 1000 * float(np.median(took)), 1000 * float(np.percentile(took, 95))


def measure(
    name: str,
    make: Callable[[], Embedder],
    texts: list[str],
    queries: list[str],
    reference: np.ndarray | None,
    repeat: int = 1,
) -> tuple[Row, np.ndarray]:
    """Throughput is the best of `repeat` runs and latency the best run's figures: on a shared machine the best
    run is the one least disturbed by other work."""
    _, first = timed_load(make)
    embedder, cached = timed_load(make)
    rate, median, p95 = 0.0, float("inf"), float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        vectors = embedder.embed(texts)
        rate = max(rate, len(texts) / (time.perf_counter() - began))
        assert vectors.shape == (len(texts), embedder.dim)
        run_median, run_p95 = query_latency(embedder, queries)
        if run_median < median:
            median, p95 = run_median, run_p95
    if reference is None:
        cosine = "ref"
    elif reference.shape == vectors.shape:
        sims = (vectors * reference).sum(axis=1)
        cosine = f"{sims.mean():.4f} / {sims.min():.4f}"
    else:
        cosine = "-"
    return Row(name, embedder.dim, first, cached, rate, median, p95, cosine), vectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, default=Path("eval-out/minilm/collections/mmlongbench-minilm"))
    parser.add_argument("--n", type=int, default=500, help="texts for the throughput run")
    parser.add_argument("--queries", type=int, default=200, help="single-text queries for the latency run")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1, help="runs per embedder; the best one is reported")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch baseline even if it is installed")
    args = parser.parse_args()

    texts, origin = load_texts(args.collection, args.n, args.seed)
    queries = load_queries(args.queries, args.seed)
    words = sum(len(t.split()) for t in texts) / max(len(texts), 1)
    query_words = sum(len(q.split()) for q in queries) / max(len(queries), 1)
    print(f"{len(texts)} texts from {origin}, mean {words:.0f} words; {len(queries)} queries, mean {query_words:.0f}")
    print(f"onnxruntime threads: chosen by onnxruntime; {os.cpu_count()} cores")
    print()
    print("| embedder | dim | first load s | cached load s | texts/s | query median ms | query p95 ms | cos vs fp32 |")
    print("|---|---|---|---|---|---|---|---|")
    saved = os.environ.get("HYPERFOLIO_CACHE")
    with tempfile.TemporaryDirectory(prefix="hyperfolio-bench-") as cache:
        os.environ["HYPERFOLIO_CACHE"] = cache  # an empty cache: first loads build everything
        try:
            row, fp32 = measure("minilm onnx fp32", MiniLMEmbedder, texts, queries, None, args.repeat)
            print(row.markdown(), flush=True)
            int8 = functools.partial(MiniLMEmbedder, quantize=True)
            row, _ = measure("minilm onnx int8", int8, texts, queries, fp32, args.repeat)
            print(row.markdown(), flush=True)
            row, _ = measure("model2vec (onnx-distilled)", Model2VecEmbedder, texts, queries, fp32, args.repeat)
            print(row.markdown(), flush=True)
        finally:
            os.environ.pop("HYPERFOLIO_CACHE", None)
            if saved is not None:
                os.environ["HYPERFOLIO_CACHE"] = saved
    if not args.no_torch and importlib.util.find_spec("torch") and importlib.util.find_spec("sentence_transformers"):
        row, _ = measure("minilm torch (sentence-transformers)", TorchMiniLM, texts, queries, fp32, args.repeat)
        print(row.markdown(), flush=True)
    else:
        print("| minilm torch (sentence-transformers) | not installed | | | | | | |")
    print()
    print(
        "Recall for each embedder: eval-out/minilm/*.md and eval-out/model2vec/*.md "
        "(see benchmarks/README.md for the eval commands)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
