"""Entities worth linking: names cleaned by how the document writes its words, values kept as facts' tails,
and a document's names for one thing merged (issue 31, item 1)."""

from __future__ import annotations

import numpy as np

from hyperfolio.hypergraph.aliases import Named, embedding_pairs, find_aliases, form_pairs, initials_pairs
from hyperfolio.hypergraph.entity_filters import WordCase, clean_name, table_name_like, term_like
from hyperfolio.hypergraph.extract import FACT, PageUnit
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.merge import acronym_aliases, document_names, merge
from hyperfolio.model import VALUE_TYPES, Chunk

PROSE = (
    "We make a claim here, soon. Soon the reasoning improves, and using it helps. The soon-to-be results use "
    "reasoning again. Later the Pew Research Center wrote to the Pew Research Center board."
)


def test_names_are_cleaned_by_how_the_document_writes_its_words():
    case = WordCase.of([PROSE])
    assert clean_name("RECOMMENDED CITATION Pew Research Center", case) == "Pew Research Center"
    assert clean_name("Human Evaluation We", case) == "Human Evaluation"
    assert clean_name("CLAIM We", case) == ""  # "claim" is a word this document writes in lower case
    assert clean_name("Reasoning", case) == ""
    assert clean_name("Soon Aurora", case) == "Aurora"  # "soon" opened a sentence; "Aurora" is the name
    assert clean_name("Aurora", case) == "Aurora"
    assert clean_name("A3", case) == "" and clean_name("FN31 It", case) == ""
    assert clean_name("Northeast Queens NY30 Pennsylvania", case) == "Northeast Queens"
    assert clean_name("SS8aSeonr", case) == "" and clean_name("TTY Ted LTTTNT", case) == ""
    assert clean_name("Mi", case) == ""
    assert clean_name("Recursive Retrieval Recursive", case) == ""
    assert clean_name("Annual Meeting of the Association for Computational Linguistics", case) != ""


def test_terms_read_as_noun_phrases():
    for term in ("carbon capture", "care homes", "machine learning", "collective bargaining", "in-context learning"):
        assert term_like(term), term
    for term in ("already know", "very closely", "investigation revealed", "fact involves", "issues facing"):
        assert not term_like(term), term
    assert term_like("registered manager", repeats=6) and not term_like("generated outputs", repeats=2)


def test_table_cells_that_name_something():
    assert table_name_like("Revenue", 60) and table_name_like("Is the service safe?", 80)
    assert not table_name_like("54 42 45 33 64 51", 80)
    assert not table_name_like("Trump May 2018 39 g", 80)
    assert not table_name_like("Like Have mixed feelings about Don't like Total 19 26 54 Rep/Lean Rep 38", 60)


def _graph(*texts: str):
    chunks = [
        Chunk(page=1, order=i, modality="text", text=t, chunk_id=f"d:1:{i}", doc_id="d") for i, t in enumerate(texts)
    ]
    return OfflineExtractor().extract_document([PageUnit("d", "Doc", 1, chunks)])


def test_values_are_the_tails_of_facts_and_link_nothing():
    graphs = _graph(
        "Osprey Shipping reported revenue of $412 million in 2023 at Rotterdam.",
        "In March the Rotterdam terminal opened beside Osprey Shipping.",
    )
    entities = {e.name: e for g in graphs for e in g.entities}
    values = {name for name, e in entities.items() if e.type in VALUE_TYPES}
    assert "$412 million" in values and "March" not in entities  # a month stated in no fact is nothing
    facts = [edge for g in graphs for edge in g.edges if edge.level == FACT]
    tails = {m for edge in facts for m in edge.members}
    assert values and values <= tails  # every value kept is a fact's member
    linking = [edge for g in graphs for edge in g.edges if edge.level != FACT]
    assert linking and all(not set(edge.members) & values for edge in linking)
    assert any({"Osprey Shipping", "Rotterdam"} <= set(edge.members) for edge in linking)


def _named(key: str, name: str | None = None, type_: str = "name", mentions: int = 1) -> Named:
    return Named(key, name or key.title(), type_, mentions)


def test_aliases_by_form_and_initials():
    names = [
        _named("subtask", mentions=3),
        _named("sub task"),
        _named("cqc", "CQC", "acronym"),
        _named("care quality commission"),
        _named("recommender systems", type_="concept"),
        _named("recommendation system", type_="concept", mentions=2),
        _named("generated answer", type_="concept"),
        _named("generate answer", type_="concept"),  # a verb's ending is no noun's
        _named("streeter", type_="person"),  # a model's type: a name keeps its endings
        _named("street", type_="person"),
        _named("nca", "NCA", "acronym"),  # two names spell it: which one is unsaid
        _named("national climate assessment"),
        _named("north carolina association"),
    ]
    assert {(p.alias, p.target) for p in form_pairs(names)} == {
        ("sub task", "subtask"),
        ("recommender systems", "recommendation system"),
    }
    assert {(p.alias, p.target) for p in initials_pairs(names)} == {("cqc", "care quality commission")}


def test_embedding_merges_only_a_name_inside_one_longer_name():
    names = [
        _named("wadden"),
        _named("david wadden"),
        _named("wang"),
        _named("william yang wang"),
        _named("danqing wang"),
    ]
    names.append(_named("fact checking", type_="concept"))
    names.append(_named("closed book fact checking", type_="concept"))

    def embed(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 4))  # every pair as close as can be: only the candidates decide

    pairs = embedding_pairs(names, embed, threshold=0.5)
    assert {(p.alias, p.target) for p in pairs} == {("wadden", "david wadden")}
    assert find_aliases(names, embed, None) == {}  # no threshold, no embedding merges
    assert find_aliases(names, embed, 0.5) == {"wadden": "david wadden"}


def test_a_defined_acronym_takes_the_whole_name_it_spells():
    graphs = _graph(
        "The Association for Computational Linguistics (ACL) met. The ACL chose Retrieval-Augmented Generation (RAG).",
        "The Association for Computational Linguistics and RAG again.",
    )
    defined = acronym_aliases(graphs)
    assert defined["acl"] == "association for computational linguistic"
    assert defined["rag"] == "retrieval augmented generation"
    merged = merge(graphs, aliases=find_aliases(document_names(graphs), None, None, defined))
    acl = [e for e in merged.entities.values() if e.norm_name == "association for computational linguistic"]
    assert len(acl) == 1 and "ACL" in acl[0].aliases
