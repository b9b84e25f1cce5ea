"""Probe-driven choice of the dual view (VizRAG 3.2): which pair of layouts a vision model reads best.

Probes are made from the collection's own hypergraph, with answers known by construction:
- overlap core: a few hyperedges that share one entity; which entity lies in the most of them?
- bridge hyperedge: a hyperedge whose removal separates its members; which hyperedge joins the
  two groups?
Each set-based x induced pair is drawn as a dual view for every probe and shown to the vision
model; the pair with the most right answers becomes the collection's default. Without a vision
model the documented default pair is used.
"""

from __future__ import annotations

import random
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.fence import PICTURE_RULE
from hyperfolio.llm.protocols import VisionModel
from hyperfolio.viz.draw import render
from hyperfolio.viz.graph import VizEdge, VizGraph
from hyperfolio.viz.layouts import INDUCED_LAYOUTS, SET_LAYOUTS

DEFAULT_PAIR = ("set-force", "bi-inc")  # used when no vision model is configured
PAIRS = [(s, i) for s in SET_LAYOUTS for i in INDUCED_LAYOUTS]
_ID = re.compile(r"\b([EH])\s?(\d+)\b")


@dataclass
class Probe:
    kind: str  # "overlap-core" or "bridge"
    graph: VizGraph
    question: str
    answer: str  # display id, e.g. "E2" or "H3"


@dataclass
class ProbeResult:
    pair: tuple[str, str]
    correct: int = 0
    asked: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.asked if self.asked else 0.0


@dataclass
class Choice:
    pair: tuple[str, str]
    results: list[ProbeResult] = field(default_factory=list)
    probes: int = 0
    reason: str = ""


def _subgraph(graph: VizGraph, edges: list[VizEdge], title: str) -> VizGraph:
    sub = VizGraph(title=title)
    for edge in edges:
        sub.edges[edge.key] = VizEdge(edge.key, edge.level, edge.description, list(edge.members))
        for member in edge.members:
            entity = graph.entities[member]
            sub.entities[member] = type(entity)(entity.key, entity.name, entity.type, entity.description)
    return sub.number()


def overlap_core_probes(graph: VizGraph, rng: random.Random, limit: int) -> list[Probe]:
    """Entities in three or more hyperedges whose co-members each share fewer of them."""
    probes = []
    keys = sorted(graph.entities, key=lambda k: graph.entities[k].name)
    rng.shuffle(keys)
    for key in keys:
        incident = [e for e in graph.edges.values() if key in e.members]
        if len(incident) < 3:
            continue
        chosen = rng.sample(incident, min(4, len(incident)))
        counts = {m: sum(m in e.members for e in chosen) for e in chosen for m in e.members}
        if sum(1 for c in counts.values() if c == counts[key]) != 1:
            continue  # another entity is in every chosen hyperedge too: no single right answer
        sub = _subgraph(graph, chosen, "overlap core probe")
        answer = sub.entities[key].vid
        question = (
            "The picture shows entities (labelled E1, E2, ...) grouped by hyperedges (labelled H1, H2, ...). "
            "Which entity belongs to the largest number of the hyperedges shown? Answer with its id only. "
            + PICTURE_RULE
        )
        probes.append(Probe("overlap-core", sub, question, answer))
        if len(probes) >= limit:
            break
    return probes


def bridge_probes(graph: VizGraph, rng: random.Random, limit: int) -> list[Probe]:
    """Hyperedges whose removal leaves their members in different connected groups."""
    probes = []
    edges = sorted(graph.edges.values(), key=lambda e: e.key)
    rng.shuffle(edges)
    for bridge in edges:
        others = [e for e in graph.edges.values() if e.key != bridge.key]
        g = nx.Graph()
        for e in others:
            g.add_edges_from((a, b) for a in e.members for b in e.members if a < b)
        sides: list[set[str]] = []
        for member in bridge.members:
            component = nx.node_connected_component(g, member) if member in g else {member}
            if not any(member in side for side in sides):
                sides.append(set(component))
        if len(sides) < 2:
            continue
        near = [e for e in others if any(set(e.members) & side for side in sides[:2])]
        near = sorted(near, key=lambda e: e.key)[:4]
        if not near:
            continue
        sub = _subgraph(graph, [bridge, *near], "bridge probe")
        question = (
            "The picture shows entities (E1, E2, ...) grouped by hyperedges (H1, H2, ...). One hyperedge "
            "connects two groups that would otherwise be separate. Which one? Answer with its id only. " + PICTURE_RULE
        )
        probes.append(Probe("bridge", sub, question, sub.edges[bridge.key].vid))
        if len(probes) >= limit:
            break
    return probes


def make_probes(graph: VizGraph, k: int = 15, seed: int = 7) -> list[Probe]:
    rng = random.Random(seed)
    cores = overlap_core_probes(graph, rng, (k + 1) // 2)
    bridges = bridge_probes(graph, rng, k - len(cores))
    return (cores + bridges)[:k]


def read_id(reply: str, kind: str) -> str:
    """The first display id of the asked kind in a model's reply ("E3" / "H2")."""
    wanted = "E" if kind == "overlap-core" else "H"
    for letter, number in _ID.findall(reply.upper()):
        if letter == wanted:
            return f"{letter}{number}"
    return ""


def choose_layouts(
    probes: list[Probe],
    vision: VisionModel | None,
    pairs: list[tuple[str, str]] = PAIRS,
    draw: Callable[[VizGraph, list[str], Path], Path] = render,
) -> Choice:
    """Ask every probe of every pair; the pair with the most right answers wins (ties: the default
    pair first, then the order of `pairs`)."""
    if vision is None or not probes:
        why = "no vision model configured" if vision is None else "the hypergraph yields no probes"
        return Choice(DEFAULT_PAIR, [], len(probes), f"default pair ({why})")
    results = []
    with tempfile.TemporaryDirectory(prefix="hyperfolio-probe-") as tmp:
        for pair in pairs:
            result = ProbeResult(pair)
            for n, probe in enumerate(probes):
                picture = draw(probe.graph, list(pair), Path(tmp) / f"{pair[0]}-{pair[1]}-{n}.png")
                try:
                    reply = vision.describe(probe.question, [picture.read_bytes()])
                except ModelCallError:
                    reply = ""
                result.asked += 1
                result.correct += read_id(reply, probe.kind) == probe.answer
            results.append(result)
    best = max(results, key=lambda r: (r.correct, r.pair == DEFAULT_PAIR, -pairs.index(r.pair)))
    return Choice(best.pair, results, len(probes), f"{best.correct}/{best.asked} probes answered right")
