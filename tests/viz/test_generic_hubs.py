"""Generic entities (years, legal suffixes, names on every chunk) give way in pruned pictures."""

from __future__ import annotations

import pytest

from hyperfolio.phrases import generic_name
from hyperfolio.viz import Budget, VizGraph, prune
from hyperfolio.viz.congestion import importance, specificity
from hyperfolio.viz.graph import VizEdge, VizEntity


@pytest.mark.parametrize("name", ["2023", "FY", "Inc", "Q1", "$12.5", "42%", "1,850", "January", "MW"])
def test_names_generic_by_form(name):
    assert generic_name(name)


@pytest.mark.parametrize("name", ["PepsiCo", "Latin America", "Frito-Lay", "EBITDA margin", "Aurora"])
def test_names_that_tell_things_apart(name):
    assert not generic_name(name)


def release() -> VizGraph:
    """An earnings release: '2023' and 'Inc' sit in every hyperedge, each division in a few."""
    graph = VizGraph(title="release")
    names = ["2023", "Inc", "Latin America", "Europe", "Frito-Lay", "Quaker", "Beverages", "Snacks"]
    for i, name in enumerate(names):
        graph.entities[f"e{i}"] = VizEntity(f"e{i}", name)
    specific = [f"e{i}" for i in range(2, len(names))]
    n = 0
    for a in range(len(specific)):
        for b in range(a + 1, min(a + 3, len(specific))):
            members = ["e0", "e1", specific[a], specific[b]]
            graph.edges[f"h{n}"] = VizEdge(f"h{n}", "high", "", members, [("d", n)], [f"d:{n}:0"])
            n += 1
    return graph.number()


def test_hubs_that_are_generic_lose_importance_to_specific_entities():
    graph = release()
    spec = specificity(graph)
    assert spec["e0"] < 0.05 and spec["e1"] < 0.05  # on every chunk, and generic by form
    assert min(spec[f"e{i}"] for i in range(2, 8)) > 0.3
    scores = importance(graph, "", Budget())
    assert max(scores, key=scores.get) not in ("e0", "e1")
    # ...unless the question names them.
    asked = importance(graph, "results in 2023", Budget())
    assert asked["e0"] > scores["e0"]


def test_a_pruned_picture_keeps_the_specific_entities():
    graph = release()
    prune(graph, "", Budget(width=500, height=400))
    kept = {e.name for e in graph.entities.values()}
    assert "2023" not in kept and "Inc" not in kept
    assert len(kept & {"Latin America", "Europe", "Frito-Lay", "Quaker", "Beverages", "Snacks"}) >= 2
