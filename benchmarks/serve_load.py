"""Loopback load on the HTTP service: concurrent askers in every retrieval mode while a large PDF is ingested.

Starts `hyperfolio serve --no-mcp` as a subprocess on a free loopback port over a fresh root (so the
load generator does not share the server's GIL), indexes the sample report, then runs `--askers`
threads (one httpx client each) that POST /ask for `--seconds`, cycling through the modes and seven
questions about the sample. At the start of the window a generated PDF (`--ingest-pages` pages of
prose with a ruled table every tenth page) is uploaded; when its job ends while the window is still
open, another one (new content, so never skipped as a duplicate) follows.

    python benchmarks/serve_load.py [--seconds 60] [--askers 8] [--baseline | --no-ingest] [--url URL]

--baseline measures a window without the ingest first and then one with it, in the same run, on the
same service. Any answer that is not 200 counts as an error; each distinct error body is printed
once. Per window: requests, errors, p50/p95/max latency (ms) per mode, requests/s, the server's CPU
use (cores busy on average, from its process times; not with --url), a latency timeline in 5-second
steps beside the ingest's stage, and each ingest job's pages, seconds and pages/s, with how much of
it fell inside the window (a job still running when the window closes is waited for and reported).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import pymupdf

from hyperfolio.eval.metrics import percentile
from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report

MODES = ("auto", "bm25", "dense", "hybrid", "dual", "concept", "topdown")
QUESTIONS = (
    SAMPLE_QUESTION,
    "What was Northwind Renewables' revenue in 2024?",
    "How many people did the company employ in 2024?",
    "What dividend per share does the board propose?",
    "What revenue does Northwind expect for 2025?",
    "When is the Skagen offshore project scheduled to start operation?",
    "What was the revenue of the Baltic region?",
)
SEEDS = itertools.count(random.SystemRandom().randrange(1 << 20))  # new content for every generated PDF
STEP = 5.0
KEPT_LOG = (
    Path("bench-out") / "serve_load" / "service.log"
)  # the service's log, kept when it has errors  # seconds per row of the timeline
REQUEST_TIMEOUT = 120.0


# ---------------------------------------------------------------------- the service
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_service(root: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, "-m", "hyperfolio", "serve", "--root", str(root), "--port", str(port), "--no-mcp"]
    with log.open("wb") as out:
        service = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, service, log)
    return service, url


def wait_ready(url: str, service: subprocess.Popen[bytes] | None = None, log: Path | None = None) -> None:
    """Until /api/ready answers 200 (models loaded)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if service is not None and service.poll() is not None:
            shown = log.read_text(errors="replace")[-3000:] if log else ""
            raise SystemExit(f"the service exited ({service.returncode}):\n{shown}")
        try:
            if httpx.get(f"{url}/api/ready", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise SystemExit(f"{url} was not ready within 180 s")


def upload(client: httpx.Client, collection: str, name: str, data: bytes) -> str:
    response = client.post(f"/api/collections/{collection}/documents", files=[("files", (name, data))])
    if response.status_code != 202:
        raise SystemExit(f"upload of {name} answered {response.status_code}: {response.text[:500]}")
    return response.json()["job_id"]


def wait_job(client: httpx.Client, job_id: str, timeout: float = 600.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (job := client.get(f"/api/jobs/{job_id}").json())["status"] not in ("done", "failed"):
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job_id} did not end within {timeout:.0f} s")
        time.sleep(0.25)
    return job


# ---------------------------------------------------------------------- a large generated PDF
WORDS = (
    "turbine grid capacity offshore onshore storage battery inverter substation cable tariff auction "
    "maintenance availability curtailment forecast hedging revenue margin budget permit survey foundation "
    "blade nacelle tower vessel harbour crew inspection warranty contract supplier logistics schedule "
    "commissioning output efficiency yield irradiance wind speed reservoir transmission distribution"
).split()
SITES = ("Aldbrook", "Bremerhaven", "Castellon", "Dunmore", "Esbjerg", "Faro", "Gdansk", "Hamina", "Ijmuiden")


def large_pdf(path: Path, pages: int, seed: int) -> Path:
    """`pages` A4 pages of generated prose about wind and solar sites, a ruled table every tenth page;
    `seed` makes the content (and so the file's hash) differ from one upload to the next."""
    rng = random.Random(seed)
    doc = pymupdf.open()
    width, height = pymupdf.paper_size("a4")
    for number in range(1, pages + 1):
        page = doc.new_page(width=width, height=height)
        site = rng.choice(SITES)
        page.insert_text((60, 70), f"Section {number}: the {site} site (report {seed})", fontname="hebo", fontsize=14)
        top = 90.0
        if number % 10 == 0:
            top = ruled_table(page, top, rng) + 20
        sentences = []
        for _ in range(rng.randint(22, 30)):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16)))
            sentences.append(
                f"At {site} the {words} reached {rng.randint(10, 990)} units in {rng.randint(2015, 2024)}."
            )
        page.insert_textbox(pymupdf.Rect(60, top, width - 60, height - 60), " ".join(sentences), fontsize=9.5)
    doc.save(path, garbage=3, deflate=True)
    doc.close()
    return path


def generated(work: Path, pages: int) -> Path:
    seed = next(SEEDS)
    return large_pdf(work / f"large-{seed}.pdf", pages, seed)


def ruled_table(page: pymupdf.Page, top: float, rng: random.Random) -> float:
    rows = [("Site", "Capacity (MW)", "Output (GWh)", "Availability (%)")]
    rows += [
        (s, str(rng.randint(40, 900)), f"{rng.uniform(50, 3000):.1f}", f"{rng.uniform(90, 99.5):.1f}")
        for s in SITES[:6]
    ]
    widths, row_h, x0 = (150.0, 110.0, 110.0, 110.0), 20.0, 60.0
    edges = [x0]
    for w in widths:
        edges.append(edges[-1] + w)
    bottom = top + row_h * len(rows)
    shape = page.new_shape()
    for i in range(len(rows) + 1):
        shape.draw_line((edges[0], top + i * row_h), (edges[-1], top + i * row_h))
    for x in edges:
        shape.draw_line((x, top), (x, bottom))
    shape.finish(color=(0, 0, 0), width=0.8)
    shape.commit()
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            font = "hebo" if r == 0 else "helv"
            page.insert_text((edges[c] + 5, top + r * row_h + 14), cell, fontname=font, fontsize=9.5)
    return bottom


# ---------------------------------------------------------------------- one measured window
@dataclass
class Call:
    mode: str
    started: float  # seconds into the window
    ms: float
    ok: bool


@dataclass
class IngestJob:
    name: str
    pages: int
    started: float  # seconds into the window
    finished: float = 0.0
    seconds: float = 0.0  # the job's own time, from its summary
    status: str = "running"
    stages: list[tuple[float, str]] = field(default_factory=list)  # (seconds into the window, stage)
    parsed: list[tuple[float, int]] = field(default_factory=list)  # (seconds into the window, pages parsed)


@dataclass
class Window:
    label: str
    seconds: float
    calls: list[Call] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    jobs: list[IngestJob] = field(default_factory=list)
    cpu_cores: float | None = None  # the server's, in cores busy on average
    cpu_own: float = 0.0  # this load generator's
    cpu_machine: float = 0.0  # every process's (the machine may be shared)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def asker(url: str, collection: str, index: int, start: float, stop: threading.Event, window: Window) -> None:
    with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT) as client:
        turn = 0
        while not stop.is_set():
            mode = MODES[(index + turn) % len(MODES)]
            question = QUESTIONS[(3 * index + turn) % len(QUESTIONS)]
            turn += 1
            sent = time.perf_counter()
            try:
                response = client.post(f"/api/collections/{collection}/ask", json={"question": question, "mode": mode})
                ok, problem = response.status_code == 200, f"{response.status_code} {response.text[:300]}"
            except httpx.HTTPError as exc:
                ok, problem = False, f"{type(exc).__name__}: {exc}"
            done = time.perf_counter()
            with window.lock:
                window.calls.append(Call(mode, sent - start, (done - sent) * 1000, ok))
                if not ok:
                    window.errors[f"[{mode}] {problem}"] += 1


def ingester(
    url: str, collection: str, first: Path, start: float, stop: threading.Event, window: Window, work: Path
) -> None:
    """Upload `first` at once, and another PDF like it whenever a job ends while the window is open (made
    while the previous one is ingested); follow each job's stages and pages through its event stream."""
    with pymupdf.open(first) as doc:
        pdf, pages = first, doc.page_count
    with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT) as client:
        while True:
            job = IngestJob(pdf.name, pages, time.perf_counter() - start)
            window.jobs.append(job)
            job_id = upload(client, collection, pdf.name, pdf.read_bytes())
            pdf.unlink()
            pdf = generated(work, pages)  # the next one, ready if this one ends while the window is open
            with client.stream("GET", f"/api/jobs/{job_id}/events", timeout=None) as events:
                for line in events.iter_lines():
                    event = json.loads(line[5:]) if line.startswith("data:") else {}
                    now = time.perf_counter() - start
                    stage = event.get("stage")
                    if stage and (not job.stages or job.stages[-1][1] != stage):
                        job.stages.append((now, stage))
                    if "pages_done" in event and event.get("type") == "progress":
                        job.parsed.append((now, event["pages_done"]))
            summary = wait_job(client, job_id)
            job.finished = time.perf_counter() - start
            job.seconds, job.status = summary["seconds"], summary["status"]
            if summary["failures"] or summary["status"] != "done":
                job.status = f"{summary['status']} {summary['failures'] or summary['error']}"
            if stop.is_set():
                pdf.unlink()
                return


def measure(
    url: str,
    collection: str,
    label: str,
    seconds: float,
    askers: int,
    ingest_pages: int,
    work: Path,
    server_pid: int | None,
) -> Window:
    window = Window(label, seconds)
    stop = threading.Event()
    first = generated(work, ingest_pages) if ingest_pages else None
    start = time.perf_counter()
    cpu_before, own_before, machine_before = _cpu(server_pid), _own_cpu(), _machine_cpu()
    threads = [
        threading.Thread(target=asker, args=(url, collection, i, start, stop, window), daemon=True)
        for i in range(askers)
    ]
    feeder = None
    if first is not None:
        feeder = threading.Thread(target=ingester, args=(url, collection, first, start, stop, window, work))
        feeder.start()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    cpu_after = _cpu(server_pid)
    if cpu_before is not None and cpu_after is not None:
        window.cpu_cores = (cpu_after - cpu_before) / elapsed
    window.cpu_own = (_own_cpu() - own_before) / elapsed
    window.cpu_machine = (_machine_cpu() - machine_before) / elapsed
    window.seconds = elapsed
    if feeder is not None:
        if window.jobs and window.jobs[-1].status == "running":
            print(f"  window over; waiting for the running ingest ({window.jobs[-1].name}) to end ...", flush=True)
        feeder.join()
    return window


def _own_cpu() -> float:
    times = psutil.Process().cpu_times()
    return times.user + times.system


def _machine_cpu() -> float:
    """CPU seconds every core spent busy (not idle, not waiting for I/O)."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def _cpu(pid: int | None) -> float | None:
    """User + system CPU seconds of the server process and its children."""
    if pid is None:
        return None
    try:
        proc = psutil.Process(pid)
        total = sum(proc.cpu_times()[:2])
        for child in proc.children(recursive=True):
            total += sum(child.cpu_times()[:2])
        return total
    except psutil.Error:
        return None


# ---------------------------------------------------------------------- report
def table(window: Window) -> str:
    by_mode: dict[str, list[Call]] = defaultdict(list)
    for call in window.calls:
        by_mode[call.mode].append(call)
    lines = [f"{'mode':<10}{'requests':>10}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}"]
    for mode in [*MODES, "total"]:
        calls = window.calls if mode == "total" else by_mode.get(mode, [])
        if not calls:
            continue
        ms = [c.ms for c in calls]
        p50, p95 = percentile(ms, 50) or 0.0, percentile(ms, 95) or 0.0
        errors = sum(not c.ok for c in calls)
        if mode == "total":
            lines.append("-" * 58)
        lines.append(f"{mode:<10}{len(calls):>10}{errors:>8}{p50:>10.0f}{p95:>10.0f}{max(ms):>10.0f}")
    rate = len(window.calls) / window.seconds if window.seconds else 0.0
    lines.append(f"{rate:.2f} requests/s over {window.seconds:.1f} s")
    server = f"server {window.cpu_cores:.2f}, " if window.cpu_cores is not None else ""
    others = window.cpu_machine - (window.cpu_cores or 0.0) - window.cpu_own
    lines.append(
        f"CPU, cores busy on average: {server}load generator {window.cpu_own:.2f}, "
        f"{'other processes' if window.cpu_cores is not None else 'the rest'} {max(others, 0.0):.2f} "
        f"(of {psutil.cpu_count()})"
    )
    return "\n".join(lines)


def ingest_report(window: Window) -> str:
    if not window.jobs:
        return "ingest: none"
    lines = []
    for n, job in enumerate(window.jobs, 1):
        inside = max(0.0, min(job.finished, window.seconds) - job.started)
        share = inside / (job.finished - job.started) if job.finished > job.started else 0.0
        rate = job.pages / job.seconds if job.seconds else 0.0
        lines.append(
            f"ingest {n}: {job.pages} pages, {job.seconds:.1f} s, {rate:.2f} pages/s, {job.status}; "
            f"from +{job.started:.1f} s to +{job.finished:.1f} s of the {window.seconds:.0f} s window "
            f"({share:.0%} of it inside the window)"
        )
    parsed = 0
    for job in window.jobs:
        if job.finished and job.finished <= window.seconds:
            parsed += job.pages
        else:
            parsed += max((pages for t, pages in job.parsed if t <= window.seconds), default=0)
    lines.append(
        f"during the {window.seconds:.1f} s window: {parsed} pages parsed, {parsed / window.seconds:.2f} pages/s "
        "(a page counts once parsed; its chunks are embedded and its graph built after)"
    )
    return "\n".join(lines)


def timeline(window: Window) -> str:
    """p50/p95 per STEP seconds, beside the ingest's stage at the start of each step."""
    stages = sorted((t, stage) for job in window.jobs for t, stage in job.stages)
    lines = [f"{'seconds':<12}{'requests':>9}{'p50 ms':>9}{'p95 ms':>9}  ingest stage"]
    step = 0.0
    while step < window.seconds:
        calls = [c.ms for c in window.calls if step <= c.started < step + STEP]
        now = [stage for t, stage in stages if t <= step + STEP / 2]
        running = any(j.started <= step + STEP / 2 < (j.finished or 1e9) for j in window.jobs)
        shown = now[-1] if now and running else ("starting" if running else "-")
        p50, p95 = percentile(calls, 50) or 0.0, percentile(calls, 95) or 0.0
        lines.append(f"{f'{step:.0f}-{step + STEP:.0f}':<12}{len(calls):>9}{p50:>9.0f}{p95:>9.0f}  {shown}")
        step += STEP
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each measured window (default 60)")
    parser.add_argument("--askers", type=int, default=8, help="concurrent askers (default 8)")
    parser.add_argument("--url", default="", help="load this running service instead of starting one")
    parser.add_argument("--collection", default="load", help="collection the load runs on (default load)")
    parser.add_argument("--no-ingest", action="store_true", help="only askers, no ingest")
    parser.add_argument("--baseline", action="store_true", help="a window without the ingest, then one with it")
    parser.add_argument("--ingest-pages", type=int, default=80, help="pages of each generated PDF (default 80)")
    parser.add_argument("--timeline", action="store_true", help="also print the 5-second latency timeline")
    args = parser.parse_args()
    if args.askers < 1 or args.seconds <= 0 or args.ingest_pages < 1:
        parser.error("--askers, --seconds and --ingest-pages must be positive")

    plan = [("without ingest", 0)] if args.no_ingest else [("with ingest", args.ingest_pages)]
    if args.baseline and not args.no_ingest:
        plan.insert(0, ("baseline, no ingest", 0))
    with tempfile.TemporaryDirectory(prefix="hyperfolio-load-") as tmp:
        work = Path(tmp)
        service, url = None, args.url.rstrip("/")
        if not url:
            service, url = start_service(work / "root", work / "service.log")
        else:
            wait_ready(url)
        try:
            with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT) as client:
                client.post("/api/collections", json={"name": args.collection}).raise_for_status()
                sample = write_sample_report(work / "sample-report.pdf")
                indexed = wait_job(client, upload(client, args.collection, sample.name, sample.read_bytes()))
                if indexed["status"] != "done":
                    raise SystemExit(f"the sample report was not indexed: {indexed}")
            print(
                f"service {url} ({'subprocess' if service else 'given'}), {psutil.cpu_count()} cores here; "
                f"{args.askers} askers x {len(MODES)} modes x {len(QUESTIONS)} questions, "
                f"{args.seconds:.0f} s per window",
                flush=True,
            )
            windows = []
            for label, pages in plan:
                print(f"measuring: {label} ...", flush=True)
                pid = service.pid if service else None
                windows.append(measure(url, args.collection, label, args.seconds, args.askers, pages, work, pid))
        finally:
            if service is not None:
                service.terminate()
                try:
                    service.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    service.kill()
                log = (work / "service.log").read_text(errors="replace")
                if "Traceback" in log or "ERROR" in log:
                    KEPT_LOG.parent.mkdir(parents=True, exist_ok=True)
                    KEPT_LOG.write_text(log)
                    print(f"\n--- service log, kept in {KEPT_LOG} (last 3000 characters)\n{log[-3000:]}")
    errors = 0
    for window in windows:
        print(f"\n== {window.label}: {args.askers} askers, {window.seconds:.1f} s")
        print(table(window))
        if window.jobs:
            print(ingest_report(window))
        if args.timeline or window.jobs:
            print(timeline(window))
        for message, count in window.errors.items():
            print(f"error x{count}: {message}")
        errors += sum(window.errors.values())
    if len(windows) == 2:
        base, loaded = (len(w.calls) / w.seconds for w in windows)
        print(f"\nrequests/s: {base:.2f} without the ingest, {loaded:.2f} with it ({(loaded - base) / base:+.0%})")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
