"""Top-down retrieval over the two-layer index (VizRAG section 4).

Question keywords (theme and entity keywords, as for `dual`) -> top-layer theme hyperedges ->
the key entities those themes name -> the same entities in the bottom layer, with the entities
the entity keywords match -> their neighbourhood hyperedges -> source chunks. Chunks reached
through themes and neighbourhoods are ranked by that evidence and fused with the flat rankings.
With a vision model configured (and `visual`), the model also picks key entities from a picture
of the matched themes over their key entities. With `render`, the bottom-layer subgraph is drawn
for a vision model and the time it takes is reported apart (`meta["render_seconds"]`).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.fence import PICTURE_RULE, Fence, with_evidence_rule
from hyperfolio.llm.messages import system_message, user_message
from hyperfolio.model import EvidencePackage, Hyperedge
from hyperfolio.retrieve.base import Query, RetrievalContext, Traits
from hyperfolio.retrieve.evidence import package
from hyperfolio.retrieve.graph_paths import (
    GraphHits,
    Provenance,
    add_scores,
    chunk_scores,
    entity_hits,
    hyperedge_hits,
    keyword_entities,
    matched_themes,
    ranked,
    searchable_scope,
    spread_to_edges,
)
from hyperfolio.retrieve.rankings import fuse_with_flat

BOTTOM_LEVELS = ["low", "high", "refine"]


@dataclass
class TopDownReach:
    """What the two layers reached for one question."""

    by_theme: dict[str, float]  # chunk -> score through the matched themes
    by_neighbourhood: dict[str, float]  # chunk -> score through the key entities' hyperedges
    theme_score: dict[str, float]  # theme -> similarity
    themes: list[Hyperedge]
    hits: GraphHits
    prov: Provenance
    scope: set[str] | None
    located: list[str] = field(default_factory=list)  # entities the vision model picked


def topdown_paths(query: Query, ctx: RetrievalContext) -> TopDownReach:
    """Themes, then their key entities' neighbourhoods (the vision model locating entities when set)."""
    o, store = ctx.topdown, ctx.store
    keywords = ctx.keywords(query.text)
    docs = list(query.doc_ids) if query.doc_ids else None

    # Top layer: themes matching the theme keywords (and the question as a whole).
    theme_score = matched_themes(query, ctx, keywords.high, o.themes)
    themes = store.get_hyperedges(list(theme_score))

    # Located key entities, and the entities the entity keywords name directly.
    entity_score: dict[str, float] = defaultdict(float)
    for theme in themes:
        for rank, (entity, _) in enumerate(theme.members):
            entity_score[entity] = max(entity_score[entity], theme_score[theme.edge_id] / (1 + 0.25 * rank))
    located: list[str] = []
    if ctx.vision_model is not None and o.visual and themes:
        located = locate_with_vision(ctx, query.text, themes)
        for entity in located:
            entity_score[entity] = max(entity_score[entity], 1.0)
    for entity, (score, _) in keyword_entities(keywords.low, ctx, docs, o.entities_per_keyword).items():
        entity_score[entity] = max(entity_score[entity], score)

    # Bottom layer: the located entities' neighbourhood hyperedges, scored by who they join.
    edge_score = {e: sum(shares.values()) for e, shares in spread_to_edges(entity_score, ctx, BOTTOM_LEVELS).items()}
    edges = store.get_hyperedges(sorted(edge_score, key=lambda e: -edge_score[e])[: o.hyperedges])

    scope = searchable_scope(query, ctx)
    prov = store.provenance("hyperedge", [e.edge_id for e in themes + edges])
    by_theme = chunk_scores({t.edge_id: theme_score[t.edge_id] for t in themes}, prov, scope)
    by_edges = chunk_scores({e.edge_id: edge_score[e.edge_id] * e.strength for e in edges}, prov, scope)
    hits = GraphHits(entity_score=dict(entity_score), edges=edges, edge_score=edge_score)
    return TopDownReach(by_theme, by_edges, theme_score, themes, hits, prov, scope, located)


class TopDownStrategy(Traits):
    name = "topdown"

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        reach = topdown_paths(query, ctx)
        graph = add_scores(dict(reach.by_theme), reach.by_neighbourhood)
        fused, sources = fuse_with_flat(query, ctx, {"graph": ranked(graph)})
        evidence = package(query.text, self.name, fused[: query.k], ctx, sources)
        keywords = ctx.keywords(query.text)
        evidence.meta["keywords"] = {"low": keywords.low, "high": keywords.high}
        evidence.meta["themes"] = [(t.description, round(reach.theme_score[t.edge_id], 3)) for t in reach.themes]
        if reach.located:
            evidence.meta["located_by_vision"] = [e.name for e in ctx.store.get_entities(reach.located)]
        evidence.entities = entity_hits(ctx, reach.hits, reach.scope, via="theme/keyword")
        evidence.hyperedges = hyperedge_hits(ctx, reach.hits, reach.prov, reach.scope)
        wants_picture = ctx.topdown.render or (ctx.vision_model is not None and ctx.topdown.visual)
        if wants_picture and evidence.hyperedges:  # the vision answerer reads it
            evidence.meta.update(render_bottom_layer(ctx, evidence))
        return evidence


def picture_path(kind: str, question: str) -> Path:
    """Where a query's picture goes: one file per kind and question, overwritten by a repeat."""
    digest = hashlib.sha1(question.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "hyperfolio-topdown" / f"{kind}-{digest}.png"


class LocateReply(BaseModel):
    entities: list[str] = Field(default_factory=list, description="ids such as E3, most relevant first")


LOCATE_PROMPT = with_evidence_rule(
    "The picture shows the themes of a document (hyperedges H1, H2, ...) over their key entities (E1, E2, "
    "...); the themes are listed below. Which entities should be looked up to answer the question? "
    'Reply in JSON: {"entities": ["E3", ...]}, at most five, most relevant first. ' + PICTURE_RULE
)


def locate_with_vision(ctx: RetrievalContext, question: str, themes: list) -> list[str]:
    """Key entities the vision model picks from a picture of the top-layer subgraph (entity ids)."""
    from hyperfolio.viz import Budget, from_store, prune, render

    model = ctx.vision_model
    if model is None:
        return []
    graph = from_store(ctx.store, [t.edge_id for t in themes], "themes", levels=("theme",))
    if not graph.entities:
        return []
    prune(graph, question, Budget(width=1000, height=750))
    picture = render(graph, ctx.topdown.layouts.split(","), picture_path("top-layer", question)).read_bytes()
    listing = "\n".join(f"{h.vid}: {h.description}" for h in graph.edges.values())  # descriptions: document data
    messages = [
        system_message(LOCATE_PROMPT),
        user_message(f"Question: {question}\n\nThemes:\n{Fence.over([listing]).quote(listing, 'themes')}", [picture]),
    ]
    try:
        reply = model.complete_json(messages, LocateReply, stage="locate")
    except ModelCallError:
        return []
    by_vid = {e.vid: e.key for e in graph.entities.values()}
    wanted = [v.strip().upper().replace(" ", "") for v in reply.entities]
    return [by_vid[v] for v in wanted if v in by_vid][:5]


def render_bottom_layer(ctx: RetrievalContext, evidence: EvidencePackage) -> dict:
    """Draw the evidence's bottom-layer subgraph (the picture a vision model would get) and time it."""
    from hyperfolio.viz import evidence_graph, prune, render

    started = time.perf_counter()
    graph = evidence_graph(ctx.store, evidence)
    prune(graph, evidence.question)
    target = render(graph, ctx.topdown.layouts.split(","), picture_path("bottom-layer", evidence.question))
    return {"picture": str(target), "render_seconds": time.perf_counter() - started}
