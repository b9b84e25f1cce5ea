"""Retrieval latency p50/p95 per strategy, on the dev collection and a synthetic 100k-chunk one.

The synthetic collection is built once and cached under ./bench-out: chunk text is
sampled from the word distribution of the dev collection (so real questions hit real
postings lists; a pseudo-word vocabulary is used when no dev collection is given),
and vectors are random unit vectors of the embedder's dimension — latency depends
on the matrix size, not on what the vectors mean. It also gets a concept layer of the
dev collection's shape (concepts, concept edges and concept -> chunk evidence per
document, at the dev set's average counts per chunk) so `concept` can be timed at
scale. Queries are embedded with the real model, so dense, hybrid and concept timings
include query encoding. BM25 runs in the same process on the same queries as the reference.

    python benchmarks/latency.py --dev eval-out/minilm/collections/mmlongbench-minilm [--chunks 100000]

The synthetic collection has no entity hypergraph or theme layer, so `auto` there times the flat
and concept sources, candidate features and scoring; the dev collection times all of it.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from hyperfolio.collection import Collection
from hyperfolio.config import Settings
from hyperfolio.eval.datasets import DatasetMissing, load_mmlongbench
from hyperfolio.eval.metrics import percentile
from hyperfolio.model import Chunk, Document, Page
from hyperfolio.models.embed_local import make_embedder
from hyperfolio.store.base import CHUNK_SPACE, STAGE_READY
from hyperfolio.store.sqlite import SQLiteStore

STRATEGIES = ("bm25", "dense", "hybrid", "dual", "concept", "concept-keyword", "auto")
FLAT = ("bm25", "dense", "hybrid")  # the synthetic collection has chunks and vectors but no hypergraph
SYNTHETIC = (*FLAT, "concept", "concept-keyword", "auto")  # ... and a synthetic concept layer
# Variants timed like strategies: (mode, per-call options).
VARIANTS = {"concept-keyword": ("concept", {"scoring": "keyword"})}
CHUNKS_PER_PAGE = 4
PAGES_PER_DOC = 50
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{1,}")


def dev_questions(limit: int) -> list[tuple[str, str]]:
    """(question, document file name) pairs from MMLongBench-Doc, or none if the data is absent."""
    try:
        data = load_mmlongbench()
    except DatasetMissing:
        return []
    return [(q.question, q.doc_ref) for q in data.questions[:limit]]


def vocabulary(dev: Path | None, rng: random.Random) -> tuple[list[str], list[float]]:
    """Word list and frequencies: from the dev collection's chunks, else Zipfian pseudo-words."""
    if dev is not None and (dev / "hyperfolio.db").exists():
        store = SQLiteStore(dev)
        counts = Counter(w.lower() for c in store.iter_chunks() for w in _WORD.findall(c.text))
        store.close()
        if counts:
            words, freqs = zip(*counts.most_common(30000), strict=True)
            return list(words), [float(f) for f in freqs]
    syllables = ["ka", "lo", "mi", "ne", "tor", "sa", "ve", "ri", "pon", "du", "el", "an", "ist", "or", "ber"]
    words = sorted({"".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(30000)})
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


def build_synthetic(target: Path, chunks: int, dim: int, embedder: str, dev: Path | None, seed: int) -> None:
    """Write `chunks` chunks (documents of 50 pages x 4 chunks) with random unit vectors."""
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    words, freqs = vocabulary(dev, rng)
    cumulative = np.cumsum(np.asarray(freqs) / sum(freqs))
    store = SQLiteStore(target)
    store.set_meta("embedder", embedder)
    per_doc = CHUNKS_PER_PAGE * PAGES_PER_DOC
    started = time.perf_counter()
    for d in range(0, chunks, per_doc):
        doc_id = f"syn{d // per_doc:05d}"
        n = min(per_doc, chunks - d)
        lengths = nprng.integers(60, 180, size=n)
        picks = np.searchsorted(cumulative, nprng.random(int(lengths.sum())))
        doc = Document(
            doc_id=doc_id,
            source=f"/synthetic/{doc_id}.pdf",
            title=f"Synthetic report {doc_id}",
            kind="pdf",
            content_hash=f"synthetic-{seed}-{doc_id}",
        )
        offset = 0
        for i in range(n):
            page_no = i // CHUNKS_PER_PAGE + 1
            if not doc.pages or doc.pages[-1].number != page_no:
                doc.pages.append(Page(number=page_no, width=612, height=792))
            tokens = [words[j] for j in picks[offset : offset + lengths[i]]]
            offset += int(lengths[i])
            sentences = [" ".join(tokens[s : s + 15]).capitalize() + "." for s in range(0, len(tokens), 15)]
            order = i % CHUNKS_PER_PAGE
            doc.pages[-1].chunks.append(
                Chunk(
                    page=page_no,
                    order=order,
                    modality="text",
                    text=" ".join(sentences),
                    section_path=[f"Section {page_no}"],
                    doc_id=doc_id,
                    chunk_id=f"{doc_id}:{page_no}:{order}",
                )
            )
        store.write_document(doc)
        vectors = nprng.standard_normal((n, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.put_vectors(CHUNK_SPACE, [(c.chunk_id, doc_id) for c in doc.chunks], vectors)
        store.set_stage(doc_id, STAGE_READY)
        if (d // per_doc) % 50 == 0:
            print(f"  synthetic: {d + n:>7} / {chunks} chunks ({time.perf_counter() - started:.0f} s)", flush=True)
    store.set_meta("synthetic_complete", str(chunks))
    store.close()


def layer_shape(dev: Path | None) -> tuple[float, float, float]:
    """Concepts per chunk, evidence links per concept, concept edges per concept, per document of
    the dev collection (defaults close to the MMLongBench dev set when none is given)."""
    if dev is None or not (dev / "hyperfolio.db").exists():
        return 0.15, 6.0, 1.5
    store = SQLiteStore(dev)
    try:
        per_doc = store._query("SELECT COUNT(*) FROM concept_evidence GROUP BY doc_id, concept_id")
        concepts = len(per_doc)
        links = sum(n for (n,) in per_doc)
        edges = store._query("SELECT COUNT(*) FROM concept_edges")[0][0]
        chunks = store.count_chunks()
    finally:
        store.close()
    if not concepts or not chunks:
        return 0.15, 6.0, 1.5
    return concepts / chunks, links / concepts, edges / concepts


def build_synthetic_concepts(target: Path, dim: int, shape: tuple[float, float, float], seed: int) -> None:
    """A concept layer over the synthetic chunks: per document, concepts with random vectors, each
    evidenced by random chunks of the document, and random concept edges with relation vectors."""
    per_chunk, links, edges = shape
    nprng = np.random.default_rng(seed + 1)
    store = SQLiteStore(target)
    docs = [d.doc_id for d in store.list_documents()]
    per_doc = CHUNKS_PER_PAGE * PAGES_PER_DOC
    n_concepts = max(2, round(per_chunk * per_doc))
    pool = [f"C{i:05d}" for i in range(max(50, n_concepts * 20))]  # concepts recur across documents
    relations = [f"relation_{i}" for i in range(max(20, n_concepts * 4))]
    with store.transaction() as db:
        db.executemany("INSERT OR IGNORE INTO concepts(concept_id, name) VALUES (?, ?)", [(c, c) for c in pool])
    for doc_id in docs:
        concepts = list(nprng.choice(pool, size=n_concepts, replace=False))
        rows, edge_rows = [], []
        for concept in concepts:
            for n in nprng.choice(per_doc, size=max(1, round(links)), replace=False):
                page, order = divmod(int(n), CHUNKS_PER_PAGE)
                rows.append((concept, f"{doc_id}:{page + 1}:{order}", doc_id, page + 1, 1))
        used = set()
        for _ in range(max(1, round(edges * n_concepts))):
            head, tail = nprng.choice(concepts, size=2)
            relation = str(nprng.choice(relations))
            used.add(relation)
            edge_rows.append((str(head), relation, str(tail), doc_id, 1))
        with store.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO concept_evidence VALUES (?, ?, ?, ?, ?)", rows)
            db.executemany("INSERT OR IGNORE INTO concept_edges VALUES (?, ?, ?, ?, ?)", edge_rows)
        for space, items in (("concept", concepts), ("relation", sorted(used))):
            vectors = nprng.standard_normal((len(items), dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store.put_vectors(space, [(f"{item}|{doc_id}", doc_id) for item in items], vectors)
    store.set_meta("synthetic_concepts", "1")
    store.close()


def measure(
    collection: Collection, queries: list[tuple[str, str | None]], strategies=STRATEGIES, repeat_warm: int = 3
) -> dict:
    """p50/p95 (ms) per strategy for the given (question, scope) pairs; first calls are warm-up."""
    out = {}
    for strategy in strategies:
        mode, options = VARIANTS.get(strategy, (strategy, None))
        for question, scope in queries[:repeat_warm]:
            collection.retrieve(question, mode=mode, k=10, doc=scope, options=options)
        times = []
        for question, scope in queries:
            began = time.perf_counter()
            collection.retrieve(question, mode=mode, k=10, doc=scope, options=options)
            times.append((time.perf_counter() - began) * 1000)
        out[strategy] = (percentile(times, 50), percentile(times, 95), len(times))
    return out


def print_table(rows: list[tuple[str, str, dict]]) -> None:
    print()
    print(f"| collection | queries | {' | '.join(f'{s} p50 / p95 ms' for s in STRATEGIES)} | n |")
    print("|---|---|" + "---|" * len(STRATEGIES) + "---|")
    for name, kind, result in rows:
        cells = [f"{result[s][0]:.1f} / {result[s][1]:.1f}" if s in result else "—" for s in STRATEGIES]
        print(f"| {name} | {kind} | {' | '.join(cells)} | {result[STRATEGIES[0]][2]} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, help="dev collection built by `hyperfolio eval` (mmlongbench)")
    parser.add_argument("--chunks", type=int, default=100_000, help="size of the synthetic collection")
    parser.add_argument(
        "--embedder",
        default="minilm",
        choices=["minilm", "minilm-int8", "model2vec"],
        help="query embedder for the synthetic collection",
    )
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--cache", type=Path, default=Path("bench-out"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    questions = dev_questions(args.queries)
    rows: list[tuple[str, str, dict]] = []

    if args.dev is not None:
        with Collection(args.dev) as dev:
            names = {Path(d.source).name: d.doc_id for d in dev.documents()}
            scoped = [(q, names[ref]) for q, ref in questions if ref in names]
            if not scoped:  # not the mmlongbench collection: use chunk openings as queries
                chunks = list(dev.store.iter_chunks())
                picks = rng.sample(chunks, min(args.queries, len(chunks)))
                scoped = [(" ".join(c.text.split()[:10]), c.doc_id) for c in picks]
            n_chunks = dev.store.count_chunks()
            label = f"dev ({n_chunks} chunks, {dev.stats()['embedder']})"
            print(f"measuring {label} ...", flush=True)
            kinds = STRATEGIES if dev.stats()["hyperedges"] else FLAT
            rows.append((label, "scoped", measure(dev, scoped, kinds)))
            rows.append((label, "unscoped", measure(dev, [(q, None) for q, _ in scoped], kinds)))

    target = args.cache / f"synthetic-{args.chunks}-{args.embedder}"
    dim = make_embedder(args.embedder).dim
    probe = SQLiteStore(target)
    complete = probe.get_meta("synthetic_complete") == str(args.chunks)
    probe.close()
    if not complete:
        if target.exists():
            for file in target.iterdir():
                file.unlink()
        print(f"building synthetic collection of {args.chunks} chunks in {target} ...", flush=True)
        began = time.perf_counter()
        build_synthetic(target, args.chunks, dim, args.embedder, args.dev, args.seed)
        print(f"built in {time.perf_counter() - began:.0f} s", flush=True)
    settings = Settings.load(None, embedder=args.embedder)
    probe = SQLiteStore(target)
    has_concepts = probe.get_meta("synthetic_concepts") == "1"
    probe.close()
    if not has_concepts:
        shape = layer_shape(args.dev)
        print(f"adding a synthetic concept layer (per chunk / links / edges per concept: {shape}) ...", flush=True)
        build_synthetic_concepts(target, make_embedder(settings.build.graph_embedder).dim, shape, args.seed)
    with Collection(target, settings=settings) as syn:
        docs = [d.doc_id for d in syn.documents()]
        texts = [q for q, _ in questions] or [
            " ".join(rng.sample(vocabulary(None, rng)[0], 8)) for _ in range(args.queries)
        ]
        began = time.perf_counter()
        syn.retrieve("warm-up query", mode="dense", k=10)  # loads the vector matrix into memory
        print(
            f"synthetic: {len(docs)} documents; query model + vector matrix load {time.perf_counter() - began:.1f} s",
            flush=True,
        )
        label = f"synthetic ({args.chunks} chunks)"
        rows.append((label, "scoped", measure(syn, [(q, rng.choice(docs)) for q in texts], SYNTHETIC)))
        rows.append((label, "unscoped", measure(syn, [(q, None) for q in texts], SYNTHETIC)))
    print_table(rows)
    print("\np50 / bm25 p50 (target for concept: <= 1.5):")
    for name, kind, result in rows:
        ratios = [f"{s} {result[s][0] / result['bm25'][0]:.1f}x" for s in ("concept", "concept-keyword") if s in result]
        if ratios:
            print(f"  {name}, {kind}: {', '.join(ratios)}")
    print("\nauto / hybrid, p50 and p95 (target: p95 <= 2x):")
    for name, kind, result in rows:
        if "auto" in result and "hybrid" in result:
            p50, p95 = (result["auto"][i] / result["hybrid"][i] for i in (0, 1))
            print(f"  {name}, {kind}: p50 {p50:.1f}x, p95 {p95:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
