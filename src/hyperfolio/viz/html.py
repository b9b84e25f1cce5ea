"""A self-contained interactive view of a hypergraph: one HTML file, no network needed.

The drawing library (vis-network, shipped in `viz/assets`) is inlined into the page, so the
file opens anywhere, offline. Entities are circles, hyperedges squares joined
to their members (the induced view). The page starts from the pruned selection; clicking an
entity brings in every hyperedge it belongs to, with their members; clicking a hyperedge shows
its members, description, source chunks and pages in the side panel; hovering shows details.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path

from hyperfolio.errors import HyperfolioError
from hyperfolio.viz.graph import VizGraph

VIS_JS = ("assets", "vis-network.min.js")


def vis_network_js() -> str:
    try:
        return resources.files("hyperfolio.viz").joinpath(*VIS_JS).read_text(encoding="utf-8")
    except FileNotFoundError as exc:  # pragma: no cover - a broken install
        raise HyperfolioError(f"the interactive view's script is missing from the install: {'/'.join(VIS_JS)}") from exc


def graph_payload(full: VizGraph, shown: VizGraph) -> dict:
    """Everything the page may show (the full selection) and what it shows first (the pruned one)."""
    entities = {e.key: e for e in full.entities.values()}
    return {
        "title": full.title,
        "entities": [
            {
                "id": e.key,
                "vid": e.vid,
                "name": e.name,
                "type": e.type,
                "modality": e.modality,
                "description": e.description[:600],
            }
            for e in entities.values()
        ],
        "hyperedges": [
            {
                "id": h.key,
                "vid": h.vid,
                "level": h.level,
                "description": h.description[:800],
                "members": h.members,
                "chunks": h.chunks[:12],
                "pages": [f"{doc} p.{page}" for doc, page in h.pages[:12]],
            }
            for h in full.edges.values()
        ],
        # The pruned view: its entities, and each hyperedge with the members it kept.
        "initial": {"entities": list(shown.entities), "hyperedges": {k: h.members for k, h in shown.edges.items()}},
    }


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
  content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>__TITLE__</title>
<style>
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; display: flex; height: 100vh; }
#graph { flex: 1; border-right: 1px solid #ddd; }
#side { width: 340px; padding: 12px 16px; overflow-y: auto; background: #fafafa; }
#side h2 { font-size: 16px; margin: 4px 0 8px; }
.muted { color: #666; font-size: 12px; }
li { margin-bottom: 4px; }
@media (max-width: 800px) {  /* narrow (e.g. beside an answer in the web app): details under the graph */
  body { flex-direction: column; }
  #graph { flex: 0 0 65%; min-height: 0; overflow: hidden; border-right: 0; border-bottom: 1px solid #ddd; }
  #side { width: auto; flex: 1 1 0; min-height: 0; box-sizing: border-box; }
}
</style></head>
<body>
<div id="graph"></div>
<div id="side"><h2>__TITLE__</h2>
<p class="muted">Scroll to zoom, drag to pan. Click an entity (circle) to bring in its hyperedges;
click a hyperedge (square) for its members and sources.</p>
<p class="muted" id="counts"></p><div id="details"></div></div>
<script>__VIS__</script>
<script>
const DATA = __DATA__;
const entities = new Map(DATA.entities.map(e => [e.id, e]));
const hyperedges = new Map(DATA.hyperedges.map(h => [h.id, h]));
const nodes = new vis.DataSet();
const edges = new vis.DataSet();
const levelColor = {low: "#c55a11", high: "#c55a11", refine: "#7b3294", fact: "#1b7837"};
const ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"};
function esc(s) { return String(s).replace(/[&<>"]/g, c => ESCAPES[c]); }
function showEntity(id) {
  if (nodes.get(id) || !entities.has(id)) return;
  const e = entities.get(id);
  nodes.add({id, label: e.vid + " " + e.name, shape: "dot", size: 9, kind: "entity",
             color: {background: "#ffffff", border: "#1f4e79"}, borderWidth: 2,
             title: e.vid + " " + e.name + (e.type ? " (" + e.type + ")" : "") + "\\n" + e.description});
}
function showHyperedge(id, only) {
  if (!hyperedges.has(id)) return;
  const h = hyperedges.get(id);
  const color = levelColor[h.level] || "#c55a11";
  if (!nodes.get(id)) {
    nodes.add({id, label: h.vid, shape: "square", size: 7, kind: "hyperedge",
               color: {background: "#ffffff", border: color}, borderWidth: 2,
               title: h.vid + " [" + h.level + "] " + h.description});
  }
  for (const m of (only || h.members)) {
    showEntity(m);
    if (!edges.get(id + "|" + m)) {
      edges.add({id: id + "|" + m, from: id, to: m, dashes: true, color: {color: color, opacity: 0.6}});
    }
  }
}
function counts() {
  const shown = nodes.get();
  document.getElementById("counts").textContent =
    shown.filter(n => n.kind === "entity").length + " of " + entities.size + " entities, " +
    shown.filter(n => n.kind === "hyperedge").length + " of " + hyperedges.size + " hyperedges shown";
}
function expand(entityId) {
  for (const h of hyperedges.values()) if (h.members.includes(entityId)) showHyperedge(h.id);
  counts();
}
function describe(id) {
  const box = document.getElementById("details");
  if (hyperedges.has(id)) {
    const h = hyperedges.get(id);
    const members = h.members.map(m => entities.get(m)).filter(Boolean)
      .map(e => "<li>" + esc(e.vid + " " + e.name) + "</li>").join("");
    box.innerHTML = "<h2>" + esc(h.vid) + " <span class=muted>" + esc(h.level) + "</span></h2>" +
      "<p>" + esc(h.description) + "</p><b>Members</b><ul>" + members + "</ul>" +
      "<b>Sources</b><ul>" + h.pages.map(p => "<li>" + esc(p) + "</li>").join("") + "</ul>" +
      "<p class=muted>chunks: " + esc(h.chunks.join(", ")) + "</p>";
  } else if (entities.has(id)) {
    const e = entities.get(id);
    box.innerHTML = "<h2>" + esc(e.vid + " " + e.name) + "</h2><p class=muted>" + esc(e.type) + ", " +
      esc(e.modality) + "</p><p>" + esc(e.description) + "</p>";
  }
}
DATA.initial.entities.forEach(showEntity);
Object.entries(DATA.initial.hyperedges).forEach(([id, members]) => showHyperedge(id, members));
counts();
const network = new vis.Network(document.getElementById("graph"), {nodes, edges}, {
  physics: {stabilization: {iterations: 150}, barnesHut: {springLength: 110}},
  interaction: {hover: true, tooltipDelay: 120}, edges: {smooth: false}
});
network.on("click", params => {
  if (!params.nodes.length) return;
  const id = params.nodes[0];
  describe(id);
  if (entities.has(id)) expand(id);
});
window.hyperfolio = {network, nodes, edges, expand, describe};
</script></body></html>
"""


def write_html(full: VizGraph, shown: VizGraph, out: str | Path) -> Path:
    """Write the interactive page; `shown` (usually the pruned copy of `full`) is what it opens with."""
    target = Path(out)
    if target.suffix.lower() != ".html":
        raise HyperfolioError(f"{target.name}: the interactive view is written to an .html file")
    payload = json.dumps(graph_payload(full, shown), ensure_ascii=False).replace("</", "<\\/")
    page = (
        PAGE.replace("__TITLE__", html.escape(full.title or "hypergraph"))
        .replace("__VIS__", vis_network_js().replace("</script", "<\\/script"))
        .replace("__DATA__", payload)
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")
    return target
