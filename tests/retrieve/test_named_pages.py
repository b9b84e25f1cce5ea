"""A question that names a page ("on page 14", "the second page", "the cover") gets that page first,
named as printed on it: a manual whose printed 3 is the PDF's page 4."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from tests.conftest import indexed

from hyperfolio.parse import parse_file
from hyperfolio.parse.pdf.folios import label_folios
from hyperfolio.parse.pdf.items import Item, PageData
from hyperfolio.retrieve.named_pages import AskedPages, asked_pages, label_numbers, resolve

# Five pages: an unnumbered cover, then body pages whose footers print 1..4 (the PDF's 2..5). Each
# states the number of cranes at one port; the question's words are on every page alike.
PORTS = ["Rotterdam", "Antwerp", "Hamburg", "Valencia", "Piraeus"]


def _manual(path: Path) -> Path:
    doc = pymupdf.open()
    for number, port in enumerate(PORTS, 1):
        page = doc.new_page()
        page.insert_text((72, 100), f"The port of {port} runs {10 + number} cranes at its container terminal.")
        page.insert_text((72, 130), "Crane counts are reported by each terminal operator every quarter.")
        if number > 1:
            page.insert_text((290, 810), str(number - 1), fontsize=9)  # the printed folio, bottom margin
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def manual(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("named-pages")
    yield from indexed(root, embedder, _manual(root / "manual.pdf"))


def test_questions_name_pages_by_number_word_and_position():
    assert asked_pages("What is the FAX No on page fourteen?") == AskedPages(frozenset({14}))
    assert asked_pages("the sum of the numbers on page 15 and page 16").numbers == {15, 16}
    assert asked_pages("Which pages 3, 4 and 7 show it?").numbers == {3, 4, 7}
    assert asked_pages("What date is on the second page?").counted == {2}
    assert asked_pages("In the figure at Page at the second last, who stands?").counted == {-2}
    assert asked_pages("What type of court is noted on the cover page?").counted == {1}
    assert not asked_pages("How many pages include figures of people?")
    assert not asked_pages("What does the cover letter say?")
    # a case's parties, number and date are on its first page, asked for or not
    assert asked_pages("Who is the defendant of this case?").counted == {1}
    assert asked_pages("WHAT IS USCA CASE NUMBER?").counted == {1}
    assert not asked_pages("What did the defendant argue about the fee?")


def test_a_page_is_named_as_printed_else_as_counted():
    labels = {1: "", 2: "1", 3: "2", 4: "3-4", 5: ""}
    assert label_numbers("16-17") == {16, 17} and label_numbers("iv") == set()
    assert resolve(AskedPages(frozenset({3})), labels) == [4]  # printed 3 is on a spread
    assert resolve(AskedPages(frozenset({5})), labels) == [5]  # nothing prints 5: the fifth page
    assert resolve(AskedPages(frozenset({9})), labels) == []
    assert resolve(AskedPages(counted=frozenset({-1, 2})), labels) == [2, 5]


def _page(number: int, *lines: tuple[float, str]) -> PageData:
    page = PageData(number=number, width=600, height=800)
    page.items = [Item(kind="text", bbox=(72, y, 300, y + 10), text=text) for y, text in lines]
    return page


def test_folios_are_believed_only_when_they_follow_the_pages():
    numbered = [_page(n, (100, "Body text of the page."), (780, f"Chapter 3: Safety {n + 26}")) for n in range(1, 6)]
    label_folios(numbered)
    assert [p.label for p in numbered] == ["27", "28", "29", "30", "31"]
    spreads = [_page(n, (785, f"{2 * n - 4}  Graduate Studies  {2 * n - 3}")) for n in range(3, 8)]
    label_folios(spreads)
    assert [p.label for p in spreads] == ["2-3", "4-5", "6-7", "8-9", "10-11"]
    dated = [_page(n, (780, "Annual report 2021"), (20, "Version 1.3 2")) for n in range(1, 6)]
    label_folios(dated)  # the same year and version on every page: no folio
    assert [p.label for p in dated] == [""] * 5


def test_a_pdf_printing_its_page_numbers_is_labelled_by_them(tmp_path):
    parsed = parse_file(_manual(tmp_path / "manual.pdf"), None)
    labels = [str(p.chunks[0].meta.get("page_label", "")) for p in parsed.pages]
    assert labels == ["", "1", "2", "3", "4"]


@pytest.mark.parametrize(
    ("question", "page"),
    [
        ("How many cranes does the port run, as stated on page 3?", 4),  # printed 3
        ("How many cranes are listed on the first page?", 1),
        ("How many cranes does the last page give?", 5),
    ],
)
def test_the_named_page_leads_the_evidence_and_the_answer(manual, question, page):
    for mode in ("auto", "bm25"):
        evidence = manual.retrieve(question, mode=mode, k=3)
        assert evidence.items[0].chunk.page == page, mode
        assert evidence.page_ranking(1) == [(evidence.items[0].chunk.doc_id, page)]
    assert manual.ask(question).short == str(10 + page)


def test_pages_in_an_example_of_the_answers_form_are_not_named():
    question = (
        "List all pages on which the logo locates. The answer should be formatted as a list like ['Page 2', 'Page 4']."
    )
    assert not asked_pages(question)
    assert asked_pages("Format the date mentioned on page 14 as YYYY-MM-DD.").numbers == {14}
