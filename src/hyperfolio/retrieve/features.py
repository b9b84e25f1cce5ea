"""Candidates and features for the learned ranker (`auto`): every source's view of every chunk.

Candidates are the union of the top chunks of each source — BM25, dense, the two hypergraph paths
(entity keywords -> vertices -> hyperedges; theme keywords -> hyperedges), the random walk over the
hypergraph from the question's entities and the best flat candidates, the concept -> chunk index and the
theme layer. Each candidate gets one row of features: every source's normalised
score and reciprocal rank with an explicit "absent", IDF-weighted entity matches (generic entities
that sit on many chunks count for little), keyword coverage, modality x question cues, heading,
caption and table header matches, and page aggregates (people and benchmarks cite pages).

Sources belong to groups (`flat`, `graph`, `walk`, `concept`, `theme`); an ablation excludes groups, which
removes their features *and* the candidates only they found, so it measures what they add.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from hyperfolio.model import Chunk
from hyperfolio.phrases import generic_name
from hyperfolio.retrieve.base import Query, RetrievalContext
from hyperfolio.retrieve.concept_paths import concept_reach, top_chunks
from hyperfolio.retrieve.doc_features import document_features, flat_prior
from hyperfolio.retrieve.feature_table import FEATURE_INDEX, FEATURES, SOURCE_GROUP, SOURCES
from hyperfolio.retrieve.graph_paths import (
    ENTITY_LEVELS,
    add_scores,
    chunk_scores,
    edge_chunk_ranking,
    keyword_entities,
    matched_themes,
    ranked,
    searchable_scope,
    spread_to_edges,
    store_scope,
    theme_keyword_edges,
)
from hyperfolio.retrieve.graph_walk import walk_ranking
from hyperfolio.retrieve.named_pages import asked_pages, named_in
from hyperfolio.retrieve.rankings import Ranking, bm25_ranking, dense_ranking, query_vector, reciprocal_rank_fusion
from hyperfolio.retrieve.word_sets import Asked, PageKey, chunk_words, page_words
from hyperfolio.store.base import CHUNK_SPACE

DEPTH = 50  # candidates read from each source
WALK_DEPTH = 15  # the walk's best chunks: past these its mass is spread thin over whatever links to anything

# Question cues: what kind of evidence the wording asks for.
_TABLE_CUES = re.compile(
    r"\b(table|row|column|total|percent(age)?|rate|ratio|amount|revenue|sales|income|cost|price|number of|"
    r"how much|average|median|growth|share|value)\b|%|\$",
    re.IGNORECASE,
)
_FIGURE_CUES = re.compile(
    r"\b(figure|fig|chart|graph|plot|diagram|image|picture|photo|illustration|map|logo|icon|colou?r|shown|"
    r"depicted|visual|screenshot|bar|pie|line)\b",
    re.IGNORECASE,
)
_LAYOUT_CUES = re.compile(
    r"\b(page|slide|section|chapter|title|heading|header|footer|cover|appendix|first|last|list|bullet)\b",
    re.IGNORECASE,
)
_COUNT_CUES = re.compile(r"\b(how many|number of|count)\b", re.IGNORECASE)
_QUANTITY_CUES = re.compile(
    r"\b(how (many|much|long|old|large|big|far)|what (percentage|percent|share|number|amount|year)|when|which year)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")


@dataclass
class Candidates:
    """One question's candidate chunks and their feature matrix."""

    chunks: list[Chunk]
    matrix: np.ndarray  # len(chunks) x len(FEATURES)
    sources: list[dict[str, float]]  # raw score of each source that found the chunk
    meta: dict = field(default_factory=dict)


def source_rankings(query: Query, ctx: RetrievalContext) -> tuple[dict[str, Ranking], dict]:
    """Each source's chunk ranking (best first) and what the graph sources matched, once per call."""
    return ctx.memo.value(
        ("auto-sources", query.text, query.doc_ids and tuple(query.doc_ids)), lambda: _sources(query, ctx)
    )


def _sources(query: Query, ctx: RetrievalContext) -> tuple[dict[str, Ranking], dict]:
    docs = list(query.doc_ids) if query.doc_ids else None
    scope = searchable_scope(query, ctx)
    keywords = ctx.offline_keywords(query.text)  # as the ranker was fitted, whatever model is configured
    out: dict[str, Ranking] = {}
    with ctx.times.stage("source:bm25"):
        out["bm25"] = bm25_ranking(query, ctx, DEPTH)
    with ctx.times.stage("source:dense"):
        out["dense"] = dense_ranking(query, ctx, DEPTH)

    with ctx.times.stage("source:entity"):
        matched = keyword_entities(keywords.low, ctx, docs, ctx.dual.entities_per_keyword)
        entity_score = {e: s for e, (s, _) in matched.items()}
        edges = spread_to_edges(entity_score, ctx, ENTITY_LEVELS)
        edge_score = {e: sum(shares.values()) for e, shares in edges.items()}
        by_edges = edge_chunk_ranking(edge_score, ctx, scope)
        entity_prov = ctx.store.provenance("entity", list(entity_score), store_scope(scope))
        by_entities = chunk_scores(entity_score, entity_prov, scope, factor=0.5)
        out["entity"] = ranked(add_scores(by_edges, by_entities))[:DEPTH]

    with ctx.times.stage("source:themekw"):
        found = theme_keyword_edges(keywords.high, ctx, docs, ctx.dual.hyperedges_per_keyword)
        themed = {e: s for e, (s, _) in found.items()}
        out["themekw"] = ranked(edge_chunk_ranking(themed, ctx, scope))[:DEPTH]

    with ctx.times.stage("source:concept"):
        if docs:  # a few documents' chunks: every one scored here
            reach = concept_reach(query, ctx)
            out["concept"] = ranked(reach.chunk_anchor)[:DEPTH]
        else:
            reach = concept_reach(query, ctx, chunks=False)
            out["concept"] = top_chunks(reach, ctx, DEPTH)

    with ctx.times.stage("source:theme"):
        themes = matched_themes(query, ctx, keywords.high, ctx.topdown.themes)
        theme_prov = ctx.store.provenance("hyperedge", list(themes), store_scope(scope))
        theme_chunks: dict[str, float] = {}
        for theme, score in themes.items():
            for chunk, doc, _ in theme_prov.get(theme, []):
                if scope is None or doc in scope:
                    theme_chunks[chunk] = max(theme_chunks.get(chunk, 0.0), score)
        out["theme"] = ranked(theme_chunks)[:DEPTH]

    with ctx.times.stage("source:walk"):
        out["walk"] = walk_ranking(query, ctx, entity_score, {"bm25": out["bm25"], "dense": out["dense"]}, WALK_DEPTH)

    graph = {
        "keywords": keywords,
        "entity_score": entity_score,
        "entity_keyword": {e: k for e, (_, k) in matched.items()},
        "entity_prov": entity_prov,
        "concept": reach,
    }
    return out, graph


def candidate_features(query: Query, ctx: RetrievalContext, exclude: Iterable[str] = ()) -> Candidates:
    """Candidates from the sources not excluded, with their features (excluded groups' columns zero)."""
    excluded = set(exclude)
    rankings, graph = source_rankings(query, ctx)
    used = {s: r for s, r in rankings.items() if SOURCE_GROUP[s] not in excluded}
    ids = list(dict.fromkeys(c for r in used.values() for c, _ in r))
    chunks = [c for c in ctx.store.get_chunks(ids)]
    n, matrix = len(chunks), np.zeros((len(chunks), len(FEATURES)), dtype=np.float64)
    if not n:
        return Candidates([], matrix, [], {})
    row = {c.chunk_id: i for i, c in enumerate(chunks)}
    col = FEATURE_INDEX
    sources: list[dict[str, float]] = [{} for _ in chunks]

    for source, ranking in used.items():
        top = max((s for _, s in ranking), default=0.0)
        for rank, (chunk_id, score) in enumerate(ranking, start=1):
            i = row.get(chunk_id)
            if i is None:
                continue
            sources[i][source] = score
            matrix[i, col[f"{source}_score"]] = score / top if top > 0 else 0.0
            matrix[i, col[f"{source}_rr"]] = 1.0 / rank
            matrix[i, col[f"{source}_in"]] = 1.0

    if "flat" not in excluded:
        cosines = ctx.store.vector_scores(CHUNK_SPACE, query_vector(query, ctx), [c.chunk_id for c in chunks])
        best = max(cosines.values(), default=0.0)
        for chunk_id, cos in cosines.items():
            matrix[row[chunk_id], col["dense_cos"]] = cos
            matrix[row[chunk_id], col["dense_gap"]] = best - cos

    if "graph" not in excluded:
        _entity_features(matrix, row, graph, query, ctx)
    asked = Asked.of(query.text)  # the question's words, once
    _layout_features(matrix, chunks, query.text, asked, ctx)
    fused, _ = reciprocal_rank_fusion(used, ctx.rrf_k)
    _page_features(matrix, chunks, row, dict(fused))
    page_words, idf = _page_text_features(matrix, chunks, query.text, asked, ctx)
    document_features(matrix, chunks, page_words, idf, query, ctx)
    flat_prior(matrix, row, used, ctx.rrf_k)
    return Candidates(chunks, matrix, sources, {"keywords": graph["keywords"], "concept": graph["concept"]})


def _entity_features(matrix: np.ndarray, row: dict[str, int], graph: dict, query: Query, ctx: RetrievalContext) -> None:
    """IDF-weighted entity matches: an entity on many of the scope's chunks (a year, "Inc", the
    company's own name) says little about which chunk answers."""
    col = FEATURE_INDEX
    entity_score: dict[str, float] = graph["entity_score"]
    if not entity_score:
        return
    scope = searchable_scope(query, ctx)
    if query.doc_ids:
        total = sum(ctx.store.count_chunks(d) for d in scope)
    else:  # every chunk: counted once per change of the documents, not per question (a million rows)
        total = ctx.kept(("chunks",), ctx.store.count_chunks)
    chunks_of: dict[str, set[str]] = {}
    for entity, rows in graph["entity_prov"].items():
        chunks_of[entity] = {c for c, d, _ in rows if scope is None or d in scope}
    idf = {e: math.log((total + 1) / (len(chunks_of.get(e, ())) + 1)) for e in entity_score}
    for entity in ctx.store.get_entities(list(entity_score)):
        if generic_name(entity.name):  # a year, a number, "Inc": generic by form, whatever its spread
            idf[entity.entity_id] *= 0.1
    top_idf = math.log(total + 1) or 1.0
    weight_sum = sum(entity_score[e] * idf[e] for e in entity_score) or 1.0
    keywords = graph["keywords"].low
    keyword_of = graph["entity_keyword"]
    covered: dict[int, set[str]] = defaultdict(set)
    for entity, chunks in chunks_of.items():
        weight = entity_score[entity] * idf[entity]
        generic = entity_score[entity] * (1.0 - idf[entity] / top_idf)
        for chunk in chunks:
            i = row.get(chunk)
            if i is None:
                continue
            matrix[i, col["entity_idf"]] += weight / weight_sum
            matrix[i, col["entity_idf_max"]] = max(matrix[i, col["entity_idf_max"]], idf[entity] / top_idf)
            matrix[i, col["entity_hub"]] += generic
            covered[i].add(keyword_of.get(entity, ""))
    for i, found in covered.items():
        matrix[i, col["keyword_cover"]] = len(found & set(keywords)) / max(1, len(keywords))


def _layout_features(
    matrix: np.ndarray, chunks: list[Chunk], question: str, asked: Asked, ctx: RetrievalContext
) -> None:
    col = FEATURE_INDEX
    cue_table = bool(_TABLE_CUES.search(question))
    cue_figure = bool(_FIGURE_CUES.search(question))
    cue_layout = bool(_LAYOUT_CUES.search(question))
    cue_count = bool(_COUNT_CUES.search(question))
    cue_quantity = bool(_QUANTITY_CUES.search(question))
    page_has: dict[tuple[str, int], set[str]] = defaultdict(set)
    for chunk in chunks:
        page_has[(chunk.doc_id, chunk.page)].add(chunk.modality)
    for i, chunk in enumerate(chunks):
        words = chunk_words(ctx, chunk)
        matrix[i, col["lex_cover"]] = asked.share(words.text.words)
        matrix[i, col["lex_bigram"]] = asked.pair_share(words.text.words)
        matrix[i, col["section_match"]] = asked.share(words.section)
        matrix[i, col["caption_match"]] = asked.share(words.caption)
        matrix[i, col["header_match"]] = asked.share(words.header)
        matrix[i, col["rowkey_match"]] = asked.share(words.row_keys)
        group = chunk.modality if chunk.modality in ("table", "image") else "text"
        matrix[i, col[f"mod_{group}"]] = 1.0
        matrix[i, col["table_x_cue"]] = float(group == "table" and cue_table)
        matrix[i, col["image_x_cue"]] = float(group == "image" and cue_figure)
        matrix[i, col["text_x_layout"]] = float(group == "text" and cue_layout)
        matrix[i, col["table_x_count"]] = float(group == "table" and cue_count)
        matrix[i, col["image_x_count"]] = float(group == "image" and cue_count)
        matrix[i, col["number_x_quantity"]] = float(cue_quantity and bool(_DIGIT.search(chunk.text)))
        on_page = page_has[(chunk.doc_id, chunk.page)]
        matrix[i, col["page_table_x_cue"]] = float(cue_table and "table" in on_page)
        matrix[i, col["page_image_x_cue"]] = float(cue_figure and "image" in on_page)
        matrix[i, col["length"]] = math.log1p(words.text.length) / 6.0
        matrix[i, col["placeholder"]] = float(chunk.placeholder)
        matrix[i, col["first_chunk"]] = float(chunk.order == 0)


def _page_text_features(
    matrix: np.ndarray, chunks: list[Chunk], question: str, asked: Asked, ctx: RetrievalContext
) -> tuple[dict[PageKey, str], dict[str, float]]:
    """What the whole page says, not only its candidate chunks: question words (IDF-weighted over the
    candidate pages, so words on every page count little) and word pairs found anywhere on it, and
    whether the question names the page by number ("on page 5", "slide 3"). Returns each page's packed
    words and the question words' weights, which the document features read again."""
    col = FEATURE_INDEX
    keys = list(dict.fromkeys((c.doc_id, c.page) for c in chunks))
    pages = page_words(ctx, keys)
    packed = {key: found.words for key, found in pages.items()}
    probes = zip(asked.words, asked.probes, strict=True)
    df = {w: sum(probe in words for words in packed.values()) for w, probe in probes}
    idf = {w: math.log((len(keys) + 1) / (df[w] + 0.5)) for w in asked.words}
    total = sum(idf.values()) or 1.0
    named = asked_pages(question)
    for i, chunk in enumerate(chunks):
        key = (chunk.doc_id, chunk.page)
        words = packed.get(key, " ")
        matrix[i, col["page_cover"]] = asked.share(words)
        matrix[i, col["page_idf_cover"]] = sum(idf[w] for w in asked.held(words)) / total
        matrix[i, col["page_bigram"]] = asked.pair_share(pages[key].words) if key in pages else 0.0
        matrix[i, col["page_named"]] = float(named_in(named, chunk.page, str(chunk.meta.get("page_label", ""))))
    return packed, idf


def _page_features(matrix: np.ndarray, chunks: list[Chunk], row: dict[str, int], fused: dict[str, float]) -> None:
    """Page aggregates of the fused score of the sources in use: pages are what gets cited."""
    col = FEATURE_INDEX
    top = max(fused.values(), default=0.0) or 1.0
    base = np.array([fused.get(c.chunk_id, 0.0) / top for c in chunks])
    matrix[:, col["base"]] = base
    on_page: dict[tuple[str, int], list[int]] = defaultdict(list)
    for c in chunks:
        on_page[(c.doc_id, c.page)].append(row[c.chunk_id])
    present = [col[f"{source}_in"] for source in SOURCES]
    scored = [col[f"{source}_score"] for source in SOURCES]
    page_cols = np.array([col[f"page_{source}"] for source in SOURCES])
    page_best: dict[tuple[str, int], float] = {}
    for key, members in on_page.items():
        rows = np.array(members)
        scores = np.sort(base[rows])[::-1]
        best = page_best[key] = float(scores[0])
        matrix[rows, col["page_best"]] = best
        matrix[rows, col["page_second"]] = scores[1] if len(scores) > 1 else 0.0
        matrix[rows, col["page_count"]] = math.log1p(len(rows))
        matrix[rows, col["page_share"]] = base[rows] / best if best > 0 else 0.0
        block = matrix[rows]
        matrix[rows, col["page_sources"]] = (block[:, present] > 0).any(axis=0).sum() / len(SOURCES)
        matrix[rows, col["page_lex_cover"]] = block[:, col["lex_cover"]].max()
        matrix[np.ix_(rows, page_cols)] = block[:, scored].max(axis=0)  # each source's best word on the page
    for c in chunks:
        near = [page_best.get((c.doc_id, c.page + d), 0.0) for d in (-1, 1)]
        matrix[row[c.chunk_id], col["neighbour_best"]] = max(near)
