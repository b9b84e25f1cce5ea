"""Metric functions on hand-checked inputs."""

from __future__ import annotations

import pytest

from hyperfolio.eval import metrics as m
from hyperfolio.model import Chunk, Citation, EvidenceItem


def item(page: int, text: str = "", rank: int = 1) -> EvidenceItem:
    chunk = Chunk(page=page, order=0, modality="text", text=text, doc_id="d", chunk_id=f"d:{page}:{rank}")
    citation = Citation("d", "Doc", page, None, [], chunk.chunk_id, "text")
    return EvidenceItem(chunk=chunk, score=1.0, rank=rank, citation=citation)


def test_normalize_answer_squad_rules() -> None:
    assert m.normalize_answer("The  Cat, sat on a MAT!") == "cat sat on mat"
    assert m.normalize_answer("An apple") == "apple"


def test_normalize_for_match_keeps_decimals_drops_thousands() -> None:
    assert m.normalize_for_match("Revenue was $1,500,000 (18.29%).") == "revenue was 1500000 18.29"
    assert m.normalize_for_match("don't") == "dont"
    assert m.normalize_for_match("end.Next") == "end next"


def test_answer_variants_for_numbers() -> None:
    assert "21" in m.answer_variants("21%")
    assert "17.5" in m.answer_variants("17.50")
    assert "1500" in m.answer_variants("1,500")
    assert m.answer_variants("Berlin") == ["berlin"]


def test_page_recall_reads_the_first_k_distinct_pages_of_a_ranking() -> None:
    from hyperfolio.model import EvidencePackage

    evidence = EvidencePackage("q", "test", [item(3, rank=1), item(3, rank=2), item(7, rank=3), item(5, rank=4)])
    doc = evidence.items[0].chunk.doc_id
    assert evidence.page_ranking(2) == [(doc, 3), (doc, 7)]  # chunk 2 is on a page already counted
    assert m.ranked_page_recall(evidence.page_ranking(1), [3, 5]) == 0.5
    assert m.ranked_page_recall(evidence.page_ranking(2), [3, 5]) == 0.5
    assert m.ranked_page_recall(evidence.page_ranking(3), [3, 5]) == 1.0
    assert m.ranked_page_recall(evidence.page_ranking(3), []) is None
    assert m.ranked_page_recall([], [1]) == 0.0
    assert m.ranked_page_recall(evidence.page_ranking(3), [3, 5], doc_id="other") == 0.0


def test_answer_recall_token_boundaries_and_numbers() -> None:
    texts = ["The share rose to 18.29 % in 2018.", "Total: 1,500 units"]
    assert m.answer_recall(texts, ["18.29%"]) == 1.0
    assert m.answer_recall(texts, ["1500"]) == 1.0
    assert m.answer_recall(texts, ["1.5"]) == 0.0  # no decimal collapse
    assert m.answer_recall(texts, ["201"]) == 0.0  # no partial-number match
    assert m.answer_recall(texts, ["the share"]) == 1.0
    assert m.answer_recall(texts, ["nothing", "units"]) == 1.0  # any alternative
    assert m.answer_recall(texts, ["units", "missing"], require_all=True) == 0.5
    assert m.answer_recall(texts, ["", "  "]) is None


LONG = (
    "We train the model on the Convote corpus of congressional floor debates and evaluate the generated "
    "speeches both manually and automatically with a part of speech sequence check over all sentences."
)


def test_paragraph_matches_whole_and_contained() -> None:
    assert m.paragraph_matches(LONG, "Intro text. " + LONG + " More text follows here.")
    assert not m.paragraph_matches(LONG, "Completely different words about tables and figures in a paper.")


def test_paragraph_matches_piece_of_long_paragraph() -> None:
    words = (LONG + " ") * 4  # ~120 tokens; a chunk holding 40 of them is a piece
    piece = " ".join(words.split()[:40])
    assert m.paragraph_matches(words, piece)
    short_piece = " ".join(words.split()[:8])
    assert not m.paragraph_matches(words, short_piece)


def test_short_paragraph_needs_contiguous_match() -> None:
    caption = "Table 5: Evaluation criteria"
    assert m.paragraph_matches(caption, "Figures. Table 5: Evaluation criteria. Table 6: Results")
    assert not m.paragraph_matches(caption, "criteria for evaluation are in table 5")


def test_paragraph_recall_best_annotator() -> None:
    texts = [LONG]
    groups = [["Unrelated paragraph that nobody retrieved at all, about other things entirely ok."], [LONG]]
    assert m.paragraph_recall(texts, groups) == 1.0
    assert m.paragraph_recall(texts, [[LONG, "Something else entirely that is long enough to count."]]) == 0.5
    assert m.paragraph_recall(texts, []) is None


def test_qa_metrics() -> None:
    assert m.exact_match("The Berlin.", "berlin") == 1.0
    assert m.token_f1("berlin germany", "berlin") == pytest.approx(2 / 3)
    assert m.token_f1("paris", "berlin") == 0.0
    assert m.inclusion("It was 21% in 2018", "21%") == 1.0
    assert m.inclusion("It was 210", "21") == 0.0
    assert m.best_over(m.exact_match, "yes", ["no", "Yes"]) == 1.0
    assert m.best_over(m.exact_match, "yes", []) is None


def test_aggregation_helpers() -> None:
    assert m.mean([1.0, None, 0.0]) == 0.5
    assert m.mean([None]) is None
    assert m.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert m.percentile([5.0], 95) == 5.0
    assert m.percentile([], 50) is None


def test_number_match_within_one_percent():
    from hyperfolio.eval.metrics import best_over, number_match

    assert number_match("$1,832 million", "$1832.00") == 1.0
    assert number_match("65.0%", "65.4%") == 1.0  # within 1% of 65.4
    assert number_match("64.0%", "65.4%") == 0.0
    assert number_match("Yes", "Yes") is None  # no number to match
    assert best_over(number_match, "0.83", ["Yes", "0.83"]) == 1.0
    assert best_over(number_match, "no number", ["Yes"]) is None
