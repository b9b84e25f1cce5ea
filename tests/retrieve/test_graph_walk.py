"""The random walk over the hypergraph: it restarts at the question's entities and the best flat
candidates, and reaches the chunk that shares an entity with them (a bridge question's second hop)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import indexed

from hyperfolio.retrieve import graph_walk
from hyperfolio.retrieve.base import Query
from hyperfolio.retrieve.graph_paths import ENTITY_LEVELS
from hyperfolio.retrieve.graph_walk import Transition, personalised_pagerank, walk_graph, walk_ranking

ARTICLES = {
    "kansas.md": "# University of Kansas\n\nThe University of Kansas is a public research university whose "
    "main campus is in Lawrence, Kansas. Its branch campuses are in the Kansas City metropolitan area.\n",
    "song.md": "# Kansas Song\n\nKansas Song is the fight song of the University of Kansas. Students sing it "
    "at every home game of the Jayhawks.\n",
    "harbour.md": "# Kestrel Harbour\n\nKestrel Harbour is a fishing port on the North Sea coast. Its fleet "
    "lands herring and mackerel every autumn.\n",
}


@pytest.fixture(scope="module")
def articles(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("walk")
    files = []
    for name, text in ARTICLES.items():
        (root / name).write_text(text, encoding="utf-8")
        files.append(root / name)
    for col in indexed(root, embedder, *files):
        col.build_graph()
        yield col


def test_a_walk_spreads_from_its_restart_along_links_and_no_further():
    # chunks 0, 1, 2; entities 3 (on chunk 0), 4 (on chunks 0 and 1), 5 (on chunk 2)
    links = [(0, 3), (0, 4), (1, 4), (2, 5)]
    rows = np.array([a for a, b in links] + [b for a, b in links])
    cols = np.array([b for a, b in links] + [a for a, b in links])
    degree = np.bincount(cols, minlength=6).astype(float)
    restart = np.zeros(6)
    restart[3] = 1.0  # the question names the entity on chunk 0 only
    mass = personalised_pagerank(Transition(rows, cols, 1.0 / degree[cols], 6), restart)
    assert mass[0] > mass[1] > 0  # the second hop, through the shared entity
    assert mass[2] == 0 and mass[5] == 0  # nothing links there
    assert mass.sum() == pytest.approx(1.0)  # a walk keeps its mass


def test_the_walk_graph_holds_every_chunk_entity_and_hyperedge_link(articles):
    ctx = articles.parts.retrieval_context(articles._texts)
    graph = walk_graph(Query("Which song?"), ctx)
    assert graph is not None
    docs = [d.doc_id for d in articles.store.list_documents()]
    evidenced = {c for d in docs for c in articles.store.chunk_entities(d)}
    assert evidenced and evidenced <= set(graph.chunks)
    edges = {e for d in docs for _, e, _ in articles.store.hyperedge_incidence(d, ENTITY_LEVELS)}
    assert all(f"h:{e}" in graph.node for e in edges)
    assert walk_graph(Query("Another question"), ctx) is graph  # built once while nothing changes


def test_a_walk_from_the_first_hop_reaches_the_bridge_article_and_not_the_unrelated_one(articles):
    ctx = articles.parts.retrieval_context(articles._texts)
    kansas = next(d.doc_id for d in articles.store.list_documents() if "kansas.md" in d.source)
    first_hop = [(c.chunk_id, 1.0) for c in articles.store.iter_chunks(kansas)]
    ranking = walk_ranking(Query("fight song"), ctx, {}, {"bm25": first_hop}, depth=10)
    titles = {c.chunk_id: c.text for c in articles.store.iter_chunks()}
    found = [titles[chunk_id] for chunk_id, _ in ranking]
    assert any("fight song" in text for text in found)  # reached through "University of Kansas"
    assert not any("herring" in text for text in found)


def test_a_collection_too_large_to_walk_whole_is_walked_only_within_a_questions_documents(articles, monkeypatch):
    monkeypatch.setattr(graph_walk, "WHOLE_COLLECTION_CHUNKS", 0)
    ctx = articles.parts.retrieval_context(articles._texts)
    assert walk_graph(Query("fight song"), ctx) is None
    assert walk_ranking(Query("fight song"), ctx, {}, {"bm25": [("x", 1.0)]}, depth=5) == []
    kansas = next(d.doc_id for d in articles.store.list_documents() if "kansas.md" in d.source)
    scoped = walk_graph(Query("fight song", doc_ids=[kansas]), ctx)
    assert scoped is not None and scoped.chunks


def test_warming_builds_the_walk_graphs_of_long_documents_only(articles, monkeypatch):
    built: list[tuple[str, ...]] = []
    real = graph_walk.build_walk_graph
    monkeypatch.setattr(graph_walk, "build_walk_graph", lambda ctx, ids: built.append(tuple(ids)) or real(ctx, ids))
    docs = articles.store.list_documents()
    assert {d.num_chunks for d in docs} == {1}
    monkeypatch.setattr(graph_walk, "PREBUILD_CHUNKS", 2)  # longer than any of them: none built
    articles._texts = type(articles._texts)()  # a fresh cache: nothing built before
    articles.warm()
    assert built == []
    monkeypatch.setattr(graph_walk, "PREBUILD_CHUNKS", 1)
    articles.warm()
    assert set(built) == {(d.doc_id,) for d in docs}
    built.clear()
    song = next(d for d in docs if "song.md" in d.source)
    evidence = articles.retrieve("What is the fight song of the University of Kansas?", mode="auto", doc=song.doc_id)
    assert (
        "source:walk" in evidence.meta["stage_seconds"] and built == []
    )  # the first question of a warmed document reads its walk graph, built already
