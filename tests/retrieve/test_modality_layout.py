"""The modality-aware layout shared by every strategy (HVM-GraphRAG 3.2.3)."""

from __future__ import annotations

from hyperfolio.retrieve.evidence import organise_by_modality, scaled_limits

LIMITS = {"text": 2, "table": 1, "image": 1}


def test_groups_in_fixed_order_each_ranked_and_cut():
    ranked = [("img", 0.9), ("t1", 0.8), ("tab1", 0.7), ("t2", 0.6), ("t3", 0.5), ("tab2", 0.4)]
    modality = {"img": "image", "t1": "text", "t2": "formula", "t3": "text", "tab1": "table", "tab2": "table"}
    laid_out = organise_by_modality(ranked, modality, LIMITS, fill=False)
    assert [c for c, _ in laid_out] == ["t1", "t2", "tab1", "img"]  # text (formulas read as text), table, image


def test_slots_a_modality_leaves_empty_go_to_the_next_best():
    ranked = [("t1", 0.9), ("t2", 0.8), ("t3", 0.7), ("tab1", 0.6), ("t4", 0.5)]
    modality = {"t1": "text", "t2": "text", "t3": "text", "t4": "text", "tab1": "table"}
    assert [c for c, _ in organise_by_modality(ranked, modality, LIMITS, fill=False)] == ["t1", "t2", "tab1"]
    # No image: its slot goes to the best remaining chunk, still laid out in modality order.
    assert [c for c, _ in organise_by_modality(ranked, modality, LIMITS)] == ["t1", "t2", "t3", "tab1"]


def test_limits_rescale_to_the_requested_depth():
    assert scaled_limits({"text": 5, "table": 3, "image": 2}, 10) == {"text": 5, "table": 3, "image": 2}
    assert scaled_limits({"text": 5, "table": 3, "image": 2}, 20) == {"text": 10, "table": 6, "image": 4}
    small = scaled_limits({"text": 5, "table": 3, "image": 2}, 3)
    assert sum(small.values()) == 3 and all(v >= 1 for v in small.values())
