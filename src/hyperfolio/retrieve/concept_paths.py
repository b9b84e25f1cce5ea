"""From the question to the concept layer and its concept -> chunk index (HVM-GraphRAG 3.2 steps 1-3),
shared by `concept` and `auto`: anchors by similarity, relation propagation, and the chunks that
evidence the reached concepts, each with the best anchor similarity that reaches it."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.graph_paths import searchable_scope
from hyperfolio.retrieve.rankings import graph_vectors
from hyperfolio.store.base import CONCEPT_SPACE, RELATION_SPACE, item_of


def best_items(hits: list[tuple[str, float]], limit: int) -> dict[str, float]:
    """Scoped keys "<item>|<doc>" folded to items, best score each, the top `limit`."""
    best: dict[str, float] = {}
    for key, score in hits:
        item = item_of(key)
        best[item] = max(score, best.get(item, score))
    return dict(sorted(best.items(), key=lambda kv: -kv[1])[:limit])


@dataclass
class ConceptReach:
    anchors: dict[str, float] = field(default_factory=dict)  # concept -> similarity (>= theta)
    reached: dict[str, float] = field(default_factory=dict)  # anchors and propagated concepts -> score
    edges: list[tuple[str, str, str, int]] = field(default_factory=list)  # (head, relation, tail, support) kept
    chunk_anchor: dict[str, float] = field(default_factory=dict)  # chunk -> best score of a concept it evidences

    def describe(self, ctx: RetrievalContext) -> dict:
        names = ctx.store.concept_names(list(self.reached))
        return {
            "concepts": [(names.get(c, c), round(s, 3)) for c, s in self.anchors.items()],
            "expanded_concepts": sorted(names.get(c, c) for c in set(self.reached) - set(self.anchors)),
            "relations": [(names.get(h, h), r, names.get(t, t)) for h, r, t, _ in self.edges],
        }


def concept_reach(query: Query, ctx: RetrievalContext, chunks: bool = True) -> ConceptReach:
    """Anchors (top-k_c at least theta), relations (top-k_r touching an anchor) and - unless `chunks` is
    false - every chunk evidencing a reached concept (`top_chunks` ranks only the best few, in the store)."""
    o = ctx.concept
    docs = list(query.doc_ids) if query.doc_ids else None
    vector = graph_vectors([query.text], ctx)[0]
    fan = 1 if docs and len(docs) == 1 else 4  # one vector per (item, document): fetch more when unscoped
    found = best_items(ctx.store.vector_search(CONCEPT_SPACE, vector, o.concepts * fan, docs), o.concepts)
    reach = ConceptReach(anchors={c: s for c, s in found.items() if s >= o.threshold})
    relations = best_items(ctx.store.vector_search(RELATION_SPACE, vector, o.relations * fan, docs), o.relations)
    reach.reached = dict(reach.anchors)
    if reach.anchors and relations:
        for head, relation, tail, support in ctx.store.concept_edges_for(
            list(relations),
            docs,
            touching=list(reach.anchors),  # only edges with an anchor at an end
        ):
            reach.edges.append((head, relation, tail, support))
            through = relations[relation] * max(reach.anchors.get(head, 0.0), reach.anchors.get(tail, 0.0))
            for concept in (head, tail):
                reach.reached[concept] = max(reach.reached.get(concept, 0.0), through)
    if reach.reached and chunks:
        scope = searchable_scope(query, ctx)
        for concept, chunk in ctx.store.concept_chunk_pairs(list(reach.reached), docs):
            if chunk.rsplit(":", 2)[0] not in scope:  # chunk ids are "<doc_id>:<page>:<order>"
                continue
            score = reach.reached[concept]
            if score > reach.chunk_anchor.get(chunk, -1.0):
                reach.chunk_anchor[chunk] = score
    return reach


def top_chunks(reach: ConceptReach, ctx: RetrievalContext, limit: int) -> list[tuple[str, float]]:
    """The whole collection's `limit` best chunks for the reached concepts, in the order `concept_reach`'s
    `chunk_anchor` ranks them (best score, then first met), ranked by the store: a general concept can be
    evidenced by tens of thousands of chunks at a million, and this reads none of them into Python."""
    scores = sorted(set(reach.reached.values()), reverse=True)
    level = {score: i for i, score in enumerate(scores)}
    rows = ctx.store.concept_top_chunks({c: level[s] for c, s in reach.reached.items()}, limit)
    return [(chunk, scores[best]) for chunk, best in rows]
