"""What a collection shows of its documents: a document's pages with their chunks, and a drawing of part
of the hypergraph written to a file with the mapping of its ids to names beside it."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperfolio.errors import HyperfolioError
from hyperfolio.llm.protocols import VisionModel
from hyperfolio.model import DocumentInfo, EvidencePackage
from hyperfolio.store.base import Store
from hyperfolio.viz.congestion import prune
from hyperfolio.viz.draw import render
from hyperfolio.viz.evidence import evidence_graph, tidy
from hyperfolio.viz.graph import VizGraph, document_graph, entity_graph
from hyperfolio.viz.html import write_html
from hyperfolio.viz.probe import DEFAULT_PAIR, Choice, choose_layouts, make_probes


@dataclass
class Picture:
    """A drawing of part of the hypergraph and the JSON mapping of its ids to names."""

    path: Path
    mapping: Path
    entities: int
    hyperedges: int
    pruned: int


def document_pages(store: Store, doc_id: str) -> list[dict[str, Any]]:
    """A document's pages: size in points and each chunk's id, modality, region and text."""
    chunks: dict[int, list[dict[str, Any]]] = {}
    for chunk in store.iter_chunks(doc_id):
        chunks.setdefault(chunk.page, []).append(
            {
                "chunk_id": chunk.chunk_id,
                "modality": chunk.modality,
                "bbox": list(chunk.bbox) if chunk.bbox else None,
                "section_path": chunk.section_path,
                "text": chunk.text,
            }
        )
    return [
        {"number": page.number, "width": page.width, "height": page.height, "chunks": chunks.get(page.number, [])}
        for page in store.get_pages(doc_id)
    ]


def page_picture(
    info: DocumentInfo, page: int, boxes: Sequence[Sequence[float]], dpi: int, quotes: Sequence[str] = ()
) -> bytes:
    """PNG of a page of a PDF document with `boxes` (cited regions, in points) highlighted and the lines
    of `quotes` (what answers inside them) marked more strongly."""
    from hyperfolio.viz.page import render_page

    return render_page(_pdf(info), page, boxes, dpi, quotes)


def page_regions(
    info: DocumentInfo, page: int, boxes: Sequence[Sequence[float]], quotes: Sequence[str]
) -> dict[str, Any]:
    """Where `quotes` are inside `boxes` on a page of a PDF document (`viz.page.page_regions`)."""
    from hyperfolio.viz.page import page_regions as located

    return located(_pdf(info), page, boxes, quotes)


def _pdf(info: DocumentInfo) -> str:
    if info.kind != "pdf":
        raise HyperfolioError(f"{info.title} is a {info.kind} document; pages are drawn for PDFs only")
    return info.source


def focus_graph(
    store: Store, doc: DocumentInfo | None, entity: str | None, evidence: EvidencePackage | None
) -> VizGraph:
    """The part of the hypergraph a picture shows: a document's, an entity's neighbourhood (entities
    whose names match), or the evidence behind a question."""
    if doc is not None:
        return tidy(store, document_graph(store, doc.doc_id, doc.title)).number()
    if entity is not None:
        ids = store.entities_matching(entity)
        if not ids:
            raise HyperfolioError(f"no entity named {entity!r} in this collection")
        return tidy(store, entity_graph(store, ids, f"around {entity}"), set(ids)).number()
    assert evidence is not None
    return evidence_graph(store, evidence)


def draw(store: Store, graph: VizGraph, target: Path, focus: str, layout: str | None) -> Picture:
    """`graph` pruned around `focus` (a question or an entity's name) and drawn to `target`: .png or .svg in
    `layout` (default: the collection's probed pair), or .html opening on the pruned view, whose clicks
    bring in the rest."""
    full = copy.deepcopy(graph)
    report = prune(graph, focus)
    if target.suffix.lower() == ".html":
        path = write_html(full, graph, target)
        graph = full
    else:
        chosen = layout or store.get_meta("viz_layouts") or ",".join(DEFAULT_PAIR)
        path = render(graph, [name.strip() for name in chosen.split(",") if name.strip()], target)
    mapping = path.with_suffix(".json")
    mapping.write_text(json.dumps(graph.mapping(), indent=2, ensure_ascii=False))
    return Picture(path, mapping, len(graph.entities), len(graph.edges), len(report.removed))


def probe_layouts(store: Store, docs: Sequence[DocumentInfo], vision: VisionModel | None, k: int) -> Choice:
    """VizRAG's layout choice: probes drawn from these documents' graph in each dual view, read by the
    vision model; the view it reads best is kept as the collection's default for pictures."""
    graph = document_graph(store, docs[0].doc_id, docs[0].title)
    for info in docs[1:]:
        more = document_graph(store, info.doc_id)
        graph.entities.update(more.entities)
        graph.edges.update(more.edges)
    choice = choose_layouts(make_probes(graph.number(), k=k), vision)
    store.set_meta("viz_layouts", ",".join(choice.pair))
    return choice
