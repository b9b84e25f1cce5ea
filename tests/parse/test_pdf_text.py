"""Joining a PDF paragraph's lines: line-break hyphens undone, a compound's own hyphens kept."""

from __future__ import annotations

from hyperfolio.parse.pdf.text import _join_lines


def test_line_break_hyphen_is_undone_inside_a_word():
    assert _join_lines(["the inter-", "national market"]) == "the international market"


def test_a_hyphenated_compound_keeps_its_hyphen_across_the_break():
    assert _join_lines(["about four-in-", "ten adults"]) == "about four-in-ten adults"
    assert _join_lines(["a state-of-", "the-art model"]) == "a state-of-the-art model"


def test_a_hyphen_before_a_capital_or_digit_stays_and_joins():
    assert _join_lines(["the Franco-", "German border"]) == "the Franco-German border"
    assert _join_lines(["pages 10-", "12"]) == "pages 10-12"
    assert _join_lines(["a list -", "then more"]) == "a list - then more"


def test_a_hyphen_beside_a_word_compounds_are_made_of_is_kept():
    assert _join_lines(["a well-", "known fact"]) == "a well-known fact"
    assert _join_lines(["the stock-", "based awards"]) == "the stock-based awards"
    assert _join_lines(["the informa-", "tion it holds"]) == "the information it holds"


def test_the_page_s_own_spelling_decides_a_break():
    assert _join_lines(["their co-", "operation"], frozenset({"cooperation"})) == "their cooperation"
    assert _join_lines(["in-", "context learning"], frozenset({"in-context"})) == "in-context learning"
    assert _join_lines(["in-", "context learning"]) == "incontext learning"  # no evidence: a syllable break
