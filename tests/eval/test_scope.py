"""Questions asked of the whole collection: a hit counts only in the question's own document."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hyperfolio.eval import ranker_training, runner
from hyperfolio.eval.datasets import EvalDataset, EvalQuestion
from hyperfolio.eval.ranker_training import FEATURES, QuestionRows
from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage
from hyperfolio.retrieve.features import Candidates


def _chunk(doc_id: str, page: int, text: str = "") -> Chunk:
    return Chunk(page, 0, "text", text or f"{doc_id} page {page}", chunk_id=f"{doc_id}:{page}:0", doc_id=doc_id)


def _package(*chunks: Chunk) -> EvidencePackage:
    cite = [Citation(c.doc_id, c.doc_id, c.page, None, [], c.chunk_id, c.modality) for c in chunks]
    items = [EvidenceItem(c, 1.0 / rank, rank, cite[rank - 1]) for rank, c in enumerate(chunks, 1)]
    return EvidencePackage("q", "bm25", items)


def test_a_page_of_another_document_is_not_a_hit() -> None:
    question = EvalQuestion("q", "a.pdf", "q?", ["x"], evidence_pages=[2])
    evidence = _package(_chunk("B", 2), _chunk("A", 1), _chunk("A", 2))
    recall, _ = runner.score_package(question, evidence, "pages", [1, 2, 3], "A")
    assert recall == {1: 0.0, 2: 0.0, 3: 1.0}
    assert runner.document_hit(evidence, "A") == 0.0 and runner.document_hit(evidence, "B") == 1.0
    assert runner.document_hit(_package(), "A") is None

    gold = "Zebras have black and white stripes that confuse biting flies."
    para = EvalQuestion("p", "a.md", "q?", ["x"], evidence_paragraphs=[gold])
    recall, _ = runner.score_package(
        para, _package(_chunk("B", 1, gold), _chunk("A", 1, gold)), "paragraphs", [1, 2], "A"
    )
    assert recall == {1: 0.0, 2: 1.0}


def _rows(doc_ref: str, doc_id: str, qid: str, others: Sequence[str]) -> QuestionRows:
    """A question of `doc_id` whose candidates come from it and from `others`, page 1 labelled gold everywhere."""
    chunks = [_chunk(d, p) for d in (doc_id, *others) for p in (1, 2)]
    matrix = np.array([[float(c.page == 1)] * len(FEATURES) for c in chunks])
    candidates = Candidates(chunks, matrix, [{} for _ in chunks])
    labels = np.array([float(c.page == 1) for c in chunks])
    question = EvalQuestion(qid, doc_ref, f"{qid}?", ["x"], evidence_pages=[1])
    return QuestionRows(question, doc_ref, candidates, labels)


def test_held_out_rankers_never_see_a_held_out_document(monkeypatch: pytest.MonkeyPatch) -> None:
    doc_ids = {"a.pdf": "A", "b.pdf": "B", "c.pdf": "C"}
    rows = [
        runner.gold_document_only(_rows(ref, doc, f"q{i}{ref}", [d for d in doc_ids.values() if d != doc]), doc)
        for ref, doc in doc_ids.items()
        for i in range(2)
    ]
    # Page 1 of another document is no evidence, even though its page number is a gold one.
    assert all(label == float(c.doc_id == doc_ids[r.group] and c.page == 1)
               for r in rows for c, label in zip(r.candidates.chunks, r.labels, strict=True))  # fmt: skip
    seen: list[set[str]] = []
    fit = ranker_training.fit

    def spy(train: Sequence[QuestionRows], exclude: Sequence[str] = (), c: float = ranker_training.DEFAULT_C):
        seen.append({chunk.doc_id for r in train for chunk in r.candidates.chunks})
        return fit(train, exclude, c)

    monkeypatch.setattr(ranker_training, "fit", spy)
    held = runner.held_out_rankings(rows, (), 3, doc_ids)
    assert sorted(held.fold.values()) == [0, 0, 1, 1, 2, 2]
    for fold, docs in enumerate(seen):
        unseen = {doc_ids[r.group] for r in rows if held.fold[r.question.qid] == fold}
        assert len(unseen) == 1 and not unseen & docs  # one whole document held out, none of its candidates seen
    for r in rows:  # each question still ranks all its candidates, its own document's included
        assert len(held.ranking[r.question.qid]) == len(r.candidates.chunks)


def test_collection_scope_counts_only_the_gold_document(tmp_path: Path, pdf_writer, hash_embedder) -> None:
    pytest.importorskip("sklearn")
    folder = tmp_path / "docs"
    folder.mkdir()
    # Both filings have the zebra answer's words on page 2; beta's page 2 says them more often.
    alpha_pages = [
        "Alpine glaciers retreat each summer as meltwater carves the ice.",
        "Zebras have black and white stripes that confuse biting flies.",
    ]
    beta_pages = [
        "Sea otters hold hands while sleeping in the kelp forest.",
        "Zebras zebras: black and white stripes, black and white zebra stripes.",
    ]
    alpha = pdf_writer(folder / "alpha.pdf", alpha_pages)
    beta = pdf_writer(folder / "beta.pdf", beta_pages)
    questions = [
        EvalQuestion("q1", "alpha.pdf", "Why do zebras have black and white stripes?", ["flies"], evidence_pages=[2]),
        EvalQuestion(
            "q2", "alpha.pdf", "What happens to alpine glaciers each summer?", ["retreat"], evidence_pages=[1]
        ),
        EvalQuestion("q3", "beta.pdf", "What do sea otters hold while sleeping?", ["hands"], evidence_pages=[1]),
        EvalQuestion("q4", "beta.pdf", "Which zebra stripes are black and white?", ["zebra"], evidence_pages=[2]),
    ]
    dataset = EvalDataset("two", questions, [alpha, beta], evidence="pages")
    collection = tmp_path / "col"

    whole = runner.run_eval(dataset, ["bm25", "auto"], collection, embedder=hash_embedder, folds=2, scope="collection")
    own = runner.run_eval(dataset, ["bm25"], collection, embedder=hash_embedder, scope="document")

    assert whole.scope == "collection" and own.scope == "document"
    q1 = next(r for r in whole.records if r.qid == "q1" and r.strategy == "bm25")
    beta_id = next(r for r in own.records if r.qid == "q4").retrieved[0][1].split(":")[0]
    assert q1.retrieved[0] == (2, q1.retrieved[0][1]) and q1.retrieved[0][1].startswith(beta_id)
    assert q1.doc_hit == 0.0 and q1.recall[1] == 0.0 and q1.recall[5] == 1.0  # beta's page 2 is no hit
    q1_own = next(r for r in own.records if r.qid == "q1")
    assert q1_own.doc_hit == 1.0 and q1_own.recall[1] == 1.0
    assert own.overall["bm25"].doc_recall == 1.0
    assert whole.overall["bm25"].doc_recall == pytest.approx(0.75)
    assert whole.overall["auto"].n == 4 and whole.overall["auto"].doc_recall is not None
    assert [f["fold"] for f in whole.folds["auto"]] == [0, 1]

    from hyperfolio.eval.report import markdown

    text = markdown(whole)
    assert "collection scope" in text and "doc-R@1" in text and "| bm25 | 75.0 |" in text
    with pytest.raises(ValueError, match="scope"):
        runner.run_eval(dataset, ["bm25"], collection, embedder=hash_embedder, scope="shelf")


def test_ranking_document_recall_reads_the_top_candidate() -> None:
    from hyperfolio.eval.tune import ranking_document_recall, ranking_recall

    doc_ids = {"a.pdf": "A", "b.pdf": "B"}
    rows = [runner.gold_document_only(_rows("a.pdf", "A", "qa", ["B"]), "A")]
    best_b = {"qa": [(2, 1.0), (0, 0.5), (1, 0.1), (3, 0.0)]}  # B's page 1 first, then A's page 1
    assert ranking_document_recall(rows, best_b, doc_ids) == 0.0
    assert ranking_recall(rows, best_b, "pages", doc_ids)[1] == 0.0  # B's page 1 is not the gold page 1
    best_a = {"qa": [(0, 1.0), (2, 0.5), (1, 0.1), (3, 0.0)]}
    assert ranking_document_recall(rows, best_a, doc_ids) == 1.0
    assert ranking_recall(rows, best_a, "pages", doc_ids)[1] == 1.0
