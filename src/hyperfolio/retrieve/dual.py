"""Dual-path hypergraph retrieval (Hyper-M2RAG section 4.3, after Hyper-RAG's dual levels).

The question is decomposed into entity keywords (K_low) and theme keywords (K_high).
Path I matches K_low against vertices (similarity >= gamma, or the same canonical name)
and expands them to their incident hyperedges; path II matches K_high against
hyperedges and back-traces their member vertices and source chunks. Chunks reached by
either path are ranked by the evidence that reached them and fused with the flat
rankings, so the graph adds what the words alone miss. The package carries the
entities and hyperedges too (low, high and refined), not only chunks.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hyperfolio.model import EntityHit, EvidencePackage, HyperedgeHit
from hyperfolio.phrases import content_words, find_phrases, key_phrases, normalize_name
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.evidence import package
from hyperfolio.retrieve.flat import bm25_ranking, dense_ranking, reciprocal_rank_fusion
from hyperfolio.store.base import ENTITY_SPACE, HYPEREDGE_SPACE, item_of


@dataclass
class Keywords:
    low: list[str] = field(default_factory=list)  # entity keywords: names, numbers, terms
    high: list[str] = field(default_factory=list)  # theme keywords: what the question is about


def decompose(question: str, max_keywords: int = 8) -> Keywords:
    """Offline query decomposition with the same phrase rules the offline extractor uses."""
    low: list[str] = []
    for phrase in find_phrases(question):
        low.append(phrase.text)
    terms = list(dict.fromkeys(key_phrases(question)))
    low.extend(t for t in terms if t not in low)
    covered = " ".join(low).lower()
    words = [w for w in content_words(question) if len(w) > 3 and w not in covered]
    low.extend(dict.fromkeys(words))
    theme = " ".join(content_words(question))
    high = [theme] if theme else []
    high.extend(t for t in terms[:2] if t != theme)
    return Keywords(low[:max_keywords], high[:max_keywords])


def question_keywords(question: str, ctx: RetrievalContext) -> Keywords:
    """K_low and K_high: from the keywords model when one is configured, offline otherwise."""
    if ctx.keyword_model is not None:
        from hyperfolio.retrieve.keywords_llm import llm_decompose  # it builds on this module's Keywords

        return llm_decompose(ctx.keyword_model, question, ctx.dual.max_keywords)
    return decompose(question, ctx.dual.max_keywords)


def keyword_entities(
    keywords: list[str], ctx: RetrievalContext, doc_ids, per_keyword: int
) -> dict[str, tuple[float, str]]:
    """Vertices the entity keywords match: similarity >= gamma, or the same canonical name (1.0);
    entity -> (best score, the keyword that gave it)."""
    found: dict[str, tuple[float, str]] = {}
    if not keywords:
        return found
    embedder = ctx.graph_embedder or ctx.embedder
    exact = ctx.store.entities_by_norm_name([normalize_name(k) for k in keywords])
    for keyword, vector in zip(keywords, embedder.embed(keywords), strict=True):
        hits = ctx.store.vector_search(ENTITY_SPACE, vector, per_keyword, doc_ids)
        matched = {item_of(i): s for i, s in hits if s >= ctx.dual.entity_threshold}
        if normalize_name(keyword) in exact:
            matched[exact[normalize_name(keyword)]] = 1.0
        for entity, score in matched.items():
            if score > found.get(entity, (0.0, ""))[0]:
                found[entity] = (score, keyword)
    return found


# The entity hypergraph's own levels; chunk themes are the top layer, searched by `topdown` only.
ENTITY_LEVELS = ["low", "high", "refine", "fact"]


class DualStrategy:
    name = "dual"

    def __init__(self, with_flat: bool = True) -> None:
        self.with_flat = with_flat

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage:
        options = ctx.dual
        keywords = question_keywords(query.text, ctx)
        embedder = ctx.graph_embedder or ctx.embedder
        store = ctx.store
        entity_score: dict[str, float] = {}
        entity_via: dict[str, str] = {}
        edge_score: dict[str, float] = defaultdict(float)
        edge_via: dict[str, str] = {}

        # Path I: entity keywords -> vertices -> incident hyperedges.
        for entity, (score, keyword) in keyword_entities(
            keywords.low, ctx, query.doc_ids, options.entities_per_keyword
        ).items():
            entity_score[entity], entity_via[entity] = score, keyword
        if entity_score:
            incident = store.incident_edges(list(entity_score), levels=ENTITY_LEVELS)
            for entity, edges in incident.items():
                share = entity_score[entity] / max(1.0, len(edges) ** 0.5)  # a hub's edges each count for less
                for edge in edges:
                    edge_score[edge] += share
                    edge_via.setdefault(edge, entity_via[entity])

        # Path II: theme keywords -> hyperedges -> member vertices and source chunks.
        if keywords.high:
            for keyword, vector in zip(keywords.high, embedder.embed(keywords.high), strict=True):
                for item, score in store.vector_search(
                    HYPEREDGE_SPACE, vector, options.hyperedges_per_keyword, query.doc_ids
                ):
                    edge = item_of(item)
                    edge_score[edge] += score
                    edge_via.setdefault(edge, keyword)

        edges = store.get_hyperedges(sorted(edge_score, key=lambda e: -edge_score[e])[:200])
        strength = {e.edge_id: e.strength for e in edges}
        edge_prov = store.provenance("hyperedge", [e.edge_id for e in edges])
        scope = set(query.doc_ids) if query.doc_ids else None
        chunk_score: dict[str, float] = defaultdict(float)
        for edge in edges:
            weight = edge_score[edge.edge_id] * strength[edge.edge_id]
            for chunk, doc, _ in edge_prov.get(edge.edge_id, []):
                if scope is None or doc in scope:
                    chunk_score[chunk] += weight
        entity_prov = store.provenance("entity", list(entity_score))
        for entity, score in entity_score.items():
            for chunk, doc, _ in entity_prov.get(entity, []):
                if scope is None or doc in scope:
                    chunk_score[chunk] += 0.5 * score
        graph_ranking = sorted(chunk_score.items(), key=lambda kv: -kv[1])

        depth = max(50, query.k * 5)
        rankings = {"graph": graph_ranking[:depth]}
        if self.with_flat:
            rankings["bm25"] = bm25_ranking(query, ctx, depth)
            rankings["dense"] = dense_ranking(query, ctx, depth)
        fused, sources = reciprocal_rank_fusion(rankings, ctx.rrf_k)
        evidence = package(query.text, self.name, fused[: query.k], ctx, sources)
        evidence.meta["keywords"] = {"low": keywords.low, "high": keywords.high}

        # The structured part of the package: the entities and hyperedges that led to the chunks.
        top_entities = sorted(entity_score, key=lambda e: -entity_score[e])[:15]
        for entity in store.get_entities(top_entities):
            pages = sorted({(d, p) for _, d, p in entity_prov.get(entity.entity_id, []) if scope is None or d in scope})
            evidence.entities.append(
                EntityHit(entity, entity_score[entity.entity_id], pages, entity_via[entity.entity_id])
            )
        ranked_edges = sorted(edges, key=lambda e: -edge_score[e.edge_id] * e.strength)[:15]
        names = {e.entity_id: e.name for e in store.get_entities(list({m for h in ranked_edges for m, _ in h.members}))}
        for edge in ranked_edges:
            pages = sorted({(d, p) for _, d, p in edge_prov.get(edge.edge_id, []) if scope is None or d in scope})
            if not pages:
                continue
            evidence.hyperedges.append(
                HyperedgeHit(
                    edge,
                    edge_score[edge.edge_id],
                    [names.get(m, m) for m, _ in edge.members],
                    pages,
                    edge_via.get(edge.edge_id, ""),
                )
            )
        return evidence
