"""Short answers read off the evidence, and arithmetic over cited values (offline answerer)."""

from __future__ import annotations

import pytest

from hyperfolio.answer.arithmetic import comparison, compute, listed_names, operand_keys, operation_of
from hyperfolio.answer.expected import Kind, expected_kind
from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.answer.passages import passages
from hyperfolio.answer.spans import name_spans, number_spans
from hyperfolio.model import Chunk, Citation, EvidenceItem, EvidencePackage

REGIONS = [
    ["Region", "Capacity (MW)", "Revenue ($M)"],
    ["North Sea", "1,850", "168.4"],
    ["Baltic", "1,120", "97.3"],
    ["Iberia", "640", "52.0"],
]


def item(chunk: Chunk, rank: int) -> EvidenceItem:
    chunk.doc_id = "d"
    chunk.chunk_id = f"d:{chunk.page}:{chunk.order}"
    cit = Citation("d", "Doc", chunk.page, chunk.bbox, chunk.section_path, chunk.chunk_id, chunk.modality)
    return EvidenceItem(chunk=chunk, score=1.0 / rank, rank=rank, citation=cit)


def text_item(text: str, page: int = 1, rank: int = 1, **meta) -> EvidenceItem:
    return item(Chunk(page=page, order=rank, modality="text", text=text, meta=dict(meta)), rank)


def table_item(rank: int = 1) -> EvidenceItem:
    table = Chunk(page=2, order=0, modality="table", text="...", caption="Table 1: Regions", table=REGIONS)
    table.table_header_rows = 1
    return item(table, rank)


def ask(question: str, *items: EvidenceItem):
    package = EvidencePackage(question, "test", list(items))
    return ExtractiveAnswerer(None).answer(question, package)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many employees did the company have?", Kind.COUNT),
        ("What percentage of revenue came from wind?", Kind.PERCENT),
        ("In which year was the plant opened?", Kind.YEAR),
        ("When did the merger close?", Kind.DATE),
        ("What was the revenue in 2024?", Kind.MONEY),
        ("Who is the chief executive?", Kind.NAME),
        ("Why did margins fall?", Kind.EXPLANATION),
        ("Is the plant in operation?", Kind.YES_NO),
        ("Is the plant in Spain or in Portugal?", Kind.TEXT),
        ("What are the three regions?", Kind.LIST),
        ("How long is the cable?", Kind.NUMBER),
    ],
)
def test_expected_kind(question, kind):
    assert expected_kind(question) == kind


def test_number_spans_are_typed_by_unit():
    found = {s.text: s for s in number_spans("Revenue of $412.6 million in 2024, up 18% with 1,240 staff and 3.5 GW.")}
    assert found["$412.6 million"].kind == Kind.MONEY and found["$412.6 million"].value == pytest.approx(412.6e6)
    assert found["2024"].kind == Kind.YEAR
    assert found["18%"].kind == Kind.PERCENT
    assert found["1,240"].kind == Kind.COUNT and found["1,240"].value == 1240


def test_short_answer_takes_the_span_of_the_expected_kind_nearest_the_question():
    evidence = text_item(
        "The group was founded in 1990 in Aarhus. In 2024 the company employed 1,240 people and its revenue "
        "grew by 18% to $412.6 million."
    )
    assert ask("How many people did the company employ?", evidence).short == "1,240"
    assert ask("By what percentage did revenue grow?", evidence).short == "18%"
    assert ask("In which year was the group founded?", evidence).short == "1990"
    answer = ask("What was the revenue?", evidence)
    assert answer.short == "$412.6 million"
    assert answer.text.startswith("$412.6 million [1] \u2014 ")  # short answer first, then the cited quote


def test_a_span_the_question_states_is_not_its_answer():
    evidence = text_item("In 2023 the plant produced 4.1 TWh; in 2022 it produced 3.2 TWh.")
    assert ask("How much did the plant produce in 2023?", evidence).short == "4.1"


def test_count_in_words_comes_back_as_digits():
    evidence = text_item("The itinerary covers four days in the mountains.")
    assert ask("How many days does the itinerary cover?", evidence).short == "4"


def test_table_question_returns_the_cell_of_the_matching_row():
    answer = ask("What was the revenue of the Baltic region?", table_item())
    assert answer.short == "97.3"
    assert "Baltic, Revenue ($M): 97.3" in answer.text


def test_why_question_prefers_the_speaker_note_that_explains():
    slide = text_item("Revenue grew in 2024. Margins were stable across regions.", rank=1)
    notes = text_item("Revenue grew because two new offshore parks came online in the North Sea.", rank=2, notes=True)
    answer = ask("Why did revenue grow in 2024?", slide, notes)
    assert answer.short.startswith("Revenue grew because two new offshore parks")
    assert answer.citations[0].chunk_id == notes.chunk.chunk_id


def test_yes_no_reads_the_polarity_of_the_best_passage():
    assert (
        ask(
            "Is the Baltic park connected to the grid?", text_item("The Baltic park is not connected to the grid yet.")
        ).short
        == "No"
    )
    assert (
        ask("Is the Baltic park connected to the grid?", text_item("The Baltic park is connected to the grid.")).short
        == "Yes"
    )


def test_difference_of_two_cited_cells_is_computed_and_shown():
    answer = ask("What is the difference between the revenue of the North Sea and the Baltic?", table_item())
    assert answer.short == "71.1"
    assert "168.4 \u2212 97.3 = 71.1" in answer.text
    assert answer.meta["computation"] == "168.4 \u2212 97.3 = 71.1"


METHODS = [
    ["Method", "TimeQA", "TQA Easy", "SituatedQA"],
    ["PaLM-2L", "41.5%", "42.6%", "54.3% (0.3%)"],
    ["PaLM-2L + RAG", "57.4%", "67.8%", "59.3% (0.4%)"],
    ["PaLM-2L + Step-Back + RAG (ours)", "68.7%", "75.2%", "61% (0.4%)"],
]


def test_a_difference_between_two_rows_named_with_digits_in_the_column_the_question_shares():
    table = Chunk(page=6, order=0, modality="table", text="...", table=METHODS, table_header_rows=1)
    answer = ask("How much higher is the accuracy of PaLM-2L + RAG compared to PaLM-2L on TimeQA?", item(table, 1))
    assert answer.short == "15.9%"
    assert "57.4% \u2212 41.5% = 15.9%" in answer.text
    question = "How much higher is the accuracy of PaLM-2L + RAG compared to PaLM-2L on SituatedQA?"
    situated = ask(question, item(table, 1))
    assert situated.short == "5.0%"  # cells with a spread in brackets are numbers too


def test_sum_ratio_and_change():
    assert ask("What is the sum of revenue of Baltic and Iberia?", table_item()).short == "149.3"
    assert ask("What is the ratio of the North Sea capacity to the Baltic capacity?", table_item()).short == "1.65"
    years = text_item("Revenue was $350.0 million in 2023. Revenue was $412.6 million in 2024.")
    answer = ask("What was the percentage change in revenue from 2023 to 2024?", years)
    assert answer.short == "17.89%"


def test_no_operand_is_invented():
    """One side of the comparison is not in the evidence: no computed answer."""
    evidence = package_items = [table_item()]
    assert compute("What is the difference between the revenue of the Baltic and Atlantis?", package_items, []) is None
    # and values of different kinds are not combined
    mixed = text_item("In 2024 revenue was $412.6 million. In 2023 the staff was 1,240.")
    candidates = passages(mixed)
    assert compute("How much higher was it in 2024 than in 2023?", [mixed], candidates) is None
    assert evidence


def test_operation_and_keys_of_a_question():
    assert operation_of("How much higher was X in 2024 than in 2023?") == "difference"
    assert operation_of("What is the percentage change in revenue from 2022 to 2023?") == "change"
    assert operation_of("What was revenue?") is None
    assert operand_keys("What is the gap between North Sea and Baltic revenue?") == ["North Sea", "Baltic revenue"]
    assert operand_keys("Revenue in 2024 compared to 2023?") == ["2024", "2023"]


def test_identifiers_follow_their_label():
    evidence = text_item("Contact: Tel. 514-312-0293 Fax: 514-312-0292, e-mail desk@example.org, web www.example.org.")
    assert ask("What is the fax number of the desk?", evidence).short == "514-312-0292"
    assert ask("What is the e-mail address of the desk?", evidence).short == "desk@example.org"


def test_a_date_comes_in_the_format_the_question_asks_for():
    evidence = text_item("The order was signed on March 9, 2020 by the court.")
    assert ask("What is the date of the order? Format your answer as YYYY-MM-DD.", evidence).short == "2020-03-09"
    assert ask("When was the order signed?", evidence).short == "March 9, 2020"


def test_abstains_when_the_evidence_never_names_what_the_question_asks_about():
    evidence = text_item("The two plants of the company are located at Guldhar and Mumbai.")
    question = "Where are the two plants of Apple Inc. located?"
    package = EvidencePackage(question, "test", [evidence])
    answer = ExtractiveAnswerer(None, min_anchor_share=0.6).answer(question, package)
    assert not answer.sufficient
    assert answer.text.startswith("Not found in the indexed documents (nothing about Apple Inc)")
    assert [c.chunk_id for c in answer.citations] == [evidence.citation.chunk_id]  # the closest evidence, cited
    assert answer.citations[0].quote == "The two plants of the company are located at Guldhar and Mumbai."
    assert answer.meta["missing"] == ["Apple Inc"]
    # the same evidence answers a question about what it does name
    asked = "Where are the two plants located?"
    kept = ExtractiveAnswerer(None, min_anchor_share=0.6).answer(asked, EvidencePackage(asked, "test", [evidence]))
    assert kept.sufficient


def test_anchor_share_ignores_page_numbers_and_questions_in_capitals():
    from hyperfolio.answer.support import anchor_phrases

    assert [text for text, _ in anchor_phrases("What does the chart on page 14 say about Germany in 2019?")] == [
        "Germany",
        "2019",
    ]
    assert anchor_phrases("WHAT IS THE USCA CASE NUMBER?") == []


def test_an_anchor_misspelt_by_a_letter_or_written_apart_is_stated_but_a_changed_name_is_not():
    from hyperfolio.answer.support import missing_anchors

    evidence = passages(text_item("MQA Executive Leadership met Germans and Americans on March 31, 2003 by e-mail."))
    assert missing_anchors("What did the Germen and Americen delegates sign on March 31,2003?", evidence) == []
    assert missing_anchors("How was the Email sent?", evidence) == []
    assert missing_anchors("Who is in the HAQ Executive Leadership?", evidence) == ["HAQ Executive Leadership"]
    assert missing_anchors("Who met the Germans in Japan?", evidence) == ["Japan"]  # short words are exact


def test_indian_digit_grouping_and_titled_names():
    found = {s.text: s.value for s in number_spans("Dividend of Rs. 3,02,16,492.00 against 1,20,000 and 1,234,567")}
    assert found == {"3,02,16,492.00": 30216492.0, "1,20,000": 120000.0, "1,234,567": 1234567.0}
    evidence = text_item("Board meetings attended: Mr. S.V. Shanbhag attended seven of the eight meetings.")
    assert ask("Which director attended seven board meetings?", evidence).short == "Mr. S.V. Shanbhag"


def test_a_merged_cell_answers_a_numeric_question_with_its_first_number():
    from hyperfolio.answer.short import cell_value

    assert cell_value("What was the dividend in 2000?", Kind.MONEY, "3,02,16,492.00 6,04,32,984.00") == "3,02,16,492.00"
    assert cell_value("Who approved it?", Kind.NAME, "Tom Hale") == "Tom Hale"


def test_where_takes_the_place_and_titled_names_do_not_run_together():
    evidence = text_item("Gestalt psychology was conceived in the Berlin School of Experimental Psychology.")
    assert (
        ask("Where was Gestalt psychology conceived?", evidence).short == "the Berlin School of Experimental Psychology"
    )
    from hyperfolio.answer.spans import name_spans

    assert [s.text for s in name_spans("Present: Mr. R.A. Shah Mr. S.V. Shanbhag")] == [
        "Mr. R.A. Shah",
        "Mr. S.V. Shanbhag",
    ]


def test_a_count_question_is_not_answered_with_a_label_cell():
    table = Chunk(page=1, order=0, modality="table", text="...", table=[["Area", "Code"], ["Research", "RIs."]])
    table.table_header_rows = 1
    answer = ask("How many areas does the Research code have?", item(table, 1))
    assert answer.short != "RIs."


def test_the_heading_a_chunk_opens_with_does_not_run_into_its_first_sentence():
    chunk = Chunk(page=1, order=0, modality="text", text="Harbours\nKestrel Harbour handled the most containers.")
    chunk.section_path = ["Ports", "Harbours"]
    answer = ask("Which harbour handled the most containers?", item(chunk, 1))
    assert answer.short == "Kestrel Harbour"


def test_a_name_beside_its_role_in_capitals_is_read_apart_from_it():
    cover = text_item("Strategic Plan 2016-2018 Rick Scott GOVERNOR Celeste Philip, MD, MPH State Surgeon General")
    assert ask("What is the name of the governor on the first page?", cover).short == "Rick Scott"
    names = [s.text for s in name_spans("The SUPERIOR COURT of Quebec and NASA Goddard")]
    assert names == ["SUPERIOR COURT", "Quebec", "NASA Goddard"]


def test_an_address_that_spells_the_asked_name_is_the_answer():
    evidence = text_item("Mtre Marianne Ignacz Mtre Laurent Nahmiash mignacz@inf.ca lnahmiash@inf.ca Montreal")
    assert ask("What is the email of Mtre Laurent Nahmiash?", evidence).short == "lnahmiash@inf.ca"


def test_reference_markers_name_nothing():
    names = [s.text for s in name_spans("We used PDTB BIBREF12 and the corpus in TABREF15 with INLINEFORM0.")]
    assert names == ["PDTB"]
    assert ask("Which dataset do they use?", text_item("The corpus is described in BIBREF2.")).short != "BIBREF2"


def test_a_count_the_evidence_lists_but_never_states_is_counted():
    listed = text_item(
        "The course requirements cover: coursework, teaching, the qualifying examination and the thesis."
    )
    assert ask("How many areas does the course requirement have?", listed).short == "4"
    stated = text_item("The company had 1,200 employees: engineers, sales staff and support staff.")
    assert ask("How many employees did the company have?", stated).short == "1,200"


def test_who_did_it_is_the_name_after_done_by():
    cover = text_item("Version 1.3 Revised May 2016 Produced by: Florida Department of Health 4052 Bald Cypress Way")
    assert ask("Who produced the document that was revised on May 2016?", cover).short == "Florida Department of Health"
    signed = text_item("The complaint was verified and signed by Special Agent Jane Roe on May 3, 2018.")
    assert ask("Which officer verify and signed the complaint?", signed).short.startswith("Special Agent Jane Roe")


def test_a_list_of_names_is_read_after_the_heading_the_chunk_opens_with():
    chunk = Chunk(page=1, order=1, modality="text", text="Dataset\nWe use PDTB and RST-DT.", section_path=["Dataset"])
    answer = ask("What datasets are used?", item(chunk, 1))
    assert not answer.short.startswith("Dataset") and "PDTB" in answer.short


def test_which_of_two_is_larger_is_answered_from_their_cited_values():
    answer = ask("Which region had more revenue, the Baltic or Iberia?", table_item())
    assert answer.short == "Baltic"
    assert answer.meta["computation"] == "Baltic: 97.3 > Iberia: 52.0"
    assert ask("Which region had less revenue, the Baltic or Iberia?", table_item()).short == "Iberia"
    # a direction, not two things: no comparison
    assert comparison("Is the rate higher or lower than the global average?") is None


def test_an_entry_is_looked_up_by_the_code_beside_it():
    catalogue = text_item(
        "EPS Geographic Market Name Code\nArkansas (AR)\n1. Little Rock AR01 2. Northern Arkansas AR02\n"
        "Texas (TX)\n1. Amarillo, Panhandle, and South Plains TX01 2. El Paso TX02"
    )
    assert ask("What's the geographic market name for EPS Code AR01?", catalogue).short == "Little Rock"
    assert ask("Which market has the code TX02?", catalogue).short == "El Paso"
    assert ask("Which market has the code TX09?", catalogue).short != "El Paso"  # no entry is borrowed


def test_what_type_of_a_thing_is_read_before_its_noun():
    cover = text_item("CANADA PROVINCE OF QUEBEC DISTRICT OF MONTREAL SUPERIOR COURT (Class Action) No: 500-06")
    assert ask("What type of court is noted on the cover page?", cover).short == "SUPERIOR COURT"
    assert ask("What type of court heard it?", text_item("The Court dismissed the motion.")).short != "The Court"
    prose = text_item("The defendant refers this Honourable Court to the judgment of the court.")
    caption = text_item("SUPERIOR COURT\n(Class Action)", rank=2)
    assert ask("What type of court is noted on the cover page?", prose, caption).short == "SUPERIOR COURT"


def test_a_name_run_over_a_line_break_is_found_where_it_stands():
    from hyperfolio.phrases import find_phrases

    text = "Senior Scientist, National Climate Assessment\nBrian Duggan, Lead Coordinator"
    for phrase in find_phrases(text):
        assert text[phrase.start : phrase.start + len(phrase.text)].split() == phrase.text.split()
    assert [s.start for s in name_spans(text)][:2] == [0, text.index("National")]


def test_a_cover_line_that_ends_on_its_cue_is_followed_into_the_next_chunk():
    cue = Chunk(page=2, order=0, modality="text", text="Version 1.3\nRevised May 2016\nProduced by:")
    name = Chunk(page=2, order=1, modality="text", text="Florida Department of Health")
    answer = ask("Who produced the document that was revised on May 2016?", item(cue, 1), item(name, 2))
    assert answer.short == "Florida Department of Health"


def test_one_of_two_alternatives_is_the_one_the_evidence_says():
    said = text_item("As you work, look to the right of the screen for instant feedback on the share of students.")
    question = "On the left or right side of the screen can you find the share of students? Answer 'left' or 'right'."
    assert ask(question, said).short == "right"
    both = text_item("Menus are on the left of the screen and feedback on the right of the screen.")
    assert ask(question, both).short not in {"left", "right"}


def test_a_company_named_in_capitals_with_its_form_of_company():
    caption = text_item(
        "AARON GILMER, an individual, LIBERTARIAN PARTY OF GEORGIA, INC., a Georgia nonprofit corporation, "
        "Plaintiffs-Appellants, versus SECRETARY OF STATE FOR THE STATE OF GEORGIA, Defendant-Appellee."
    )
    assert ask("What company is a plaintiff?", caption).short == "LIBERTARIAN PARTY OF GEORGIA, INC"
    assert [s.text for s in name_spans("Bank of America and Apple Inc. reported")] == ["Bank of America", "Apple Inc"]


def test_a_numbered_range_counts_what_it_numbers():
    areas = text_item("Greater San Antonio: 13 and 14 Greater Houston: 15 through 18 Greater Dallas: 19 through 24")
    assert ask("How many geographic markets in Greater Houston, Texas?", areas).short == "4"
    assert ask("How many geographic markets in Greater Dallas?", areas).short == "6"
    years = text_item("Sales grew every year from 2001 to 2005, to 31 stores.")
    assert ask("How many stores were there?", years).short == "31"  # years are no range of items


def test_a_numbered_part_is_named_by_the_title_its_heading_gives():
    heading = text_item("o Submit findings to Class Blog\nUNIT 14: Using Financial Information and Accounting")
    assert ask("what's the topic of UNIT 14?", heading).short == "Using Financial Information and Accounting"
    assert ask("what's the topic of UNIT 15?", heading).short != "Using Financial Information and Accounting"


BOARD = [
    ["Director", "Category", "No. of Board Meetings attended", "Other boards"],
    ["Mr. R.A. Shah", "Non-Executive & Independent", "7", "14"],
    ["Mr. K.K. Modi", "Executive", "6", "11"],
    ["Mr. S.V. Shanbhag", "Executive", "7", "5"],
    ["Mr. C.M. Maniar", "Non-Executive & Independent", "5", "11"],
]


def test_a_threshold_filters_a_tables_rows_by_the_column_it_names():
    board = item(Chunk(page=9, order=0, modality="table", text="...", table=BOARD, table_header_rows=1), 1)
    assert ask("Which executive directors have attended Board Meetings more than 6 times?", board).short == (
        "Mr. S.V. Shanbhag"
    )
    assert ask("Which directors sit on more than 10 other boards?", board).short == (
        "Mr. R.A. Shah, Mr. K.K. Modi, Mr. C.M. Maniar"
    )
    assert ask("Which directors attended at most 5 board meetings?", board).short == "Mr. C.M. Maniar"


def test_a_difference_across_two_tables_keeps_the_row_both_operands_share():
    stem = [["Method", "MMLU Physics", "MMLU Chemistry"], ["PaLM-2L", "66.4%", "70.9%"], ["GPT-4", "70.3%", "79.9%"]]
    knowledge = [["Method", "TimeQA", "SituatedQA"], ["PaLM-2L", "41.5%", "54.3%"], ["GPT-4", "45.6%", "63.2%"]]
    first = item(Chunk(page=5, order=0, modality="table", text="...", table=stem, table_header_rows=1), 1)
    second = item(Chunk(page=6, order=0, modality="table", text="...", table=knowledge, table_header_rows=1), 2)
    question = "How much lower is the accuracy of GPT-4 on SituatedQA compared to MMLU Chemistry?"
    assert operand_keys(question) == ["SituatedQA", "MMLU Chemistry"]
    assert ask(question, first, second).short == "16.7%"


def test_an_answer_is_read_on_the_page_the_question_names():
    elsewhere = text_item("How many cranes the container terminal runs is stated on page 3: 40 cranes.", page=1)
    named = text_item("The container terminal runs 12 cranes.", page=3, rank=2)
    question = "How many cranes does the container terminal run, as stated on page 3?"
    assert ask(question, elsewhere, named).short == "40"  # without the page named, the better match wins
    package = EvidencePackage(question, "test", [elsewhere, named], meta={"named_pages": [["d", 3]]})
    assert ExtractiveAnswerer(None).answer(question, package).short == "12"


def test_a_sum_over_the_rows_a_question_lists():
    header = ["Director", "No. of Board Meetings attended", "Membership of Board of other Companies"]
    rows = [header, *([r[0], r[2], r[3]] for r in BOARD[1:])]
    board = item(Chunk(page=9, order=0, modality="table", text="...", table=rows, table_header_rows=1), 1)
    question = "How many companies do Mr. R.A. Shah, Mr. S.V. Shanbhag, and Mr. C.M. Maniar collectively hold?"
    assert listed_names(question) == ["Mr. R.A. Shah", "Mr. S.V. Shanbhag", "Mr. C.M. Maniar"]
    answer = ask(question, board)
    assert answer.meta["computation"] == "14 + 5 + 11 = 30" and answer.short == "30"


def test_a_year_is_not_said_inside_a_larger_number():
    sentence = text_item("Surplus rose to 20023.68; dividends in 2002 were 1923.78 and in 2001 were 1767.80.")
    answer = ask("How much higher were dividends in 2002 compared to 2001?", sentence)
    assert answer.meta["computation"] == "1923.78 \u2212 1767.80 = 155.98"


def test_the_rows_of_the_kind_a_question_names_are_listed():
    board = item(Chunk(page=9, order=0, modality="table", text="...", table=BOARD, table_header_rows=1), 1)
    listed = ask("Who are the non-executive and independent directors? Enumerate them in a list.", board)
    assert listed.short == "Mr. R.A. Shah, Mr. C.M. Maniar"  # the most specific kind said, not "Executive" too
    assert ask("Who are the executive directors?", board).short == "Mr. K.K. Modi, Mr. S.V. Shanbhag"


def test_an_ordinal_item_is_read_from_the_list_under_the_heading_the_question_names():
    install = text_item("3.5.3 Installation\n• Leave room for air. • Keep it away from radiators. • Mount it level.")
    safety = text_item(
        "3.5.2 Safety\n• Use the supplied adaptor. • Operate the unit on 100-240V AC only. • Unplug it when idle.",
        rank=2,
    )
    assert ask("What is the second bullet point for safety?", install, safety).short == (
        "Operate the unit on 100-240V AC only."
    )
    assert ask("What is the last step of the installation?", install, safety).short == "Mount it level."
    assert ask("What is the 5th bullet point for safety?", install, safety).short != "Unplug it when idle."


def test_a_party_is_read_off_its_side_of_the_case_caption():
    caption = text_item(
        "Superior Court of Delaware. Case 11A-06-001.\nDiane HANSON, Plaintiff,\nv. DELAWARE STATE PUBLIC INTEGRITY\n"
        "COMMISSION, Defendant.\nAug. 30, 2012."
    )
    assert ask("Who is the defendant of this case?", caption).short == "DELAWARE STATE PUBLIC INTEGRITY COMMISSION"
    assert ask("Who is the plaintiff of this case?", caption).short == "Diane HANSON"
    parties = text_item(
        "MARTIN COWEN, an individual, LIBERTARIAN PARTY OF GEORGIA, INC., a Georgia nonprofit corporation,\n"
        "Plaintiffs-Appellees,\nversus\nSECRETARY OF STATE FOR THE STATE OF GEORGIA,\nDefendant-Appellant."
    )
    assert ask("What company is a plaintiff?", parties).short == "LIBERTARIAN PARTY OF GEORGIA, INC"
    assert ask("Who is the defendant?", parties).short == "SECRETARY OF STATE FOR THE STATE OF GEORGIA"


def test_the_longest_of_the_durations_a_list_gives_its_entries():
    programmes = text_item(
        "Programme Full-Time\nLeaders in Education Programme 7 months\nManagement and Leadership in\n"
        "Schools Programme 17 weeks\nBuilding Educational Bridges 2 weeks"
    )
    assert ask("Which programme has the longest time period?", programmes).short == "Leaders in Education Programme"
    assert ask("Which programme is the shortest?", programmes).short == "Building Educational Bridges"


def test_a_definition_is_the_sentence_after_the_term_set_as_a_run_in_heading():
    laws = text_item(
        "Gestalt Principles of Visual Perception\nProximity. We see objects close together as a group.\n"
        "Law of good Gestalt. Elements of objects tend to be\nperceptually grouped together if they form a pattern "
        "that is regular, simple, and orderly. This law implies that people eliminate complexity."
    )
    assert ask("How does this document define the law of good gestalt?", laws).short == (
        "Elements of objects tend to be perceptually grouped together if they form a pattern that is regular, "
        "simple, and orderly."
    )
    assert ask("What is the definition of proximity in this report?", laws).short == (
        "We see objects close together as a group."
    )


def test_a_sentence_that_ends_on_the_term_defines_nothing():
    prose = text_item("Annotators disagree on hate speech. We claim that our annotation scheme helps.")
    assert ask("What is their definition of hate speech?", prose).short != "We claim that our annotation scheme helps."


def test_which_row_a_superlative_picks_is_named_whatever_the_column_measures():
    assert ask(
        "Which region had the lowest revenue?", text_item("Revenue fell in the south.", rank=1), table_item(2)
    ).short == ("Iberia")
    assert ask("What was the highest revenue?", table_item()).short != "North Sea"


def test_a_list_of_values_of_the_asked_kind_is_read_from_the_passages_near_the_best():
    first = text_item("In September the trust issued a check to Mont Blanc in the amount of $35,000.", rank=1)
    second = text_item("In February a second check of $40,684 was issued by the trust payable to Mont Blanc.", rank=2)
    other = text_item("The trust also bought a car for $200,000 from a dealer in Naples.", rank=3)
    answer = ask("What are the amounts on the checks issued to Mont Blanc?", first, second, other)
    assert answer.short == "$35,000, $40,684"  # the car's price is no check to Mont Blanc
    years = ask("Which years did the trust issue checks to Mont Blanc in?", first)
    assert years.short != "$35,000"  # a list of years is not a list of amounts


def test_what_happens_reads_the_column_saying_what_a_row_does():
    rows = [
        ["Operation", "Function", "Remarks"],
        ["Press once", "Open the workout list.", "Not during calls."],
        ["Press and hold", "Wake up the voice assistant.", "Only in some regions."],
    ]
    buttons = Chunk(page=3, order=0, modality="table", text="...", table=rows, table_header_rows=1)
    answer = ask("What will happen when you press and hold the down button?", item(buttons, 1))
    assert answer.short == "Wake up the voice assistant."
    assert ask("What happens when you press the button once?", item(buttons, 1)).short == "Open the workout list."


def test_a_list_of_questions_is_the_questions_the_passage_asks():
    report = text_item(
        "We always ask the following five questions of services. Is the service safe? The service was not safe. "
        "Is the service effective? Staff training was not up to date. Is the service caring? People felt respected."
    )
    answer = ask("List the primary questions asked about the services in this report.", report)
    assert answer.short == "Is the service safe?, Is the service effective?, Is the service caring?"


def test_a_title_set_after_its_label_is_read_up_to_the_labels_end():
    unit = text_item(
        "Unit 8 Key Assignments: Quiz #4 on Unit 7 and 8. Critical Thinking Case Study- Discrimination in the "
        "Workplace Continues\u2014submit on Google Docs. Critical Thinking Questions follow."
    )
    answer = ask("What is the title of the case study given under unit 8?", unit)
    assert answer.short == "Discrimination in the Workplace Continues"
    topic = text_item("UNIT 14: Using Financial Information and Accounting\nLearning outcomes follow.")
    assert ask("what's the topic of UNIT 14?", topic).short == "Using Financial Information and Accounting"
