"""Ingestion throughput on the MMLongBench-Doc (or FinanceBench) dev PDFs, into a fresh collection.

Prints pages/s, total time, chunks by modality, failures with reasons and peak
memory. Memory is reported three ways because OCR runs Tesseract in child
processes: this process's peak RSS, the largest child's peak RSS (getrusage), and
the peak of process-tree RSS sampled every 100 ms (psutil), which is what a machine
actually has to hold at once.

Per-stage seconds (summed over documents; parsing stages are measured in the workers, so with
several workers they add up to more than the elapsed time) come from the collection's record; from
them, the writer's busy seconds and its capacity (pages/s it takes when the workers parse and embed).

    python benchmarks/ingest.py [--embedder minilm|model2vec] [--workers N | --ray local] [--limit N]
                                [--dataset mmlongbench|financebench] [--out bench-out/ingest-minilm]
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from hyperfolio.collection import AddProgress, AddResult, Collection
from hyperfolio.config import Settings
from hyperfolio.embed.local import EMBEDDERS
from hyperfolio.eval.datasets import DatasetMissing, data_root
from hyperfolio.ingest.embedding import EMBEDDING_WAIT as WAIT
from hyperfolio.ingest.embedding import WRITER_EMBEDDING
from hyperfolio.timing import StageTimes

FOLDERS = {"mmlongbench": "mmlongbench_dev/documents", "financebench": "financebench_dev/pdfs"}


def add_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    """Which dev PDFs a benchmark indexes: `--dataset`, `--data`, `--limit` (read back by `dev_pdfs`)."""
    parser.add_argument("--dataset", default="mmlongbench", choices=sorted(FOLDERS), help="whose dev PDFs")
    parser.add_argument("--data", type=Path, default=None, help="benchmark data root")
    parser.add_argument("--limit", type=int, default=None, help="only the first N PDFs")


def dev_pdfs(args: argparse.Namespace) -> list[Path] | None:
    """The chosen dev PDFs in name order; None, with the reason printed, when the data is absent."""
    folder = data_root(args.data) / FOLDERS[args.dataset]
    if not folder.exists():
        print(f"skipped: {DatasetMissing.__name__}: no PDFs at {folder} (set HYPERFOLIO_DATA)")
        return None
    return sorted(folder.glob("*.pdf"))[: args.limit]


@dataclass
class TreeSampler:
    """Samples RSS of this process plus its children; keeps the peak."""

    interval: float = 0.1
    peak: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            with contextlib.suppress(psutil.Error):
                total = me.memory_info().rss
                for child in me.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        total += child.memory_info().rss
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class Printer(AddProgress):
    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0

    def file_finished(self, result: AddResult) -> None:
        self.done += 1
        status = result.status if result.ok else f"FAILED ({result.reason})"
        print(
            f"[{self.done:>2}/{self.total}] {Path(result.path).name[:48]:<48} {result.pages:>4} p "
            f"{result.chunks:>5} ch {result.seconds:>6.1f} s  {status}",
            flush=True,
        )


# Stages measured in the workers (`--workers` above 0): the rest is the writer's, whose capacity is the pages/s it
# could take if parsing and embedding kept up (its busy seconds: its stages without its wait for their vectors).
PARSE_STAGES = frozenset({"text", "tables", "figures", "page ocr", "figure ocr"})


def print_writer(times: StageTimes, pages: int, workers: bool) -> None:
    """The writer's busy seconds and the pages/s it could take when the workers parse and embed."""
    away = PARSE_STAGES | ({"chunk embedding"} if times.seconds.get(WAIT) is not None else set())
    if not workers:
        away = frozenset()
    taken = times.seconds.get(WRITER_EMBEDDING, 0.0)  # done while waiting: not what the writer must do
    busy = sum(s for stage, s in times.seconds.items() if stage not in away and stage not in (WAIT, WRITER_EMBEDDING))
    where = "on the workers" if "chunk embedding" in away else "in the writer"
    print(
        f"writer busy    {busy:.1f} s (chunks embedded {where}; the writer took back {taken:.1f} s of embedding "
        f"and waited {times.seconds.get(WAIT, 0.0):.1f} s)"
    )
    print(f"writer capacity {pages / max(busy, 1e-9):.2f} pages/s")


def print_stages(times: StageTimes, pages: int, elapsed: float) -> None:
    print()
    print("| stage | seconds | share | ms per page |")
    print("|---|---:|---:|---:|")
    for stage, seconds in times.ordered():
        share = seconds / max(times.total, 1e-9)
        print(f"| {stage} | {seconds:.1f} | {share:.0%} | {1000 * seconds / max(pages, 1):.0f} |")
    print(f"| all stages | {times.total:.1f} | 100% | {1000 * times.total / max(pages, 1):.0f} |")
    print(f"| elapsed | {elapsed:.1f} | | {1000 * elapsed / max(pages, 1):.0f} |")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default=Settings().embedder, choices=EMBEDDERS)
    parser.add_argument("--out", type=Path, default=None, help="collection dir (recreated)")
    parser.add_argument("--workers", type=int, default=-1, help="parsing processes (default -1: one per core)")
    parser.add_argument("--ray", default=None, help="parse on Ray: local, auto or an address")
    add_dataset_arguments(parser)
    args = parser.parse_args()

    files = dev_pdfs(args)
    if files is None:
        return 0
    target = args.out or Path("bench-out") / f"ingest-{args.embedder}"
    if target.exists():
        if not (target / "hyperfolio.db").exists() and any(target.iterdir()):
            print(f"refusing to delete {target}: not a hyperfolio collection")
            return 2
        shutil.rmtree(target)

    settings = Settings.load(None, embedder=args.embedder)
    collection = Collection(target, settings=settings)
    load_started = time.perf_counter()
    collection.embedder.embed(["warm-up"])  # model load is reported apart from throughput
    load_seconds = time.perf_counter() - load_started

    engine = f"Ray {args.ray}" if args.ray else f"workers {args.workers}"
    print(f"indexing {len(files)} {args.dataset} dev PDFs into {target} (embedder {args.embedder}, {engine})")
    with TreeSampler() as sampler:
        report = collection.add(files, progress=Printer(len(files)), workers=args.workers, ray=args.ray)
    stats = collection.stats()
    collection.close()

    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    pages = report.pages
    print()
    print(f"documents      {len(files)} ({len(report.failed)} failed)")
    print(f"pages          {pages}")
    print(f"total time     {report.seconds:.1f} s (+ {load_seconds:.1f} s model load)")
    print(f"throughput     {pages / report.seconds:.2f} pages/s")
    print(f"chunks         {stats['chunks']}")
    for modality, count in sorted(stats["chunks_by_modality"].items()):
        print(f"  {modality:<12} {count}")
    print(f"database       {stats['database_bytes'] / 2**20:.1f} MiB")
    print(
        f"peak RSS       self {self_peak / 2**20:.0f} MiB, largest child {child_peak / 2**20:.0f} MiB, "
        f"process tree (sampled) {sampler.peak / 2**20:.0f} MiB"
    )
    if report.failed:
        print("failures:")
        for result in report.failed:
            print(f"  {Path(result.path).name}: {result.reason}")
    else:
        print("failures       none")
    print_stages(StageTimes(stats["stage_seconds"]), pages, report.seconds)
    print_writer(StageTimes(stats["stage_seconds"]), pages, bool(args.ray) or args.workers != 0)
    longest = sorted(report.results, key=lambda r: r.seconds, reverse=True)[:3]
    print(
        "longest files  " + ", ".join(f"{Path(r.path).name} {r.pages / max(r.seconds, 1e-9):.2f} p/s" for r in longest)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
