"""Run a dataset's questions through every retrieval strategy and score them.

One run indexes the dataset's documents into a collection directory (reused across
runs: unchanged files are skipped), then asks each question of every strategy in turn,
so strategies are compared on exactly the same questions and the same index. The
scope is either the question's own document (`document`) or the whole collection
(`collection`); recall counts only hits in the question's gold document either way.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from hyperfolio.collection import AddProgress, Collection
from hyperfolio.config import Settings
from hyperfolio.embed.protocols import Embedder
from hyperfolio.errors import HyperfolioError
from hyperfolio.eval import metrics as m
from hyperfolio.eval.datasets import EvalDataset, EvalQuestion, iter_sources
from hyperfolio.eval.extraction import extract_answer
from hyperfolio.eval.ranker_training import (
    AUTO_VARIANTS,
    HeldOut,
    QuestionRows,
    collect,
    cross_validate,
)
from hyperfolio.model import EvidencePackage
from hyperfolio.retrieve.auto import candidate_package
from hyperfolio.retrieve.features import Candidates

SCOPES = ("document", "collection")  # each question asked of its own document, or of the whole collection


class EvalProgress(AddProgress):
    """Callbacks for the two long phases; the command draws Rich progress bars from them."""

    def indexing(self, total_files: int) -> None: ...

    def querying(self, total_queries: int) -> None: ...

    def query_finished(self, strategy: str) -> None: ...


@dataclass
class QueryRecord:
    """One question answered by one strategy."""

    qid: str
    strategy: str
    seconds: float
    recall: dict[int, float | None]  # k -> page or paragraph recall
    answer_recall: dict[int, float | None]  # k -> answer found in the top-k text
    retrieved: list[tuple[int, str]]  # (page, chunk_id) in rank order
    doc_hit: float | None = None  # 1.0 when the top-ranked item is from the gold document (None: nothing ranked)
    answer: str | None = None
    answer_seconds: float | None = None
    em: float | None = None
    f1: float | None = None
    inclusion: float | None = None
    short: str | None = None  # the short answer scored by EM and F1
    number_match: float | None = None  # the short answer states the gold's number within 1% (None: no number)
    abstained: bool | None = None  # the answerer said the evidence does not answer the question
    answerable: bool = True


@dataclass
class Summary:
    """Aggregates of one strategy over a set of questions."""

    n: int = 0
    recall: dict[int, float | None] = field(default_factory=dict)
    doc_recall: float | None = None  # document recall@1: the top item is from the gold document
    answer_recall: dict[int, float | None] = field(default_factory=dict)
    n_answer_recall: int = 0  # questions with an answer worth searching for
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    latency_mean_ms: float | None = None
    em: float | None = None
    f1: float | None = None
    inclusion: float | None = None
    n_qa: int = 0
    number_match: float | None = None  # of the answers whose gold is a number, the share stating it within 1%
    abstain_precision: float | None = None  # of the abstentions, the share on unanswerable questions
    abstain_recall: float | None = None  # of the unanswerable questions, the share abstained on
    wrongly_abstained: float | None = None  # of the answerable questions, the share abstained on
    n_unanswerable: int = 0


@dataclass
class EvalResult:
    dataset: str
    evidence: str  # "pages" or "paragraphs"
    strategies: list[str]
    k_values: list[int]
    embedder: str
    collection: str
    questions: list[EvalQuestion]
    records: list[QueryRecord]
    overall: dict[str, Summary]
    by_source: dict[str, dict[str, Summary]]  # source -> strategy -> summary
    index: dict[str, Any]
    skipped: dict[str, int]
    started_at: float
    seconds: float
    answers: bool = False
    folds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # auto variant -> per-fold figures
    scope: str = "document"  # what each question was asked of: its own document or the whole collection
    across: bool = False  # a question's gold paragraphs count from any document (HotpotQA's two articles)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["questions"] = [asdict(q) for q in self.questions]
        return out


def summarise(records: Sequence[QueryRecord], k_values: Sequence[int]) -> Summary:
    latencies = [r.seconds * 1000 for r in records]
    answer_at_max = [r.answer_recall.get(max(k_values)) for r in records]
    qa = [r for r in records if r.em is not None]
    return Summary(
        n=len(records),
        recall={k: m.mean(r.recall.get(k) for r in records) for k in k_values},
        doc_recall=m.mean(r.doc_hit for r in records),
        answer_recall={k: m.mean(r.answer_recall.get(k) for r in records) for k in k_values},
        n_answer_recall=sum(v is not None for v in answer_at_max),
        latency_p50_ms=m.percentile(latencies, 50),
        latency_p95_ms=m.percentile(latencies, 95),
        latency_mean_ms=m.mean(latencies),
        em=m.mean(r.em for r in qa),
        f1=m.mean(r.f1 for r in qa),
        inclusion=m.mean(r.inclusion for r in qa),
        n_qa=len(qa),
        number_match=m.mean(r.number_match for r in qa),
        **abstention(records),
    )


def abstention(records: Sequence[QueryRecord]) -> dict[str, Any]:
    """Precision and recall of abstaining (unanswerable questions are the positives), and the share of
    answerable questions abstained on; empty when no answer was asked for."""
    asked = [r for r in records if r.abstained is not None]
    if not asked:
        return {}
    abstained = [r for r in asked if r.abstained]
    unanswerable = [r for r in asked if not r.answerable]
    answerable = [r for r in asked if r.answerable]
    hits = sum(not r.answerable for r in abstained)
    return {
        "abstain_precision": hits / len(abstained) if abstained else None,
        "abstain_recall": hits / len(unanswerable) if unanswerable else None,
        "wrongly_abstained": sum(bool(r.abstained) for r in answerable) / len(answerable) if answerable else None,
        "n_unanswerable": len(unanswerable),
    }


def score_package(
    question: EvalQuestion,
    evidence: EvidencePackage,
    evidence_kind: str,
    k_values: Sequence[int],
    doc_id: str | None = None,
) -> tuple[dict[int, float | None], dict[int, float | None]]:
    """(recall@k, answer-recall@k) of one evidence package against one question's gold.

    With `doc_id`, a page or paragraph counts only from that document: over the whole collection,
    page 3 of another filing is not the gold page 3. Answer recall reads all top-k text, as an
    answerer would."""
    targets, require_all = question.recall_targets
    recall: dict[int, float | None] = {}
    answer: dict[int, float | None] = {}
    for k in k_values:
        top = evidence.items[:k]
        texts = [item.chunk.text for item in top]
        if evidence_kind == "paragraphs":
            own = [item.chunk.text for item in top if doc_id is None or item.chunk.doc_id == doc_id]
            recall[k] = m.paragraph_recall(own, question.evidence_groups)
        else:  # the first k distinct pages of the ranking: pages are what gets cited
            recall[k] = m.ranked_page_recall(evidence.page_ranking(k), question.evidence_pages, doc_id)
        answer[k] = m.answer_recall(texts, targets, require_all)
    return recall, answer


def document_hit(evidence: EvidencePackage, doc_id: str) -> float | None:
    """Whether the top-ranked item comes from the gold document (document recall@1); None when empty.

    Always 1 when the question is scoped to its document; over the collection it says whether the
    strategy found the right filing before any page figure can count."""
    if not evidence.items:
        return None
    return float(evidence.items[0].chunk.doc_id == doc_id)


def index_documents(
    collection: Collection, files: Sequence[Path], progress: EvalProgress
) -> tuple[dict[str, str], dict[str, Any]]:
    """Add the dataset's files; return file name -> doc_id and a summary of what happened."""
    progress.indexing(len(files))
    report = collection.add(list(files), progress=progress)
    doc_ids: dict[str, str] = {}
    failures: list[dict[str, str]] = []
    for result in report.results:
        if result.ok and result.doc_id:
            doc_ids[Path(result.path).name] = result.doc_id
        else:
            failures.append({"path": result.path, "reason": result.reason})
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result.status] = counts.get(result.status, 0) + 1
    new_pages = sum(r.pages for r in report.results if r.status in {"added", "resumed", "replaced"})
    summary = {
        "files": len(files),
        "status": counts,
        "failures": failures,
        "seconds": report.seconds,
        "new_pages": new_pages,
        "pages_per_second": new_pages / report.seconds if new_pages and report.seconds else None,
        "stats": collection.stats(),
    }
    return doc_ids, summary


def _check_embedder(collection: Collection, wanted: str | None) -> None:
    stored = collection.indexed_embedder
    if wanted and stored and stored != wanted:
        raise HyperfolioError(
            f"collection {collection.path} was built with embedder {stored!r}, not {wanted!r}; "
            "use another --collection directory"
        )


class BuildSwitches(TypedDict, total=False):
    """The `BuildOptions` fields an ablation turns off."""

    multimodal: bool
    refine: bool
    reconcile: bool


# Ablations of the hypergraph build, run as strategies on a copy of the collection with its graph rebuilt.
@dataclass(frozen=True)
class Ablation:
    mode: str  # the strategy it ablates
    build: BuildSwitches = field(default_factory=BuildSwitches)  # build settings changed: needs its own graph
    retrieve: dict[str, object] = field(default_factory=dict)  # retrieval knobs changed per call


ABLATIONS: dict[str, Ablation] = {
    "dual-textonly": Ablation("dual", {"multimodal": False}),  # without multimodal extraction: text chunks only
    "dual-norefine": Ablation("dual", {"refine": False}),  # without anchor-driven refinement
    "concept-nograph": Ablation("concept", retrieve={"use_graph": False}),  # flat chunks only, then modality groups
    "concept-noconflict": Ablation("concept", {"reconcile": False}),  # every extracted fact accepted
    "concept-nomodality": Ablation("concept", retrieve={"by_modality": False}),  # one ranked list
    "concept-dense": Ablation("concept", retrieve={"scoring": "dense"}),  # the paper's embedding-only s(q, b)
    "concept-keyword": Ablation("concept", retrieve={"scoring": "keyword"}),  # BM25 only: no query embedding
    "topdown-novisual": Ablation("topdown", retrieve={"visual": False}),  # no vision model steps
}
GRAPH_MODES = ("dual", "concept", "topdown")
PAGE_DEPTH_FACTOR = 5  # chunks fetched per page counted, when recall is over pages
# HVM-GraphRAG Table 4: concept-retrieval settings per benchmark (the defaults are the MMLongBench row).
PAPER_PRESETS: dict[str, dict[str, object]] = {"mmlongbench": {}, "qasper": {"concepts": 15, "flat_chunks": 5}}


def _mode(strategy: str) -> str:
    return ABLATIONS[strategy].mode if strategy in ABLATIONS else strategy


def _ablation_settings(settings: Settings, strategy: str) -> Settings:
    return replace(settings, build=replace(settings.build, **ABLATIONS[strategy].build))


@dataclass(frozen=True)
class _Scoring:
    """How every answer of a run is scored: against which gold, at which cut-offs, with its answer or not."""

    evidence: str  # "pages" or "paragraphs"
    k_values: list[int]
    answers: bool
    scope: str = "document"
    across: bool = False  # a question's gold paragraphs may stand in several documents (HotpotQA's two)

    def scoped(self, doc_id: str) -> str | None:
        """The document a question is asked of: its own, or none (the whole collection)."""
        return doc_id if self.scope == "document" else None

    def record(
        self,
        collection: Collection,
        question: EvalQuestion,
        strategy: str,
        seconds: float,
        evidence: EvidencePackage,
        doc_id: str,
        keep: int | None = None,
    ) -> QueryRecord:
        """One strategy's evidence for one question, scored; `keep`: how many retrieved items it lists."""
        own = None if self.across else doc_id
        recall, answer_recall = score_package(question, evidence, self.evidence, self.k_values, own)
        record = QueryRecord(
            qid=question.qid,
            strategy=strategy,
            seconds=seconds,
            recall=recall,
            answer_recall=answer_recall,
            retrieved=[(item.chunk.page, item.chunk.chunk_id) for item in evidence.items[:keep]],
            doc_hit=document_hit(evidence, doc_id),
        )
        if self.answers:
            score_answer(collection, question, evidence, max(self.k_values), record)
        return record


def _build_variants(
    collection: Collection, directory: Path, settings: Settings, strategies: Sequence[str]
) -> dict[str, Collection]:
    """A copy of the collection per ablation of the build, its graph rebuilt without the ablated step."""
    return {
        s: collection.variant(directory.with_name(f"{directory.name}-{s}"), _ablation_settings(settings, s))
        for s in strategies
        if s in ABLATIONS and ABLATIONS[s].build
    }


def _indexed(questions: list[EvalQuestion], doc_ids: dict[str, str], skipped: dict[str, int]) -> list[EvalQuestion]:
    """The questions whose document is indexed; the others counted as skipped."""
    runnable = [q for q in questions if q.doc_ref in doc_ids]
    if len(runnable) < len(questions):
        skipped["document failed to index"] = len(questions) - len(runnable)
    return runnable


def _warm_up(collection: Collection, strategies: Sequence[str], answers: bool, progress: EvalProgress) -> None:
    """Build the hypergraph the strategies need and load the models, so neither counts as query latency."""
    if any(_mode(s) in GRAPH_MODES or s in AUTO_VARIANTS for s in strategies):
        collection.build_graph(progress=progress)  # documents indexed before the hypergraph existed
        collection.graph_embedder.embed(["warm-up"])
    if any(_mode(s) in ("dense", "hybrid", *GRAPH_MODES, *AUTO_VARIANTS) for s in strategies) or answers:
        collection.embedder.embed(["warm-up"])  # model load must not count as query latency


def _summaries(
    records: list[QueryRecord], questions: list[EvalQuestion], strategies: Sequence[str], k_values: list[int]
) -> tuple[dict[str, Summary], dict[str, dict[str, Summary]]]:
    """Each strategy's summary over all questions, and per evidence source."""
    overall = {s: summarise([r for r in records if r.strategy == s], k_values) for s in strategies}
    by_qid = {q.qid: q for q in questions}
    by_source: dict[str, dict[str, Summary]] = {}
    for source in iter_sources(questions):
        chosen = [r for r in records if source in by_qid[r.qid].evidence_sources]
        by_source[source] = {s: summarise([r for r in chosen if r.strategy == s], k_values) for s in strategies}
    return overall, by_source


DEFAULT_K = (1, 5, 10)


def run_eval(
    dataset: EvalDataset,
    strategies: Sequence[str],
    collection_dir: str | Path,
    k_values: Sequence[int] | None = None,
    limit: int | None = None,
    embedder: str | Embedder | None = None,
    answers: bool = False,
    progress: EvalProgress | None = None,
    folds: int = 5,
    scope: str = "document",
) -> EvalResult:
    """Index `dataset`, run its questions through each strategy, and aggregate the metrics.

    `limit` keeps the first N questions (and indexes only their documents), which
    makes quick runs cheap while staying reproducible. `embedder` is a settings name
    ("minilm", "model2vec") or an Embedder instance (tests use a tiny deterministic one).
    `auto` and its ablations are judged by cross-validation with whole documents held out (`folds`);
    with `folds=0`, `auto` runs with the collection's (or the packaged) ranker like any strategy.
    `scope` is what each question is asked of: "document" (its own) or "collection" (all of them).
    """
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}; use {' or '.join(SCOPES)}")
    progress = progress or EvalProgress()
    started_at, started = time.time(), time.perf_counter()
    k_values = k_values or dataset.meta.get("k_values") or DEFAULT_K  # HotpotQA's are 2, 5 and 10
    across = bool(dataset.meta.get("evidence_across_documents"))
    scoring = _Scoring(dataset.evidence, sorted(set(int(k) for k in k_values)), answers, scope, across)
    questions = list(dataset.questions[:limit] if limit else dataset.questions)
    wanted = {q.doc_ref for q in questions}
    # A corpus whose evidence spans documents is searched whole: every document is indexed, distractors too.
    files = list(dataset.documents) if across else [p for p in dataset.documents if p.name in wanted]
    skipped = dict(dataset.skipped)

    directory = Path(collection_dir).expanduser()
    name = embedder if isinstance(embedder, str) or embedder is None else embedder.name
    instance = None if isinstance(embedder, str) or embedder is None else embedder
    settings = Settings.load(directory / "settings.toml", embedder=name)
    with Collection(directory, settings=settings, embedder=instance) as collection:
        _check_embedder(collection, name)
        doc_ids, index = index_documents(collection, files, progress)
        questions = _indexed(questions, doc_ids, skipped)
        _warm_up(collection, strategies, answers, progress)
        variants = _build_variants(collection, directory, settings, strategies)
        held_out = [s for s in strategies if s in AUTO_VARIANTS and folds > 0]
        progress.querying(len(questions) * len(strategies))
        direct = [s for s in strategies if s not in held_out]
        records = _direct_records(collection, variants, dataset.name, questions, direct, doc_ids, scoring, progress)
        fold_figures: dict[str, list[dict[str, Any]]] = {}
        if held_out:
            auto_records, fold_figures = _held_out_records(
                collection, questions, doc_ids, scoring, held_out, folds, progress
            )
            records.extend(auto_records)
        embedder_name = collection.embedder_name
        for variant in variants.values():
            variant.close()

    overall, by_source = _summaries(records, questions, strategies, scoring.k_values)
    return EvalResult(
        dataset=dataset.name,
        evidence=dataset.evidence,
        strategies=list(strategies),
        k_values=scoring.k_values,
        embedder=embedder_name,
        collection=str(directory),
        questions=questions,
        records=records,
        overall=overall,
        by_source=by_source,
        index=index,
        skipped=skipped,
        started_at=started_at,
        seconds=time.perf_counter() - started,
        answers=answers,
        folds=fold_figures,
        scope=scope,
        across=across,
    )


def _direct_records(
    collection: Collection,
    variants: dict[str, Collection],
    dataset: str,
    questions: Sequence[EvalQuestion],
    strategies: Sequence[str],
    doc_ids: dict[str, str],
    scoring: _Scoring,
    progress: EvalProgress,
) -> list[QueryRecord]:
    """Every question asked of every strategy run as it is (ablations of the build on their own copy)."""
    # Page recall reads the first k distinct pages of a ranking: fetch enough chunks to have them.
    depth = max(scoring.k_values) * (PAGE_DEPTH_FACTOR if scoring.evidence == "pages" else 1)
    preset = PAPER_PRESETS.get(dataset, {})
    records: list[QueryRecord] = []
    for question in questions:
        for strategy in strategies:
            target = variants.get(strategy, collection)
            doc_id = doc_ids[question.doc_ref]
            records.append(_run_one(target, question, strategy, doc_id, scoring, depth, preset))
            progress.query_finished(strategy)
    return records


def _held_out_records(
    collection: Collection,
    questions: Sequence[EvalQuestion],
    doc_ids: dict[str, str],
    scoring: _Scoring,
    variants: Sequence[str],
    folds: int,
    progress: EvalProgress,
) -> tuple[list[QueryRecord], dict[str, list[dict[str, Any]]]]:
    """`auto` and its ablations, each question ranked by a ranker fitted without its document."""

    def gather(question: EvalQuestion, exclude: tuple[str, ...]) -> Candidates:
        doc = scoring.scoped(doc_ids[question.doc_ref])
        return collection.candidates(question.question, doc=doc, exclude=exclude)

    rows = collect(questions, gather, scoring.evidence, variants)
    records: list[QueryRecord] = []
    figures: dict[str, list[dict[str, Any]]] = {}
    keep = max(scoring.k_values)
    for variant in variants:
        mine = (
            rows[variant]
            if scoring.across
            else [gold_document_only(r, doc_ids[r.question.doc_ref]) for r in rows[variant]]
        )
        held = held_out_rankings(mine, AUTO_VARIANTS[variant], folds, doc_ids)
        for r in mine:
            doc_id = doc_ids[r.question.doc_ref]
            evidence = candidate_package(r.question.question, variant, r.candidates, held.ranking[r.question.qid], {})
            evidence = collection.document_first(evidence, scoring.scoped(doc_id))
            records.append(scoring.record(collection, r.question, variant, r.seconds, evidence, doc_id, keep))
            progress.query_finished(variant)
        by_fold: list[dict[str, Any]] = []
        for fold in sorted(set(held.fold.values())):
            chosen = [rec for rec in records if rec.strategy == variant and held.fold[rec.qid] == fold]
            summary = summarise(chosen, scoring.k_values)
            by_fold.append(
                {"fold": fold, "questions": summary.n, "recall": summary.recall, "doc_recall": summary.doc_recall}
            )
        figures[variant] = by_fold
    return records, figures


def gold_document_only(rows: QuestionRows, doc_id: str) -> QuestionRows:
    """The rows with only the gold document's candidates labelled evidence.

    Labels come from page numbers or paragraph text, which other documents of a collection share."""
    own = np.array([float(c.doc_id == doc_id) for c in rows.candidates.chunks])
    if own.size == 0 or own.all():
        return rows
    return replace(rows, labels=rows.labels * own)


def held_out_rankings(
    rows: Sequence[QuestionRows], exclude: Sequence[str], folds: int, doc_ids: dict[str, str]
) -> HeldOut:
    """Cross-validation with whole documents held out, their candidates too when candidates come from the
    whole collection (`cross_validate` with the questions' document ids)."""
    return cross_validate(rows, exclude, folds, doc_ids=doc_ids)


def _run_one(
    collection: Collection,
    question: EvalQuestion,
    strategy: str,
    doc_id: str,
    scoring: _Scoring,
    depth: int,
    preset: dict[str, object] | None = None,
) -> QueryRecord:
    began = time.perf_counter()
    knobs = dict(preset or {}) if _mode(strategy) == "concept" else {}
    knobs.update(ABLATIONS[strategy].retrieve if strategy in ABLATIONS else {})
    doc = scoring.scoped(doc_id)
    evidence = collection.retrieve(question.question, mode=_mode(strategy), k=depth, doc=doc, options=knobs or None)
    return scoring.record(collection, question, strategy, time.perf_counter() - began, evidence, doc_id)


def score_answer(
    collection: Collection, question: EvalQuestion, evidence: EvidencePackage, k: int, record: QueryRecord
) -> None:
    """Answer from the top k chunks the retrieval metrics saw (as `Collection.ask(q, mode, k, doc)`
    would) and score it: EM and F1 on the answer itself, inclusion on the full response."""
    began = time.perf_counter()
    reply = collection.answerer.answer(question.question, replace(evidence, items=evidence.items[:k]))
    record.answer_seconds = time.perf_counter() - began
    # Without citation markers; an abstention scores as an empty answer.
    said = " ".join(reply.support) if reply.sufficient else ""
    # The answerer's own short answer where it gave one; else the answer-extraction step (B.3) on the response.
    short = (
        reply.short
        if reply.sufficient and reply.short
        else extract_answer(collection.models.get("answer"), question.question, said)
    )
    record.answer = reply.text
    record.short = short
    record.abstained = not reply.sufficient
    record.answerable = question.answerable
    if not question.answerable:
        return  # nothing to match: only whether it abstained counts
    record.em = m.best_over(m.exact_match, short, question.answers)
    record.f1 = m.best_over(m.token_f1, short, question.answers)
    record.number_match = m.best_over(m.number_match, short, question.answers)
    record.inclusion = m.best_over(m.inclusion, said, question.answers)  # on the full response (B.3.2)


__all__ = ["EvalProgress", "EvalResult", "QueryRecord", "Summary", "run_eval", "summarise"]
