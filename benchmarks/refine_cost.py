"""Model calls and prompt tokens of anchor-driven versus full-page refinement (Hyper-M2RAG 5.9).

Each document is indexed into a fresh temporary collection with the offline extractor and
refinement switched off; then, on that collection's store, `refine_pages` (every page with its
neighbours: the baseline) and `refine_anchors` (only the star expansions of boundary-crossing
anchors: entities on at least tau pages, chosen to bridge each page break at most `cover` times;
also shown with every entity on tau pages refined, and with tau 2) are run through `LLMRefiner`
backed by a recording chat model. The recording model answers every call with an empty reply
and counts the call and its prompt tokens (four characters to a token, the estimate
`hyperfolio.llm.usage` uses when a server reports none).
Both strategies build their prompts with the same code and the same edge cap, so the counts
compare like with like; no server is needed.

Three tables: one row per dev document (at least five MMLongBench-Doc dev PDFs); growth for
documents of 10, 20, 40 and 80 pages cut as prefixes of the longest dev PDFs joined end to end
(the dev set has no PDF longer than 40 pages, so the 80-page one is two documents); and growth
for one coherent long text, the GraphRAG-Bench medical corpus typeset as 10 to 320 pages.

    python benchmarks/refine_cost.py [--docs 6] [--sizes 10,20,40,80] [--corpus-sizes 10,20,40,80,160,320]
        [--tau 3] [--cover 2] [--no-ocr] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pymupdf

from hyperfolio import Collection, Settings
from hyperfolio.config import BuildOptions, ParseOptions
from hyperfolio.embed.local import make_embedder
from hyperfolio.hypergraph.refine import refine_anchors, refine_pages
from hyperfolio.hypergraph.refine_model import LLMRefiner
from hyperfolio.llm.usage import estimate_tokens

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
    anchor: dict[str, Cost]  # variant ("τ=3", "τ=3 all") -> cost of anchor-driven refinement
    build_seconds: float

    def ratio(self, variant: str, variable: bool = False) -> float:
        a, f = self.anchor[variant], self.full
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


@dataclass(frozen=True)
class Variant:
    tau: int
    cover: int  # anchors bridge each page break at most this often; 0 = every entity on tau pages

    @property
    def label(self) -> str:
        return f"τ={self.tau}" + (f" cover {self.cover}" if self.cover else " every anchor")


def measure(pdf: Path, label: str, workdir: Path, settings: Settings, embedder, variants: list[Variant]) -> Row:
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
        anchor: dict[str, Cost] = {}
        for variant in variants:
            # A fresh copy per variant: refinement records each anchor's signature and would skip it next time.
            copy = store.copy_to(Path(tempfile.mkdtemp(prefix="variant-", dir=workdir)))
            try:
                chat = RecordingChat()
                candidates = copy.document_entities(doc_id)
                report = refine_anchors(copy, LLMRefiner(chat), candidates, variant.tau, cover=variant.cover)
                anchor[variant.label] = Cost.of(chat, report.anchors)
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


def table(rows: list[Row], variants: list[Variant], total: bool = True) -> str:
    main = variants[0].label
    head = [
        "document",
        "pages",
        "entities",
        "edges",
        f"anchors ({main})",
        "anchor calls",
        "anchor tokens",
        "anchor tok/page",
        "full calls",
        "full tokens",
        "full tok/page",
        "ratio",
        "ratio w/o system prompt",
        *(f"ratio {v.label} (anchors)" for v in variants[1:]),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def line(name: str, rs: list[Row]) -> str:
        pages = sum(r.pages for r in rs)
        a = [r.anchor[main] for r in rs]
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
        for v in variants[1:]:
            other = [r.anchor[v.label] for r in rs]
            tokens = sum(c.tokens for c in other)
            cells.append(f"{tokens / f_tok:.2f} ({sum(c.anchors for c in other)})" if f_tok else "-")
        return "| " + " | ".join(str(c) for c in cells) + " |"

    lines.extend(line(r.document, [r]) for r in rows)
    if total and len(rows) > 1:
        lines.append(line("**all**", rows))
    return "\n".join(lines)


def corpus_pdf(corpus: Path, pages: int, path: Path, words_per_page: int = 380) -> Path:
    """The first `pages` pages of a long single text (the GraphRAG-Bench medical corpus, NCCN patient
    guides) typeset as a PDF: one coherent document far longer than any dev PDF."""
    text = json.loads(corpus.read_text())[0]["context"]
    text = text.translate({0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"', 0x2013: "-", 0x2014: "-"})
    sentences = re.split(r"(?<=[.!?])\s+", text)
    doc = pymupdf.open()
    at = 0
    for _ in range(pages):
        taken: list[str] = []
        words = 0
        while at < len(sentences) and words < words_per_page:
            taken.append(sentences[at])
            words += len(sentences[at].split())
            at += 1
        paragraphs = [" ".join(taken[i : i + 5]) for i in range(0, len(taken), 5)]
        doc.new_page().insert_textbox(pymupdf.Rect(54, 54, 558, 760), "\n\n".join(paragraphs), fontsize=9.5)
    doc.set_metadata({"title": f"Medical corpus, first {pages} pages"})
    doc.save(path)
    doc.close()
    return path


def growth(rows: list[Row], variants: list[Variant]) -> str:
    pages = [r.pages for r in rows]
    series = [("full-page tokens", [r.full.tokens for r in rows])]
    for v in variants:
        series.append((f"anchor tokens ({v.label})", [r.anchor[v.label].tokens for r in rows]))
        series.append((f"anchors ({v.label})", [r.anchor[v.label].anchors for r in rows]))
    out = [
        "growth exponent (slope of log value against log pages; 1 = linear, < 1 sub-linear),",
        "fitted over all sizes and between each pair of consecutive sizes:",
    ]
    for name, values in series:
        steps = " ".join(f"{growth_exponent(pages[i : i + 2], values[i : i + 2]):.2f}" for i in range(len(pages) - 1))
        out.append(f"  {name:<36} {growth_exponent(pages, values):.2f}   [{steps}]")
    return "\n".join(out)


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
    parser.add_argument("--sizes", default="10,20,40,80", help="page counts of the joined growth documents")
    parser.add_argument("--corpus-sizes", default="10,20,40,80,160,320", help="page counts of the single-text series")
    parser.add_argument("--tau", type=int, default=3, help="anchor threshold in pages (the default setting)")
    parser.add_argument("--cover", type=int, default=2, help="anchors per page break (the default setting)")
    parser.add_argument("--no-ocr", action="store_true", help="skip OCR when parsing (faster, fewer figure entities)")
    parser.add_argument("--embedder", default="model2vec", help="chunk embedder (does not affect the counts)")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)

    root = data_root(args.data)
    documents = root / "mmlongbench_dev" / "documents"
    pdfs = sorted(documents.glob("*.pdf")) if documents.is_dir() else []
    if not pdfs:
        print(f"skipped: no MMLongBench-Doc dev PDFs at {documents} (set --data or $HYPERFOLIO_DATA)")
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    corpus_sizes = [int(s) for s in args.corpus_sizes.split(",") if s.strip()]
    variants = [Variant(args.tau, args.cover), Variant(args.tau, 0), Variant(2, args.cover)]
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
    print(f"refinement cost: main variant {variants[0].label}; others {', '.join(v.label for v in variants[1:])};")
    print(f"at most {cap} hyperedges per prompt; tokens = prompt characters / 4 (system + user message);")
    print(f"the recording model replies empty; offline extraction, OCR {'off' if args.no_ocr else 'on'}\n")
    results: dict[str, list[Row]] = {"dev": [], "joined": [], "corpus": []}
    with tempfile.TemporaryDirectory(prefix="refine-cost-") as tmp:
        work = Path(tmp)
        for pdf in chosen:
            row = measure(pdf, pdf.name[:40], work, settings, embedder, variants)
            results["dev"].append(row)
            print(f"  {row.document:<40} {row.pages:>3} p  ratio {row.ratio(variants[0].label):.2f}", flush=True)
        print("\n## Dev documents\n")
        print(table(results["dev"], variants))

        longest = sorted(pdfs, key=lambda p: (-page_count(p), p.name))
        made = prefix_pdfs(longest, sizes, work)
        for size, path, _sources in made:
            results["joined"].append(measure(path, f"first {size} pages", work, settings, embedder, variants))
        if made:
            print(f"\n## Growth, dev PDFs joined end to end ({made[-1][2]})\n")
            print(table(results["joined"], variants, total=False))
            print("\n" + growth(results["joined"], variants))

        corpus = root / "graphrag_bench_medical" / "medical_corpus.json"
        if corpus.is_file():
            for size in corpus_sizes:
                path = corpus_pdf(corpus, size, work / f"corpus-{size}.pdf")
                results["corpus"].append(measure(path, f"first {size} pages", work, settings, embedder, variants))
            print("\n## Growth, one long text (GraphRAG-Bench medical corpus typeset as a PDF)\n")
            print(table(results["corpus"], variants, total=False))
            print("\n" + growth(results["corpus"], variants))
        else:
            print(f"\nskipped the single-text series: no corpus at {corpus}")
    if args.json:
        payload: dict[str, Any] = {"variants": [v.label for v in variants], "ocr": not args.no_ocr}
        payload.update({name: [asdict(r) for r in rows] for name, rows in results.items()})
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
