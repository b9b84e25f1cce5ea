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
from pathlib import Path

from pydantic import BaseModel, Field

from hyperfolio.model import EntityHit, EvidencePackage, HyperedgeHit
from hyperfolio.models.errors import ModelCallError
from hyperfolio.models.openai_compat import system_message, user_message
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.dual import keyword_entities, question_keywords
from hyperfolio.retrieve.evidence import package
from hyperfolio.retrieve.flat import bm25_ranking, dense_ranking, reciprocal_rank_fusion
from hyperfolio.store.base import THEME_SPACE, item_of

BOTTOM_LEVELS = ["low", "high", "refine"]


class TopDownStrategy:
    name = "topdown"

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        o = ctx.topdown
        keywords = question_keywords(query.text, ctx)
        embedder = ctx.graph_embedder or ctx.embedder
        store, docs = ctx.store, (list(query.doc_ids) if query.doc_ids else None)

        # Top layer: themes matching the theme keywords (and the question as a whole).
        theme_score: dict[str, float] = defaultdict(float)
        probes = list(dict.fromkeys([query.text, *keywords.high]))
        for vector in embedder.embed(probes):
            for item, score in store.vector_search(THEME_SPACE, vector, o.themes, docs):
                theme_score[item_of(item)] = max(theme_score[item_of(item)], score)
        themes = store.get_hyperedges(sorted(theme_score, key=lambda t: -theme_score[t])[: o.themes])

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
        edge_score: dict[str, float] = defaultdict(float)
        for entity, edges in store.incident_edges(list(entity_score), levels=BOTTOM_LEVELS).items():
            for edge in edges:
                edge_score[edge] += entity_score[entity] / max(1.0, len(edges) ** 0.5)
        edges = store.get_hyperedges(sorted(edge_score, key=lambda e: -edge_score[e])[: o.hyperedges])

        scope = set(docs) if docs else None
        chunk_score: dict[str, float] = defaultdict(float)
        prov = store.provenance("hyperedge", [e.edge_id for e in themes + edges])
        for theme in themes:
            for chunk, doc, _ in prov.get(theme.edge_id, []):
                if scope is None or doc in scope:
                    chunk_score[chunk] += theme_score[theme.edge_id]
        for edge in edges:
            for chunk, doc, _ in prov.get(edge.edge_id, []):
                if scope is None or doc in scope:
                    chunk_score[chunk] += edge_score[edge.edge_id] * edge.strength
        depth = max(50, query.k * 5)
        rankings = {
            "graph": sorted(chunk_score.items(), key=lambda kv: -kv[1])[:depth],
            "bm25": bm25_ranking(query, ctx, depth),
            "dense": dense_ranking(query, ctx, depth),
        }
        fused, sources = reciprocal_rank_fusion(rankings, ctx.rrf_k)
        evidence = package(query.text, self.name, fused[: query.k], ctx, sources)
        evidence.meta["keywords"] = {"low": keywords.low, "high": keywords.high}
        evidence.meta["themes"] = [(t.description, round(theme_score[t.edge_id], 3)) for t in themes]
        if located:
            evidence.meta["located_by_vision"] = [e.name for e in store.get_entities(located)]

        top = sorted(entity_score, key=lambda e: -entity_score[e])[:15]
        entity_pages = store.entity_pages(top)
        for entity in store.get_entities(top):
            pages = sorted(p for p in entity_pages.get(entity.entity_id, set()) if scope is None or p[0] in scope)
            evidence.entities.append(EntityHit(entity, entity_score[entity.entity_id], pages, "theme/keyword"))
        names = {e.entity_id: e.name for e in store.get_entities(list({m for h in edges for m, _ in h.members}))}
        for edge in edges[:15]:
            pages = sorted({(d, p) for _, d, p in prov.get(edge.edge_id, []) if scope is None or d in scope})
            if pages:
                evidence.hyperedges.append(
                    HyperedgeHit(edge, edge_score[edge.edge_id], [names.get(m, m) for m, _ in edge.members], pages)
                )
        wants_picture = o.render or (ctx.vision_model is not None and o.visual)  # the vision answerer reads it
        if wants_picture and evidence.hyperedges:
            evidence.meta.update(render_bottom_layer(ctx, evidence))
        return evidence


def picture_path(kind: str, question: str) -> Path:
    """Where a query's picture goes: one file per kind and question, overwritten by a repeat."""
    digest = hashlib.sha1(question.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "hyperfolio-topdown" / f"{kind}-{digest}.png"


class LocateReply(BaseModel):
    entities: list[str] = Field(default_factory=list, description="ids such as E3, most relevant first")


LOCATE_PROMPT = (
    "The picture shows the themes of a document (hyperedges H1, H2, ...) over their key entities (E1, E2, "
    "...); the themes are listed below. Which entities should be looked up to answer the question? "
    'Reply in JSON: {"entities": ["E3", ...]}, at most five, most relevant first.'
)


def locate_with_vision(ctx: RetrievalContext, question: str, themes: list) -> list[str]:
    """Key entities the vision model picks from a picture of the top-layer subgraph (entity ids)."""
    from hyperfolio.viz import Budget, from_store, prune, render

    graph = from_store(ctx.store, [t.edge_id for t in themes], "themes", levels=("theme",))
    if not graph.entities:
        return []
    prune(graph, question, Budget(width=1000, height=750))
    picture = render(graph, ctx.topdown.layouts.split(","), picture_path("top-layer", question)).read_bytes()
    listing = "\n".join(f"{h.vid}: {h.description}" for h in graph.edges.values())
    messages = [
        system_message(LOCATE_PROMPT),
        user_message(f"Question: {question}\n\nThemes:\n{listing}", [picture]),
    ]
    try:
        reply = ctx.vision_model.complete_json(messages, LocateReply, stage="locate")
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
