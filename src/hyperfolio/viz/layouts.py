"""The six HyperViz layouts (VizRAG appendix B.3): node positions for a `VizGraph`.

Set-based layouts place the entities with a Graphviz engine over the graph in which every
hyperedge links its members (dot: Set-Hier, twopi: Set-Radial, fdp/sfdp: Set-Force); the
hyperedges are then drawn as regions around their members. Induced layouts add a node per
hyperedge and place both kinds with NetworkX: Bi-Inc (bipartite), Ra-Cen (shells by distance
from the highest-degree entity, falling back to a spring layout), Cli-Exp (spring layout of the
incidence backbone plus each hyperedge's clique).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from itertools import combinations

import networkx as nx

from hyperfolio.errors import HyperfolioError
from hyperfolio.viz.graph import VizGraph

SET_LAYOUTS = {"set-hier": "dot", "set-radial": "twopi", "set-force": "fdp"}
INDUCED_LAYOUTS = ("bi-inc", "ra-cen", "cli-exp")
LAYOUTS = (*SET_LAYOUTS, *INDUCED_LAYOUTS)
Point = tuple[float, float]


@dataclass
class Placement:
    layout: str
    entities: dict[str, Point]  # display id -> position in [0, 1] x [0, 1]
    hyperedges: dict[str, Point] = field(default_factory=dict)  # induced layouts only
    clique_edges: list[tuple[str, str]] = field(default_factory=list)  # Cli-Exp only

    @property
    def set_based(self) -> bool:
        return self.layout in SET_LAYOUTS


def entity_graph(graph: VizGraph) -> nx.Graph:
    """Entities linked when they share a hyperedge (the clique expansion), by display id."""
    g = nx.Graph()
    g.add_nodes_from(e.vid for e in graph.entities.values())
    for edge in graph.edges.values():
        ids = [graph.entities[m].vid for m in edge.members if m in graph.entities]
        g.add_edges_from(combinations(ids, 2))
    return g


def incidence_graph(graph: VizGraph) -> nx.Graph:
    """Entities and one node per hyperedge, linked by membership (the induced/star expansion)."""
    g = nx.Graph()
    g.add_nodes_from((e.vid for e in graph.entities.values()), kind="entity")
    for group in graph.groups():  # hyperedges over the same members share one node
        edge = group[0]
        g.add_node(edge.vid, kind="hyperedge")
        g.add_edges_from((edge.vid, graph.entities[m].vid) for m in edge.members if m in graph.entities)
    return g


def graphviz_positions(g: nx.Graph, engine: str, root: str | None = None) -> dict[str, Point]:
    """Positions from a Graphviz engine (its `plain` output), for nodes named by display id."""
    binary = shutil.which(engine)
    if binary is None:
        raise HyperfolioError(f"the Graphviz program {engine!r} is not installed (Debian: apt install graphviz)")
    lines = ["graph G {", "  graph [overlap=false, splines=false, nodesep=0.35, ranksep=0.6];"]
    if root:
        lines.append(f'  graph [root="{root}"];')
    lines.append('  node [shape=box, width=0.9, height=0.35, fixedsize=true, label=""];')
    lines += [f'  "{n}";' for n in g.nodes]
    lines += [f'  "{a}" -- "{b}";' for a, b in g.edges]
    lines.append("}")
    try:
        result = subprocess.run(
            [binary, "-Tplain"], input="\n".join(lines), capture_output=True, text=True, timeout=120, check=True
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise HyperfolioError(f"Graphviz {engine} failed: {getattr(exc, 'stderr', '') or exc}") from exc
    positions: dict[str, Point] = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "node":
            positions[parts[1].strip('"')] = (float(parts[2]), float(parts[3]))
    return positions


def fit(positions: dict[str, Point], margin: float = 0.06) -> dict[str, Point]:
    """Each axis scaled into [margin, 1 - margin]: the drawing fills its panel, whatever the panel's
    shape (a uniform scale leaves a wide panel mostly blank around a tall layout)."""
    if not positions:
        return {}
    xs = [p[0] for p in positions.values()]
    ys = [p[1] for p in positions.values()]
    sx = (1 - 2 * margin) / ((max(xs) - min(xs)) or 1.0)
    sy = (1 - 2 * margin) / ((max(ys) - min(ys)) or 1.0)
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    return {k: (0.5 + (x - cx) * sx, 0.5 + (y - cy) * sy) for k, (x, y) in positions.items()}


def place(graph: VizGraph, layout: str, seed: int = 42) -> Placement:
    if layout not in LAYOUTS:
        raise HyperfolioError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    if layout in SET_LAYOUTS:
        g = entity_graph(graph)
        engine = SET_LAYOUTS[layout]
        if engine == "fdp" and g.number_of_nodes() > 150:
            engine = "sfdp"  # fdp is quadratic; sfdp scales to large graphs
        root = max(g.nodes, key=lambda n: (g.degree(n), n)) if engine == "twopi" and g.nodes else None
        return Placement(layout, fit(graphviz_positions(g, engine, root)))
    g = incidence_graph(graph)
    entities = [n for n, d in g.nodes(data=True) if d["kind"] == "entity"]
    clique: list[tuple[str, str]] = []
    if layout == "bi-inc":
        raw = nx.bipartite_layout(g, entities, align="vertical", scale=1.0)
        raw = _spread_bipartite(g, entities, raw)
    elif layout == "ra-cen":
        raw = _radial_shells(g, entities, seed)
    else:
        clique = [
            (graph.entities[a].vid, graph.entities[b].vid)
            for group in graph.groups()
            for a, b in combinations([m for m in group[0].members if m in graph.entities], 2)
        ]
        full = g.copy()
        full.add_edges_from(clique)
        raw = nx.spring_layout(full, seed=seed, k=0.95)
    positions = fit({n: (float(x), float(y)) for n, (x, y) in raw.items()})
    return Placement(
        layout,
        {n: p for n, p in positions.items() if g.nodes[n]["kind"] == "entity"},
        {n: p for n, p in positions.items() if g.nodes[n]["kind"] == "hyperedge"},
        list(dict.fromkeys(clique)),
    )


def _spread_bipartite(g: nx.Graph, entities: list[str], raw: dict) -> dict:
    """Order each column by the barycentre of its neighbours, so membership lines cross less."""
    left = sorted(entities, key=lambda n: int(n[1:]))
    right = sorted((n for n in g.nodes if n not in set(entities)), key=lambda n: int(n[1:]))
    rank = {n: i / max(1, len(left) - 1) for i, n in enumerate(left)}
    right.sort(key=lambda h: sum(rank[m] for m in g.neighbors(h)) / max(1, g.degree(h)))
    out = {}
    for column, x in ((left, -1.0), (right, 1.0)):
        for i, n in enumerate(column):
            out[n] = (x, 1.0 - 2.0 * i / max(1, len(column) - 1))
    return out


def _radial_shells(g: nx.Graph, entities: list[str], seed: int) -> dict:
    """Shells by shortest-path distance from the highest-degree entity; what cannot be reached
    forms the outermost shell. Without an entity to centre on, a spring layout."""
    if not entities:
        return nx.spring_layout(g, seed=seed)
    center = max(entities, key=lambda n: (g.degree(n), n))
    distance = nx.single_source_shortest_path_length(g, center)
    outer = max(distance.values()) + 1
    distance.update({n: outer for n in g.nodes if n not in distance})
    shells: dict[int, list[str]] = {}
    for node, d in distance.items():
        shells.setdefault(d, []).append(node)
    return nx.shell_layout(g, nlist=[sorted(shells[d]) for d in sorted(shells)])
