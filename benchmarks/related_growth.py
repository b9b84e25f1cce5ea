"""Adding related documents one by one: does each cost more per page than the one before?

Adds N documents, one `add` call each, into a fresh collection and prints, per document, its pages and
the seconds per page of every stage `add` records (`AddResult.stage_seconds`; the parsing stages
summed into one "parse" column), the total (elapsed) seconds per page, and the ratio of the last
document's seconds per page to the first's, per stage, for the graph build (the stages after chunk
embedding: what meets the collection) and in total. The default documents are the
financebench_dev filings, first those of the companies with several of them (10-Ks and 10-Qs of one
filer, year after year), company by company, oldest first: the case where every new filing meets the
same heads (the company, its segments, "net revenue") in the collection's accepted facts; then the
other filings; then (past 20) the MMLongBench-Doc dev documents.

    python benchmarks/related_growth.py                      # 10 filings, SQLite
    python benchmarks/related_growth.py --limit 25 --max-pages 60 --alone   # then the 25th alone
    python benchmarks/related_growth.py --limit 12 --max-pages 80 --backend postgres
    python benchmarks/related_growth.py --files a.pdf,b.pdf --decisions bench-out/decisions.jsonl

Documents differ in what a page costs to parse and embed, so the first and the last row are different
pages; `--alone` then indexes the last document once more, alone in a fresh collection, and compares:
the same pages, empty collection against grown. `--max-pages` indexes a copy of each filing cut to its
first pages (written under the output folder, never beside the data). `--decisions` writes every
reconciliation decision (per document, in log order) as JSON lines, to compare two versions of the code
on the same documents. Parsing runs in-process (`--workers 0`) so each stage's seconds are its plain cost.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hyperfolio.collection import AddResult, Collection
from hyperfolio.config import Settings
from hyperfolio.embed.local import EMBEDDERS
from hyperfolio.eval.datasets import DatasetMissing, data_root
from hyperfolio.timing import STAGES, StageTimes

PARSE = "parse"
# The stages measured while parsing (before the parsed document is written): one column here.
PARSE_STAGES = frozenset(STAGES[: STAGES.index("write")])
BEFORE_GRAPH = frozenset({PARSE, "write", "chunk embedding"})  # what a page costs whatever the collection


@dataclass
class Row:
    name: str
    pages: int
    seconds: float
    stages: dict[str, float]  # seconds per stage, parsing folded into PARSE


def related_filings(folder: Path) -> list[Path]:
    """Every filing, company by company, oldest first: companies with two or more filings first (each
    new filing meets its own company's earlier facts), then the rest (the same financial vocabulary)."""
    by_company: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.pdf")):
        company = re.sub(r"_\d{4}(Q\d)?_10[KQ]$", "", path.stem)
        by_company.setdefault(company, []).append(path)
    order = sorted(by_company, key=lambda company: (len(by_company[company]) < 2, company))
    return [p for company in order for p in by_company[company]]


def growth_sequence(root: Path) -> list[Path]:
    """The filings, then the MMLongBench-Doc dev documents: past 20 documents the collection keeps
    growing with reports, papers and manuals."""
    files = related_filings(root / "financebench_dev" / "pdfs")
    return files + sorted((root / "mmlongbench_dev" / "documents").glob("*.pdf"))


def cut(path: Path, pages: int, folder: Path) -> Path:
    """A copy of the PDF's first `pages` pages (the whole file when it is no longer), byte for byte the
    same every run, so two runs index the same documents under the same ids."""
    import pymupdf

    with pymupdf.open(path) as doc:
        if doc.page_count <= pages:
            return path
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / path.name
        with pymupdf.open() as head:
            head.insert_pdf(doc, from_page=0, to_page=pages - 1)
            head.set_metadata({})  # no creation time and no new file id: the same bytes every run
            head.save(target, no_new_id=True)
    return target


def folded(result: AddResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for stage, seconds in result.stage_seconds.items():
        key = PARSE if stage in PARSE_STAGES else stage
        out[key] = out.get(key, 0.0) + seconds
    return out


def print_table(rows: list[Row]) -> None:
    """Seconds per page per stage, the graph build's sum ("graph": every stage after chunk embedding,
    what meets the collection) and the elapsed total; then last / first."""
    order = [PARSE] + [s for s, _ in StageTimes({k: 0.0 for r in rows for k in r.stages if k != PARSE}).ordered()]
    columns = [*order, "graph", "total"]

    def per_page(row: Row) -> list[float]:
        graph = sum(v for k, v in row.stages.items() if k not in BEFORE_GRAPH)
        return [row.stages.get(s, 0.0) / row.pages for s in order] + [graph / row.pages, row.seconds / row.pages]

    print()
    print("seconds per page, per stage")
    print("| # | document | pages | " + " | ".join(columns) + " |")
    print("|---:|---|---:|" + "---:|" * len(columns))
    for i, row in enumerate(rows, 1):
        print(f"| {i} | {row.name} | {row.pages} | " + " | ".join(f"{v:.3f}" for v in per_page(row)) + " |")
    if len(rows) < 2:
        return
    first, last = per_page(rows[0]), per_page(rows[-1])
    ratios = [f"{b / a:.2f}" if a > 0 else "-" for a, b in zip(first, last, strict=True)]
    print("| | last / first | | " + " | ".join(ratios) + " |")
    print()
    print(f"last / first: graph build {ratios[-2]}, total {ratios[-1]} (seconds per page)")


def open_collection(args: argparse.Namespace, target: Path, pg: Any, database: str) -> Collection:
    """A fresh collection in `target` (SQLite) or in a database of the run's PostgreSQL server."""
    settings = Settings.load(None, embedder=args.embedder)
    if pg is None:
        return Collection(target, settings=settings)
    return Collection(pg.create_database(database), settings=settings, folder=target)


def add_one_by_one(collection: Collection, files: list[Path], workers: int) -> tuple[list[Row], list[dict]]:
    """Each file in its own `add`: its row of seconds, and the decisions reconciling it made."""
    rows: list[Row] = []
    decisions: list[dict] = []
    for path in files:
        started = time.perf_counter()
        result = collection.add([path], workers=workers).results[0]
        if not result.ok or not result.pages:
            print(f"  {path.name}: {result.status} {result.reason}")
            continue
        rows.append(Row(path.stem, result.pages, result.seconds, folded(result)))
        made = collection.conflicts(result.doc_id)
        decisions += [{"document": path.stem, **asdict(d), "created_at": 0.0, "doc_id": ""} for d in made]
        kinds = {k: sum(d.decision == k for d in made) for k in ("kept", "revised", "dropped")}
        graph = collection.last_graph_report
        capped = graph.reconcile.capped if graph is not None and graph.doc_id == result.doc_id else 0
        print(
            f"  {path.name}: {result.pages} p in {time.perf_counter() - started:.1f} s, "
            f"reconcile {result.stage_seconds.get('reconcile', 0.0):.1f} s, decisions {kinds}, "
            f"new facts cut short {capped}",
            flush=True,
        )
    return rows, decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", default="", help="comma-separated PDFs, added in this order (default: filings)")
    parser.add_argument("--limit", type=int, default=10, help="documents to add (default 10)")
    parser.add_argument("--max-pages", type=int, default=0, help="index only each document's first N pages")
    parser.add_argument("--backend", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--embedder", default=Settings().embedder, choices=EMBEDDERS)
    parser.add_argument("--workers", type=int, default=0, help="parsing processes (default 0: in-process)")
    parser.add_argument("--alone", action="store_true", help="then index the last document alone, to compare")
    parser.add_argument("--out", type=Path, default=Path("bench-out/related-growth"), help="work folder (recreated)")
    parser.add_argument("--data", type=Path, default=None, help="benchmark data root")
    parser.add_argument("--decisions", type=Path, default=None, help="write every decision here (JSON lines)")
    args = parser.parse_args()

    if args.files:
        files = [Path(f) for f in args.files.split(",") if f]
    else:
        root = data_root(args.data)
        if not (root / "financebench_dev" / "pdfs").exists():
            print(f"skipped: {DatasetMissing.__name__}: no filings under {root} (set HYPERFOLIO_DATA)")
            return 0
        files = growth_sequence(root)
    files = files[: args.limit]
    if args.out.exists():
        if any(args.out.iterdir()) and not (args.out / "related-growth").exists():
            print(f"refusing to delete {args.out}: not this benchmark's folder")
            return 2
        shutil.rmtree(args.out)
    (args.out / "related-growth").mkdir(parents=True)
    if args.max_pages:
        files = [cut(f, args.max_pages, args.out / "cut") for f in files]

    pg = None
    if args.backend == "postgres":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from synthetic import PgServer

        pg = PgServer(prefix="related-growth-pg-")
    try:
        with open_collection(args, args.out / "collection", pg, "related_growth") as collection:
            collection.embedder.embed(["warm-up"])  # the model load is no document's cost
            print(f"adding {len(files)} documents one by one ({args.backend}, embedder {args.embedder})")
            rows, decisions = add_one_by_one(collection, files, args.workers)
        print_table(rows)
        if args.decisions:
            args.decisions.parent.mkdir(parents=True, exist_ok=True)
            args.decisions.write_text("".join(json.dumps(d) + "\n" for d in decisions))
            print(f"{len(decisions)} decisions written to {args.decisions}")
        if args.alone and rows:
            last = next(f for f in files if f.stem == rows[-1].name)
            with open_collection(args, args.out / "alone", pg, "related_growth_alone") as alone:
                alone.embedder.embed(["warm-up"])
                print("\nthe last document again, alone in a fresh collection")
                first, _ = add_one_by_one(alone, [last], args.workers)
            for row in first:
                row.name += " (alone)"
            print_table([*first, rows[-1]])  # the same pages: what the grown collection costs more
    finally:
        if pg is not None:
            pg.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
