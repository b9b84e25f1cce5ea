"""Questions matched against cards: organisations by name, abbreviation and shared words; periods;
document types; and the grouping of what a question names."""

from __future__ import annotations

import pytest

from hyperfolio.cards import DocumentCard, match_cards, named_entities, question_cues
from hyperfolio.cards.names import NameIndex, abbreviates, core, name_score

CARDS = [
    DocumentCard(organisation="ADOBE SYSTEMS INCORPORATED", doc_type="10-K", fiscal_year=2016, doc_id="adbe16"),
    DocumentCard(organisation="ADOBE SYSTEMS INCORPORATED", doc_type="10-K", fiscal_year=2017, doc_id="adbe17"),
    DocumentCard(organisation="American Express Company", doc_type="10-K", fiscal_year=2022, aliases=["AXP"]),
    DocumentCard(organisation="AMERICAN WATER WORKS COMPANY, INC.", doc_type="10-K", fiscal_year=2022),
    DocumentCard(organisation="JOHNSON & JOHNSON", doc_type="10-K", fiscal_year=2022),
    DocumentCard(organisation="JPMorgan Chase & Co.", doc_type="10-Q", fiscal_year=2022, quarter=2),
    DocumentCard(organisation="JPMorgan Chase & Co.", doc_type="10-Q", fiscal_year=2023, quarter=2),
    DocumentCard(organisation="ADVANCED MICRO DEVICES, INC.", doc_type="10-K", fiscal_year=2015),
    DocumentCard(title="Sparse Retrieval over Page Graphs", doc_type="paper", fiscal_year=2024),
]


def _top(question: str) -> int:
    matches = match_cards(question, CARDS)
    ranked = sorted(matches, key=lambda m: m.score, reverse=True)
    assert ranked[0].score > ranked[1].score, f"a tie at the top for {question!r}"
    return ranked[0].index


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is Adobe's year-over-year change in operating income from FY2015 to FY2016?", 0),
        ("What is the FY2017 operating cash flow ratio for Adobe?", 1),
        ("Does AMEX have an improving operating margin profile as of 2022?", 2),
        ("What was American Water Works's FY2022 operating income?", 3),
        ("Roughly how many times has JnJ sold its inventory in FY2022?", 4),
        ("What did J&J spend on research in fiscal 2022?", 4),
        ("In 2022 Q2, which of JPM's business segments had the highest net income?", 5),
        ("Did the risk JPM faced in the second fiscal quarter of 2023 decrease?", 6),
        ("What was AMD's gross margin in 2015?", 7),
        ("How much did AXP pay in dividends?", 2),
    ],
)
def test_question_routes_to_its_own_document(question: str, expected: int):
    assert _top(question) == expected


def test_feature_values_are_graded_and_bounded():
    matches = match_cards("Does AMEX have an improving operating margin profile as of 2022?", CARDS)
    amex, water = matches[2], matches[3]
    assert amex.org_match >= 0.9 and water.org_match < 0.5  # "American" is shared; "Express" is AmEx's own
    assert amex.period_match == 1.0 and matches[0].period_match == 0.0
    assert all(0.0 <= v <= 1.0 for m in matches for v in (m.org_match, m.period_match, m.type_match))
    assert amex.org_named and amex.period_named and not amex.type_named


def test_quarter_asked_of_annual_and_quarterly_documents():
    matches = match_cards("Has the company paid dividends in Q2 of FY2022?", CARDS)
    assert matches[5].period_match == 1.0  # the Q2 2022 10-Q
    assert matches[6].period_match == 0.0  # Q2 of another year
    assert 0.0 < matches[4].period_match < 1.0  # an annual report covers the quarter, less surely


def test_named_type():
    matches = match_cards("According to the 10-Q, what were JPM's deposits?", CARDS)
    assert [m.type_match for m in matches[4:7]] == [0.0, 1.0, 1.0]
    assert match_cards("Which dataset does the paper use?", CARDS)[8].type_match == 1.0


def test_question_cues():
    cues = question_cues("As of FY 2021, how much did Verizon expect to pay for its retirees in 2024?")
    assert cues.target_years == (2021,)  # a marked fiscal year outranks a bare one
    assert question_cues("second quarter of 2023").quarters == ((2, 2023),)
    assert question_cues("1Q22 versus Q3 '21").quarters == ((3, 2021), (1, 2022))
    assert question_cues("What do quarterly reports show?").types == frozenset({"10-Q"})


def test_names():
    assert core("The Coca-Cola Company") == ("coca", "cola")
    assert core("JPMorgan Chase & Co.") == ("jpmorgan", "chase")
    assert abbreviates("AMEX", ("american", "express"))
    assert abbreviates("JnJ", ("johnson", "&", "johnson"))
    assert abbreviates("AMD", ("advanced", "micro", "devices"))
    assert not abbreviates("AMEX", ("american", "water", "works"))
    assert not abbreviates("A", ("american", "express"))
    index = NameIndex.of(["Adobe Systems Incorporated", "Coca-Cola Co"])
    assert name_score("Coca Cola's margins", "The Coca-Cola Company", index) == 1.0
    assert name_score("Adobe revenue", "ADOBE SYSTEMS INCORPORATED", index) >= 0.9
    assert name_score("Pepsi revenue", "ADOBE SYSTEMS INCORPORATED", index) == 0.0


def test_named_entities_groups_documents_by_what_was_named():
    named = named_entities("Compare Adobe and American Express in FY2016 and FY2022", CARDS)
    assert named.several_organisations and named.several_periods
    assert named.organisations == {"Adobe Systems": [0, 1], "American Express": [2]}
    assert named.periods == {"FY2016": [0], "FY2022": [2, 3, 4, 5]}  # the Q2 2022 10-Q is of FY2022 too
    single = named_entities("What is Adobe's FY2016 revenue?", CARDS)
    assert not single.several_organisations and not single.several_periods
