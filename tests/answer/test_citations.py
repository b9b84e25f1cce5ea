"""Citations keep only chunks that hold the answer: the support check, and the answerer using it."""

from __future__ import annotations

import pytest
from fake_openai_server import Reply

from hyperfolio.answer.citations import (
    PARTIAL,
    RECOVERED,
    SUPPORTED,
    UNCHECKED,
    UNSUPPORTED,
    check_citations,
    claim_of,
    contains_answer,
    evidence_text,
    supports,
)
from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.answer.model import AnswerReply, LLMAnswerer, bare_answer
from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage


def item(rank: int, text: str, modality: str = "text", **chunk: object) -> EvidenceItem:
    made = Chunk(rank, 0, modality, text, **chunk)  # type: ignore[arg-type]
    made.chunk_id, made.doc_id = f"doc1:{rank}:0", "doc1"
    citation = Citation("doc1", "Fleet Report", rank, None, [], made.chunk_id, made.modality)
    return EvidenceItem(made, 1.0 / rank, rank, citation)


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize(
    ("answer", "chunk"),
    [
        ("1,850 MW", "Capacity (MW) | 1850"),  # thousands separator on one side only
        ("1850", "installed 1,850 MW in total"),
        ("97.3 M$", "Revenue | 97.3 | 88.1"),  # unit attached after a space, cell bare
        ("$97.3M", "Revenue (in millions) | 97.3"),  # currency sign and scale letter attached
        ("US$ 97.3 million", "Revenue was 97,300,000 dollars"),  # the scale word, applied
        ("97,300,000", "revenue of €97.3 million"),  # ... either way round
        ("42 percent of staff", "42% of staff"),
        ("97.30%", "a share of 97.3"),  # trailing zeros
        ("about 97%", "a share of 97.3%"),  # rounded by the answer
        ("1.9 million visitors", "1,850,000 visitors"),  # rounded and scaled
        ("-5%", "fell (5%)"),  # signs and accounting brackets report the same 5
        ("three vessels", "The fleet has 3 vessels."),  # a number word
        ("1\u202f850 TEU", "handled 1850 TEU"),  # a narrow no-break space groups thousands
    ],
)
def test_numbers_match_however_they_are_written(answer: str, chunk: str):
    assert supports(answer, chunk), (answer, chunk)


@pytest.mark.parametrize(
    ("answer", "chunk"),
    [
        ("3,400 vessel calls", "The port handled 3,500 vessel calls."),  # the answer's number is not there
        ("1.5%", "a rise of 15%"),  # decimals are kept: 1.5 is not 15
        ("97.3", "Revenue | 973"),
        ("97.3", "about 97"),  # a less precise chunk does not hold a precise answer
        ("2 vessels", "The fleet has 2.4 vessels on average."),  # no rounding for one-digit answers
        ("1,850 and 2,100 MW", "capacity 1,850 MW"),  # every number of the answer, not some
    ],
)
def test_a_chunk_lacking_a_number_of_the_answer_does_not_support_it(answer: str, chunk: str):
    assert not supports(answer, chunk), (answer, chunk)


def test_a_small_number_needs_the_answer_words_too():
    """'3' turns up in many chunks (a table number, a list item); the words must agree as well."""
    assert not supports("3 vessels", "Table 3: Revenue by region")
    assert supports("3 vessels", "The fleet has 3 vessels.")


def test_numbers_the_question_holds_and_references_are_not_required():
    question = "How many vessel calls did the port handle in 2023?"
    chunk = "Vessel calls: 3,400 (up from 3,100)."
    assert supports("In 2023 the port handled 3,400 vessel calls.", chunk, question)  # 2023 is the question's
    assert not supports("In 2023 the port handled 3,400 vessel calls.", chunk)  # ... without the question it counts
    assert supports("3,400 vessel calls (page 5, Table 2) [3]", chunk)  # pages, labels, markers point, not claim


# ---------------------------------------------------------------- names and words
def test_names_must_be_in_the_chunk():
    question = "Who is the harbour master of Kelmouth?"
    answer = "Ingrid Vasquez is the harbour master of Kelmouth."
    assert claim_of(answer, question).names == {"ingrid", "vasquez"}  # what the answer adds to the question
    assert supports(answer, "The harbour master of Kelmouth is Ingrid Vasquez.", question)
    assert supports(answer, "Harbour master: VASQUEZ, Ingrid", question)  # case and order do not matter
    assert not supports(answer, "The harbour master of Kelmouth retired in 2022.", question)
    assert not supports(answer, "Ingrid Larsen chairs the board.", question)  # one name of two


def test_words_fold_case_accents_hyphens_and_plurals():
    assert supports("Cross-border shipments", "cross border shipment volumes")
    assert supports("crossborder shipments", "Cross-border shipments rose")
    assert supports("container terminals", "new con-\ntainer terminal")  # a word split across lines
    assert supports("Société Générale", "SOCIETE GENERALE")
    assert supports("Kelmouth's companies", "the company of Kelmouth")
    assert not supports("container terminals", "bulk berths and cranes")


def test_a_word_answer_needs_enough_of_its_words():
    answer = "Rising fuel costs and weaker demand for steel reduced margins."
    assert supports(answer, "Margins fell as fuel costs rose and demand weakened.")  # half the words suffice
    assert not supports(answer, "Steel prices are quoted monthly.")


# ---------------------------------------------------------------- tables and figures
def test_tables_and_figures_are_read_in_their_cells_caption_ocr_and_description():
    table = item(1, "Vessel Capacity", "table", table=[["Vessel", "Capacity (TEU)"], ["Aurora", "8,500"]])
    figure = item(2, "", "image", caption="Figure 2: Throughput", ocr_text="2021 2022 412,000")
    described = item(3, "", "image", meta={"description": "a bar chart; Rotterdam leads with 14.5 Mt"})
    assert supports("8,500 TEU", evidence_text(table.chunk))
    assert supports("412,000 TEU", evidence_text(figure.chunk))
    assert supports("Rotterdam, with 14.5 million tonnes", evidence_text(described.chunk))
    assert not supports("9,200 TEU", evidence_text(table.chunk))


# ---------------------------------------------------------------- the check over cited chunks
AURORA = "The Aurora has a capacity of 8,500 TEU."
OSPREY = "Rotterdam is the home port of the Osprey Shipping Company."
OUTLOOK = "The company expects 450,000 TEU in 2024."


def test_only_supporting_citations_are_kept_in_order():
    cited = [item(1, OSPREY), item(2, AURORA), item(3, OUTLOOK), item(4, "Aurora: 8,500 TEU, built 2019.")]
    result = check_citations("8,500 TEU", "What is the capacity of the Aurora?", cited)
    assert result.status == SUPPORTED
    assert [i.chunk.page for i in result.kept] == [2, 4] and result.dropped == 2


def test_an_answer_drawn_from_two_chunks_keeps_both():
    cited = [item(1, OSPREY), item(2, AURORA), item(3, OUTLOOK)]
    result = check_citations("The Aurora carries 8,500 TEU; the fleet expects 450,000 TEU.", "", cited)
    assert result.status == PARTIAL
    assert [i.chunk.page for i in result.kept] == [2, 3] and result.dropped == 1


def test_without_support_the_citations_are_kept_as_given_and_marked():
    cited = [item(1, OSPREY), item(2, OUTLOOK)]
    # Neither holds 9,900 (one shares the word "TEU"): nothing tells them apart, so none is dropped.
    result = check_citations("9,900 TEU", "What is the capacity of the Borealis?", cited)
    assert result.status == UNSUPPORTED and result.kept == cited and result.dropped == 0
    nothing = check_citations("9,900 barrels", "What is the capacity of the Borealis?", cited)
    assert nothing.status == UNSUPPORTED and nothing.kept == cited and nothing.dropped == 0


def test_a_shown_chunk_holding_the_numbers_replaces_citations_holding_none():
    shown = [item(1, OSPREY), item(2, OUTLOOK), item(3, AURORA)]
    result = check_citations("8,500 TEU", "What is the capacity of the Aurora?", shown[:2], shown)
    assert result.status == RECOVERED and result.kept == [shown[2]] and result.added == 1 and result.dropped == 2
    # Shared words alone never bring in a chunk the model did not cite.
    words = check_citations("Osprey Shipping Company", "", [item(2, OUTLOOK)], shown)
    assert words.status == PARTIAL and [i.chunk.page for i in words.kept] == [2] and words.added == 0


def test_a_yes_is_checked_against_its_question_and_nothing_to_check_keeps_all():
    cited = [item(1, OUTLOOK), item(2, AURORA)]
    result = check_citations("Yes.", "Does the Aurora carry containers at 8,500 TEU capacity?", cited)
    assert result.status == SUPPORTED and [i.chunk.page for i in result.kept] == [2]
    assert check_citations("Yes.", "Is it?", cited).status == UNCHECKED


def test_gold_answers_are_found_the_same_way():
    assert contains_answer("18.29%", "Democrats who voted: 18.29 percent")
    assert contains_answer("$1,850", "Revenue | 1850")
    assert contains_answer("Osprey Shipping Company", OSPREY)
    assert contains_answer("8,500", OUTLOOK) is False
    assert contains_answer("Yes", OSPREY) is None  # nothing a chunk could hold


# ---------------------------------------------------------------- end to end, over HTTP
def fleet_evidence() -> EvidencePackage:
    table = [["Vessel", "Capacity (TEU)"], ["Aurora", "8,500"], ["Borealis", "9,200"]]
    items = [
        item(1, OSPREY),
        item(2, "Vessel | Capacity (TEU)\nAurora | 8,500\nBorealis | 9,200", "table", table=table, table_header_rows=1),
        item(3, OUTLOOK),
    ]
    return EvidencePackage("What is the capacity of the Aurora?", "hybrid", items)


def test_the_answerer_keeps_only_the_cited_chunk_holding_the_answer(fake_llm, fake_client):
    evidence = fleet_evidence()
    reply = {"answer": "The Aurora carries 8,500 TEU [1][2][3].", "citations": [1, 2, 3], "sufficient": True}
    fake_llm.script(Reply.json(reply))
    answer = LLMAnswerer(fake_client, ExtractiveAnswerer()).answer(evidence.question, evidence)
    assert answer.answerer == "llm" and answer.sufficient
    assert [c.chunk_id for c in answer.citations] == ["doc1:2:0"]  # the table, not the two chunks around it
    assert answer.text == "The Aurora carries 8,500 TEU. [1]"  # markers renumbered for what is kept
    assert answer.meta == {
        "citations_given": 3,
        "citations_dropped": 2,
        "citations_added": 0,
        "citation_support": SUPPORTED,
    }
    assert len(fake_llm.chat_requests) == 1

    # The same reply with the check off keeps what the model cited: one call, read both ways.
    answerer = LLMAnswerer(fake_client, ExtractiveAnswerer(), check_support=False)
    unchecked = answerer.from_reply(evidence.question, evidence, AnswerReply(**reply))
    assert [c.chunk_id for c in unchecked.citations] == ["doc1:1:0", "doc1:2:0", "doc1:3:0"]
    assert unchecked.text.endswith("[1][2][3]") and unchecked.meta["citations_dropped"] == 0


def test_the_answerer_recovers_a_shown_chunk_when_no_citation_holds_the_number(fake_llm, fake_client):
    evidence = fleet_evidence()
    fake_llm.script(Reply.json({"answer": "9,200 TEU", "citations": [3], "sufficient": True}))
    answer = LLMAnswerer(fake_client, ExtractiveAnswerer()).answer("What is the capacity of the Borealis?", evidence)
    assert [c.chunk_id for c in answer.citations] == ["doc1:2:0"]
    assert answer.meta["citation_support"] == RECOVERED and answer.meta["citations_added"] == 1


def test_an_insufficient_answer_still_cites_nothing(fake_llm, fake_client):
    evidence = fleet_evidence()
    fake_llm.script(Reply.json({"answer": "Not in [2] the evidence [1].", "citations": [1, 2], "sufficient": False}))
    answer = LLMAnswerer(fake_client, ExtractiveAnswerer()).answer(evidence.question, evidence)
    assert not answer.sufficient and answer.citations == [] and answer.answerer == "llm"
    assert answer.text == "Not in the evidence."  # no markers pointing at nothing, no gap where one was


def test_a_model_answer_loses_its_own_markers_without_leaving_gaps():
    assert bare_answer("Revenue [1] rose to $5 million [2][3] in 2023 [4].") == "Revenue rose to $5 million in 2023."
    assert bare_answer("[1] Capacity is\n  9,200 TEU [2]") == "Capacity is 9,200 TEU"
