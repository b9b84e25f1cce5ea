"""A soak of conversations on the service: chat clients asking follow-ups while documents come and go.

Starts `hyperfolio serve --no-mcp` on a free loopback port over a fresh root (as serve_load.py does),
indexes the sample report into "soak", then for `--minutes` runs `--clients` threads, each holding a
conversation through the OpenAI-compatible endpoint (`/v1/chat/completions`, the messages so far sent
each time, as chat tools do; every third client through the service's own conversation API instead)
with follow-ups ("and in 2022?", "why?", "what about the Baltic region?", "show me the table"), and one
thread that uploads a generated PDF, waits for it, asks about it, and removes it, in a loop. Every
answer must be 200 and cite the sample (0 errors); after the window every kept document must still be
listed and answer (0 lost); the server's resident memory is read after a warm-up minute and at the end.

    python benchmarks/chat_soak.py --minutes 30        # the issue's soak
    python benchmarks/chat_soak.py --minutes 2         # a quick look
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import pymupdf
from serve_load import start_service, upload, wait_job

from hyperfolio.eval.metrics import percentile
from hyperfolio.sample import SAMPLE_QUESTION, SAMPLE_TITLE, write_sample_report

COLLECTION = "soak"
THREADS = [
    [SAMPLE_QUESTION, "and in 2022?", "why?", "show me the table"],
    ["What was the revenue of the Baltic region?", "what about Iberia?", "and the North Sea?"],
    ["How many people did the company employ in 2024?", "and in 2023?", "how did it change?"],
    ["What revenue does Northwind expect for 2025?", "why?", "what about 2026?"],
]
WARM_UP = 60.0  # seconds before the first memory reading
TIMEOUT = 120.0


@dataclass
class Tally:
    answers: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)
    cycles: int = 0  # uploads added, asked and removed
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, took: float) -> None:
        with self.lock:
            self.answers += 1
            self.seconds.append(took)

    def fail(self, what: str) -> None:
        with self.lock:
            self.errors[what[:200]] += 1


def openai_turn(client: httpx.Client, messages: list[dict[str, str]]) -> str:
    reply = client.post("/v1/chat/completions", json={"model": f"hyperfolio/{COLLECTION}", "messages": messages})
    if reply.status_code != 200:
        raise RuntimeError(f"/v1/chat/completions {reply.status_code}: {reply.text[:200]}")
    text = str(reply.json()["choices"][0]["message"]["content"])
    if SAMPLE_TITLE not in text:
        sources = text[text.find("Sources") :][:120] if "Sources" in text else text[:120]
        raise RuntimeError(f"a reply to {messages[-1]['content']!r} cites nothing of the sample: {sources!r}")
    return text


def chat_client(url: str, number: int, until: float, tally: Tally) -> None:
    """One person chatting: a conversation of follow-ups, then a new one, until the window closes."""
    own_api = number % 3 == 2
    with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
        for turn_list in iter(lambda: THREADS[random.randrange(len(THREADS))], None):
            if time.monotonic() > until:
                return
            messages: list[dict[str, str]] = []
            thread = client.post(f"/api/collections/{COLLECTION}/conversations").json()["id"] if own_api else ""
            for question in turn_list:
                began = time.monotonic()
                try:
                    if own_api:
                        reply = client.post(
                            f"/api/collections/{COLLECTION}/conversations/{thread}/ask", json={"question": question}
                        )
                        if reply.status_code != 200 or not reply.json()["citations"]:
                            raise RuntimeError(f"conversation ask {reply.status_code}: {reply.text[:200]}")
                    else:
                        messages.append({"role": "user", "content": question})
                        messages.append({"role": "assistant", "content": openai_turn(client, messages)})
                    tally.ok(time.monotonic() - began)
                except (httpx.HTTPError, RuntimeError, KeyError, ValueError) as exc:
                    tally.fail(f"{type(exc).__name__}: {exc}")
            if own_api:
                client.delete(f"/api/collections/{COLLECTION}/conversations/{thread}")


def letters(n: int) -> str:
    """n written in letters (0 -> "a", 26 -> "ba")."""
    out = ""
    while True:
        n, digit = divmod(n, 26)
        out = chr(ord("a") + digit) + out
        if n == 0:
            return out


def churn(url: str, until: float, tally: Tally, folder: Path) -> None:
    """Documents coming and going: upload one, ask about it, remove it."""
    with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
        while time.monotonic() < until:
            n = tally.cycles
            tag = letters(n)  # not a number: "memo-2026" was the one document naming the year a question asked
            name = f"memo-{tag}.pdf"
            pdf = folder / name
            doc = pymupdf.open()
            page = doc.new_page()
            text = f"Memo {tag}: the Kestrel depot stores {10_000 + n} crates."  # five digits: never a year
            page.insert_textbox(pymupdf.Rect(72, 72, 540, 400), text)
            doc.save(pdf)
            doc.close()
            try:
                before = {d["doc_id"] for d in client.get(f"/api/collections/{COLLECTION}/documents").json()}
                job = wait_job(client, upload(client, COLLECTION, name, pdf.read_bytes()))
                if job["status"] != "done":
                    raise RuntimeError(f"upload of {name}: {job}")
                docs = client.get(f"/api/collections/{COLLECTION}/documents").json()
                added = next(d for d in docs if d["doc_id"] not in before)
                reply = client.post(
                    f"/api/collections/{COLLECTION}/ask",
                    json={"question": "How many crates does the Kestrel depot store?"},
                )
                if reply.status_code != 200:
                    raise RuntimeError(f"ask after upload {reply.status_code}")
                gone = client.delete(f"/api/collections/{COLLECTION}/documents/{added['doc_id']}")
                if gone.status_code != 200:
                    raise RuntimeError(f"remove {gone.status_code}: {gone.text[:200]}")
                with tally.lock:
                    tally.cycles += 1
            except (httpx.HTTPError, RuntimeError, StopIteration, KeyError) as exc:
                tally.fail(f"churn {type(exc).__name__}: {exc}")
                time.sleep(1.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="chat-soak-"))
    service, url = start_service(folder / "root", folder / "service.log")
    try:
        with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
            client.post("/api/collections", json={"name": COLLECTION}).raise_for_status()
            sample = write_sample_report(folder / "sample-report.pdf")
            wait_job(client, upload(client, COLLECTION, sample.name, sample.read_bytes()))
        process = psutil.Process(service.pid)
        tally = Tally()
        began = time.monotonic()
        until = began + 60 * args.minutes
        workers = [threading.Thread(target=chat_client, args=(url, i, until, tally)) for i in range(args.clients)]
        workers.append(threading.Thread(target=churn, args=(url, until, tally, folder)))
        for worker in workers:
            worker.start()
        time.sleep(min(WARM_UP, 60 * args.minutes / 2))
        warm_rss = process.memory_info().rss
        for worker in workers:
            worker.join()
        end_rss = process.memory_info().rss
        with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
            titles = [d["title"] for d in client.get(f"/api/collections/{COLLECTION}/documents").json()]
            still = client.post(f"/api/collections/{COLLECTION}/ask", json={"question": SAMPLE_QUESTION}).json()
        lost = int(SAMPLE_TITLE not in titles or still.get("short") != "North Sea")
        minutes = (time.monotonic() - began) / 60
        p50, p95 = percentile([1000 * s for s in tally.seconds], 50), percentile([1000 * s for s in tally.seconds], 95)
        print(f"chat soak: {minutes:.1f} min, {args.clients} chat clients + 1 uploader on loopback")
        errors = sum(tally.errors.values())
        print(f"  answers {tally.answers} (p50 {p50 or 0:.0f} ms, p95 {p95 or 0:.0f} ms), errors {errors}")
        print(f"  documents added, asked and removed: {tally.cycles}; documents lost: {lost}")
        growth = 100 * (end_rss - warm_rss) / warm_rss
        warm, end = warm_rss / 2**20, end_rss / 2**20
        print(f"  server RSS after warm-up {warm:.0f} MiB, at the end {end:.0f} MiB ({growth:+.1f} %)")
        for error, count in tally.errors.most_common(10):
            print(f"  {count} x {error}")
        return 1 if tally.errors or lost else 0
    finally:
        service.terminate()
        service.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
