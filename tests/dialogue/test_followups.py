"""Follow-ups read against the turn before them, offline."""

import pytest

from hyperfolio.dialogue import Turn, rewrite_offline, turns_from_messages
from hyperfolio.errors import HyperfolioError

REVENUE = Turn(question="What was revenue in 2023?", short="$5.2 million", answer="$5.2 million [1]")


@pytest.mark.parametrize(
    ("before", "followup", "standalone", "how"),
    [
        ("What was revenue in 2023?", "and in 2022?", "What was revenue in 2022?", "period"),
        ("What was revenue in 2023?", "And 2021?", "What was revenue in 2021?", "period"),
        ("What was revenue in Q3 2023?", "and Q2?", "What was revenue in Q2 2023?", "period"),
        ("What was revenue in 2023?", "what about net income?", "What was net income in 2023?", "subject"),
        (
            "What is the operating margin for FY2022?",
            "what about the gross margin in FY2021?",
            "What is the gross margin in FY2021?",
            "subject",
        ),
        (
            "What was the revenue of Acme Corp in fiscal 2023?",
            "what about Globex?",
            "What was the revenue of Globex in fiscal 2023?",
            "name",
        ),
        ("What was revenue in 2023?", "How did it change?", "How did revenue in 2023 change?", "pronoun"),
        ("What was revenue in 2023?", "show me the table", "The table of revenue in 2023", "show"),
        ("Which oil field produced most?", "net income?", "Which oil field produced most net income?", "subject"),
    ],
)
def test_a_followup_takes_the_slot_it_fills(before, followup, standalone, how):
    rewrite = rewrite_offline(followup, [Turn(question=before, short="x")])
    assert (rewrite.standalone, rewrite.how) == (standalone, how)
    assert rewrite.changed


def test_why_asks_why_the_last_answer_holds():
    assert rewrite_offline("why?", [REVENUE]).standalone == "Why was revenue in 2023 $5.2 million?"
    region = Turn(question="Which region had the highest capacity in 2024?", short="North Sea")
    assert rewrite_offline("Why?", [region]).standalone == (
        "Why is it North Sea: which region had the highest capacity in 2024?"
    )


def test_a_question_that_stands_alone_is_left_as_asked():
    rewrite = rewrite_offline("What is the capital of France?", [REVENUE])
    assert rewrite.standalone == "What is the capital of France?" and not rewrite.changed
    assert rewrite_offline("and in 2022?", []).standalone == "and in 2022?"  # nothing to lean on


def test_why_and_show_lean_on_the_last_question_that_asked_something():
    turns = [REVENUE, Turn(question="and in 2022?", standalone="What was revenue in 2022?", how="period")]
    turns.append(Turn(question="why?", standalone="Why was revenue in 2022 $4 million?", how="why"))
    assert rewrite_offline("show me the table", turns).standalone == "The table of revenue in 2022"


def test_that_and_this_are_pronouns_only_where_they_stand_for_a_thing():
    assert rewrite_offline("How did that change?", [REVENUE]).standalone == "How did revenue in 2023 change?"
    standalone = "Which region has the plant that opened in 2022?"
    assert rewrite_offline(standalone, [REVENUE]).standalone == standalone
    assert rewrite_offline("What is this year's outlook?", [REVENUE]).standalone == "What is this year's outlook?"


def test_the_new_part_of_a_followup_is_never_dropped():
    """Offline follow-ups must not fall back to the previous question."""
    for followup, new in [("and in 2019?", "2019"), ("what about headcount?", "headcount"), ("and Q4?", "Q4")]:
        standalone = rewrite_offline(followup, [REVENUE]).standalone
        assert new in standalone and standalone != REVENUE.question


def test_chat_messages_become_turns_and_a_question():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What was revenue in 2023?"},
        {"role": "assistant", "content": "$5.2 million [1]"},
        {"role": "user", "content": [{"type": "text", "text": "and in 2022?"}]},
    ]
    turns, question = turns_from_messages(messages)
    assert question == "and in 2022?"
    assert [(t.question, t.answer) for t in turns] == [("What was revenue in 2023?", "$5.2 million [1]")]
    with pytest.raises(HyperfolioError, match="last message must be the user's"):
        turns_from_messages(messages[:3])


def test_a_turn_survives_a_round_trip_through_plain_data():
    turn = Turn("and in 2022?", "What was revenue in 2022?", "x", "y", ["d1"], [("d1", 3)], ["d1"], "period", 5.0)
    assert Turn.from_dict(turn.to_dict()) == turn


def test_a_pronoun_that_may_point_inside_the_question_leaves_it_alone():
    verizon = [Turn(question="What is Verizon's capex in FY2022?")]
    alone = rewrite_offline("What did Pepsico say about its debt?", verizon)
    assert (alone.standalone, alone.how) == ("What did Pepsico say about its debt?", "")
    period_first = rewrite_offline("As of FY 2021, how much did it expect to pay?", verizon)  # FY is no name
    assert period_first.how == "pronoun" and "Verizon" in period_first.standalone


def test_a_pronoun_with_nothing_short_to_stand_for_is_asked_where_the_last_answer_was():
    long_before = Turn(
        question="How many executive directors have attended board meetings more than six times in total?"
    )
    rewrite = rewrite_offline("How many of them are independent?", [long_before])
    assert (rewrite.standalone, rewrite.how) == ("How many of them are independent?", "where")
    assert rewrite.meta([], ["d1"]) == {  # the scope is what was carried
        "asked": "How many of them are independent?",
        "standalone": "How many of them are independent?",
        "how": "where",
        "doc": ["d1"],
    }
