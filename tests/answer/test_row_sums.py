"""Sums over a table's rows asked as one quantity: two named shares of one whole, the top N rows."""

from __future__ import annotations

from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.answer.row_sums import combined_share, top_rows_sum
from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage

CATEGORIES = [
    ["Category", "No. of Shares held", "%"],
    ["Banks and Mutual Funds", "1,39,40,19,297", "37.05"],
    ["Foreign Companies", "1,21,04,38,380", "32.17"],
    ["Foreign Institutional Investors", "48,10,82,374", "12.79"],
    ["Public and Others", "59,63,30,505", "17.99"],
    ["Total", "3,76,22,22,780", "100.00"],
]
TOP_HOLDERS = [
    ["Sl. No.", "Name of the Shareholder", "No. of Shares held", "%"],
    ["1.", "Tobacco Manufacturers (India) Limited", "99,27,82,440", "26.39"],
    ["2.", "Unit Trust of India", "44,86,47,169", "11.93"],
    ["3.", "Life Insurance Corporation of India", "47,79,57,681", "12.70"],
    ["4.", "Myddleton Investment Co. Limited", "16,21,03,980", "4.31"],
]
SURVEY = [  # shares of different wholes: each row is its own group's answer
    ["Group", "Agree %"],
    ["Men", "45%"],
    ["Women", "51%"],
    ["Under 30", "60%"],
]


def table(rows: list[list[str]], rank: int = 1, caption: str = "") -> EvidenceItem:
    chunk = Chunk(page=9, order=rank, modality="table", text="...", caption=caption, table=rows, table_header_rows=1)
    chunk.doc_id, chunk.chunk_id = "d", f"d:9:{rank}"
    citation = Citation("d", "Annual report", 9, None, [], chunk.chunk_id, "table")
    return EvidenceItem(chunk=chunk, score=1.0 / rank, rank=rank, citation=citation)


def ask(question: str, *items: EvidenceItem):
    return ExtractiveAnswerer(None).answer(question, EvidencePackage(question, "test", list(items)))


def test_two_named_shares_of_one_whole_are_added_and_shown():
    question = "What percentage of the shares was held by foreign companies and institutional investors as of 2007?"
    answer = ask(question, table(CATEGORIES))
    assert answer.short == "44.96%"
    assert "32.17 + 12.79 = 44.96%" in answer.text
    assert "Foreign Companies" in answer.text and "Foreign Institutional Investors" in answer.text


def test_shares_of_different_wholes_are_not_added():
    assert combined_share("What percentage of men and women agree?", [table(SURVEY)]) is None
    # nor a pair that does not name two rows, nor a question not after a share
    assert combined_share("What percentage was held by banks and pension funds?", [table(CATEGORIES)]) is None
    assert combined_share("How many shares were held by foreign companies and banks?", [table(CATEGORIES)]) is None


def test_the_top_n_rows_of_a_table_naming_them_are_summed_largest_first():
    question = "What is the sum of the shares held by the top-3 shareholders, as a ratio?"
    answer = ask(question, table(CATEGORIES, 1), table(TOP_HOLDERS, 2))
    assert answer.short == "51.02%"  # 26.39 + 12.70 + 11.93, the three largest, not the first three listed
    assert "26.39 + 12.70 + 11.93 = 51.02%" in answer.text


def test_top_n_needs_a_sum_a_table_of_those_rows_and_enough_rows():
    assert top_rows_sum("Who are the top 3 shareholders?", [table(TOP_HOLDERS)]) is None
    assert top_rows_sum("What is the total of the top three regions' share?", [table(TOP_HOLDERS)]) is None
    assert top_rows_sum("What is the total share of the top 5 shareholders?", [table(TOP_HOLDERS)]) is None
    summed = top_rows_sum("What is the total number of shares held by the top two shareholders?", [table(TOP_HOLDERS)])
    assert summed is not None and summed.answer() == "1,470,740,121"  # the shares column, no unit
