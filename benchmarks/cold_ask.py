"""Cold `hyperfolio ask` per retrieval mode, each a whole new process, as a user runs it.

A fresh collection of the sample report (or --collection) is asked the same question in every
mode; each run is a new Python process, so imports, opening the store and loading models are
all counted. Baselines in the same run: an empty Python process and `hyperfolio --help`.

    python benchmarks/cold_ask.py [--collection DIR] [--repeat 5] [--modes bm25,hybrid,...]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hyperfolio import Collection
from hyperfolio.sample import write_sample_report

QUESTION = "What was the revenue of the Baltic region in 2024?"
MODES = "bm25,dense,hybrid,dual,concept,topdown,auto"


def wall(cmd: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-500:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modes", default=MODES)
    args = parser.parse_args()

    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        target = args.collection
        if target is None:
            target = Path(tmp) / "col"
            with Collection(target) as col:
                col.add([write_sample_report(Path(tmp) / "sample-report.pdf")], workers=0)
        hf = [sys.executable, "-m", "hyperfolio"]
        runs = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "hyperfolio --help": [*hf, "--help"],
            **{f"ask --mode {m}": [*hf, "ask", "-c", str(target), "--mode", m, QUESTION] for m in modes},
        }
        print(f"collection {target}; {args.repeat} runs each (after one warm-up run that fills the OS file cache)")
        print()
        print("| command | median s | min s | max s |")
        print("|---|---:|---:|---:|")
        for label, cmd in runs.items():
            wall(cmd)
            times = [wall(cmd) for _ in range(args.repeat)]
            print(f"| {label} | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
