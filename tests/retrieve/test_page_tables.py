"""A question that works on a table's rows reads the tables of its best page, even when the ranking put
that page's prose first and its table below the evidence's length."""

from __future__ import annotations

import pytest
from tests.conftest import indexed

from hyperfolio.retrieve.page_tables import works_on_rows

# Prose that says "highest throughput" over and over, in three sections, and a table that says it once:
# a word-matching ranking puts the prose first.
PORTS = """# Port operations

## Throughput notes

The highest throughput of the year came in the autumn, when the highest-volume ports ran at capacity.

## More throughput notes

Analysts who follow the highest throughput figures expect the highest volumes to continue next year.

## Monthly throughput

Every port reports its throughput monthly; the highest monthly throughput came in October.

## Data

| Port | Region | Throughput (TEU) |
| --- | --- | --- |
| Rotterdam | North Sea | 14,500 |
| Antwerp | North Sea | 12,000 |
| Valencia | Mediterranean | 5,400 |
"""


@pytest.fixture(scope="module")
def ports(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("page-tables")
    source = root / "ports.md"
    source.write_text(PORTS)
    yield from indexed(root, embedder, source)


def test_questions_on_rows_are_told_from_others():
    assert works_on_rows("Which region had the highest revenue?")
    assert works_on_rows("Which directors attended more than 6 meetings?")
    assert works_on_rows("Who are the non-executive directors?")
    assert works_on_rows("How many seats do Mr. A. Shah, Mr. B. Rao, and Mr. C. Das hold in total?")
    assert not works_on_rows("What was the revenue of the Baltic region?")
    assert not works_on_rows("Why did margins fall?")


def test_the_best_pages_table_joins_evidence_that_ranked_it_out(ports):
    question = "Which port had the highest throughput?"
    evidence = ports.retrieve(question, mode="bm25", k=2)
    assert [item.chunk.modality for item in evidence.items] == ["text", "table"]
    assert evidence.items[1].sources.get("page_table") == 1.0  # brought in, not ranked in
    answer = ports.ask(question, mode="bm25", k=2)
    assert answer.short == "Rotterdam"
    assert ports.ask("Which ports handled more than 10,000 TEU?", mode="bm25", k=2).short == "Rotterdam, Antwerp"


def test_other_questions_keep_their_ranking(ports):
    evidence = ports.retrieve("When did the throughput peak?", mode="bm25", k=2)
    assert all("page_table" not in item.sources for item in evidence.items)
