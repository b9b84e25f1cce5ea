"""Unit tests for rank fusion and the extractive answerer's candidate passages."""

from __future__ import annotations

from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.answer.passages import passages, terms
from hyperfolio.answer.table_answers import header_paths, table_cell
from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage
from hyperfolio.retrieve.rankings import reciprocal_rank_fusion


def item(chunk: Chunk, rank: int) -> EvidenceItem:
    chunk.doc_id = "d"
    chunk.chunk_id = f"d:{chunk.page}:{chunk.order}"
    cit = Citation("d", "Doc", chunk.page, chunk.bbox, chunk.section_path, chunk.chunk_id, chunk.modality)
    return EvidenceItem(chunk=chunk, score=1.0 / rank, rank=rank, citation=cit)


def test_rrf_rewards_agreement():
    fused, sources = reciprocal_rank_fusion(
        {"bm25": [("a", 9.0), ("b", 5.0), ("c", 1.0)], "dense": [("d", 0.9), ("b", 0.8), ("e", 0.1)]}, k=60
    )
    order = [cid for cid, _ in fused]
    assert order[0] == "b"  # ranked 2nd by both beats 1st by one
    assert set(order) == {"a", "b", "c", "d", "e"}
    assert sources["b"] == {"bm25": 5.0, "dense": 0.8}


def test_table_rows_become_header_keyed_passages():
    chunk = Chunk(
        page=3,
        order=1,
        modality="table",
        text="...",
        caption="Table 2: Capacity by region",
        table=[["Region", "Capacity (MW)"], ["North", "420"], ["South", "310"]],
        table_header_rows=1,
    )
    found = passages(item(chunk, 1))
    texts = [p.text for p in found]
    assert texts[0] == "Table 2: Capacity by region"
    assert "Region: North; Capacity (MW): 420" in texts
    assert [p.kind for p in found] == ["caption", "row", "row"]


def test_answerer_picks_the_row_that_answers(embedder):
    table = Chunk(
        page=3,
        order=1,
        modality="table",
        text="...",
        caption="Table 2: Capacity by region",
        table=[["Region", "Capacity (MW)"], ["North", "420"], ["South", "310"]],
        table_header_rows=1,
    )
    prose = Chunk(page=1, order=0, modality="text", text="The company was founded in 1990. It builds wind farms.")
    package = EvidencePackage("What is the capacity of the South region?", "test", [item(prose, 1), item(table, 2)])
    answer = ExtractiveAnswerer(embedder).answer(package.question, package)
    assert answer.sufficient
    assert answer.support[0] == "South, Capacity (MW): 310 (Table 2: Capacity by region)"  # the cell, not a row
    assert answer.citations[0].page == 3


def test_terms_drop_stopwords_and_fold_plurals():
    assert terms("What are the turbines of the 2023 plants?") == ["turbine", "2023", "plant"]


def test_headerless_table_rows_are_not_keyed_by_the_first_row():
    chunk = Chunk(page=1, order=0, modality="table", text="...", table=[["North", "420"], ["South", "310"]])
    texts = [p.text for p in passages(item(chunk, 1))]
    assert texts == ["North | 420", "South | 310"]


QUARTERS = [
    ["", "Q1 2023", "", "Q1 2022", ""],
    ["Division", "Organic", "Reported", "Organic", "Reported"],
    ["Latin America", "12%", "10%", "8%", "7%"],
    ["Europe", "5%", "3%", "4%", "2%"],
    ["Total", "9%", "8%", "6%", "5%"],
]


def test_spanning_header_cells_name_every_column_below_them():
    assert header_paths(QUARTERS, 2) == [
        ["Division"],
        ["Q1 2023", "Organic"],
        ["Q1 2023", "Reported"],
        ["Q1 2022", "Organic"],
        ["Q1 2022", "Reported"],
    ]


def test_the_row_whose_key_the_question_says_most_of_is_the_one_asked(embedder):
    methods = [["Method", "Physics"], ["PaLM-2L", "66.4%"], ["PaLM-2L + Step-Back (ours)", "73.2%"], ["GPT-4", "70.3%"]]
    table = Chunk(page=5, order=0, modality="table", text="...", table=methods, table_header_rows=1)
    cell = table_cell("What score did PaLM-2L + Step-Back achieve in Physics?", item(table, 1))
    assert cell is not None and cell.value == "73.2%"
    assert table_cell("What score did PaLM-2L achieve in Physics?", item(table, 1)).value == "66.4%"


def test_a_row_and_a_column_in_the_question_name_one_cell(embedder):
    table = Chunk(page=4, order=0, modality="table", text="...", table=QUARTERS, table_header_rows=2)
    cell = table_cell("What was the organic growth of Latin America in Q1 2023?", item(table, 1))
    assert cell is not None and cell.text == "Latin America, Q1 2023 > Organic: 12%"
    assert table_cell("What was the reported growth in Europe in Q1 2022?", item(table, 1)).text.endswith(": 2%")
    assert table_cell("Who founded the company?", item(table, 1)) is None  # no row, no column named
    prose = Chunk(page=1, order=0, modality="text", text="Total organic growth reached 9% in Q1 2023.")
    question = "What was the organic growth of Latin America in Q1 2023?"
    package = EvidencePackage(question, "test", [item(prose, 1), item(table, 2)])
    answer = ExtractiveAnswerer(embedder).answer(question, package)
    assert answer.support[0] == "Latin America, Q1 2023 > Organic: 12%" and answer.citations[0].page == 4
