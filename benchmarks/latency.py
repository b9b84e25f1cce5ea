"""Retrieval latency p50/p95 per strategy, on the dev collection and on a synthetic collection in SQLite and PostgreSQL.

The synthetic collection (`synthetic.py`) is built once per backend and size and reused while its
signature (size, seed, vocabulary, densities, embedders, generator version) matches: SQLite in
./bench-out/synthetic-<chunks>-<embedder>[-dev], PostgreSQL + pgvector as database
synthetic_<chunks>_<embedder>[_dev] of a server kept in ./bench-out/pgdata (stopped after the run,
started again by the next). Documents are 50 pages x 4 chunks of text sampled from the vocabulary:
the dev collection's words when `--dev` is given (then the questions are MMLongBench-Doc's, so real
questions hit real postings lists), else pseudo-words (then the questions are 5 vocabulary words
each). Chunk vectors are clustered unit vectors of the embedder's dimension: latency depends on the
matrix size, not on what the vectors mean. Over the chunks a synthetic entity hypergraph with facts
and a concept layer, at the dev collection's densities per chunk when `--dev` is given, else at the
defaults in `synthetic.py` (0.5 entities, 0.4 hyperedges, 0.15 facts and 0.15 concepts per chunk);
its vectors are real graph-embedder embeddings of the item names, so keywords and questions match
items as they do in a real collection. Queries are embedded with the real models, so every
strategy but bm25 includes query encoding.

Strategies timed: bm25, dense, hybrid, dual, concept, concept-keyword (concept with keyword
scoring) and auto, each over `--queries` queries scoped to a random document and unscoped. The
synthetic collection has no theme layer, so `topdown` is not timed and `auto` runs without its
theme features; the dev collection times all of auto.

    python benchmarks/latency.py --chunks 100000
    python benchmarks/latency.py --chunks 1000000 --backends postgres --queries 100
    python benchmarks/latency.py --dev eval-out/dual/mm --chunks 100000
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from synthetic import Corpus, Density, PgServer, build_collection, duration, measure_density

from hyperfolio.collection import Collection
from hyperfolio.config import Settings
from hyperfolio.embed.local import EMBEDDERS, make_embedder
from hyperfolio.eval.datasets import DatasetMissing, load_mmlongbench
from hyperfolio.eval.metrics import percentile
from hyperfolio.store import open_store

STRATEGIES = ("bm25", "dense", "hybrid", "dual", "concept", "concept-keyword", "auto")
FLAT = ("bm25", "dense", "hybrid")  # what a collection without a hypergraph can answer
# Variants timed like strategies: (mode, per-call options).
VARIANTS = {"concept-keyword": ("concept", {"scoring": "keyword"})}
BACKENDS = ("sqlite", "postgres")
CHUNKS_PER_PAGE = 4
PAGES_PER_DOC = 50
SYNTHETIC_VERSION = "2"  # bump when the generator changes: cached collections are rebuilt
COMPLETE_KEY = "synthetic_complete"  # meta key: the signature, written when the build finished
BUILDING_KEY = "synthetic_building"  # meta key: the signature, written when the build began
SECONDS_KEY = "synthetic_build_seconds"


@dataclass
class Row:
    collection: str
    backend: str
    scope: str
    result: dict[str, tuple[float, float, int]]
    build_s: float | None = None
    chunks: int = 0
    cached: bool = False


def dev_questions(limit: int) -> list[tuple[str, str]]:
    """(question, document file name) pairs from MMLongBench-Doc, or none if the data is absent."""
    try:
        data = load_mmlongbench()
    except DatasetMissing:
        return []
    return [(q.question, q.doc_ref) for q in data.questions[:limit]]


def measure(
    collection: Collection, queries: list[tuple[str, str | None]], strategies=STRATEGIES, repeat_warm: int = 3
) -> dict[str, tuple[float, float, int]]:
    """p50/p95 (ms) per strategy for the given (question, scope) pairs; first calls are warm-up."""
    out = {}
    for strategy in strategies:
        mode, options = VARIANTS.get(strategy, (strategy, None))
        for question, scope in queries[:repeat_warm]:
            collection.retrieve(question, mode=mode, k=10, doc=scope, options=options)
        times = []
        stages: dict[str, list[float]] = {}
        for question, scope in queries:
            began = time.perf_counter()
            evidence = collection.retrieve(question, mode=mode, k=10, doc=scope, options=options)
            times.append((time.perf_counter() - began) * 1000)
            for stage, seconds in evidence.meta.get("stage_seconds", {}).items():
                stages.setdefault(stage, []).append(seconds * 1000)
        out[strategy] = (percentile(times, 50) or 0.0, percentile(times, 95) or 0.0, len(times))
        if stages:  # where auto's time goes
            parts = ", ".join(f"{s} {percentile(v, 50):.1f}/{percentile(v, 95):.1f}" for s, v in stages.items())
            print(f"    {strategy} stages p50/p95 ms: {parts}", flush=True)
    return out


# --------------------------------------------------------------------------- synthetic collections
@dataclass
class Plan:
    """What to build: the same collection for every backend."""

    chunks: int
    seed: int
    embedder: str
    graph_embedder: str
    corpus: Corpus
    density: Density
    name: str  # directory / database name stem

    def signature(self) -> str:
        parts = (SYNTHETIC_VERSION, self.chunks, self.seed, self.corpus.source, self.density.key())
        parts += (self.embedder, self.graph_embedder, CHUNKS_PER_PAGE * PAGES_PER_DOC)
        return ":".join(str(p) for p in parts)


def complete(location: str | Path, signature: str) -> tuple[bool, float | None, bool]:
    """Whether the collection at `location` was fully built with this signature, its build seconds, and
    whether a build with this signature was begun there (and can go on)."""
    store = open_store(location)
    try:
        begun = store.get_meta(BUILDING_KEY) == signature
        if store.get_meta(COMPLETE_KEY) != signature:
            return False, None, begun
        seconds = store.get_meta(SECONDS_KEY)
        return True, float(seconds) if seconds else None, begun
    finally:
        store.close()


def build(location: str | Path, plan: Plan, label: str) -> float:
    """Build the synthetic collection into an empty store at `location`; its seconds."""
    graph_embedder = make_embedder(plan.graph_embedder)
    print(f"  {label}: building {plan.chunks:,} chunks ({plan.density.describe()}) ...", flush=True)
    store = open_store(location)
    try:
        store.set_meta("embedder", plan.embedder)
        store.set_meta(BUILDING_KEY, plan.signature())
        stats = build_collection(
            store,
            plan.corpus,
            plan.chunks,
            doc_chunks=CHUNKS_PER_PAGE * PAGES_PER_DOC,
            chunks_per_page=CHUNKS_PER_PAGE,
            density=plan.density,
            graph_embedder=graph_embedder,
            seed=plan.seed,
            label=label,
        )
        store.set_meta(SECONDS_KEY, f"{stats.seconds:.1f}")
        store.set_meta(COMPLETE_KEY, plan.signature())
    finally:
        store.close()
    print(
        f"  {label}: built in {duration(stats.seconds)} ({plan.chunks / stats.seconds:,.0f} chunks/s; concept layer"
        f" {stats.concepts_seconds:.1f} s, graph embeddings {stats.vectors_seconds:.1f} s): {stats.describe()}",
        flush=True,
    )
    return stats.seconds


def sqlite_collection(plan: Plan, cache: Path, rebuild: bool) -> tuple[str, float | None, bool]:
    """The SQLite collection's location, build seconds and whether it was reused. A build that was stopped
    goes on where it stopped (its seconds are then the last run's)."""
    target = cache / plan.name
    begun = False
    if not rebuild and (target / "hyperfolio.db").exists():
        done, seconds, begun = complete(target, plan.signature())
        if done:
            return str(target), seconds, True
    if target.exists() and not begun:
        shutil.rmtree(target)
    target.mkdir(parents=True, exist_ok=True)
    return str(target), build(target, plan, "sqlite"), False


def postgres_collection(plan: Plan, pg: PgServer, rebuild: bool) -> tuple[str, float | None, bool]:
    """The PostgreSQL collection's URL, build seconds (ANALYZE included) and whether it was reused; a stopped
    build goes on, as SQLite's does."""
    database = plan.name.replace("-", "_")
    begun = False
    if not rebuild and pg.has_database(database):
        done, seconds, begun = complete(pg.uri(database), plan.signature())
        if done:
            return pg.uri(database), seconds, True
    url = pg.uri(database) if begun else pg.create_database(database, replace=True)
    seconds = build(url, plan, "postgres")
    analyzed = pg.analyze(database)
    print(f"  postgres: ANALYZE {analyzed:.1f} s", flush=True)
    store = open_store(url)
    store.set_meta(SECONDS_KEY, f"{seconds + analyzed:.1f}")
    store.close()
    return url, seconds + analyzed, False


# --------------------------------------------------------------------------- report
def graphs_made(collection: Collection) -> float:
    """Seconds to load every space and make (or take up) the graphs of the large ones (store/ann.py): a
    server's state once warm."""
    began = time.perf_counter()
    collection.warm(wait=True)
    return time.perf_counter() - began


def print_table(rows: list[Row]) -> None:
    print()
    head = " | ".join(f"{s} p50 / p95 ms" for s in STRATEGIES)
    print(f"| collection | backend | queries | {head} | n | build s | chunks/s |")
    print("|---|---|---|" + "---|" * len(STRATEGIES) + "---|---|---|")
    for r in rows:
        cells = [f"{r.result[s][0]:.1f} / {r.result[s][1]:.1f}" if s in r.result else "—" for s in STRATEGIES]
        n = next(iter(r.result.values()))[2] if r.result else 0
        build_s = "—" if r.build_s is None else f"{r.build_s:,.0f}" + (" (cached)" if r.cached else "")
        rate = "—" if not r.build_s else f"{r.chunks / r.build_s:,.0f}"
        print(f"| {r.collection} | {r.backend} | {r.scope} | {' | '.join(cells)} | {n} | {build_s} | {rate} |")


def print_ratios(rows: list[Row]) -> None:
    print("\np50 / bm25 p50 (target for concept: <= 1.5):")
    for r in rows:
        res = r.result
        ratios = [f"{s} {res[s][0] / res['bm25'][0]:.1f}x" for s in ("concept", "concept-keyword") if s in res]
        if ratios and res["bm25"][0]:
            print(f"  {r.collection} {r.backend}, {r.scope}: {', '.join(ratios)}")
    print("\nauto / hybrid, p50 and p95 (target: p95 <= 2x):")
    for r in rows:
        if "auto" in r.result and "hybrid" in r.result:
            p50, p95 = (r.result["auto"][i] / r.result["hybrid"][i] for i in (0, 1))
            print(f"  {r.collection} {r.backend}, {r.scope}: p50 {p50:.1f}x, p95 {p95:.1f}x")


# --------------------------------------------------------------------------- main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, help="dev collection built by `hyperfolio eval` (mmlongbench)")
    parser.add_argument("--chunks", type=int, default=100_000, help="size of the synthetic collection")
    parser.add_argument(
        "--backends", default=",".join(BACKENDS), help="synthetic collection backends: sqlite, postgres or both"
    )
    parser.add_argument(
        "--embedder",
        default=Settings().embedder,
        choices=EMBEDDERS,
        help="query embedder for the synthetic collection",
    )
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--cache", type=Path, default=Path("bench-out"), help="where the SQLite collections go")
    parser.add_argument("--pgdata", type=Path, default=Path("bench-out/pgdata"), help="PostgreSQL data directory")
    parser.add_argument(
        "--pg-index-memory",
        help="the PostgreSQL server's maintenance_work_mem, e.g. 8GB: an HNSW index of millions of vectors is"
        " built many times faster when its graph fits (the store asks for at least 2GB)",
    )
    parser.add_argument("--rebuild", action="store_true", help="build the synthetic collections even if cached")
    parser.add_argument(
        "--build-only", action="store_true", help="build (or find) the synthetic collections, measure nothing"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        parser.error(f"unknown backend(s) {', '.join(unknown)}; choose from {', '.join(BACKENDS)}")

    rng = random.Random(args.seed)
    rows: list[Row] = []
    dim = make_embedder(args.embedder).dim
    settings = Settings.load(None, embedder=args.embedder)
    corpus: Corpus | None = None
    density = Density()
    questions: list[tuple[str, str]] = []

    if args.dev is not None:
        questions = dev_questions(args.queries)
        with Collection(args.dev) as dev:
            names = {Path(d.source).name: d.doc_id for d in dev.documents()}
            scoped = [(q, names[ref]) for q, ref in questions if ref in names]
            if not scoped:  # not the mmlongbench collection: use chunk openings as queries
                chunks = list(dev.store.iter_chunks())
                picks = rng.sample(chunks, min(args.queries, len(chunks)))
                scoped = [(" ".join(c.text.split()[:10]), c.doc_id) for c in picks]
                questions = [(q, "") for q, _ in scoped]
            n_chunks = dev.store.count_chunks()
            label = f"dev ({n_chunks:,} chunks, {dev.stats()['embedder']})"
            kinds = STRATEGIES if dev.stats()["hyperedges"] else FLAT
            if not args.build_only:
                print(f"measuring {label} ...", flush=True)
                rows.append(Row(label, "sqlite", "scoped", measure(dev, scoped, kinds)))
                rows.append(Row(label, "sqlite", "unscoped", measure(dev, [(q, None) for q, _ in scoped], kinds)))
            corpus = Corpus.from_store(dev.store, args.seed, dim, label=args.dev.name)
            density = measure_density(dev.store, label=args.dev.name)
    if corpus is None:
        corpus = Corpus.make(args.seed, dim)
        questions = []
    print(f"synthetic densities, {density.describe()}", flush=True)
    suffix = "-dev" if corpus.source != "pseudo-words" else ""
    plan = Plan(
        args.chunks,
        args.seed,
        args.embedder,
        settings.build.graph_embedder,
        corpus,
        density,
        f"synthetic-{args.chunks}-{args.embedder}{suffix}",
    )
    # The same questions and scopes on every backend (document ids are the same: one generator, one seed).
    texts = [q for q, _ in questions][: args.queries] or corpus.questions(args.queries)
    docs_count = -(-args.chunks // (CHUNKS_PER_PAGE * PAGES_PER_DOC))
    doc_ids = [f"syn{d:06d}" for d in range(docs_count)]
    scopes = [rng.choice(doc_ids) for _ in texts]

    pg = PgServer(args.pgdata) if "postgres" in backends else None
    if pg is not None and args.pg_index_memory:
        pg.configure("maintenance_work_mem", args.pg_index_memory)
    try:
        for backend in backends:
            began = time.perf_counter()
            if backend == "postgres" and pg is not None:
                location, build_s, cached = postgres_collection(plan, pg, args.rebuild)
                folder: Path | None = args.cache / f"{plan.name}-pg-files"
            else:
                location, build_s, cached = sqlite_collection(plan, args.cache, args.rebuild)
                folder = None
            if cached:
                print(f"  {backend}: reusing {plan.name} (built in {build_s or 0:,.0f} s)", flush=True)
            ready = f"  {backend}: ready after {duration(time.perf_counter() - began)}"
            print(ready if args.build_only else f"{ready}; measuring ...", flush=True)
            if args.build_only:
                continue
            label = f"synthetic ({args.chunks:,} chunks)"
            with Collection(location, settings=settings, folder=folder) as syn:
                began = time.perf_counter()
                syn.retrieve("warm-up query", mode="dense", k=10)  # loads the query model (and SQLite's matrix)
                print(f"  {backend}: query model + first dense search {time.perf_counter() - began:.1f} s", flush=True)
                if backend == "postgres" and pg is not None:  # pgvector's graphs, as SQLite's are held in memory
                    began = time.perf_counter()
                    read = pg.cache_indexes(plan.name.replace("-", "_"), "vectors_hnsw_")
                    print(f"  {backend}: vector indexes read into the OS file cache, {read / 2**30:.1f} GiB in", end="")
                    print(f" {time.perf_counter() - began:.0f} s", flush=True)
                if backend == "sqlite":
                    made = graphs_made(syn)
                    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
                    print(f"  {backend}: first auto search, then the large spaces' graphs, {made:.0f} s", end="")
                    print(f" (this process's memory at its peak so far: {peak:.1f} GiB)", flush=True)
                for scope, pairs in (
                    ("scoped", list(zip(texts, scopes, strict=True))),
                    ("unscoped", [(q, None) for q in texts]),
                ):
                    result = measure(syn, pairs)
                    rows.append(Row(label, backend, scope, result, build_s, args.chunks, cached))
                    print(f"  {backend}, {scope}: done", flush=True)
    finally:
        if pg is not None:
            pg.close()
    print_table(rows)
    print_ratios(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
