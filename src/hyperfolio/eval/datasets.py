"""Benchmark loaders that turn each source format into one common question shape.

Every loader returns an `EvalDataset`: the documents to index and the questions,
each scoped to one document by file name (`doc_ref`). The runner then treats all
datasets alike. Data lives outside the repository (`<repo>/../shared/data` or
$HYPERFOLIO_DATA) and is never copied in; Qasper documents are rebuilt as Markdown
in a cache folder that the caller chooses (the eval output, not the repository).
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA_ENV = "HYPERFOLIO_DATA"
NOT_ANSWERABLE = "not answerable"
FLOAT_PREFIX = "FLOAT SELECTED:"

# MMLongBench-Doc names evidence sources with a qualifier; the report groups by the short name.
_SOURCE_NAMES = {
    "pure-text": "Pure-text",
    "table": "Table",
    "chart": "Chart",
    "figure": "Figure",
    "generalized-text": "Layout",
    "layout": "Layout",
}


class DatasetMissing(FileNotFoundError):
    """The benchmark data is not on this machine; callers skip instead of failing."""


@dataclass
class EvalQuestion:
    """One question with its gold evidence, whatever benchmark it came from."""

    qid: str
    doc_ref: str  # file name of the document the question is about
    question: str
    answers: list[str]  # acceptable answers (any one is right) for QA metrics
    evidence_pages: list[int] = field(default_factory=list)  # 1-based
    evidence_sources: list[str] = field(default_factory=list)  # Pure-text, Table, Chart, Figure, Layout
    evidence_paragraphs: list[str] = field(default_factory=list)  # union over annotators
    answerable: bool = True
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def recall_targets(self) -> tuple[list[str], bool]:
        """Strings whose presence in retrieved text signals the answer, and whether all are needed.

        Defaults to `answers` (any one); loaders override it where answers are not
        spans (yes/no, free-form) or are lists whose every item matters.
        """
        targets = self.meta.get("recall_answers", self.answers)
        return list(targets), bool(self.meta.get("recall_all", False))

    @property
    def evidence_groups(self) -> list[list[str]]:
        """Gold paragraphs per annotator; recall takes the best annotator, as Qasper's evidence F1 does."""
        groups = self.meta.get("evidence_groups")
        if groups:
            return [list(g) for g in groups]
        return [list(self.evidence_paragraphs)] if self.evidence_paragraphs else []


@dataclass
class EvalDataset:
    name: str
    questions: list[EvalQuestion]
    documents: list[Path]  # files to index; questions refer to them by file name
    evidence: str = "pages"  # "pages" or "paragraphs": which gold the recall metric uses
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    meta: dict[str, Any] = field(default_factory=dict)


def data_root(explicit: str | Path | None = None) -> Path:
    """Where the benchmark data lives: argument, then $HYPERFOLIO_DATA, then `<repo>/../shared/data`."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    repo = Path(__file__).resolve().parents[3]  # src/hyperfolio/eval/datasets.py -> repo root
    return repo.parent / "shared" / "data"


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise DatasetMissing(f"{what} not found at {path}; set ${DATA_ENV} to the folder holding the benchmark data")
    return path


def normalise_source(raw: str) -> str:
    """'Generalized-text (Layout)' -> 'Layout', 'Pure-text (Plain-text)' -> 'Pure-text'."""
    key = raw.strip().split("(")[0].strip().lower()
    return _SOURCE_NAMES.get(key, raw.strip())


def _parse_list_answer(answer: str) -> list[str] | None:
    """MMLongBench stores list answers as Python literals: "['Circle', 'Rectangle']"."""
    text = answer.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, (list, tuple)):
        return None
    return [str(v) for v in value if str(v).strip()]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not valid JSON: {exc}") from exc
    return rows


def _bump(counter: dict[str, int], reason: str) -> None:
    counter[reason] = counter.get(reason, 0) + 1


# ---------------------------------------------------------------------------- MMLongBench-Doc
def load_mmlongbench(root: str | Path | None = None, unanswerable: bool = False) -> EvalDataset:
    """MMLongBench-Doc: long PDFs, gold evidence pages and sources.

    Unanswerable questions have no evidence to retrieve: skipped and counted, unless `unanswerable`
    (answers are measured: an answerer should abstain on them). A few upstream questions cite pages
    past the end of their PDF; they are skipped and counted.
    """
    folder = _require(data_root(root) / "mmlongbench_dev", "MMLongBench-Doc dev set")
    rows = _read_jsonl(_require(folder / "qa.jsonl", "MMLongBench-Doc questions"))
    doc_dir = folder / "documents"
    questions: list[EvalQuestion] = []
    skipped: dict[str, int] = {}
    for row in rows:
        answer = str(row.get("answer", "")).strip()
        pages = [int(p) for p in row.get("evidence_pages_list") or []]
        if answer.lower() == NOT_ANSWERABLE:
            if unanswerable:
                questions.append(_unanswerable_question(row))
            else:
                _bump(skipped, "not answerable")
            continue
        num_pages = int(row.get("doc_num_pages") or 0)
        if num_pages and any(p > num_pages or p < 1 for p in pages):
            _bump(skipped, "evidence page outside the document")
            continue
        if not pages:
            _bump(skipped, "no evidence pages")
            continue
        meta: dict[str, Any] = {
            "answer_format": row.get("answer_format", ""),
            "doc_type": row.get("doc_type", ""),
        }
        items = _parse_list_answer(answer) if row.get("answer_format") == "List" else None
        if items:
            meta["recall_answers"] = items
            meta["recall_all"] = True
            answers = [", ".join(items)]
        else:
            answers = [answer]
        sources = list(dict.fromkeys(normalise_source(s) for s in row.get("evidence_sources_list") or []))
        questions.append(
            EvalQuestion(
                qid=str(row["qid"]),
                doc_ref=str(row["doc_id"]),
                question=str(row["question"]),
                answers=answers,
                evidence_pages=sorted(set(pages)),
                evidence_sources=sources,
                meta=meta,
            )
        )
    missing = [name for name in sorted({q.doc_ref for q in questions}) if not (doc_dir / name).exists()]
    if missing:
        raise DatasetMissing(f"MMLongBench-Doc documents missing from {doc_dir}: {', '.join(missing[:5])}")
    return _paged_dataset("mmlongbench", questions, doc_dir, skipped, folder)


def _unanswerable_question(row: dict[str, Any]) -> EvalQuestion:
    """A question the document does not answer: no gold answer or evidence, only a right to abstain."""
    meta = {"answer_format": row.get("answer_format", "None"), "doc_type": row.get("doc_type", "")}
    return EvalQuestion(str(row["qid"]), str(row["doc_id"]), str(row["question"]), [], answerable=False, meta=meta)


def _paged_dataset(
    name: str, questions: list[EvalQuestion], doc_dir: Path, skipped: dict[str, int], folder: Path
) -> EvalDataset:
    """A set whose gold is PDF pages: its documents are the ones its questions ask about."""
    wanted = sorted({q.doc_ref for q in questions})
    documents = [doc_dir / doc for doc in wanted]
    return EvalDataset(name, questions, documents, evidence="pages", skipped=skipped, meta={"root": str(folder)})


# ---------------------------------------------------------------------------- FinanceBench
def _pdf_pages(path: Path) -> int:
    """Page count of a filing; FinanceBench rows do not carry it, unlike MMLongBench's."""
    import pymupdf  # the PDF reader the parser uses; imported here so other loaders need no PDF library

    with pymupdf.open(path) as document:
        return int(document.page_count)


def _financebench_question(row: dict[str, Any], pages: list[int]) -> EvalQuestion:
    return EvalQuestion(
        qid=str(row.get("financebench_id") or row["question"]),
        doc_ref=f"{row['doc_name']}.pdf",
        question=str(row["question"]),
        answers=[str(row.get("answer", "")).strip()],
        evidence_pages=pages,
        meta={
            "company": row.get("company", ""),
            "question_type": row.get("question_type", ""),
            "question_reasoning": row.get("question_reasoning") or "",
            "doc_type": "Financial report",
        },
    )


def load_financebench(root: str | Path | None = None) -> EvalDataset:
    """FinanceBench: 10-K/10-Q filings as PDFs, gold = evidence pages (0-based upstream, 1-based here).

    A question is skipped and counted when its filing is not in `pdfs/`, when it cites no
    page, or when a cited page lies past the end of the filing (the page numbers would
    then point at another edition of the document).
    """
    folder = _require(data_root(root) / "financebench_dev", "FinanceBench dev set")
    rows = _read_jsonl(_require(folder / "qa.jsonl", "FinanceBench questions"))
    pdf_dir = folder / "pdfs"
    page_counts: dict[str, int | None] = {}
    questions: list[EvalQuestion] = []
    skipped: dict[str, int] = {}
    for row in rows:
        name = str(row.get("doc_name") or "")
        if name not in page_counts:
            path = pdf_dir / f"{name}.pdf"
            page_counts[name] = _pdf_pages(path) if name and path.is_file() else None
        num_pages = page_counts[name]
        if num_pages is None:
            _bump(skipped, "filing missing")
            continue
        pages = sorted({int(e["evidence_page_num"]) + 1 for e in row.get("evidence") or []})
        if not pages:
            _bump(skipped, "no evidence pages")
            continue
        if any(p > num_pages or p < 1 for p in pages):
            _bump(skipped, "evidence page outside the document")
            continue
        questions.append(_financebench_question(row, pages))
    return _paged_dataset("financebench", questions, pdf_dir, skipped, folder)


# ---------------------------------------------------------------------------- Qasper
def qasper_markdown(paper: dict[str, Any]) -> str:
    """A paper as Markdown: title, abstract, one `##` section per section, captions last.

    Paragraphs are written verbatim, one per block, so gold evidence paragraphs can be
    matched against retrieved chunk text.
    """
    lines = [f"# {_one_line(paper.get('title') or 'Untitled')}", ""]
    abstract = (paper.get("abstract") or "").strip()
    if abstract:
        lines += ["## Abstract", "", abstract, ""]
    for section in paper.get("full_text") or []:
        paragraphs = [p.strip() for p in section.get("paragraphs") or [] if p and p.strip()]
        if not paragraphs:
            continue
        name = _one_line(section.get("section_name") or "Section")
        lines += [f"## {name}", ""]
        for paragraph in paragraphs:
            lines += [paragraph, ""]
    captions = [_one_line(f.get("caption") or "") for f in paper.get("figures_and_tables") or []]
    captions = [c for c in captions if c]
    if captions:
        lines += ["## Figures and tables", ""]
        for caption in captions:
            lines += [caption, ""]
    return "\n".join(lines).rstrip() + "\n"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _qasper_answer_strings(answer: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(acceptable answers, spans worth searching for in retrieved text)."""
    spans = [s.strip() for s in answer.get("extractive_spans") or [] if s and s.strip()]
    if spans:
        return [", ".join(spans)], spans  # Qasper scores multi-span answers joined
    if answer.get("yes_no") is not None:
        return ["yes" if answer["yes_no"] else "no"], []
    free = (answer.get("free_form_answer") or "").strip()
    return ([free] if free else []), []


@dataclass
class _QasperGold:
    """What a question's answerable, evidence-backed annotations say, gathered over annotators."""

    answers: list[str] = field(default_factory=list)
    spans: list[str] = field(default_factory=list)  # extractive spans, worth searching for in retrieved text
    groups: list[list[str]] = field(default_factory=list)  # evidence paragraphs per annotator
    sources: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # answer types

    def add(self, answer: dict[str, Any]) -> None:
        """One annotator's answer, when it is answerable and backed by evidence."""
        if answer.get("unanswerable"):
            return
        evidence = [e.strip() for e in answer.get("evidence") or [] if e and e.strip()]
        if not evidence:
            return
        group = []
        for item in evidence:
            if item.startswith(FLOAT_PREFIX):
                group.append(_one_line(item[len(FLOAT_PREFIX) :]))
                self.sources.append("Table/Figure")
            else:
                group.append(item)
                self.sources.append("Pure-text")
        self.groups.append(list(dict.fromkeys(group)))
        accepted, searchable = _qasper_answer_strings(answer)
        self.answers += accepted
        self.spans += searchable
        self.kinds.append(str(answer.get("type", "")))

    def question(self, row: dict[str, Any], paper_id: str, index: int) -> EvalQuestion:
        return EvalQuestion(
            qid=str(row.get("question_id") or f"{paper_id}-{index}"),
            doc_ref=f"{paper_id}.md",
            question=str(row["question"]),
            answers=list(dict.fromkeys(a for a in self.answers if a)),
            evidence_sources=list(dict.fromkeys(self.sources)),
            evidence_paragraphs=list(dict.fromkeys(p for g in self.groups for p in g)),
            meta={
                "evidence_groups": self.groups,
                "recall_answers": list(dict.fromkeys(self.spans)),
                "answer_types": self.kinds,
                "paper_id": paper_id,
            },
        )


def _write_papers(out: Path, papers: dict[str, Any], used: set[str]) -> list[Path]:
    """The used papers as Markdown files in `out`, rewritten only on change: identical bytes let the
    collection skip re-indexing."""
    documents = []
    for paper_id in sorted(used):
        path = out / f"{paper_id}.md"
        text = qasper_markdown(papers[paper_id])
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        documents.append(path)
    return documents


def load_qasper(cache_dir: str | Path, root: str | Path | None = None) -> EvalDataset:
    """Qasper: papers rebuilt as Markdown into `cache_dir`, gold = evidence paragraphs.

    Each annotator's answer is kept when answerable and backed by evidence; a question
    with no such answer is skipped. Evidence "FLOAT SELECTED: <caption>" points at a
    figure or table and is matched against the caption paragraph.
    """
    folder = _require(data_root(root) / "qasper_dev", "Qasper dev set")
    papers = json.loads(_require(folder / "papers.json", "Qasper papers").read_text(encoding="utf-8"))
    rows = _read_jsonl(_require(folder / "qa.jsonl", "Qasper questions"))
    out = Path(cache_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    questions: list[EvalQuestion] = []
    skipped: dict[str, int] = {}
    used: set[str] = set()
    for row in rows:
        paper_id = str(row["paper_id"])
        if paper_id not in papers:
            _bump(skipped, "paper missing from papers.json")
            continue
        gold = _QasperGold()
        for answer in row.get("answers") or []:
            gold.add(answer)
        if not gold.groups:
            any_answerable = any(not a.get("unanswerable") for a in row.get("answers") or [])
            _bump(skipped, "no evidence" if any_answerable else "not answerable")
            continue
        used.add(paper_id)
        questions.append(gold.question(row, paper_id, len(questions)))
    return EvalDataset(
        name="qasper",
        questions=questions,
        documents=_write_papers(out, papers, used),
        evidence="paragraphs",
        skipped=skipped,
        meta={"root": str(folder), "cache": str(out)},
    )


# ---------------------------------------------------------------------------- HotpotQA
def _write_articles(out: Path, corpus: list[dict[str, Any]]) -> dict[str, Path]:
    """Each paragraph of the pooled corpus as a Markdown article of its own (title as its heading), by
    title; rewritten only on change, so the collection skips what it has indexed."""
    files: dict[str, Path] = {}
    for row in corpus:
        path = out / f"{row['pid']}.md"
        text = f"# {row['title']}\n\n{row['text']}\n"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        files[str(row["title"])] = path
    return files


def load_hotpotqa(cache_dir: str | Path, root: str | Path | None = None) -> EvalDataset:
    """HotpotQA dev (distractor questions over a pooled corpus): every paragraph an article of its own,
    every question asked of all of them; the gold is the two supporting paragraphs, both needed (a
    bridge question finds the second through the first). `doc_ref` is the first supporting article."""
    folder = _require(data_root(root) / "hotpotqa_dev", "HotpotQA dev set")
    corpus = _read_jsonl(_require(folder / "corpus.jsonl", "HotpotQA corpus"))
    rows = _read_jsonl(_require(folder / "qa.jsonl", "HotpotQA questions"))
    out = Path(cache_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    files = _write_articles(out, corpus)
    texts = {str(row["title"]): str(row["text"]) for row in corpus}
    questions: list[EvalQuestion] = []
    skipped: dict[str, int] = {}
    for row in rows:
        titles = list(dict.fromkeys(str(title) for title, _ in row.get("supporting_facts") or []))
        if len(titles) < 2 or any(t not in texts for t in titles):
            _bump(skipped, "a supporting paragraph is not in the pooled corpus")
            continue
        questions.append(
            EvalQuestion(
                qid=str(row["_id"]),
                doc_ref=files[titles[0]].name,
                question=str(row["question"]),
                answers=[str(row["answer"])],
                evidence_paragraphs=[texts[t] for t in titles],
                meta={"type": row.get("type", ""), "supporting_titles": titles},
            )
        )
    return EvalDataset(
        name="hotpotqa",
        questions=questions,
        documents=[files[title] for title in sorted(files)],
        evidence="paragraphs",
        skipped=skipped,
        meta={"root": str(folder), "cache": str(out), "evidence_across_documents": True, "k_values": (2, 5, 10)},
    )


# ---------------------------------------------------------------------------- generic JSONL
def load_jsonl(path: str | Path, name: str | None = None) -> EvalDataset:
    """Any set as JSONL: question, answer or answers, doc or doc_id, optional evidence_pages.

    Documents are looked up beside the JSONL file, then in its `documents/` folder.
    Optional fields: qid, evidence_sources, evidence_paragraphs.
    """
    file = Path(path).expanduser()
    if not file.exists():
        raise DatasetMissing(f"JSONL dataset not found: {file}")
    rows = _read_jsonl(file)
    questions: list[EvalQuestion] = []
    skipped: dict[str, int] = {}
    documents: dict[str, Path] = {}
    for number, row in enumerate(rows, start=1):
        question = str(row.get("question") or "").strip()
        doc = str(row.get("doc") or row.get("doc_id") or "").strip()
        if not question or not doc:
            raise ValueError(f"{file}:{number}: needs 'question' and 'doc' (or 'doc_id')")
        raw = row.get("answers", row.get("answer", []))
        answers = [str(a) for a in (raw if isinstance(raw, list) else [raw]) if str(a).strip()]
        if any(a.strip().lower() == NOT_ANSWERABLE for a in answers):
            _bump(skipped, "not answerable")
            continue
        if doc not in documents:
            documents[doc] = _find_document(file.parent, doc)
        questions.append(
            EvalQuestion(
                qid=str(row.get("qid") or row.get("id") or f"{file.stem}-{number}"),
                doc_ref=Path(doc).name,
                question=question,
                answers=answers,
                evidence_pages=[int(p) for p in row.get("evidence_pages") or []],
                evidence_sources=[normalise_source(s) for s in row.get("evidence_sources") or []],
                evidence_paragraphs=[str(p) for p in row.get("evidence_paragraphs") or []],
            )
        )
    has_pages = any(q.evidence_pages for q in questions)
    has_paragraphs = any(q.evidence_paragraphs for q in questions)
    return EvalDataset(
        name=name or file.stem,
        questions=questions,
        documents=list(documents.values()),
        evidence="paragraphs" if has_paragraphs and not has_pages else "pages",
        skipped=skipped,
        meta={"root": str(file)},
    )


def _find_document(base: Path, doc: str) -> Path:
    for candidate in (Path(doc).expanduser(), base / doc, base / "documents" / doc):
        if candidate.is_file():
            return candidate.resolve()
    raise DatasetMissing(f"document {doc!r} not found beside {base} or in {base / 'documents'}")


DATASET_NAMES = "mmlongbench, qasper, financebench, hotpotqa or jsonl:PATH"  # what `load_dataset` reads


def load_dataset(
    spec: str, cache_dir: str | Path, root: str | Path | None = None, unanswerable: bool = False
) -> EvalDataset:
    """'mmlongbench', 'qasper', 'financebench', 'hotpotqa' or 'jsonl:PATH' -> dataset; `unanswerable`: keep the
    questions the documents do not answer, where a set marks them (MMLongBench-Doc)."""
    if spec == "mmlongbench":
        return load_mmlongbench(root, unanswerable)
    if spec == "financebench":
        return load_financebench(root)
    if spec == "qasper":
        return load_qasper(Path(cache_dir) / "qasper", root)
    if spec == "hotpotqa":
        return load_hotpotqa(Path(cache_dir) / "hotpotqa", root)
    if spec.startswith("jsonl:"):
        return load_jsonl(spec[len("jsonl:") :])
    raise ValueError(f"unknown dataset {spec!r}; use {DATASET_NAMES}")


def dataset_label(spec: str) -> str:
    """A file-name-safe label for a dataset spec (used for output and collection names)."""
    if spec.startswith("jsonl:"):
        return Path(spec[len("jsonl:") :]).stem
    return spec


def iter_sources(questions: Iterable[EvalQuestion]) -> list[str]:
    """Evidence sources in a stable, readable order."""
    order = ["Pure-text", "Layout", "Table", "Chart", "Figure", "Table/Figure"]
    found = {s for q in questions for s in q.evidence_sources}
    return [s for s in order if s in found] + sorted(found - set(order))
