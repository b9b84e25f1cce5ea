"""The columns of the learned ranker's feature matrix: each feature's name and the group it belongs to.

Groups are what an ablation leaves out (`flat`, `graph`, `walk`, `concept`, `theme`); `layout` features read the
chunk and its page, `document` features the chunk's document as a whole (they only separate candidates
when a question is asked of several documents). Rankers name the columns they read, so a feature added
here leaves weights fitted before it valid.
"""

from __future__ import annotations

from collections.abc import Iterable

SOURCE_GROUP = {
    "bm25": "flat",
    "dense": "flat",
    "entity": "graph",
    "themekw": "graph",
    "concept": "concept",
    "theme": "theme",
    "walk": "walk",  # the random walk over the hypergraph from the question's entities (graph_walk.py)
}
SOURCES = tuple(SOURCE_GROUP)
# Whole-document features: the document's best candidate, its rank among the candidates' documents, its
# share of the fused score, the question's rare words it holds, its size, and how its card matches the
# organisation, period and document type the question names (cards/match.py), and how much of the
# question its card's text says (title, contents).
DOCUMENT_FEATURES = (
    "doc_best", "doc_rr", "doc_share", "doc_idf_cover", "doc_pages", "card_org", "card_period", "card_type",
    "card_text",
)  # fmt: skip


def feature_names() -> list[tuple[str, str]]:
    """(feature, group) in matrix column order."""
    names: list[tuple[str, str]] = []
    for source in SOURCES:
        group = SOURCE_GROUP[source]
        names += [(f"{source}_score", group), (f"{source}_rr", group), (f"{source}_in", group)]
    names += [(f"page_{source}", SOURCE_GROUP[source]) for source in SOURCES]  # best score on the page
    names += [("dense_cos", "flat"), ("dense_gap", "flat")]
    names += [
        ("entity_idf", "graph"),
        ("entity_idf_max", "graph"),
        ("entity_hub", "graph"),
        ("keyword_cover", "graph"),
    ]
    names += [
        ("lex_cover", "layout"),
        ("lex_bigram", "layout"),
        ("section_match", "layout"),
        ("caption_match", "layout"),
        ("header_match", "layout"),
        ("rowkey_match", "layout"),
        ("mod_text", "layout"),
        ("mod_table", "layout"),
        ("mod_image", "layout"),
        ("table_x_cue", "layout"),
        ("image_x_cue", "layout"),
        ("text_x_layout", "layout"),
        ("table_x_count", "layout"),
        ("image_x_count", "layout"),
        ("number_x_quantity", "layout"),
        ("page_table_x_cue", "layout"),
        ("page_image_x_cue", "layout"),
        ("length", "layout"),
        ("placeholder", "layout"),
        ("first_chunk", "layout"),
    ]
    names += [
        ("base", "layout"),
        ("page_best", "layout"),
        ("page_second", "layout"),
        ("page_count", "layout"),
        ("page_share", "layout"),
        ("page_sources", "layout"),
        ("page_lex_cover", "layout"),
        ("neighbour_best", "layout"),
        ("page_cover", "layout"),
        ("page_idf_cover", "layout"),
        ("page_bigram", "layout"),
        ("page_named", "layout"),
        ("page_pos", "layout"),
    ]
    names += [("flat_rr", "flat"), ("flat_logrank", "flat")]  # the fused BM25 + dense ranking: the prior
    names += [(name, "document") for name in DOCUMENT_FEATURES]
    return names


FEATURES = feature_names()
FEATURE_INDEX = {name: i for i, (name, _) in enumerate(FEATURES)}


def feature_columns(exclude: Iterable[str] = ()) -> list[int]:
    """Columns of the features whose group is not excluded."""
    excluded = set(exclude)
    return [i for i, (_, group) in enumerate(FEATURES) if group not in excluded]
