"""Loaders on small fixtures written by the tests (never the shared benchmark data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyperfolio.eval import datasets as ds


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def mmlb_row(qid: str, answer: str, pages: list[int], sources: list[str], fmt: str = "Str") -> dict:
    return {
        "qid": qid,
        "doc_id": "a.pdf",
        "question": f"question {qid}?",
        "answer": answer,
        "answer_format": fmt,
        "evidence_pages_list": pages,
        "evidence_sources_list": sources,
        "doc_num_pages": 4,
    }


@pytest.fixture()
def mmlb_root(tmp_path: Path) -> Path:
    folder = tmp_path / "mmlongbench_dev"
    (folder / "documents").mkdir(parents=True)
    (folder / "documents" / "a.pdf").write_bytes(b"%PDF-1.4 stub")
    write_jsonl(
        folder / "qa.jsonl",
        [
            mmlb_row("q1", "42", [2], ["Pure-text (Plain-text)"], "Int"),
            mmlb_row("q2", "Not answerable", [], [], "None"),
            mmlb_row("q3", "x", [9], ["Table"]),  # page beyond doc_num_pages
            mmlb_row("q4", "['Circle', 'Rectangle']", [1, 3], ["Generalized-text (Layout)", "Figure"], "List"),
        ],
    )
    return tmp_path


def test_mmlongbench_loader(mmlb_root: Path) -> None:
    data = ds.load_mmlongbench(mmlb_root)
    assert [q.qid for q in data.questions] == ["q1", "q4"]
    assert data.skipped == {"not answerable": 1, "evidence page outside the document": 1}
    assert [p.name for p in data.documents] == ["a.pdf"]
    q1, q4 = data.questions
    assert q1.evidence_pages == [2] and q1.evidence_sources == ["Pure-text"] and q1.answers == ["42"]
    assert q4.evidence_sources == ["Layout", "Figure"]
    assert q4.recall_targets == (["Circle", "Rectangle"], True)
    assert q4.answers == ["Circle, Rectangle"]


def test_mmlongbench_keeps_unanswerable_questions_when_answers_are_measured(mmlb_root: Path) -> None:
    data = ds.load_mmlongbench(mmlb_root, unanswerable=True)
    assert [q.qid for q in data.questions] == ["q1", "q2", "q4"]
    q2 = data.questions[1]
    assert not q2.answerable and q2.answers == [] and q2.evidence_pages == []
    assert q2.meta["answer_format"] == "None"
    assert data.skipped == {"evidence page outside the document": 1}


def test_data_root_env_and_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ds.DATA_ENV, str(tmp_path / "nowhere"))
    assert ds.data_root() == tmp_path / "nowhere"
    with pytest.raises(ds.DatasetMissing, match="HYPERFOLIO_DATA"):
        ds.load_mmlongbench()


PAPER = {
    "title": "A Tiny Paper",
    "abstract": "We study tiny things.",
    "full_text": [
        {"section_name": "Introduction", "paragraphs": ["Tiny things matter a lot.", ""]},
        {"section_name": "Method ::: Data", "paragraphs": ["We collected 300 tiny samples from the lab."]},
    ],
    "figures_and_tables": [{"file": "t1.png", "caption": "Table 1: Sample counts"}],
}


def qasper_answer(evidence: list[str], spans: list[str] | None = None, yes_no=None, unanswerable=False) -> dict:
    return {
        "type": "extractive" if spans else "boolean",
        "extractive_spans": spans or [],
        "free_form_answer": "",
        "yes_no": yes_no,
        "unanswerable": unanswerable,
        "evidence": evidence,
        "highlighted_evidence": [],
    }


def test_qasper_loader_builds_markdown_and_gold(tmp_path: Path) -> None:
    folder = tmp_path / "qasper_dev"
    folder.mkdir()
    (folder / "papers.json").write_text(json.dumps({"1234.5678": PAPER}), encoding="utf-8")
    rows = [
        {
            "paper_id": "1234.5678",
            "question_id": "qa",
            "question": "How many samples?",
            "answers": [
                qasper_answer(["We collected 300 tiny samples from the lab."], spans=["300"]),
                qasper_answer(["FLOAT SELECTED: Table 1: Sample counts"], spans=["300 tiny samples"]),
            ],
        },
        {
            "paper_id": "1234.5678",
            "question_id": "qb",
            "question": "Why?",
            "answers": [qasper_answer([], unanswerable=True)],
        },
        {
            "paper_id": "1234.5678",
            "question_id": "qc",
            "question": "Is it tiny?",
            "answers": [qasper_answer([], yes_no=True)],
        },
        {
            "paper_id": "1234.5678",
            "question_id": "qd",
            "question": "Tiny?",
            "answers": [qasper_answer(["Tiny things matter a lot."], yes_no=True)],
        },
    ]
    write_jsonl(folder / "qa.jsonl", rows)
    cache = tmp_path / "cache"
    data = ds.load_qasper(cache, tmp_path)
    assert data.evidence == "paragraphs"
    assert [q.qid for q in data.questions] == ["qa", "qd"]
    assert data.skipped == {"not answerable": 1, "no evidence": 1}
    qa, qd = data.questions
    assert qa.doc_ref == "1234.5678.md"
    assert qa.evidence_groups == [["We collected 300 tiny samples from the lab."], ["Table 1: Sample counts"]]
    assert qa.evidence_sources == ["Pure-text", "Table/Figure"]
    assert qa.recall_targets == (["300", "300 tiny samples"], False)
    assert qd.answers == ["yes"] and qd.recall_targets == ([], False)
    text = (cache / "1234.5678.md").read_text()
    assert text.startswith("# A Tiny Paper\n")
    assert "## Method ::: Data\n\nWe collected 300 tiny samples from the lab.\n" in text
    assert text.rstrip().endswith("## Figures and tables\n\nTable 1: Sample counts")
    mtime = (cache / "1234.5678.md").stat().st_mtime_ns
    ds.load_qasper(cache, tmp_path)  # unchanged content is not rewritten
    assert (cache / "1234.5678.md").stat().st_mtime_ns == mtime


def test_jsonl_loader(tmp_path: Path) -> None:
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "x.md").write_text("# X\n\nHello.\n")
    write_jsonl(
        tmp_path / "set.jsonl",
        [
            {"question": "Hi?", "answer": "Hello", "doc": "x.md", "evidence_pages": [1]},
            {"question": "Bye?", "answers": ["Not answerable"], "doc_id": "x.md"},
        ],
    )
    data = ds.load_jsonl(tmp_path / "set.jsonl")
    assert data.name == "set" and data.evidence == "pages"
    assert len(data.questions) == 1 and data.questions[0].answers == ["Hello"]
    assert data.documents == [(tmp_path / "documents" / "x.md").resolve()]
    assert ds.load_dataset(f"jsonl:{tmp_path / 'set.jsonl'}", tmp_path).name == "set"


def test_jsonl_loader_errors(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "bad.jsonl", [{"question": "no doc"}])
    with pytest.raises(ValueError, match="doc"):
        ds.load_jsonl(tmp_path / "bad.jsonl")
    write_jsonl(tmp_path / "missing.jsonl", [{"question": "q", "doc": "absent.pdf"}])
    with pytest.raises(ds.DatasetMissing):
        ds.load_jsonl(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="unknown dataset"):
        ds.load_dataset("nope", tmp_path)


def test_normalise_source() -> None:
    assert ds.normalise_source("Generalized-text (Layout)") == "Layout"
    assert ds.normalise_source("Pure-text (Plain-text)") == "Pure-text"
    assert ds.normalise_source("Chart") == "Chart"


def fb_row(fid: str, doc: str, pages: list[int]) -> dict:
    evidence = [{"doc_name": doc, "evidence_page_num": p, "evidence_text": "x"} for p in pages]
    return {
        "financebench_id": fid,
        "company": "Acme",
        "doc_name": doc,
        "question_reasoning": None,
        "question": f"question {fid}?",
        "answer": "$1.2 billion",
        "evidence": evidence,
    }


def test_financebench_loader_turns_pages_one_based_and_counts_skips(tmp_path: Path, pdf_writer) -> None:
    folder = tmp_path / "financebench_dev"
    (folder / "pdfs").mkdir(parents=True)
    pdf_writer(folder / "pdfs" / "ACME_2022_10K.pdf", ["Cover", "Income statement", "Balance sheet"])
    rows = [
        fb_row("fb1", "ACME_2022_10K", [2, 0, 2]),
        fb_row("fb2", "GONE_2020_10K", [1]),  # filing not in pdfs/
        fb_row("fb3", "ACME_2022_10K", [3]),  # page 4 of a 3-page filing
        fb_row("fb4", "ACME_2022_10K", []),
        fb_row("fb5", "ACME_2022_10K", [1]),
    ]
    write_jsonl(folder / "qa.jsonl", rows)

    data = ds.load_dataset("financebench", tmp_path / "cache", root=tmp_path)

    assert data.name == "financebench" and data.evidence == "pages"
    assert [q.qid for q in data.questions] == ["fb1", "fb5"]
    assert data.skipped == {"filing missing": 1, "evidence page outside the document": 1, "no evidence pages": 1}
    assert [p.name for p in data.documents] == ["ACME_2022_10K.pdf"]
    first = data.questions[0]
    assert first.doc_ref == "ACME_2022_10K.pdf" and first.evidence_pages == [1, 3] and first.answers == ["$1.2 billion"]
    assert first.meta["company"] == "Acme" and first.meta["question_reasoning"] == ""
    assert ds.dataset_label("financebench") == "financebench"


def test_financebench_missing_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ds.DatasetMissing, match="FinanceBench"):
        ds.load_dataset("financebench", tmp_path / "cache", root=tmp_path)
