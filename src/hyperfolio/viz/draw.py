"""Drawing a placed hypergraph to PNG or SVG with matplotlib, one layout or two side by side.

Entities are labelled "E3 name" so a vision model (or a person) can refer to them by id; a
set-based view draws each hyperedge as a translucent region around its members, tagged with
its id; an induced view draws hyperedge nodes as squares joined to their members by dashed
lines (Cli-Exp adds solid clique lines). A legend lists the hyperedges shown.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.patches import Polygon  # noqa: E402

from hyperfolio.errors import HyperfolioError  # noqa: E402
from hyperfolio.viz.graph import VizEdge, VizGraph  # noqa: E402
from hyperfolio.viz.layouts import Placement, place  # noqa: E402

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]
LEVEL_STYLE = {"low": "-", "high": "-", "refine": "--", "fact": ":"}


@dataclass(frozen=True)
class Style:
    width_px: int = 1600
    height_px: int = 1200
    dpi: int = 100
    font_size: float = 11.0
    max_label_chars: int = 28
    entity_color: str = "#1f4e79"
    hyperedge_color: str = "#c55a11"
    region_alpha: float = 0.12
    legend_items: int = 14
    legend: bool = True
    title: bool = True
    labels: bool = True
    entity_marker: str = "o"  # matplotlib marker for entities
    hyperedge_marker: str = "s"  # ... and for hyperedge nodes in induced views
    line_width: float = 1.0  # scales region outlines and incidence lines


def _label(text: str, limit: int) -> str:
    # Private-use glyphs (PDF bullet fonts) have no shape in the drawing font: leave them out.
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Co")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _hull(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Convex hull (monotone chain), counter-clockwise."""
    pts = sorted(set(points))
    if len(pts) <= 2:
        return pts

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple[float, float]] = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: list[tuple[float, float]] = []
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


def _area(polygon: list[tuple[float, float]]) -> float:
    """Shoelace area of a simple polygon."""
    return (
        abs(sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(polygon, polygon[1:] + polygon[:1], strict=True))) / 2
    )


def region(members: list[tuple[float, float]], pad: float) -> list[tuple[float, float]]:
    """A rounded region around member positions: the hull of small circles around each."""
    ring = [
        (x + pad * math.cos(2 * math.pi * i / 16), y + pad * math.sin(2 * math.pi * i / 16))
        for x, y in members
        for i in range(16)
    ]
    return _hull(ring)


def group_tag(group: list) -> str:
    """ "H3" for one hyperedge, "H3+2" for a region that draws three over the same members."""
    return group[0].vid + (f"+{len(group) - 1}" if len(group) > 1 else "")


def _draw_regions(ax: Axes, graph: VizGraph, placement: Placement, groups: list[list[VizEdge]], style: Style) -> None:
    """Set-based views: each hyperedge a translucent region around its members, tagged with its id."""
    center = (
        sum(x for x, _ in placement.entities.values()) / len(placement.entities),
        sum(y for _, y in placement.entities.values()) / len(placement.entities),
    )
    shapes = []
    for i, group in enumerate(groups):
        pts = [placement.entities[graph.entities[m].vid] for m in group[0].members if m in graph.entities]
        if len(pts) >= 2:
            outline = region(pts, 0.018 + 0.004 * (i % 4))  # nested regions stay distinguishable
            shapes.append((_area(outline), i, group, outline))
    tags: list[tuple[float, float]] = []
    # Big regions first, so smaller ones are drawn over them and stay visible.
    for area, i, group, outline in sorted(shapes, key=lambda s: -s[0]):
        color = PALETTE[i % len(PALETTE)]
        style_line = LEVEL_STYLE.get(group[0].level, "-")
        fill = style.region_alpha * (0.5 if area > 0.15 else 1.0)
        ax.add_patch(Polygon(outline, closed=True, facecolor=color, edgecolor="none", alpha=fill, zorder=1))
        ax.add_patch(
            Polygon(
                outline,
                closed=True,
                fill=False,
                edgecolor=color,
                alpha=0.8,
                linestyle=style_line,
                linewidth=1.1,
                zorder=2,
            )
        )
        # The tag goes on the outline's vertex farthest from the drawing's centre, away from other tags.
        spots = sorted(outline, key=lambda p: -((p[0] - center[0]) ** 2 + (p[1] - center[1]) ** 2))
        taken = tags + [(x, y - 0.02) for x, y in placement.entities.values()]  # other tags, entity labels
        spot = next((p for p in spots if all(abs(p[0] - t[0]) + abs(p[1] - t[1]) > 0.045 for t in taken)), spots[0])
        tags.append(spot)
        ax.text(
            spot[0],
            spot[1],
            group_tag(group),
            color=color,
            fontsize=style.font_size - 1,
            ha="center",
            va="center",
            fontweight="bold",
            zorder=6,
            bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.6},
        )


def _draw_hyperedge_nodes(
    ax: Axes, graph: VizGraph, placement: Placement, groups: list[list[VizEdge]], style: Style
) -> None:
    """Induced views: clique lines, then each hyperedge a square joined to its members by dashed lines."""
    for a, b in placement.clique_edges:
        (x1, y1), (x2, y2) = placement.entities[a], placement.entities[b]
        ax.plot([x1, x2], [y1, y2], color="#999999", linewidth=0.6, alpha=0.6, zorder=1)
    for group in groups:
        edge = group[0]
        hx, hy = placement.hyperedges[edge.vid]
        for m in edge.members:
            if m in graph.entities:
                ex, ey = placement.entities[graph.entities[m].vid]
                ax.plot(
                    [hx, ex],
                    [hy, ey],
                    color=style.hyperedge_color,
                    linestyle="--",
                    linewidth=0.7 * style.line_width,
                    alpha=0.6,
                    zorder=1,
                )
        ax.scatter(
            [hx],
            [hy],
            marker=style.hyperedge_marker,
            s=(style.font_size * 2.6) ** 2,
            facecolor="white",
            edgecolor=style.hyperedge_color,
            linewidth=1.4,
            zorder=3,
        )
        ax.text(
            hx,
            hy,
            group_tag(group),
            fontsize=style.font_size - 2,
            ha="center",
            va="center",
            color=style.hyperedge_color,
            fontweight="bold",
            zorder=4,
        )
        if placement.layout == "bi-inc" and style.labels:
            ax.text(
                hx + 0.035,
                hy,
                _label(edge.description, style.max_label_chars + 8),
                fontsize=style.font_size - 1,
                ha="left",
                va="center",
                color="#333333",
                zorder=4,
            )


def _draw_entities(ax: Axes, graph: VizGraph, placement: Placement, style: Style) -> None:
    """Entities as circles labelled "E3 name"."""
    by_vid = {e.vid: e for e in graph.entities.values()}
    xs = [placement.entities[v][0] for v in by_vid]
    ys = [placement.entities[v][1] for v in by_vid]
    ax.scatter(
        xs,
        ys,
        s=60,
        marker=style.entity_marker,
        facecolor=[style.entity_color if e.asked else "white" for e in by_vid.values()],  # the question's
        edgecolor=style.entity_color,
        linewidth=1.5,
        zorder=3,
    )
    if not style.labels:
        return
    for vid, entity in by_vid.items():
        x, y = placement.entities[vid]
        ax.text(
            x,
            y - 0.018,
            _label(f"{vid} {entity.name}", style.max_label_chars),
            fontsize=style.font_size,
            ha="center",
            va="top",
            color="#111111",
            zorder=5,
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.75},
        )


def draw_panel(ax: Axes, graph: VizGraph, placement: Placement, style: Style) -> None:
    # The panel is filled (positions are scaled per axis); Bi-Inc keeps room right of its hyperedge
    # column for what each hyperedge says.
    ax.set_xlim(-0.02, 1.45 if placement.layout == "bi-inc" else 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_aspect("auto")
    ax.axis("off")
    draw_hyperedges = _draw_regions if placement.set_based else _draw_hyperedge_nodes
    draw_hyperedges(ax, graph, placement, graph.groups(), style)
    _draw_entities(ax, graph, placement, style)
    ax.text(  # the layout's name above its panel: below, the legend would cover it
        0.5,
        1.0,
        placement.layout,
        transform=ax.transAxes,
        ha="center",
        va="bottom",
        fontsize=style.font_size + 2,
        color="#555555",
    )


def _legend(fig, graph: VizGraph, style: Style) -> None:
    edges = sorted(graph.edges.values(), key=lambda e: int(e.vid[1:]))[: style.legend_items]
    by_key = {e.key: e.vid for e in graph.entities.values()}
    lines = [
        _label(f"{e.vid} [{e.level}] {', '.join(by_key[m] for m in e.members if m in by_key)}: {e.description}", 110)
        for e in edges
    ]
    more = len(graph.edges) - len(edges)
    if more > 0:
        lines.append(f"… and {more} more hyperedges (see the id mapping)")
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=style.font_size - 1, va="bottom", ha="left", family="monospace")


def render(graph: VizGraph, layouts: list[str] | str, out: str | Path, style: Style | None = None) -> Path:
    """Draw one layout, or two side by side (a dual view), to a .png or .svg file."""
    style = style or Style()
    names = [layouts] if isinstance(layouts, str) else list(layouts)
    if not 1 <= len(names) <= 2:
        raise HyperfolioError("draw one layout or a dual view of two")
    if not graph.entities:
        raise HyperfolioError("nothing to draw: the selection has no entities with hyperedges")
    target = Path(out)
    if target.suffix.lower() not in (".png", ".svg"):
        raise HyperfolioError(f"{target.name}: choose a .png or .svg file (or .html for the interactive view)")
    placements = [place(graph, name) for name in names]
    legend_share = 0.22 if style.legend else 0.04
    fig = plt.figure(figsize=(style.width_px * len(names) / style.dpi, style.height_px / style.dpi), dpi=style.dpi)
    for i, placement in enumerate(placements):
        ax = fig.add_axes((i / len(names), legend_share, 1 / len(names), 1 - legend_share - 0.04))
        draw_panel(ax, graph, placement, style)
    if style.title and graph.title:
        fig.suptitle(_label(graph.title, 140), fontsize=style.font_size + 4)
    if style.legend:
        _legend(fig, graph, style)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=style.dpi)
    plt.close(fig)
    return target
