"""Warm questions, one at a time: p50/p95 of `Collection.ask` per mode and scope, and where the time goes.

The collection is opened once and warmed (models loaded, one question asked in every mode); then every
question is asked once per mode, over the whole collection and scoped to its document. Each ask is split
into retrieval (with `auto`'s own stages: candidates from every source, their features, the ranker),
the answerer, and rendering the reply (`answer_dict` as JSON); its CPU time (every thread of this process)
is shown too, being less moved than wall time by other work on the machine. `--http` asks the same
through `hyperfolio serve` (a subprocess over the collection's parent folder) and adds its p50/p95.

Questions: the sample report's seven (those of `serve_load.py`), or MMLongBench-Doc's (`--dataset
mmlongbench`, each scoped to its own document) on a collection of the dev PDFs. The answerer keeps the
vectors of passages it has embedded (a text's vector never changes); `--first-sight` empties that store
before every ask in this process (the service keeps its own), which is what a question costs when none of
its evidence was quoted before.
`--record FILE` writes every ranking and answer; `--compare FILE` counts those that differ from a record.

    python benchmarks/ask_latency.py                                      # the sample, made in bench-out/
    python benchmarks/ask_latency.py -c ./bench-out/ask-latency-mm --dataset mmlongbench --questions 60
    python benchmarks/ask_latency.py --http --modes auto,hybrid
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from latency import dev_questions
from serve_load import QUESTIONS, start_service

from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.collection import Collection
from hyperfolio.eval.metrics import percentile
from hyperfolio.model import Answer
from hyperfolio.render import answer_dict
from hyperfolio.retrieve.encoding import TextCache
from hyperfolio.sample import write_sample_report

MODES = "auto,hybrid,bm25,dense,dual,concept"
SAMPLE = Path("bench-out/ask-latency/sample")
STAGES = ("candidates", "features", "ranker")  # what `auto` reports of its retrieval


@dataclass
class Cell:
    """One mode and scope: seconds per ask, in total and by stage."""

    total: list[float] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)
    http: list[float] = field(default_factory=list)

    def add(self, stage: str, seconds: float) -> None:
        self.stages.setdefault(stage, []).append(seconds)


def sample_collection(target: Path) -> Path:
    """The sample report's collection, made once."""
    if not (target / "hyperfolio.db").exists():
        with Collection(target) as col:
            col.add([write_sample_report(target.parent / "sample-report.pdf")], workers=0)
    return target


def questions(col: Collection, dataset: str | None, limit: int) -> list[tuple[str, str]]:
    """(question, doc_id) pairs: the dataset's, scoped to their documents, or the sample's."""
    if dataset is None:
        doc_id = col.documents()[0].doc_id
        return [(q, doc_id) for q in QUESTIONS][:limit]
    ids = {Path(d.source).name: d.doc_id for d in col.documents()}
    found = [(q, ids[ref]) for q, ref in dev_questions(10_000) if ref in ids]
    if not found:
        raise SystemExit(f"none of the {dataset} questions' documents is in {col.location}")
    return found[:limit]


def record_of(answer: Answer) -> dict[str, Any]:
    """What must not change when asks get faster: the ranking, ranked pages and the answer."""
    evidence = answer.evidence
    return {
        "chunks": [item.chunk.chunk_id for item in evidence.items],
        "pages": [[p.doc_id, p.page] for p in evidence.ranked_pages[:10]],
        "answer": answer.text,
        "citations": [c.chunk_id for c in answer.citations],
    }


def ask_once(col: Collection, question: str, mode: str, doc: str | None, cell: Cell) -> Answer:
    began, cpu = time.perf_counter(), time.process_time()
    answer = col.ask(question, mode=mode, doc=doc)
    asked = time.perf_counter()
    cell.add("cpu", time.process_time() - cpu)  # every thread of this process: less moved by other work
    json.dumps(answer_dict(answer))
    rendered = time.perf_counter()
    retrieval = answer.evidence.meta["seconds"]
    cell.total.append(asked - began)
    cell.add("retrieval", retrieval)
    for stage, seconds in answer.evidence.meta.get("stage_seconds", {}).items():
        cell.add(stage, seconds)
    cell.add("answerer", asked - began - retrieval)
    cell.add("render", rendered - asked)
    return answer


Cells = dict[tuple[str, str], Cell]  # (scope, mode) -> its asks


def measure(
    col: Collection, pairs: list[tuple[str, str]], modes: list[str], first_sight: bool
) -> tuple[Cells, dict[str, Any]]:
    """Every question once per mode and scope: the cells, and each ask's record (`record_of`)."""
    cells: Cells = {}
    records: dict[str, Any] = {}
    for mode in modes:
        col.ask(pairs[0][0], mode=mode)  # warm: models loaded, the mode's first call made
    for scope in ("collection", "document"):
        for mode in modes:
            cell = cells.setdefault((scope, mode), Cell())
            for question, doc_id in pairs:
                if first_sight and isinstance(col.answerer, ExtractiveAnswerer):
                    col.answerer.passage_vectors = TextCache(col.answerer.passage_vectors.limit)
                doc = doc_id if scope == "document" else None
                answer = ask_once(col, question, mode, doc, cell)
                records[f"{scope}|{mode}|{doc or ''}|{question}"] = record_of(answer)
    return cells, records


def measure_http(col: Collection, pairs: list[tuple[str, str]], modes: list[str], cells: Cells) -> None:
    """The same asks through `hyperfolio serve` over the collection's parent folder."""
    root, name = Path(col.location).resolve().parent, Path(col.location).name
    with tempfile.TemporaryDirectory() as tmp:
        service, url = start_service(root, Path(tmp) / "service.log")
        try:
            with httpx.Client(base_url=url, timeout=300) as client:

                def ask(question: str, mode: str, doc: str | None) -> float:
                    body: dict[str, Any] = {"question": question, "mode": mode, **({"doc": [doc]} if doc else {})}
                    began = time.perf_counter()
                    client.post(f"/api/collections/{name}/ask", json=body).raise_for_status()
                    return time.perf_counter() - began

                for mode in modes:
                    ask(pairs[0][0], mode, None)
                for (scope, mode), cell in cells.items():
                    for question, doc_id in pairs:
                        cell.http.append(ask(question, mode, doc_id if scope == "document" else None))
        finally:
            service.terminate()
            try:
                service.wait(timeout=30)
            except subprocess.TimeoutExpired:
                service.kill()


def ms(values: list[float], q: float) -> str:
    return f"{1000 * (percentile(values, q) or 0.0):.0f}" if values else "—"


def print_table(label: str, cells: Cells) -> None:
    print(f"\n{label}: milliseconds, p50 / p95 of the whole ask, p50 of its CPU time and of each stage")
    stages = ["cpu", "retrieval", *STAGES, "answerer", "render"]
    print(f"| scope | mode | n | ask p50 / p95 | {' | '.join(stages)} | HTTP p50 / p95 |")
    print("|---|---|---:|---:|" + "---:|" * len(stages) + "---:|")
    for (scope, mode), cell in cells.items():
        parts = [ms(cell.stages.get(s, []), 50) for s in stages]
        http = f"{ms(cell.http, 50)} / {ms(cell.http, 95)}" if cell.http else "—"
        row = f"| {scope} | {mode} | {len(cell.total)} | {ms(cell.total, 50)} / {ms(cell.total, 95)}"
        print(f"{row} | {' | '.join(parts)} | {http} |")


def compare(records: dict[str, Any], path: Path) -> None:
    """How many rankings, page rankings and answers differ from an earlier record."""
    before = json.loads(path.read_text())
    shared = [key for key in records if key in before]
    print(f"\ncompared with {path}: {len(shared)} asks in both")
    for part in ("chunks", "pages", "answer", "citations"):
        differ = [key for key in shared if records[key][part] != before[key][part]]
        print(f"  {part}: {len(differ)} differ" + (f", e.g. {differ[0]}" if differ else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", "--collection", type=Path, default=None, help=f"default: the sample in {SAMPLE}")
    parser.add_argument("--dataset", choices=["mmlongbench"], default=None, help="ask its questions (default: 7)")
    parser.add_argument("--questions", type=int, default=60, help="at most this many questions")
    parser.add_argument("--modes", default=MODES)
    parser.add_argument("--http", action="store_true", help="also through `hyperfolio serve`")
    parser.add_argument("--first-sight", action="store_true", help="no passage vectors kept from earlier asks")
    parser.add_argument("--record", type=Path, help="write every ranking and answer here (JSON)")
    parser.add_argument("--compare", type=Path, help="count the rankings and answers that differ from this record")
    args = parser.parse_args()

    location = args.collection or sample_collection(SAMPLE)
    modes = args.modes.split(",")
    with Collection(location) as col:
        pairs = questions(col, args.dataset, args.questions)
        stats = col.stats()
        label = f"{location}: {stats['documents']} documents, {stats['chunks']:,} chunks; {len(pairs)} questions"
        print(label + (", first sight" if args.first_sight else ""), flush=True)
        cells, records = measure(col, pairs, modes, args.first_sight)
        if args.http:
            measure_http(col, pairs, modes, cells)
    print_table(label, cells)
    if args.record:
        args.record.write_text(json.dumps(records, indent=1))
    if args.compare:
        compare(records, args.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
