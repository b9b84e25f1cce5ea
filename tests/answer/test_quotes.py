"""What answers inside each cited block: the sentence holding the short answer, or the answering row's
cells (answer/quotes.py), as the extractive and the language-model answerers fill them in."""

from __future__ import annotations

from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.answer.passages import passages
from hyperfolio.answer.quotes import holds, narrowed, overlapping, passage_quote
from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage
from hyperfolio.render import citation_dict

REGIONS = [
    ["Region", "Capacity (MW)", "Revenue ($M)"],
    ["North Sea", "1,850", "168.4"],
    ["Baltic", "1,120", "97.3"],
    ["Iberia", "860", "71.9"],
]
HISTORY = (
    "The Harwick grid programme connects four coastal towns to the regional network. Planning began "
    "after the storms of 2014 exposed how fragile the old lines had become. Engineers surveyed more "
    "than forty cable routes. The Harwick substation was commissioned in March 2019 after six weeks of tests."
)


def item(chunk: Chunk, rank: int = 1) -> EvidenceItem:
    chunk.doc_id, chunk.chunk_id = "d", f"d:{chunk.page}:{chunk.order}"
    citation = Citation("d", "Doc", chunk.page, (60, 190, 490, 300), [], chunk.chunk_id, chunk.modality)
    return EvidenceItem(chunk, 1.0 / rank, rank, citation)


def table_item(rank: int = 1) -> EvidenceItem:
    chunk = Chunk(page=2, order=0, modality="table", text="...", caption="Table 1: Regions", table=REGIONS)
    chunk.table_header_rows = 1
    return item(chunk, rank)


def text_item(text: str, rank: int = 1) -> EvidenceItem:
    return item(Chunk(page=1, order=rank, modality="text", text=text), rank)


def ask(question: str, *items: EvidenceItem):
    return ExtractiveAnswerer().answer(question, EvidencePackage(question, "test", list(items)))


def test_a_superlative_over_a_table_quotes_the_row_key_and_the_value_cell():
    answer = ask("Which region had the highest capacity?", table_item())
    assert answer.short == "North Sea"
    [cited] = answer.citations
    assert cited.cells == ["North Sea", "1,850"] and cited.quote == ""
    assert cited.quotes() == ["North Sea", "1,850"]


def test_a_cell_named_by_its_row_and_column_quotes_both():
    answer = ask("What was the revenue of Baltic?", table_item())
    assert answer.short == "97.3"
    assert answer.citations[0].cells == ["Baltic", "97.3"]


def test_the_sentence_holding_the_short_answer_is_the_quote_not_the_paragraph():
    answer = ask("When was the Harwick substation commissioned?", text_item(HISTORY))
    assert answer.short == "March 2019"
    [cited] = answer.citations
    assert cited.quote == "The Harwick substation was commissioned in March 2019 after six weeks of tests."
    assert cited.cells == [] and cited.quotes() == [cited.quote]


def test_without_a_short_answer_the_chosen_sentence_is_the_quote():
    answer = ask("What does the report say about the cable routes surveyed?", text_item(HISTORY))
    assert answer.sufficient and answer.citations[0].quote in answer.support


def test_the_evidence_keeps_its_citations_as_they_were():
    evidence = text_item(HISTORY)
    answer = ask("When was the Harwick substation commissioned?", evidence)
    assert evidence.citation.quote == "" and answer.citations[0].quote
    assert answer.evidence.items[0].citation.quote == ""


def test_a_row_quotes_its_key_and_the_cells_holding_the_answer():
    row = next(p for p in passages(table_item()) if p.kind == "row" and p.cells[0] == "Iberia")
    assert passage_quote(row, "860 MW") == ("", ["Iberia", "860"])
    assert passage_quote(row) == ("", ["Iberia", "860", "71.9"])  # no answer: the whole row
    assert holds("1,850", "1850 MW") and holds("North Sea", "North Sea") and not holds("1", "1,850")


def test_a_figure_has_no_quote_its_region_is_the_answer():
    figure = item(Chunk(page=3, order=0, modality="image", text="Figure 1", caption="Figure 1: Generation"))
    [caption] = passages(figure)
    assert passage_quote(caption, "Generation") == ("", [])


def test_a_model_answer_quotes_the_sentence_sharing_most_of_its_words():
    cited = overlapping(text_item(HISTORY), "The substation was commissioned in March 2019.")
    assert cited.quote.startswith("The Harwick substation was commissioned")
    table = overlapping(table_item(), "Baltic had 1,120 MW of capacity.")
    assert table.cells[:2] == ["Baltic", "1,120"]
    assert overlapping(text_item(HISTORY), "Nothing alike").quote == ""


def test_the_quote_and_cells_are_in_the_citation_dict():
    answer = ask("Which region had the highest capacity?", table_item())
    row = citation_dict(answer.citations[0])
    assert row["cells"] == ["North Sea", "1,850"] and row["quote"] == "" and row["label"]
    assert row["quotes"] == ["North Sea", "1,850"]  # what a face marks, said by the service
    prose = citation_dict(overlapping(text_item(HISTORY), "The substation was commissioned in March 2019."))
    assert prose["quotes"] == [prose["quote"]] and prose["quote"].startswith("The Harwick substation")


def test_of_a_long_run_without_sentences_the_part_holding_the_answer_is_quoted():
    joined = (
        "Gestalt psychology was conceived in the Berlin School of Experimental Psychology, and tries to "
        "understand the laws of our ability to acquire and maintain meaningful perceptions. \u25cf (German: "
        "Gestalt) Key principle: when the human mind perceives a form, the whole has a reality of its own."
    )
    assert narrowed(joined, "the Berlin School of Experimental Psychology").endswith("meaningful perceptions.")
    labels = " ".join(f"Row{n} {n} {n + 1} {n + 2}" for n in range(20)) + " Source: survey of 2018 Pew"
    assert narrowed(labels, "Pew").split() == labels.split()[-11:]  # ten words before it, none after
    assert narrowed(labels, "PEW") == narrowed(labels, "Pew") and narrowed(labels, "Pe") == labels  # whole words
    assert narrowed(labels, "not in it") == labels and narrowed("A short sentence.", "short") == "A short sentence."
