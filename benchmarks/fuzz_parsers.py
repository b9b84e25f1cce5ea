"""Fuzz every parser for longer than the test does, each input in a child process with time and memory limits.

The seeds, mutators and the check of each input come from `tests/parse/test_fuzz_parsers.py` (loaded
from there): an input must give a Document or a one-line ParseError at every entry point an upload
meets. Inputs run in a forked worker process that has an address-space limit (RLIMIT_AS); one that
runs past --timeout is killed and counted as a hang, one that kills its worker (a signal from native
code, the memory limit) as a crash, and a MemoryError behind a ParseError as a memory crash.

    python benchmarks/fuzz_parsers.py --seconds 60 [--parser pdf] [--timeout 20] [--memory-mb 3072]
    python benchmarks/fuzz_parsers.py --engine atheris --seconds 120 --parser word   # coverage-guided

Prints one row per parser (inputs tried, inputs that raised ParseError, crashing inputs, distinct crashes
by exception type and location, hangs, seconds), then each distinct crash with how to rebuild its
input (seed, mutators, random seed). Crashing inputs are written under bench-out/fuzz-parsers/.
Exits 1 when anything crashed. --engine atheris (optional: `pip install atheris`) runs libFuzzer's
coverage-guided search from the same seeds instead, a child process per parser.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import multiprocessing
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FUZZ_MODULE = ROOT / "tests" / "parse" / "test_fuzz_parsers.py"
OUT = ROOT / "bench-out" / "fuzz-parsers"
SOURCE = str(ROOT / "src" / "hyperfolio")


def load_fuzzing() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hyperfolio_fuzz_parsers", FUZZ_MODULE)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {FUZZ_MODULE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the worker (a forked child)


def _where(tb: Any) -> str:
    """The deepest frame in hyperfolio and the deepest frame of all: where a crash happened, and in what."""
    frames = traceback.extract_tb(tb)
    if not frames:
        return "?"
    ours = [f for f in frames if f.filename.startswith(SOURCE)]
    last = frames[-1]
    inner = f"{Path(last.filename).name}:{last.lineno}"
    if ours and ours[-1] is not last:
        return f"{Path(ours[-1].filename).name}:{ours[-1].lineno} > {inner}"
    return inner


def _memory_error(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, MemoryError) or "out of memory" in str(exc).lower() or "malloc" in str(exc).lower():
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def classify(exc: BaseException) -> tuple[str, str]:
    """(signature, one-line summary) of a crash; the signature is the exception type and where it was raised."""
    if isinstance(exc, AssertionError) and exc.__cause__ is not None:  # a ParseError with a bad message
        cause = exc.__cause__
        return f"bad ParseError message @ {_where(cause.__traceback__)}", str(exc)[:240]
    summary = " ".join(f"{type(exc).__name__}: {exc}".split())[:240]
    return f"{type(exc).__name__} @ {_where(exc.__traceback__)}", summary


def worker(conn: Connection, memory_mb: int) -> None:
    """Run inputs until the parent closes the pipe. Each answer: ("ok"|"errors"|"crash", signature, summary,
    seconds the input took, the worker's peak resident memory in MB so far)."""
    fuzz = sys.modules["hyperfolio_fuzz_parsers"]
    warnings.simplefilter("ignore")  # Pillow warns of every damaged tag; the outcome is what counts
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    folder = Path(tempfile.mkdtemp(prefix="fuzz-parsers-"))
    while True:
        try:
            suffix, data = conn.recv()
        except EOFError:
            return
        began = time.perf_counter()
        answer: tuple[str, str, str]
        try:
            outcomes = fuzz.exercise(folder / f"input{suffix}", data)
        except BaseException as exc:  # everything but a ParseError is a crash
            answer = ("crash", *classify(exc))
        else:
            memory = next((e for e in outcomes if e is not None and _memory_error(e)), None)
            if memory is not None:
                answer = ("crash", f"memory: {_where(memory.__traceback__)}", str(memory)[:240])
            else:
                answer = ("errors" if any(outcomes) else "ok", "", "")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        conn.send((*answer, time.perf_counter() - began, peak))


class Runner:
    """A warm worker process; restarted after a hang or a death."""

    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self.context = multiprocessing.get_context("fork")
        self.process: Any = None
        self.conn: Connection | None = None

    def start(self) -> None:
        parent, child = self.context.Pipe()
        self.process = self.context.Process(target=worker, args=(child, self.memory_mb), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent

    def stop(self) -> None:
        if self.process is not None:
            if self.process.is_alive():
                os.kill(self.process.pid, signal.SIGKILL)
            self.process.join()
            self.process = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def run(self, suffix: str, data: bytes, timeout: float) -> tuple[str, str, str, float, float]:
        if self.process is None:
            self.start()
        assert self.conn is not None
        try:
            self.conn.send((suffix, data))
            if self.conn.poll(timeout):
                answer: tuple[str, str, str, float, float] = self.conn.recv()
                return answer
        except (EOFError, OSError, BrokenPipeError):
            pass
        if self.process is not None:
            self.process.join(0.5)
        code = self.process.exitcode if self.process is not None else None
        self.stop()
        if code is None:
            return "hang", f"hang (> {timeout:g} s)", f"killed after {timeout:g} s", timeout, 0.0
        how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit code {code}"
        return "crash", f"worker died: {how}", f"the worker process died: {how}", 0.0, 0.0


# ---------------------------------------------------------------- the search


@dataclass
class Tally:
    inputs: int = 0
    errors: int = 0
    crashes: int = 0
    hangs: int = 0
    seconds: float = 0.0
    slowest: float = 0.0  # seconds of the slowest input that finished
    slowest_input: str = ""
    peak_mb: float = 0.0  # the workers' peak resident memory
    distinct: dict[str, tuple[str, str]] = field(default_factory=dict)  # signature -> (summary, how to rebuild)
    by_mutator: Counter[str] = field(default_factory=Counter)


def fuzz_parser(fuzz: ModuleType, kind: str, args: argparse.Namespace, runner: Runner) -> Tally:
    seeds = dict(fuzz.seeds(kind))
    if kind == "pdf" and args.real:
        seeds |= fuzz._real_pdfs(args.real)
    names = sorted(seeds)
    mutator_names = sorted(fuzz.mutators(kind))
    rng = random.Random(f"{args.seed}:{kind}")
    tally = Tally()
    began = time.monotonic()
    while time.monotonic() - began < args.seconds:
        name = rng.choice(names)
        chain = [rng.choice(mutator_names) for _ in range(rng.randint(1, 3))]
        seed = rng.randrange(2**32)
        suffix, data = seeds[name]
        data = fuzz.mutate(kind, data, chain, seed)
        status, signature, summary, seconds, peak = runner.run(suffix, data, args.timeout)
        tally.inputs += 1
        tally.peak_mb = max(tally.peak_mb, peak)
        if status != "hang" and seconds > tally.slowest:
            tally.slowest = seconds
            tally.slowest_input = f"seed {name!r}, mutators {chain}, random seed {seed}"
        if status == "errors":
            tally.errors += 1
        elif status in ("crash", "hang"):
            tally.crashes += 1
            tally.hangs += status == "hang"
            tally.by_mutator.update(chain)
            if signature not in tally.distinct:
                rebuild = f"seed {name!r}, mutators {chain}, random seed {seed}"
                tally.distinct[signature] = (summary, rebuild)
                digest = hashlib.sha256(data).hexdigest()[:12]
                OUT.mkdir(parents=True, exist_ok=True)
                (OUT / f"{kind}-{digest}{suffix}").write_bytes(data)
    tally.seconds = time.monotonic() - began
    return tally


def print_table(results: dict[str, Tally]) -> None:
    header = (
        "parser",
        "inputs",
        "ParseError",
        "crashing inputs",
        "distinct crashes",
        "hangs",
        "slowest s",
        "peak MB",
        "seconds",
    )  # noqa: E501
    rows = [
        (
            kind,
            str(t.inputs),
            str(t.errors),
            str(t.crashes),
            str(len(t.distinct)),
            str(t.hangs),
            f"{t.slowest:.1f}",
            f"{t.peak_mb:.0f}",
            f"{t.seconds:.0f}",
        )
        for kind, t in results.items()
    ]
    total = [sum(int(r[i]) for r in rows) for i in range(1, 6)]
    slowest = max((t.slowest for t in results.values()), default=0.0)
    peak = max((t.peak_mb for t in results.values()), default=0.0)
    seconds = sum(t.seconds for t in results.values())
    rows.append(("total", *map(str, total), f"{slowest:.1f}", f"{peak:.0f}", f"{seconds:.0f}"))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"
    print(line)
    print("|" + "|".join(("-" * (w + 2)) if i == 0 else ("-" * (w + 1) + ":") for i, w in enumerate(widths)) + "|")
    for row in rows:
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        print("| " + " | ".join(cells) + " |")
    print("\nslowest input per parser:")
    for kind, tally in results.items():
        print(f"    {kind}: {tally.slowest:.1f} s: {tally.slowest_input}")
    for kind, tally in results.items():
        for signature, (summary, rebuild) in tally.distinct.items():
            print(f"\n{kind}: {signature}\n    {summary}\n    input: {rebuild}")


# ---------------------------------------------------------------- atheris (optional, coverage-guided)


def atheris_child(fuzz: ModuleType, kind: str, libfuzzer_args: list[str]) -> None:
    """libFuzzer's loop in this process: any exception but ParseError is a finding."""
    import atheris

    suffixes = {suffix for suffix, _ in fuzz.seeds(kind).values()}
    folder = Path(tempfile.mkdtemp(prefix="fuzz-atheris-"))

    def suffix_for(data: bytes) -> str:
        if kind != "image":
            return sorted(suffixes)[0]
        return ".png" if data.startswith(b"\x89PNG") else ".jpg" if data.startswith(b"\xff\xd8") else ".tiff"

    def one_input(data: bytes) -> None:
        fuzz.exercise(folder / f"input{suffix_for(data)}", data)

    atheris.instrument_all()
    atheris.Setup([sys.argv[0], *libfuzzer_args], one_input)
    atheris.Fuzz()


def run_atheris(fuzz: ModuleType, kinds: list[str], args: argparse.Namespace) -> int:
    try:
        import atheris  # noqa: F401
    except ImportError:
        raise SystemExit("--engine atheris needs atheris: pip install atheris") from None
    found = 0
    print("| parser | inputs | distinct crashes | seconds |\n|---|---:|---:|---:|")
    for kind in kinds:
        corpus = OUT / "corpus" / kind
        corpus.mkdir(parents=True, exist_ok=True)
        for name, (_, data) in fuzz.seeds(kind).items():
            (corpus / re.sub(r"\W", "_", name)).write_bytes(data)
        artifacts = OUT / "atheris" / kind
        artifacts.mkdir(parents=True, exist_ok=True)
        flags = [
            f"-max_total_time={int(args.seconds)}",
            f"-timeout={int(args.timeout)}",
            f"-rss_limit_mb={args.memory_mb or 2048}",
            f"-artifact_prefix={artifacts}/",
            "-fork=1",
            "-ignore_crashes=1",
            "-ignore_timeouts=1",
            "-ignore_ooms=1",
            str(corpus),
        ]
        began = time.monotonic()
        command = [sys.executable, __file__, "--atheris-child", kind, "--", *flags]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        log = done.stdout + done.stderr
        (OUT / f"atheris-{kind}.log").write_text(log)
        runs = re.findall(r"#(\d+)", log)
        crashes = len(list(artifacts.glob("*")))
        found += crashes
        print(f"| {kind} | {runs[-1] if runs else '?'} | {crashes} | {time.monotonic() - began:.0f} |")
    print(f"\nlogs and crashing inputs under {OUT}")
    return 1 if found else 0


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--atheris-child"]:
        atheris_child(load_fuzzing(), argv[1], argv[3:] if argv[2:3] == ["--"] else argv[2:])
        return 0
    fuzz = load_fuzzing()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="fuzzing time per parser")
    parser.add_argument("--parser", action="append", choices=fuzz.PARSERS, help="only this parser (repeatable)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds one input may take (a hang beyond)")
    parser.add_argument("--memory-mb", type=int, default=3072, help="address-space limit of the worker (0: none)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the search (same seed, same inputs)")
    parser.add_argument("--real", type=int, default=3, help="smallest MMLongBench-Doc PDFs added as PDF seeds")
    parser.add_argument("--engine", choices=("random", "atheris"), default="random")
    args = parser.parse_args(argv)
    kinds = args.parser or list(fuzz.PARSERS)
    if args.real and not fuzz.DATA.is_dir():
        print(f"no MMLongBench-Doc PDFs at {fuzz.DATA}: fuzzing generated PDF seeds only", file=sys.stderr)
    if args.engine == "atheris":
        return run_atheris(fuzz, kinds, args)
    import logging

    logging.disable(logging.WARNING)  # damaged files make parsers warn on every page; the table says enough
    for kind in kinds:  # every parser module imported before the worker forks, so each child starts warm
        fuzz.seeds(kind)
        fuzz.exercise(
            Path(tempfile.mkdtemp()) / f"warm{fuzz.seeds(kind)[sorted(fuzz.seeds(kind))[0]][0]}",
            next(iter(fuzz.seeds(kind).values()))[1],
        )
    results: dict[str, Tally] = {}
    runner = Runner(args.memory_mb)
    try:
        for kind in kinds:
            runner.stop()  # a fresh worker per parser, so its peak memory is that parser's
            results[kind] = fuzz_parser(fuzz, kind, args, runner)
            print(
                f"{kind}: {results[kind].inputs} inputs, {len(results[kind].distinct)} distinct crashes",
                file=sys.stderr,
                flush=True,
            )
    finally:
        runner.stop()
    print(
        f"\nfuzz_parsers: {args.seconds:g} s per parser, timeout {args.timeout:g} s, "
        f"memory limit {args.memory_mb} MB, seed {args.seed}\n"
    )
    print_table(results)
    return 1 if any(t.crashes for t in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
