"""Model work of `add` against a real OpenAI-compatible server: calls, tokens, fallbacks, time per stage.

    # a server you run yourself
    python benchmarks/real_model.py --base-url http://127.0.0.1:8080/v1 --model smol
    # or let the benchmark run it, so it can kill it mid-way and start it again
    python benchmarks/real_model.py --model smol --kill-after 40 --server-cmd \
        "python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --port 8766 \
         --n_threads 1 --model_alias smol"

Prints the estimate (`hyperfolio estimate`) before anything runs, then what `add` of the document
(default: the 4-page sample report) really took: per stage the calls, tokens, retries and seconds
waiting on the server, the wall time of each build stage, which pages the model built and which
fell back offline, and the estimate against the measurement. With --kill-after the server is
killed that many seconds into `add`, started again, the file added again (nothing may be lost or
duplicated) and `build --retry-model` redoes the offline-built parts.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from hyperfolio import Collection, Settings
from hyperfolio.collection import AddProgress
from hyperfolio.sample import write_sample_report


class StageClock(AddProgress):
    """Wall time of each build stage, from the progress callbacks `add` makes."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}
        self._current: tuple[str, float] | None = None
        self.lines: list[str] = []

    def graph_stage(self, stage: str) -> None:
        name = stage.split(" (")[0].split(" with the model")[0].split(":")[0]
        now = time.monotonic()
        if "with the model" in stage:
            self.lines.append(stage)
        if self._current is None or self._current[0] != name:
            self._close(now)
            self._current = (name, now)

    def _close(self, now: float) -> None:
        if self._current is not None:
            name, since = self._current
            self.stages[name] = self.stages.get(name, 0.0) + now - since
            self._current = None

    def file_finished(self, result) -> None:  # noqa: ANN001 - AddProgress signature
        self._close(time.monotonic())


class Server:
    """A model server process the benchmark owns, so it can kill it and start it again."""

    def __init__(self, command: str, base_url: str, log: Path) -> None:
        self.command, self.base_url, self.log = command, base_url, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, wait: float = 120.0) -> None:
        handle = self.log.open("ab")
        self.process = subprocess.Popen(shlex.split(self.command), stdout=handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"the server command exited with code {self.process.returncode}; see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        sys.exit(f"the server did not answer {self.base_url}/models within {wait:.0f} s; see {self.log}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def _port(command: str) -> str:
    words = shlex.split(command)
    return words[words.index("--port") + 1] if "--port" in words else "8000"


def graph_counts(col: Collection) -> dict[str, int]:
    stats = col.stats()
    return {k: stats[k] for k in ("documents", "pages", "chunks", "vectors", "entities", "hyperedges")}


def print_usage(col: Collection, clock: StageClock | None) -> None:
    usage = col.models.snapshot()
    print(f"  {'stage':10} {'calls':>5} {'prompt':>8} {'reply':>7} {'retries':>7} {'server s':>9}")
    for stage, u in sorted(usage.items()):
        print(
            f"  {stage:10} {u.calls:5d} {u.prompt_tokens:8d} {u.completion_tokens:7d} {u.retries:7d} {u.seconds:9.1f}"
            + ("  (token counts estimated)" if u.estimated else "")
        )
    if clock is not None:
        print("  build stages (wall s): " + ", ".join(f"{k} {v:.1f}" for k, v in clock.stages.items()))
    built = col.stats()["built_by"]
    print(f"  built by: {json.dumps(built)}")
    for doc, stage, item, reason in col.offline_parts():
        print(f"  offline: {doc} {stage} {item}: {reason[:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--document", type=Path, help="a PDF (default: the 4-page sample report)")
    parser.add_argument("--base-url", help="the server's /v1 URL (default: from --server-cmd's --port)")
    parser.add_argument("--model", required=True, help="the model name the server answers to")
    parser.add_argument("--server-cmd", help="a command that serves the model; the benchmark runs it")
    parser.add_argument("--kill-after", type=float, help="kill the server this many seconds into add, then recover")
    parser.add_argument("--no-stream", action="store_true", help="unstreamed requests (servers then count tokens)")
    parser.add_argument("--out", type=Path, help="folder for the collection and the server log (default: a temp dir)")
    args = parser.parse_args()
    if args.kill_after and not args.server_cmd:
        parser.error("--kill-after needs --server-cmd (the benchmark must own the server to kill it)")
    out = args.out or Path(tempfile.mkdtemp(prefix="hyperfolio-real-model-"))
    out.mkdir(parents=True, exist_ok=True)
    document = args.document or write_sample_report(out / "sample-report.pdf")
    base_url = args.base_url or f"http://127.0.0.1:{_port(args.server_cmd or '')}/v1"
    server = Server(args.server_cmd, base_url, out / "server.log") if args.server_cmd else None
    if server is not None:
        server.start()
    settings = Settings.load(None, models={"base_url": base_url, "model": args.model, "stream": not args.no_stream})
    collection = out / "collection"
    try:
        col = Collection(collection, settings=settings)
        started = time.monotonic()
        work = col.estimate(document)
        print(f"server: {work.server} (probed in {time.monotonic() - started:.1f} s)")
        print(f"estimate for {document.name}: {work.pages} pages, {work.calls} calls, {work.tokens:,} tokens")
        for stage in work.stages:
            tokens = f"{stage.prompt_tokens:8d} prompt {stage.completion_tokens:7d} reply"
            print(f"  {stage.stage:10} {stage.calls:5d} calls {tokens}")
        if work.seconds is not None:
            print(f"  expected model time: {work.seconds:.0f} s")
        col.models.usage.reset()

        clock = StageClock()
        if server is not None and args.kill_after:
            threading.Timer(args.kill_after, server.kill).start()
        started = time.monotonic()
        report = col.add([document], progress=clock)
        wall = time.monotonic() - started
        result = report.results[0]
        reason = f" - {result.reason}" if result.reason else ""
        print(f"\nadd: {result.status} in {wall:.1f} s wall ({result.pages} pages){reason}")
        print_usage(col, clock)
        if clock.lines:
            print(f"  last progress line: {clock.lines[-1]}")
        measured = col.models.snapshot()
        print("\nestimate vs measured (calls, prompt tokens, reply tokens):")
        for stage in work.stages:
            got = measured.get(stage.stage)
            if got is None:
                print(f"  {stage.stage:10} predicted {stage.calls} calls; none made")
                continue
            print(
                f"  {stage.stage:10} calls {stage.calls} vs {got.calls}, prompt {stage.prompt_tokens} vs "
                f"{got.prompt_tokens} ({(stage.prompt_tokens - got.prompt_tokens) / max(1, got.prompt_tokens):+.0%}), "
                f"reply {stage.completion_tokens} vs {got.completion_tokens}"
            )
        before = graph_counts(col)
        col.close()

        if server is not None and args.kill_after:
            print("\nserver killed during add; starting it again")
            server.start()
            col = Collection(collection, settings=settings)
            again = col.add([document]).results[0]
            after = graph_counts(col)
            print(f"add again: {again.status}; counts before {before}, after {after}")
            print("nothing lost or duplicated" if after == before else "COUNTS CHANGED")
            col.models.usage.reset()
            started = time.monotonic()
            redone = col.build_graph(retry_model=True)
            print(f"\nbuild --retry-model: {len(redone)} document(s) in {time.monotonic() - started:.1f} s")
            print_usage(col, None)
            col.close()
        if server is not None:
            log = server.log.read_text(errors="replace")
            print(
                f"\nserver log: {log.count('POST /v1/chat/completions')} chat requests, "
                f"{log.lower().count('disconnect')} lines about clients that left"
            )
    finally:
        if server is not None:
            server.stop()
    print(f"\n(collection and server log in {out})")


if __name__ == "__main__":
    main()
