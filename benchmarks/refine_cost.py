"""Model calls and prompt tokens of anchor-driven versus full-page refinement (Hyper-M2RAG 5.9).

Each document is indexed into a fresh temporary collection with the offline extractor and
refinement switched off; then, on that collection's store, `refine_pages` (every page with its
neighbours: the baseline) and `refine_anchors` (only the star expansions of entities found on at
least tau pages) are run through `LLMRefiner` backed by a recording chat model. The recording
model answers every call with an empty reply and counts the call and its prompt tokens (four
characters to a token, the estimate `hyperfolio.models.usage` uses when a server reports none).
Both strategies build their prompts with the same code and the same edge cap, so the counts
compare like with like; no server is needed.

Two tables: one row per dev document (at least five MMLongBench-Doc dev PDFs), and the growth
table for documents of 10, 20, 40 and 80 pages, cut as prefixes of the longest dev PDFs joined
end to end with PyMuPDF (the dev set has no PDF longer than 40 pages).

    python benchmarks/refine_cost.py [--docs 6] [--sizes 10,20,40,80] [--tau 2,3] [--no-ocr] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pymupdf

from hyperfolio import Collection, Settings
from hyperfolio.build.refine import refine_anchors, refine_pages
from hyperfolio.build.refine_llm import LLMRefiner
from hyperfolio.config import BuildOptions, ParseOptions
from hyperfolio.models.embed_local import make_embedder
from hyperfolio.models.usage import estimate_tokens

REPO = Path(__file__).resolve().parents[1]


class RecordingChat:
    """A StructuredChatModel that makes no request: it counts calls and tokens and replies empty."""

    name = "recording"

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.system_tokens = 0  # the part of prompt_tokens that is the fixed system prompt
        self.completion_tokens = 0

    def _count(self, messages: Sequence[dict[str, Any]], reply: str) -> None:
        self.calls += 1
        self.prompt_tokens += estimate_tokens(messages)
        self.system_tokens += estimate_tokens([m for m in messages if m.get("role") == "system"])
        self.completion_tokens += estimate_tokens(reply)

    def complete(self, messages, *, schema=None, **params) -> str:
        self._count(messages, "{}")
        return "{}"

    def complete_json(self, messages, model_type, stage=None, **params):
        reply = model_type.model_validate({})
        self._count(messages, reply.model_dump_json())
        return reply

    async def acomplete_json(self, messages, model_type, stage=None, **params):
        return self.complete_json(messages, model_type, stage, **params)

    def complete_json_many(self, batch, model_type, stage=None, *, return_exceptions=False, **params):
        return [self.complete_json(m, model_type, stage, **params) for m in batch]


@dataclass
class Cost:
    calls: int = 0
    tokens: int = 0
    system_tokens: int = 0
    anchors: int = 0

    @classmethod
    def of(cls, chat: RecordingChat, anchors: int = 0) -> Cost:
        return cls(chat.calls, chat.prompt_tokens, chat.system_tokens, anchors)

    @property
    def variable_tokens(self) -> int:
        return self.tokens - self.system_tokens


@dataclass
class Row:
    document: str
    pages: int
    entities: int
    edges: int
    full: Cost
    anchor: dict[int, Cost]  # tau -> cost of anchor-driven refinement
    build_seconds: float

    def ratio(self, tau: int, variable: bool = False) -> float:
        a, f = self.anchor[tau], self.full
        if variable:
            return a.variable_tokens / f.variable_tokens if f.variable_tokens else float("nan")
        return a.tokens / f.tokens if f.tokens else float("nan")


def data_root(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get("HYPERFOLIO_DATA"):
        return Path(os.environ["HYPERFOLIO_DATA"]).expanduser()
    return REPO.parent / "shared" / "data"


def page_count(path: Path) -> int:
    with pymupdf.open(path) as doc:
        return doc.page_count


def measure(pdf: Path, label: str, workdir: Path, settings: Settings, embedder, taus: list[int]) -> Row:
    """Index `pdf` offline without refinement, then count both refinement strategies on its graph."""
    started = time.perf_counter()
    target = Path(tempfile.mkdtemp(prefix="col-", dir=workdir))
    with Collection(target, settings=settings, embedder=embedder) as col:
        result = col.add(pdf).results[0]
        if not result.ok:
            raise RuntimeError(f"{pdf.name}: {result.reason}")
        seconds = time.perf_counter() - started
        store, doc_id = col.store, result.doc_id
        graph = store.graph_stats()
        full = RecordingChat()
        refine_pages(store, LLMRefiner(full), doc_id)  # empty replies: writes nothing
        anchor: dict[int, Cost] = {}
        for tau in taus:
            # A fresh copy per tau: refinement records each anchor's signature and would skip it next time.
            copy = store.copy_to(Path(tempfile.mkdtemp(prefix=f"tau{tau}-", dir=workdir)))
            try:
                chat = RecordingChat()
                report = refine_anchors(copy, LLMRefiner(chat), copy.document_entities(doc_id), tau)
                anchor[tau] = Cost.of(chat, report.anchors)
            finally:
                copy.close()
    return Row(
        label,
        result.pages,
        sum(graph["entities_by_modality"].values()),
        sum(graph["hyperedges_by_level"].values()),
        Cost.of(full),
        anchor,
        seconds,
    )


def prefix_pdfs(sources: list[Path], sizes: list[int], workdir: Path) -> list[tuple[int, Path, str]]:
    """PDFs of the first n pages of `sources` joined end to end, one per size."""
    joined = pymupdf.open()
    names = []
    for source in sources:
        if joined.page_count >= max(sizes):
            break
        with pymupdf.open(source) as doc:
            joined.insert_pdf(doc)
        names.append(f"{source.name} ({page_count(source)} p)")
    out = []
    for size in sizes:
        if size > joined.page_count:
            print(f"note: only {joined.page_count} pages available; skipping the {size}-page document")
            continue
        part = pymupdf.open()
        part.insert_pdf(joined, from_page=0, to_page=size - 1)
        part.set_metadata({"title": f"first {size} pages"})
        path = workdir / f"prefix-{size}.pdf"
        part.save(path)
        part.close()
        out.append((size, path, " + ".join(names)))
    joined.close()
    return out


def table(rows: list[Row], taus: list[int], total: bool = True) -> str:
    tau = taus[0]
    head = [
        "document",
        "pages",
        "entities",
        "edges",
        f"anchors (τ={tau})",
        "anchor calls",
        "anchor tokens",
        "anchor tok/page",
        "full calls",
        "full tokens",
        "full tok/page",
        "ratio",
        "ratio w/o system prompt",
        *(f"ratio τ={t}" for t in taus[1:]),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def line(name: str, rs: list[Row]) -> str:
        pages = sum(r.pages for r in rs)
        a = [r.anchor[tau] for r in rs]
        f = [r.full for r in rs]
        a_tok, f_tok = sum(c.tokens for c in a), sum(c.tokens for c in f)
        a_var, f_var = sum(c.variable_tokens for c in a), sum(c.variable_tokens for c in f)
        cells = [
            name,
            pages,
            sum(r.entities for r in rs),
            sum(r.edges for r in rs),
            sum(c.anchors for c in a),
            sum(c.calls for c in a),
            f"{a_tok:,}",
            f"{a_tok / pages:,.0f}",
            sum(c.calls for c in f),
            f"{f_tok:,}",
            f"{f_tok / pages:,.0f}",
            f"{a_tok / f_tok:.2f}" if f_tok else "-",
            f"{a_var / f_var:.2f}" if f_var else "-",
        ]
        for t in taus[1:]:
            other = sum(r.anchor[t].tokens for r in rs)
            cells.append(f"{other / f_tok:.2f}" if f_tok else "-")
        return "| " + " | ".join(str(c) for c in cells) + " |"

    lines.extend(line(r.document, [r]) for r in rows)
    if total and len(rows) > 1:
        lines.append(line("**all**", rows))
    return "\n".join(lines)


def growth_exponent(pages: list[int], values: list[float]) -> float:
    """Least-squares slope of log(value) against log(pages): 1 is linear, below 1 sub-linear."""
    points = [(math.log(p), math.log(v)) for p, v in zip(pages, values, strict=True) if v > 0]
    if len(points) < 2:
        return float("nan")
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="benchmark data folder (default $HYPERFOLIO_DATA or ../shared/data)")
    parser.add_argument("--docs", type=int, default=6, help="dev documents to measure, spread over lengths (min 5)")
    parser.add_argument("--sizes", default="10,20,40,80", help="page counts of the growth documents")
    parser.add_argument("--tau", default="2,3", help="anchor thresholds; the first is the main one (the default)")
    parser.add_argument("--no-ocr", action="store_true", help="skip OCR when parsing (faster, fewer figure entities)")
    parser.add_argument("--embedder", default="model2vec", help="chunk embedder (does not affect the counts)")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)

    documents = data_root(args.data) / "mmlongbench_dev" / "documents"
    pdfs = sorted(documents.glob("*.pdf")) if documents.is_dir() else []
    if not pdfs:
        print(f"skipped: no MMLongBench-Doc dev PDFs at {documents} (set --data or $HYPERFOLIO_DATA)")
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    taus = [int(t) for t in args.tau.split(",") if t.strip()]
    settings = Settings(
        embedder=args.embedder,
        parse=ParseOptions(ocr=not args.no_ocr),
        build=BuildOptions(refine=False, graph_embedder=args.embedder),
    )
    embedder = make_embedder(args.embedder)
    by_length = sorted(pdfs, key=lambda p: (page_count(p), p.name))
    count = min(len(by_length), max(5, args.docs))
    step = (len(by_length) - 1) / max(1, count - 1)
    chosen = list(dict.fromkeys(by_length[round(i * step)] for i in range(count)))

    cap = LLMRefiner(RecordingChat()).max_edges
    print(f"refinement cost: anchors at tau = {', '.join(map(str, taus))}; at most {cap} hyperedges per prompt;")
    print("tokens = prompt characters / 4 (system + user message); the recording model replies empty;")
    print(f"offline extraction, OCR {'off' if args.no_ocr else 'on'}\n")
    dev_rows: list[Row] = []
    growth_rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="refine-cost-") as tmp:
        work = Path(tmp)
        for pdf in chosen:
            row = measure(pdf, pdf.name[:40], work, settings, embedder, taus)
            dev_rows.append(row)
            print(f"  {row.document:<40} {row.pages:>3} p  ratio {row.ratio(taus[0]):.2f}  ({row.build_seconds:.0f} s)")
        print("\n## Dev documents\n")
        print(table(dev_rows, taus))

        longest = sorted(pdfs, key=lambda p: (-page_count(p), p.name))
        made = prefix_pdfs(longest, sizes, work)
        for size, path, _sources in made:
            row = measure(path, f"first {size} pages", work, settings, embedder, taus)
            growth_rows.append(row)
            print(f"  {row.document:<16} ratio {row.ratio(taus[0]):.2f}  ({row.build_seconds:.0f} s)", flush=True)
        if made:
            print(f"\n## Growth with document length (prefixes of {made[-1][2]})\n")
            print(table(growth_rows, taus, total=False))
            pages = [r.pages for r in growth_rows]
            exponents = [
                ("full-page tokens", [r.full.tokens for r in growth_rows]),
                *((f"anchor tokens (τ={t})", [r.anchor[t].tokens for r in growth_rows]) for t in taus),
                *((f"anchors (τ={t})", [r.anchor[t].anchors for r in growth_rows]) for t in taus),
            ]
            print("\ngrowth exponent (slope of log value against log pages; 1 = linear, < 1 sub-linear):")
            for name, values in exponents:
                print(f"  {name:<24} {growth_exponent(pages, values):.2f}")
    if args.json:
        payload = {"tau": taus, "ocr": not args.no_ocr, "dev": [asdict(r) for r in dev_rows]}
        payload["growth"] = [asdict(r) for r in growth_rows]
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
