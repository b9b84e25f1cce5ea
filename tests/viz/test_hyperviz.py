"""HyperViz: stable ids, congestion control, the six layouts and the dual view, the CLI."""

from __future__ import annotations

import json

import pytest
from PIL import Image
from typer.testing import CliRunner

from hyperfolio.cli import app
from hyperfolio.errors import HyperfolioError
from hyperfolio.viz import LAYOUTS, Budget, Style, VizGraph, place, prune, render
from hyperfolio.viz.congestion import visual_cost
from hyperfolio.viz.graph import VizEdge, VizEntity


def star_graph(spokes: int = 60) -> VizGraph:
    """A hub in every hyperedge, a query-relevant entity at the rim, and many minor ones."""
    graph = VizGraph(title="synthetic")
    graph.entities["hub"] = VizEntity("hub", "Osprey Shipping Company", "name", "the operator")
    graph.entities["port"] = VizEntity("port", "Rotterdam", "name", "home port of the fleet")
    graph.edges["h0"] = VizEdge("h0", "low", "Osprey operates from Rotterdam", ["hub", "port"])
    for i in range(spokes):
        key = f"v{i:03d}"
        graph.entities[key] = VizEntity(key, f"Vessel number {i}", "table_key", "a ship")
        graph.edges[f"h{i + 1}"] = VizEdge(f"h{i + 1}", "high", f"row {i}", ["hub", key, f"v{(i + 1) % spokes:03d}"])
    return graph.number()


def test_display_ids_are_stable_and_the_mapping_names_the_same_objects():
    first, second = star_graph(), star_graph()
    assert {e.key: e.vid for e in first.entities.values()} == {e.key: e.vid for e in second.entities.values()}
    assert first.entities["hub"].vid == "E1"  # the most connected entity comes first
    mapping = first.mapping()
    assert mapping["entities"]["E1"]["name"] == "Osprey Shipping Company"
    ids = set(mapping["entities"])
    for edge in mapping["hyperedges"].values():
        assert all(member.split(" ", 1)[0] in ids for member in edge["members"])


def test_congestion_pruning_fits_the_budget_and_keeps_what_matters():
    graph = star_graph()
    budget = Budget(width=800, height=600)
    assert visual_cost(graph, budget) > budget.limit
    report = prune(graph, "Rotterdam home port", budget)
    assert report.cost_after <= report.limit < report.cost_before
    assert "hub" in graph.entities  # most central
    assert "port" in graph.entities  # most relevant to the query, though it has a single hyperedge
    assert len(graph.entities) < 62 and report.removed
    assert all(len(e.members) >= 2 for e in graph.edges.values())
    assert sorted(int(e.vid[1:]) for e in graph.entities.values()) == list(range(1, len(graph.entities) + 1))


@pytest.mark.parametrize(
    "layout",
    [pytest.param(n, marks=pytest.mark.needs("graphviz")) if n.startswith("set-") else n for n in LAYOUTS],
)
def test_every_layout_places_every_entity_inside_the_canvas(layout):
    graph = star_graph(12)
    placement = place(graph, layout)
    assert set(placement.entities) == {e.vid for e in graph.entities.values()}
    assert all(0.0 <= x <= 1.0 and 0.0 <= y <= 1.0 for x, y in placement.entities.values())
    if placement.set_based:
        assert not placement.hyperedges
    else:
        assert placement.hyperedges  # induced views have a node per hyperedge (group)


def test_layouts_differ_as_the_paper_describes():
    graph = star_graph(12)
    bipartite = place(graph, "bi-inc")
    assert {round(x, 3) for x, _ in bipartite.entities.values()} != {
        round(x, 3) for x, _ in bipartite.hyperedges.values()
    }
    radial = place(graph, "ra-cen")
    hub = radial.entities["E1"]
    others = [p for v, p in radial.entities.items() if v != "E1"]
    assert all((x - 0.5) ** 2 + (y - 0.5) ** 2 >= (hub[0] - 0.5) ** 2 + (hub[1] - 0.5) ** 2 for x, y in others)
    assert place(graph, "cli-exp").clique_edges  # hyperedges expanded into member pairs


@pytest.mark.needs("graphviz")
def test_render_png_svg_and_dual_view(tmp_path):
    graph = star_graph(10)
    single = render(graph, "set-radial", tmp_path / "one.png")
    dual = render(graph, ["set-force", "bi-inc"], tmp_path / "two.png")
    with Image.open(single) as a, Image.open(dual) as b:
        assert a.size == (1600, 1200) and b.size == (3200, 1200)
        assert len(a.convert("L").getcolors(maxcolors=1 << 16) or []) > 10  # something was drawn
    svg = render(graph, "cli-exp", tmp_path / "one.svg").read_text()
    assert "E1 Osprey Shipping Company" in svg.replace("\u2026", "")  # labels carry the display ids
    plain = render(
        graph, "bi-inc", tmp_path / "plain.svg", Style(legend=False, labels=False, entity_marker="D", line_width=2)
    ).read_text()
    assert "row 0" not in plain
    assert "row 0" in render(graph, "bi-inc", tmp_path / "legend.svg", Style(labels=False)).read_text()  # legend
    # Bi-Inc also says what each hyperedge is beside its node.
    assert "row 0" in render(graph, "bi-inc", tmp_path / "beside.svg", Style(legend=False)).read_text()
    with pytest.raises(HyperfolioError):
        render(graph, "spiral", tmp_path / "x.png")
    with pytest.raises(HyperfolioError):
        render(graph, "set-hier", tmp_path / "x.gif")


@pytest.mark.needs("graphviz")
def test_viz_command_writes_the_picture_and_the_mapping(tmp_path):
    doc = tmp_path / "fleet.md"
    doc.write_text(
        "# Fleet\n\n## Operations\n\nThe Osprey Shipping Company operates container vessels from Rotterdam "
        "and Singapore. The Osprey Shipping Company carried 412,000 TEU in 2023.\n\n"
        "| Vessel | Capacity (TEU) |\n| --- | --- |\n| Aurora | 8,500 |\n| Borealis | 9,200 |\n"
    )
    runner = CliRunner()
    col = str(tmp_path / "col")
    assert runner.invoke(app, ["add", str(doc), "-c", col]).exit_code == 0
    out = tmp_path / "pics" / "fleet.png"
    result = runner.invoke(app, ["viz", "-c", col, "--doc", "fleet.md", "--out", str(out)])
    assert result.exit_code == 0, result.output
    mapping = json.loads(out.with_suffix(".json").read_text())
    names = {e["name"] for e in mapping["entities"].values()}
    assert "Osprey Shipping Company" in names and mapping["hyperedges"]
    neighbourhood = runner.invoke(
        app, ["viz", "-c", col, "--entity", "Aurora", "--layout", "ra-cen", "--out", str(tmp_path / "a.svg")]
    )
    assert neighbourhood.exit_code == 0, neighbourhood.output
    both = runner.invoke(app, ["viz", "-c", col, "--doc", "fleet.md", "--entity", "x", "--out", str(out)])
    assert both.exit_code == 1 and "exactly one" in both.output


@pytest.mark.needs("graphviz")
def test_probes_have_known_answers_and_the_best_pair_wins(tmp_path):
    from hyperfolio.viz.probe import DEFAULT_PAIR, PAIRS, choose_layouts, make_probes, read_id

    graph = star_graph(12)
    # A second cluster, joined to the first only through the port: "hb" is a bridge by construction.
    for key, name in (("a1", "Lisbon"), ("a2", "Porto"), ("a3", "Faro")):
        graph.entities[key] = VizEntity(key, name, "name")
    graph.edges["ha"] = VizEdge("ha", "high", "Portuguese ports", ["a1", "a2", "a3"])
    graph.edges["hb"] = VizEdge("hb", "low", "Rotterdam to Lisbon", ["port", "a1"])
    probes = make_probes(graph.number(), k=6)
    kinds = {p.kind for p in probes}
    assert kinds == {"overlap-core", "bridge"}
    for probe in probes:
        if probe.kind == "overlap-core":
            core = next(e for e in probe.graph.entities.values() if e.vid == probe.answer)
            assert all(core.key in e.members for e in probe.graph.edges.values())
        else:
            assert probe.answer in {e.vid for e in probe.graph.edges.values()}
    assert read_id("It is entity e3, I think", "overlap-core") == "E3" and read_id("H 2.", "bridge") == "H2"

    # No vision model: the documented default pair.
    assert choose_layouts(probes, None).pair == DEFAULT_PAIR

    class Reader:
        """A stand-in vision model that reads only the third pair's pictures correctly."""

        def __init__(self) -> None:
            self.calls = 0

        def describe(self, prompt: str, images: list[bytes]) -> str:
            index, self.calls = self.calls, self.calls + 1
            pair = index // len(probes)
            probe = probes[index % len(probes)]
            assert images and images[0][:4] == b"\x89PNG"
            return f"The answer is {probe.answer}." if pair == 2 else "E99"

    choice = choose_layouts(probes, Reader(), draw=lambda g, pair, path: render(g, pair, path))
    assert choice.pair == PAIRS[2]
    assert {r.pair: r.correct for r in choice.results}[PAIRS[2]] == len(probes)


@pytest.mark.needs("graphviz")
def test_probe_layouts_command_asks_the_vision_model_and_keeps_the_winner(tmp_path, llm_server, embedder):
    from fake_openai_server import Reply

    from hyperfolio import Collection

    asked: list[dict] = []

    def vision(request: dict) -> Reply:
        asked.append(request)
        parts = request["messages"][-1]["content"]
        assert any(p.get("type") == "image_url" for p in parts)  # the dual view goes to the model
        return Reply("E1")

    llm_server.handler = vision
    doc = tmp_path / "fleet.md"
    doc.write_text(
        "# Fleet\n\n## Operations\n\nThe Osprey Shipping Company operates vessels from Rotterdam and Singapore. "
        "The Osprey Shipping Company and the Maersk Line share Rotterdam. Singapore hosts the Maersk Line.\n\n"
        "| Vessel | Port | Capacity (TEU) |\n| --- | --- | --- |\n| Aurora | Rotterdam | 8,500 |\n"
        "| Borealis | Singapore | 9,200 |\n"
    )
    with Collection(tmp_path / "col", embedder=embedder) as col:  # built offline
        col.add([doc])
    (tmp_path / "col" / "settings.toml").write_text(
        f'[models]\nbase_url = "{llm_server.url}"\nvision_model = "fake-vision"\nmax_retries = 0\n'
    )
    result = CliRunner().invoke(app, ["probe-layouts", "-c", str(tmp_path / "col"), "-k", "2"])
    assert result.exit_code == 0, result.output
    assert "dual view:" in result.output and "probes answered right" in result.output
    assert len(asked) == 9 * int(result.output.split("/")[1].split()[0])  # every pair, every probe
    with Collection(tmp_path / "col", embedder=embedder) as col:
        assert col.store.get_meta("viz_layouts") in {
            f"{a},{b}" for a, b in __import__("hyperfolio.viz.probe", fromlist=["PAIRS"]).PAIRS
        }
