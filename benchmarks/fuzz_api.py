"""Fuzz the HTTP API with schemathesis, with many more examples than the test does.

The same fuzzing as `tests/server/test_fuzz_api.py` (its `prepare` and `fuzz` are loaded from there):
every operation of `/openapi.json`, positive and negative cases, real and random path parameters, the
upload with schemathesis's multipart bodies and with drawn file names and bytes, DELETE last. The
service runs as a subprocess (`hyperfolio serve --no-mcp` on a free loopback port, a fresh root),
unless --url names one that is already running (a collection `--collection` is created there and
the sample report indexed into it).

    python benchmarks/fuzz_api.py --examples 300 [--seed 7] [--url http://127.0.0.1:8765]

Prints the cases run and the statuses seen per operation, then every distinct finding (server
errors first); exits 1 if any server error (5xx) was found, 2 for other findings.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from hyperfolio.sample import write_sample_report

ROOT = Path(__file__).resolve().parent.parent
FUZZ_MODULE = ROOT / "tests" / "server" / "test_fuzz_api.py"


def load_fuzzing() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hyperfolio_fuzz_api", FUZZ_MODULE)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {FUZZ_MODULE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_service(root: Path, log: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "hyperfolio", "serve", "--root", str(root), "--port", str(port), "--no-mcp"]
    with log.open("wb") as out:
        service = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if service.poll() is not None:
            raise SystemExit(f"the service exited ({service.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return service
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    service.terminate()
    raise SystemExit("the service did not answer /api/health within 120 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=200, help="cases per operation (default 200)")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: derandomized)")
    parser.add_argument("--url", default="", help="fuzz this running service instead of starting one")
    parser.add_argument("--collection", default="fuzz", help="collection created for the fuzzing (default fuzz)")
    args = parser.parse_args()

    fuzzing = load_fuzzing()
    with tempfile.TemporaryDirectory(prefix="hyperfolio-fuzz-") as tmp:
        work = Path(tmp)
        sample = write_sample_report(work / "sample-report.pdf")
        service = None
        url = args.url.rstrip("/")
        if not url:
            port = free_port()
            service = start_service(work / "root", work / "service.log", port)
            url = f"http://127.0.0.1:{port}"
        try:
            print(f"service {url}; indexing the sample report into {args.collection!r} ...", flush=True)
            target = fuzzing.prepare(url, sample, args.collection)
            print(f"fuzzing every operation, {args.examples} examples each", flush=True)

            def progress(label: str, report: Any) -> None:
                print(f"  {label:<62} {report.cases[label]:>6} cases", flush=True)

            report = fuzzing.fuzz(target, args.examples, args.seed, on_operation=progress)
            alive = httpx.get(f"{url}/api/health", timeout=10).status_code == 200
        finally:
            if service is not None:
                service.terminate()
                try:
                    service.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    service.kill()
                log = (work / "service.log").read_text(errors="replace")
                if os.environ.get("FUZZ_SHOW_LOG") or "Traceback" in log:
                    print(f"\n--- service log (last 4000 characters)\n{log[-4000:]}")
    print()
    print(report.table())
    print(f"service still healthy afterwards: {alive}")
    findings = sorted(report.findings.values(), key=lambda f: (f.status or 0) < 500)
    for finding in findings:
        print(f"\n[{finding.status}] {finding.operation}: {finding.title}\n{finding.message}")
    if report.server_errors:
        return 1
    return 2 if findings or not alive else 0


if __name__ == "__main__":
    raise SystemExit(main())
