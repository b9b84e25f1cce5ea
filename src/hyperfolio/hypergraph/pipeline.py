"""Building one document's share of the hypergraph: extract, merge, store, embed, refine."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from hyperfolio.config import BuildOptions
from hyperfolio.embed.protocols import Embedder
from hyperfolio.hypergraph.aliases import find_aliases
from hyperfolio.hypergraph.extract import Extractor, page_units
from hyperfolio.hypergraph.layers import (
    THEME,
    Themer,
    build_theme_layer,
    prune_layer_vectors,
    update_concept_layer,
)
from hyperfolio.hypergraph.layers_offline import OfflineThemer
from hyperfolio.hypergraph.ledger import BuildLedger
from hyperfolio.hypergraph.merge import MergedGraph, acronym_aliases, document_names, merge
from hyperfolio.hypergraph.reconcile import (
    ConflictDetector,
    ConflictResolver,
    ReconcileReport,
    apply_reconcile,
    reconcile,
)
from hyperfolio.hypergraph.reconcile_offline import OfflineDetector, OfflineResolver
from hyperfolio.hypergraph.refine import Refiner, RefineReport, refine_anchors, refine_pages
from hyperfolio.model import VALUE_TYPES, Entity, Hyperedge
from hyperfolio.store.base import ENTITY_SPACE, HYPEREDGE_SPACE, GraphStore, Store, chunk_doc_page, scoped_key
from hyperfolio.timing import StageTimes


@dataclass
class GraphReport:
    doc_id: str
    entities: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    refine: RefineReport = field(default_factory=RefineReport)
    reconcile: ReconcileReport = field(default_factory=ReconcileReport)
    concepts: int = 0
    themes: int = 0
    seconds: float = 0.0
    offline: int = 0  # parts built offline because the model failed (hypergraph/ledger.py)
    resumed: bool = False  # went on after the graph was written (extraction and reconciliation not run)
    extraction: dict[str, int] = field(default_factory=dict)  # EXTRACTION_COUNTS of this document


# What a model's extraction of one document dropped or was given, by the extractor's counter it comes
# from; recorded with the document's reconciliation counts (and so in `hyperfolio stats`).
EXTRACTION_COUNTS = {
    "unmatched_entities": "invented",  # entities named nowhere on their page
    "unmatched_facts": "unmatched_facts",  # facts whose head or tail their page does not state
    "table_facts_added": "table_facts",  # facts read from tables' cells beside the model's own
}


def entity_text(entity: Entity) -> str:
    """What an entity is embedded as: its name first (keywords are matched against names)."""
    return f"{entity.name} ({entity.type})" if entity.type else entity.name


def edge_text(edge: Hyperedge) -> str:
    return edge.description + (" — " + ", ".join(edge.keywords) if edge.keywords else "")


def embed_graph_items(store: GraphStore, embedder: Embedder, doc_id: str, extra_edges: Sequence[str] = ()) -> None:
    """Vectors for the document's entities and hyperedges, one per document each item is evidenced in.

    `extra_edges` are hyperedges made while adding this document whose evidence may lie only in
    other documents (refinements of anchors it shares with them).
    """
    entities = [e for e in store.get_entities(store.document_entities(doc_id)) if e.type not in VALUE_TYPES]
    if entities:  # values are matched by their name, never by a vector ("2019" is near every year)
        vectors = embedder.embed([entity_text(e) for e in entities])
        store.put_vectors(ENTITY_SPACE, [(scoped_key(e.entity_id, doc_id), doc_id) for e in entities], vectors)
    edges = store.get_hyperedges(list(dict.fromkeys([*store.document_hyperedges(doc_id), *extra_edges])))
    edges = [e for e in edges if e.level != THEME]  # themes have their own space (the top layer)
    if not edges:
        return
    vectors = embedder.embed([edge_text(e) for e in edges])
    docs = store.provenance("hyperedge", [e.edge_id for e in edges])
    items, rows = [], []
    for i, edge in enumerate(edges):
        for doc in sorted({d for _, d, _ in docs.get(edge.edge_id, [])} or {doc_id}):
            items.append((scoped_key(edge.edge_id, doc), doc))
            rows.append(vectors[i])
    store.put_vectors(HYPEREDGE_SPACE, items, np.vstack(rows))


@dataclass
class GraphParts:
    """The components a document's graph is built with (offline or a model's: `components.py` chooses)."""

    extractor: Extractor
    refiner: Refiner
    embedder: Embedder  # the graph embedder: entities, hyperedges, concepts, themes
    summarise: Callable[[MergedGraph], int] | None = None
    detector: ConflictDetector | None = None
    resolver: ConflictResolver | None = None
    themer: Themer | None = None


@dataclass
class BuildRun:
    """How one build reports and resumes: `on_stage` hears each step's name, `times` gets the seconds each
    step took, `on_written` joins the transaction that writes the graph, `resume` goes on after it."""

    on_stage: Callable[[str], None] | None = None
    times: StageTimes = field(default_factory=StageTimes)
    on_written: Callable[[], None] | None = None
    resume: bool = False


@runtime_checkable
class KeepsLedger(Protocol):
    """A model's component that records which parts the model built and which fell back to offline."""

    ledger: BuildLedger | None


@runtime_checkable
class CountsCalls(Protocol):
    """A model's extractor that reports its calls as they finish: (calls done, calls in all)."""

    on_progress: Callable[[int, int], None] | None


def build_document_graph(
    store: Store, doc_id: str, title: str, parts: GraphParts, options: BuildOptions, run: BuildRun | None = None
) -> GraphReport:
    """Extract, merge, reconcile and write the document's graph, then refine, embed and layer it.

    Everything the first part changes (the new graph, reconciliation's edits to earlier documents, the
    decision log) is written in one transaction, which `on_written` joins (the caller records there
    how far the document got). Every later step reads what it works on from the store, so `resume` (the document was
    cut off after that transaction) goes on from there and ends as an uninterrupted build would.
    """
    started = time.perf_counter()
    run = run or BuildRun()
    report = GraphReport(doc_id, resumed=run.resume)
    note = run.on_stage or (lambda _stage: None)
    times, refiner, embedder = run.times, parts.refiner, parts.embedder
    if not run.resume:
        _write_document_graph(store, doc_id, title, parts, options, note, times, run.on_written, report)
    candidates = sorted(store.document_entities(doc_id))
    if run.resume:
        report.entities = len(candidates)
    refined_edges: list[str] = []
    if options.refine:
        note("refining")
        with times.stage("refine"):
            if options.refine_mode == "full":
                report.refine = refine_pages(store, refiner, doc_id)
                refined_edges = report.refine.added_edge_ids
            else:
                report.refine = refine_anchors(
                    store, refiner, candidates, options.anchor_min_pages, cover=options.anchor_cover
                )
                # Every refinement of this document's anchors, made now or before (a resumed build
                # finds the anchors it refined before the cut unchanged).
                refined_edges = sorted({e for _, edges in store.refine_signatures(candidates).values() for e in edges})
    note("embedding graph")
    with times.stage("graph embedding"):
        embed_graph_items(store, embedder, doc_id, refined_edges)
    if options.concepts:
        note("concept layer")
        with times.stage("concepts"):
            report.concepts = update_concept_layer(store, embedder, doc_id, docs=reconciled_documents(store, doc_id))
    if options.themes:
        note("theme layer")
        with times.stage("themes"):
            report.themes = build_theme_layer(store, embedder, doc_id, parts.themer or OfflineThemer())
    report.seconds = time.perf_counter() - started
    return report


def reconciled_documents(store: Store, doc_id: str) -> list[str]:
    """Other documents whose facts reconciling this one revised or dropped (their evidence is theirs)."""
    docs = {
        chunk_doc_page(chunk)[0]
        for d in store.decisions(doc_id)
        if d.decision in ("revised", "dropped")
        for chunk in d.evidence
    }
    return sorted(docs - {doc_id})


def _write_document_graph(
    store: Store,
    doc_id: str,
    title: str,
    parts: GraphParts,
    options: BuildOptions,
    note: Callable[[str], None],
    times: StageTimes,
    on_written: Callable[[], None] | None,
    report: GraphReport,
) -> None:
    """Extraction to the written graph; the store changes only in the last, single transaction."""
    units = page_units(doc_id, title, store.iter_chunks(doc_id))
    note("extracting")
    extractor = parts.extractor
    before = {name: getattr(extractor, attr, 0) for name, attr in EXTRACTION_COUNTS.items()}
    with times.stage("extraction"):
        graphs = extractor.extract_document(units)
    if hasattr(extractor, "unmatched_facts"):  # the model's extractor; the offline one drops nothing
        report.extraction = {name: getattr(extractor, attr) - before[name] for name, attr in EXTRACTION_COUNTS.items()}
    with times.stage("merge"):
        aliases = None
        if options.aliases:
            embed = parts.embedder.embed
            aliases = find_aliases(document_names(graphs), embed, options.alias_threshold, acronym_aliases(graphs))
        merged = merge(graphs, options.max_description_chars, aliases)
    if parts.summarise is not None:
        note("summarising descriptions")
        with times.stage("summaries"):
            parts.summarise(merged)
    if options.reconcile:
        note("reconciling facts")
        with times.stage("reconcile"):
            detector, resolver = parts.detector or OfflineDetector(), parts.resolver or OfflineResolver()
            report.reconcile = reconcile(store, merged, doc_id, detector, resolver, apply=False)
    entities = [
        (
            Entity(
                e.entity_id,
                e.name,
                e.type,
                e.description(options.max_description_chars),
                e.modality,
                e.aliases,
                e.norm_name,
                e.concept,
            ),
            e.chunks,
        )
        for e in merged.entities.values()
    ]
    edges = [
        (Hyperedge(h.edge_id, h.level, h.description, h.keywords, h.strength, h.members, h.relation), h.chunks)
        for h in merged.edges.values()
    ]
    # Concepts of earlier documents' entities whose facts reconciliation changed are recomputed here, in
    # the documents whose facts it changed (only their rows change); the document's own, with its
    # vectors, in the concept step.
    earlier = sorted(set(store.concepts_of(sorted(report.reconcile.touched)).values()))
    with times.stage("graph writes"), store.atomic():
        if options.reconcile:
            apply_reconcile(store, doc_id, report.reconcile, report.extraction)
        elif report.extraction:
            store.save_reconcile_counts(doc_id, report.extraction)
        store.write_graph(entities, edges, options.max_description_chars)
        if options.concepts and earlier:
            for doc in reconciled_documents(store, doc_id):  # their new vectors come in the concept step
                store.rebuild_concepts(earlier, doc_id=doc)
                prune_layer_vectors(store, doc)
        if on_written is not None:
            on_written()
    report.entities = len(entities)
    for h, _ in edges:
        report.edges[h.level] = report.edges.get(h.level, 0) + 1
