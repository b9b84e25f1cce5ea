"""Questions about what a whole document holds: its numbered tables, chapters and exhibits counted,
and the pages a label or a web address is on listed, from all of the document, each cited."""

from __future__ import annotations

import pytest
from tests.conftest import indexed, write_pdf

from hyperfolio.answer.inventory import page_list
from hyperfolio.labels import label_mentions, opening_label
from hyperfolio.retrieve.inventory import Tally, asked_mentions, asked_tally, numbered_count

# Five pages: chapters labelled 1 and 4 only (the two between unlabelled), three captioned tables, one
# of which reports F1, an exhibit cited on pages 1 and 4, a web address on page 3.
PAGES = [
    ["Chapter 1: Wind farms of the North Sea", "Offshore wind grew quickly in the decade, as Exhibit P-2 records."],
    ["Table 1: Capacity by country", "Country Capacity Year", "Denmark 2.3 2020", "Germany 7.7 2020"],
    ["Table 2: Forecast accuracy in F1 and recall", "Model F1 Recall", "Baseline 0.61 0.55", "Ours 0.72 0.70",
     "See www.windstats.example.org for the data."],
    ["Table 3: Turbine sizes", "Maker Size", "Vestas 15 MW", "Siemens 14 MW",
     "The claims are in Exhibit P-2 and Exhibit P-3."],
    ["Chapter 4: Outlook", "Growth continues while costs fall across the region."],
]  # fmt: skip


@pytest.fixture(scope="module")
def report(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("inventory")
    yield from indexed(root, embedder, write_pdf(root / "wind.pdf", ["\n".join(lines) for lines in PAGES]))


def test_labels_are_read_in_every_form_documents_print():
    found = [str(label) for label in label_mentions("see Table 1. TABLE II, Fig. 3, Appendix C) and Exhibit P-10")]
    assert found == ["Table 1", "Table II", "Figure 3", "Appendix C", "Exhibit P-10"]
    assert label_mentions("the table 2 below and Tables show") == []  # lowercase prose, no number: no label
    assert str(opening_label("  Table 3: Citation quality")) == "Table 3"
    assert opening_label("As Table 3 shows") is None


def test_a_count_of_labelled_parts_is_told_from_other_counts():
    assert asked_tally("How many tables are included in the document?") == Tally("table", "tables")
    assert asked_tally('How many tables include "F1" as a metric?') == Tally("table", "tables", "F1")
    assert asked_tally("How many appendices appear in the document?") == Tally("appendix", "appendices")
    assert asked_tally("How many figures show people wearing hats?") is None  # no label says who is shown
    assert asked_tally("How many pie charts are there in the paper?") is None
    assert asked_mentions('How many times is Exhibit P-10 mentioned? List all pages, for example ["1","2"]') == (
        "Exhibit P-10",
        None,
    )
    assert asked_mentions("On which pages does the word appear?") is None  # nothing named to look for


def test_parts_are_counted_by_their_numbering():
    assert numbered_count(["1", "9"]) == 9  # the chapters between went unlabelled
    assert numbered_count(["P-1", "P-26", "D-1", "D-5"]) == 31  # each series counts apart
    assert numbered_count(["I", "II", "IV"]) == 4 and numbered_count(["A", "C", "E"]) == 5
    assert numbered_count(["3.1", "3.2"]) == 2


def test_page_lists_take_the_form_of_the_questions_example():
    pages = [[12, "4"], [15, "7"], [3, ""]]
    assert page_list('List the pages, for example ["p1","p2"]', pages) == "p4, p7, p3"
    assert page_list("formatted as a list like ['Page 2', 'Page 4']", pages) == "Page 4, Page 7, Page 3"
    assert page_list("Which pages?", pages) == "4, 7, 3"


def test_a_document_s_tables_are_counted_and_each_cited(report):
    answer = report.ask("How many tables are included in the document?")
    assert answer.short == "3"
    assert [c.page for c in answer.citations] == [2, 3, 4]
    assert "Table 2 (p.3)" in answer.text
    only_f1 = report.ask('How many tables include "F1" as a metric?')
    assert only_f1.short == "1" and [c.page for c in only_f1.citations] == [3]


def test_chapters_count_by_numbering_when_some_are_unlabelled(report):
    answer = report.ask("How many chapters are in this report?")
    assert answer.short == "4"
    assert "by their numbering" in answer.text


def test_pages_mentioning_an_exhibit_or_a_web_address_are_listed(report):
    exhibit = report.ask('List all pages that mention Exhibit P-2, formatted like ["p1", "p2"]')
    assert exhibit.short == "p1, p4"
    assert [c.page for c in exhibit.citations] == [1, 4]
    web = report.ask("On which pages does a web address appear? List the page numbers.")
    assert web.short == "3"


def test_other_questions_are_answered_as_before(report):
    answer = report.ask("What capacity does Germany have?")
    assert "inventory" not in answer.evidence.meta
    assert answer.citations[0].page == 2 and "7.7" in answer.text
