"""HyperViz: drawing parts of the hypergraph for people and vision models (VizRAG section 3)."""

from hyperfolio.viz.congestion import Budget, PruneReport, prune
from hyperfolio.viz.draw import Style, render
from hyperfolio.viz.evidence import evidence_graph
from hyperfolio.viz.graph import VizGraph, document_graph, entity_graph, from_store
from hyperfolio.viz.html import write_html
from hyperfolio.viz.layouts import INDUCED_LAYOUTS, LAYOUTS, SET_LAYOUTS, place

__all__ = [
    "Budget",
    "INDUCED_LAYOUTS",
    "LAYOUTS",
    "PruneReport",
    "SET_LAYOUTS",
    "Style",
    "VizGraph",
    "document_graph",
    "entity_graph",
    "evidence_graph",
    "from_store",
    "place",
    "prune",
    "render",
    "write_html",
]
