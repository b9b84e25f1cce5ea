"""How honest is `add`'s time left? The forecast of `Tracker.seconds_left()` against the time it really took.

Runs one real `Collection.add` over several files into a fresh collection (default embedder and
settings) with a progress object that feeds a `Tracker`, as the CLI's bar does, and samples the
forecast and the clock at every progress callback. Once the add has returned, each sample with a
forecast gets the true seconds left (the add's end minus the sample's time) and its relative error
|forecast - true| / true. Prints the files, pages and seconds, then the median and p90 error and the
median forecast / true (below 1: it said less than was left) over all samples and by quarter of the
run's elapsed time (the early quarters are where a forecast made from one finished file shows), and the
first forecast shown against the true time left at that moment.

    python benchmarks/progress_eta.py                          # 12 MMLongBench-Doc dev PDFs, <= 30 pages
    python benchmarks/progress_eta.py --workers -1             # parsing ahead in one process per core
    python benchmarks/progress_eta.py --files a.pdf,b.pdf --max-pages 0
    python benchmarks/progress_eta.py --replay saved-events.json   # the current Tracker on a recorded run

Every callback is also written with its time to `<out>/events.json`; `--replay` feeds such a file to the
current `Tracker` under a fake clock, so two versions of the forecast can be judged on the very same run
(copy the file out of `--out` first: the folder is recreated). `--max-pages` indexes copies of the PDFs
cut to their first pages, written under the output folder. A default run takes 1 to 2 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperfolio.collection import AddProgress, AddResult, Collection
from hyperfolio.config import Settings
from hyperfolio.eval.datasets import data_root
from hyperfolio.ingest.progress import Tracker

QUARTERS = ("0-25%", "25-50%", "50-75%", "75-100%")


@dataclass
class Sample:
    at: float  # clock seconds
    left: float | None  # the forecast then


class Recorder(AddProgress):
    """Forwards each callback to a `Tracker` (as the CLI's `_BarProgress` does), then samples its forecast;
    every callback is kept with its time, to be replayed."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.tracker = Tracker(clock)
        self.samples: list[Sample] = []
        self.events: list[tuple[float, str, list[Any]]] = []

    def _after(self, name: str, *args: Any) -> None:
        now = self.clock()
        self.events.append((now, name, list(args)))
        self.samples.append(Sample(now, self.tracker.seconds_left()))

    def planned(self, pages: dict[str, int]) -> None:
        self.tracker.planned(pages)
        self._after("planned", pages)

    def file_started(self, path: str) -> None:
        self.tracker.file_started(path)
        self._after("file_started", path)

    def pages_parsed(self, done: int, total: int) -> None:
        self.tracker.pages_parsed(done, total)
        self._after("pages_parsed", done, total)

    def chunks_embedded(self, count: int, total: int = 0) -> None:
        self.tracker.chunks_embedded(count, total)
        self._after("chunks_embedded", count, total)

    def graph_stage(self, stage: str) -> None:
        self.tracker.graph_stage(stage)
        self._after("graph_stage", stage)

    def file_finished(self, result: AddResult) -> None:
        self.tracker.file_finished(result.path, result.status, result.pages, result.chunks)
        self._after("file_finished", result.path, result.status, result.pages, result.chunks)


class Replayed:
    """The clock of a replay: the time of the callback being replayed."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def replay(events: list[tuple[float, str, list[Any]]], began: float) -> list[Sample]:
    """The current `Tracker`'s forecasts at the recorded callbacks, at their recorded times."""
    clock = Replayed(began)
    tracker = Tracker(clock)
    samples = []
    for at, name, args in events:
        clock.now = at
        getattr(tracker, name)(*args)
        samples.append(Sample(at, tracker.seconds_left()))
    return samples


def p90(values: list[float]) -> float:
    """The nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(math.ceil(0.9 * len(ordered)) - 1, 0)]


def error_rows(samples: list[Sample], began: float, ended: float) -> list[tuple[str, list[tuple[float, float]]]]:
    """(forecast, true seconds left) of every sample with a forecast: all, then by quarter of the run's
    elapsed time."""
    span = ended - began
    quarters: list[list[tuple[float, float]]] = [[] for _ in QUARTERS]
    every: list[tuple[float, float]] = []
    for sample in samples:
        truth = ended - sample.at
        if sample.left is None or truth <= 0:
            continue
        every.append((sample.left, truth))
        quarters[min(int(4 * (sample.at - began) / span), 3)].append((sample.left, truth))
    return [("all", every), *zip(QUARTERS, quarters, strict=True)]


def report(run: dict[str, Any], samples: list[Sample]) -> None:
    """The table: relative error |forecast - true| / true, and the median forecast / true (below 1: the
    forecast said less than was left), over all samples and by quarter."""
    began, ended = run["began"], run["ended"]
    print(f"\n{run['files']} files, {run['pages']} pages, {run['chunks']} chunks, {ended - began:.1f} s")
    print("\n| elapsed | samples | median error | p90 error | median forecast / true |")
    print("|---|---:|---:|---:|---:|")
    for name, pairs in error_rows(samples, began, ended):
        if not pairs:
            print(f"| {name} | 0 | - | - | - |")
            continue
        errors = [abs(left - truth) / truth for left, truth in pairs]
        ratio = statistics.median(left / truth for left, truth in pairs)
        print(f"| {name} | {len(pairs)} | {statistics.median(errors):.0%} | {p90(errors):.0%} | {ratio:.2f} |")
    first = next((s for s in samples if s.left is not None), None)
    if first is not None:
        print(
            f"\nfirst forecast at {first.at - began:.1f} s: {first.left:.1f} s left, "
            f"truly {ended - first.at:.1f} s left"
        )


def inputs(args: argparse.Namespace) -> list[Path] | None:
    """The files to add, in order; None when the default data is absent."""
    if args.files:
        return [Path(f) for f in args.files.split(",") if f][: args.limit]
    folder = data_root(args.data) / "mmlongbench_dev" / "documents"
    if not folder.is_dir():
        print(f"skipped: no MMLongBench-Doc dev documents under {folder} (set HYPERFOLIO_DATA)")
        return None
    return sorted(folder.glob("*.pdf"))[: args.limit]


def fresh_folder(out: Path) -> bool:
    """Recreate `out`, unless it holds something that is not this benchmark's."""
    if out.exists():
        if any(out.iterdir()) and not (out / "progress-eta").exists():
            print(f"refusing to delete {out}: not this benchmark's folder")
            return False
        shutil.rmtree(out)
    (out / "progress-eta").mkdir(parents=True)
    return True


def measure(args: argparse.Namespace, files: list[Path]) -> dict[str, Any]:
    """One `add` of `files` into a fresh collection: the recorded callbacks and the run's bounds."""
    recorder = Recorder()
    with Collection(args.out / "collection", settings=Settings.load(None)) as collection:
        print(f"adding {len(files)} files (embedder {collection.embedder.name}, workers {args.workers})", flush=True)
        began = time.perf_counter()
        added = collection.add(files, progress=recorder, workers=args.workers)
        ended = time.perf_counter()
    for r in added.results:
        print(f"  {Path(r.path).name}: {r.status}, {r.pages} p, {r.chunks} chunks, {r.seconds:.1f} s", flush=True)
    return {
        "began": began,
        "ended": ended,
        "files": len(added.results),
        "pages": added.pages,
        "chunks": sum(r.chunks for r in added.results),
        "events": recorder.events,
        "samples": [(s.at, s.left) for s in recorder.samples],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", default="", help="comma-separated files, added in this order")
    parser.add_argument("--limit", type=int, default=12, help="files to add (default 12)")
    parser.add_argument("--max-pages", type=int, default=30, help="cut PDFs to their first N pages (0: whole)")
    parser.add_argument("--workers", type=int, default=None, help="parsing processes (default: the collection's)")
    parser.add_argument("--out", type=Path, default=Path("bench-out/progress-eta"), help="work folder (recreated)")
    parser.add_argument("--data", type=Path, default=None, help="benchmark data root")
    parser.add_argument("--replay", type=Path, default=None, help="judge the current Tracker on a saved events.json")
    args = parser.parse_args()

    if args.replay:
        run = json.loads(args.replay.read_text())
        report(run, replay(run["events"], run["began"]))
        return 0
    files = inputs(args)
    if files is None:
        return 0
    if not fresh_folder(args.out):
        return 2
    if args.max_pages:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from related_growth import cut

        files = [cut(f, args.max_pages, args.out / "cut") for f in files]
    run = measure(args, files)
    (args.out / "events.json").write_text(json.dumps(run))
    live = [Sample(at, left) for at, left in run["samples"]]
    again = replay(run["events"], run["began"])
    apart = [abs((a.left or 0.0) - (b.left or 0.0)) for a, b in zip(live, again, strict=True)]
    if any((a.left is None) != (b.left is None) for a, b in zip(live, again, strict=True)) or max(apart) > 0.5:
        print(f"note: a replay of this run forecasts up to {max(apart):.1f} s apart from the live tracker")
    report(run, live)
    return 0


if __name__ == "__main__":
    sys.exit(main())
