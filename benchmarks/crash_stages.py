"""Kill `add` (SIGKILL) at every stage boundary and at many random points inside each stage, `add` again, and
compare each store with an uninterrupted run's by content; check its integrity after the kill and after resuming.

The harness (fixture, stages, driver, canonical dump) is `tests/crash_harness.py`, loaded from there;
`tests/test_crash_stages.py` runs the same with two random points per stage.

    python benchmarks/crash_stages.py --random 10 --seed 7 --jobs 2
    python benchmarks/crash_stages.py --random 5 --second-document   # into a collection holding a related document

Prints the calls each stage made in the uninterrupted run, the kill points, then one row per stage: kill
points tried, children killed, stores that differed, kill points after which the integrity check found
problems (and how many left a document unfinished, which is no problem: `add` finishes it), kill points
whose store still had problems after resuming, and errors; then the first failures in full. Writes
everything to bench-out/crash-stages/report.json; a failing kill point keeps its collection under
bench-out/crash-stages/runs/. Exits 1 when any kill point failed, or at once when the uninterrupted run
itself does not pass the integrity check (a fault of `add`, not of resuming). SQLite only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "tests" / "crash_harness.py"
OUT = ROOT / "bench-out" / "crash-stages"


def load_harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash_harness", HARNESS)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {HARNESS}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--random", type=int, default=10, help="random kill points per stage, besides its boundary")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random kill points")
    parser.add_argument("--jobs", type=int, default=2, help="killed children at a time")
    parser.add_argument(
        "--no-transactions", action="store_true", help="leave out the kill points at store transactions"
    )
    parser.add_argument("--stage", action="append", default=[], help="only these stages (repeatable)")
    parser.add_argument(
        "--second-document",
        action="store_true",
        help="add a related document first (untraced): reconciliation and refinement then reach into it",
    )
    parser.add_argument("--show", type=int, default=3, help="failures shown in full")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per kill point as it finishes")
    args = parser.parse_args()

    harness = load_harness()
    unknown = set(args.stage) - set(harness.STAGE_NAMES)
    if unknown:
        parser.error(f"unknown stages {sorted(unknown)}; choose from {', '.join(harness.STAGE_NAMES)}")
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    fixture = harness.write_fixture(OUT / "osprey-report.pdf")
    setup = [harness.write_fixture(OUT / "port-notes.pdf", harness.SETUP_PAGES)] if args.second_document else []

    from hyperfolio.embed.local import MiniLMEmbedder

    harness.prepare_models()
    try:
        profile = harness.count_stages(OUT, fixture, setup)  # fails when the uninterrupted run itself is faulty
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    reference = harness.dump_sqlite(profile.collection)
    points = harness.plan(profile, args.random, args.seed, transactions=not args.no_transactions)
    points = [p for p in points if not args.stage or p.stage in args.stage]
    print(f"scenario: {'after a related document' if setup else 'a fresh collection'}; seed {args.seed}")
    print("calls per stage (uninterrupted run):", ", ".join(f"{k} {v}" for k, v in profile.calls.items()))
    print("reference rows:", ", ".join(f"{k} {v}" for k, v in reference.counts().items() if v))
    print(f"{len(points)} kill points ({harness.kinds(points)}):", " ".join(p.label for p in points), flush=True)

    def progress(outcome: Any) -> None:
        if args.verbose:
            state = "ok" if outcome.ok else "FAILED"
            print(f"  {outcome.point.label}: {state} ({outcome.seconds:.1f} s)", flush=True)

    started = time.perf_counter()
    outcomes = harness.run_campaign(
        OUT / "runs", fixture, points, reference, setup, args.jobs, MiniLMEmbedder(), progress
    )
    seconds = time.perf_counter() - started
    rows = harness.summarise(outcomes)
    print()
    print(harness.table([r for r in rows if r["tried"]]))
    failed = [o for o in outcomes if not o.ok]
    print(f"\n{len(outcomes)} kill points in {seconds:.0f} s; {len(failed)} failed")
    findings = sorted({f.split(" (")[0] for o in outcomes for f in o.after_kill})
    if findings:
        print("integrity findings after a kill:", ", ".join(findings))
    for outcome in failed[: args.show]:
        print()
        print(harness.describe(outcome))
    report = {
        "seed": args.seed,
        "second_document": bool(setup),
        "calls": profile.calls,
        "transactions": profile.transactions,
        "seconds": seconds,
        "summary": rows,
        "outcomes": [asdict(o) for o in outcomes],
    }
    (OUT / "report.json").write_text(json.dumps(report, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
