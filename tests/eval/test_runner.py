"""End to end on two tiny Markdown documents whose recall values are known by construction."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from hyperfolio.eval.datasets import EvalDataset, EvalQuestion


def _markdown_parser_ready() -> bool:
    try:
        importlib.import_module("hyperfolio.parse.markdown")
    except ImportError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    not _markdown_parser_ready(), reason="the Markdown parser (hyperfolio.parse.markdown) is not importable yet"
)


ZEBRA = "Zebras grazing on the savanna have black and white stripes that confuse biting flies."
OTTER = "Sea otters hold hands while sleeping so that the current does not pull them apart."
FALCON = "Peregrine falcons dive faster than any other animal, and their stripes are barely visible."
GLACIER = "Alpine glaciers retreat each summer as meltwater carves channels through the ice."
ZEBRA_B = "Zebras in this other report are painted on murals with black and white stripes."


def write_docs(folder: Path) -> list[Path]:
    # One paragraph per section: chunks never cross a section, so each paragraph is one chunk.
    alpha = "# Animals\n\n## Zebras\n\n" + ZEBRA + "\n\n## Otters\n\n" + OTTER + "\n\n## Falcons\n\n" + FALCON + "\n"
    beta = "# Places\n\n## Glaciers\n\n" + GLACIER + "\n\n## Murals\n\n" + ZEBRA_B + "\n"
    (folder / "alpha.md").write_text(alpha, encoding="utf-8")
    (folder / "beta.md").write_text(beta, encoding="utf-8")
    return [folder / "alpha.md", folder / "beta.md"]


def test_run_eval_known_recall(tmp_path: Path, hash_embedder) -> None:
    from hyperfolio.eval.report import markdown, write_report
    from hyperfolio.eval.runner import run_eval

    docs = write_docs(tmp_path)
    questions = [
        EvalQuestion(
            "q1",
            "alpha.md",
            "Why do zebras have black and white stripes?",
            ["confuse biting flies"],
            evidence_paragraphs=[ZEBRA],
            evidence_sources=["Pure-text"],
        ),
        EvalQuestion(
            "q2",
            "beta.md",
            "What happens to alpine glaciers in summer?",
            ["retreat"],
            evidence_paragraphs=[GLACIER],
            evidence_sources=["Pure-text"],
        ),
        # Both gold paragraphs share "stripes"; "zebras" ranks the zebra paragraph first.
        EvalQuestion(
            "q3",
            "alpha.md",
            "Which zebras stripes?",
            ["flies"],
            evidence_paragraphs=[ZEBRA, FALCON],
            evidence_sources=["Pure-text", "Figure"],
        ),
    ]
    dataset = EvalDataset("tiny", questions, docs, evidence="paragraphs")
    collection = tmp_path / "col"
    collection.mkdir()
    (collection / "settings.toml").write_text("[parse]\nchunk_tokens = 40\nchunk_overlap = 0\n")

    result = run_eval(dataset, ["bm25", "hybrid"], collection, embedder=hash_embedder, answers=True)

    assert result.index["status"] == {"added": 2}
    bm25 = result.overall["bm25"]
    assert bm25.n == 3
    assert bm25.recall[1] == pytest.approx((1 + 1 + 0.5) / 3)
    assert bm25.recall[5] == pytest.approx(1.0)
    assert bm25.answer_recall[10] == pytest.approx(1.0)
    assert result.overall["hybrid"].recall[10] == pytest.approx(1.0)
    assert result.overall["hybrid"].n_qa == 3 and result.overall["hybrid"].f1 is not None
    # Scoping: every retrieved chunk comes from the question's own document.
    alpha_id = next(r for r in result.records if r.qid == "q1").retrieved[0][1].split(":")[0]
    assert all(cid.startswith(alpha_id) for r in result.records if r.qid != "q2" for _, cid in r.retrieved)
    assert result.by_source["Figure"]["bm25"].n == 1
    assert result.by_source["Figure"]["bm25"].recall[1] == pytest.approx(0.5)
    assert all(r.seconds > 0 for r in result.records)

    md_path, json_path = write_report(result, tmp_path / "out")
    text = markdown(result)
    assert "| bm25 | 100.0 |" not in text and "| bm25 | 83.3 | 100.0 | 100.0 |" in text
    assert json.loads(json_path.read_text())["overall"]["bm25"]["n"] == 3
    assert md_path.read_text() == text
    assert "Answers by format" in text and all(r.abstained is not None for r in result.records)

    again = run_eval(dataset, ["bm25"], collection, embedder=hash_embedder, limit=1)
    assert again.index["status"] == {"skipped": 1}  # the index is reused; only q1's document is needed
    assert again.overall["bm25"].n == 1


def test_auto_is_judged_on_documents_its_ranker_never_saw(tmp_path: Path, hash_embedder) -> None:
    from hyperfolio.eval.runner import run_eval

    folder = tmp_path / "docs"
    folder.mkdir()
    topics = ["zebra", "otter", "falcon", "glacier"]
    docs, questions = [], []
    for d, topic in enumerate(topics):
        body = "\n\n".join(
            f"## Part {p}\n\nThe {topic} report, part {p}, notes fact {d}{p} about {topic}s near lake {p}."
            for p in range(3)
        )
        path = folder / f"{topic}.md"
        path.write_text(f"# {topic.title()} notes\n\n{body}\n", encoding="utf-8")
        docs.append(path)
        for p in range(3):
            fact = f"The {topic} report, part {p}, notes fact {d}{p} about {topic}s near lake {p}."
            questions.append(
                EvalQuestion(f"{topic}-{p}", path.name, f"What is fact {d}{p} near lake {p}?", [f"{d}{p}"],
                             evidence_paragraphs=[fact], evidence_sources=["Pure-text"])
            )  # fmt: skip
    dataset = EvalDataset("folds", questions, docs, evidence="paragraphs")
    collection = tmp_path / "col"
    collection.mkdir()
    (collection / "settings.toml").write_text("[parse]\nchunk_tokens = 40\nchunk_overlap = 0\n")

    result = run_eval(
        dataset, ["bm25", "auto", "auto-nograph"], collection, embedder=hash_embedder, answers=True, folds=2
    )
    for variant in ("auto", "auto-nograph"):
        summary = result.overall[variant]
        assert summary.n == len(questions) and summary.recall[10] is not None and summary.n_qa == len(questions)
        assert [f["fold"] for f in result.folds[variant]] == [0, 1]  # two folds of whole documents
        assert sum(f["questions"] for f in result.folds[variant]) == len(questions)
    records = [r for r in result.records if r.strategy == "auto"]
    assert all(cid.startswith(r.retrieved[0][1].split(":")[0]) for r in records for _, cid in r.retrieved)


def test_abstention_precision_and_recall() -> None:
    from hyperfolio.eval.runner import QueryRecord, abstention

    def record(qid: str, answerable: bool, abstained: bool) -> QueryRecord:
        return QueryRecord(qid, "auto", 0.1, {}, {}, [], abstained=abstained, answerable=answerable)

    records = [
        record("a", True, False),
        record("b", True, True),  # an answerable question abstained on
        record("c", False, True),
        record("d", False, True),
        record("e", False, False),  # an unanswerable question answered anyway
        record("f", True, False),
    ]
    found = abstention(records)
    assert found["abstain_precision"] == pytest.approx(2 / 3)
    assert found["abstain_recall"] == pytest.approx(2 / 3)
    assert found["wrongly_abstained"] == pytest.approx(1 / 3)
    assert found["n_unanswerable"] == 3
    assert abstention([QueryRecord("x", "bm25", 0.1, {}, {}, [])]) == {}  # no answers asked for
