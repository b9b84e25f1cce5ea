"""Warm questions: work kept across questions never changes an answer, and never hides a document
added (or shows one removed) since it was kept."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tests.conftest import text_evidence

from hyperfolio import Collection
from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.embed.local import cache_dir, minilm_path
from hyperfolio.embed.onnx_encoder import OnnxSentenceEncoder
from hyperfolio.model import Document, EvidencePackage
from hyperfolio.store import open_store
from hyperfolio.store.base import ENTITY_SPACE, STAGE_READY

FLEET = [
    "# Fleet overview\nThe Osprey Shipping Company runs container ships between Rotterdam and Singapore.",
    "# Vessels\nThe Aurora carries 8,500 TEU and entered service in 2019. The Borealis carries 6,200 TEU.",
]
PARKS = [
    "# Parks of the city\nThe city keeps forty parks; Vondel Park is the largest at 47 hectares.",
    "# Visitors\nVondel Park receives ten million visitors a year, most of them in summer.",
]


class CountingEmbedder:
    """The real embedder, recording every text it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def package(question: str, texts: list[str]) -> EvidencePackage:
    return text_evidence(question, texts)


FLEET_TEXTS = [
    "The Aurora carries 8,500 TEU. It entered service in 2019.",
    "The Borealis carries 6,200 TEU. Its crew is twenty-two.",
]


def test_passages_are_embedded_once_across_questions_and_score_as_when_fresh(embedder):
    counting = CountingEmbedder(embedder)
    warm = ExtractiveAnswerer(counting)
    questions = ["How many TEU does the Aurora carry?", "How large is the Borealis crew?"]
    for question in questions:
        answer = warm.answer(question, package(question, FLEET_TEXTS))
        fresh = ExtractiveAnswerer(embedder).answer(question, package(question, FLEET_TEXTS))
        assert (answer.text, answer.support) == (fresh.text, fresh.support)
    passage_texts = [t for t in counting.texts if t not in questions]
    assert len(passage_texts) == len(set(passage_texts)) == 4  # each sentence once, for both questions


REPORT = [
    "The Aurora carries 8,500 TEU and entered service in 2019. Its home port is Rotterdam. "
    "The ship was built in Korea. The crew trains at the Delft academy every spring.",
    "The Borealis carries 6,200 TEU. It sails between Singapore and Rotterdam. Fuel costs rose by 12 percent. "
    "The company ordered two LNG-powered ships in 2023. Each vessel sails with a crew of twenty-two.",
    "Revenue reached 1.2 billion euros in 2024. The board proposes a dividend of 0.40 euros per share. "
    "Employees numbered 3,400 at the end of the year. Safety incidents fell to three.",
]


def test_passages_that_cannot_be_chosen_are_not_embedded_and_the_answer_is_the_same(embedder, monkeypatch):
    questions = [
        "How many TEU does the Aurora carry?",
        "What dividend does the board propose?",
        "How large is the crew of each vessel?",
        "Where does the crew train?",
    ]
    answers, embedded = {}, {}
    for every in (False, True):
        if every:  # the reference: every passage embedded before any is compared
            monkeypatch.setattr("hyperfolio.answer.extractive.FIRST_PASSAGES", 10_000)
        for question in questions:
            counting = CountingEmbedder(embedder)
            answer = ExtractiveAnswerer(counting).answer(question, package(question, REPORT))
            answers[every, question] = (answer.text, [c.chunk_id for c in answer.citations])
            embedded[every, question] = len(counting.texts)
    for question in questions:
        assert answers[False, question] == answers[True, question]
    assert sum(embedded[False, q] for q in questions) < sum(embedded[True, q] for q in questions)


def test_inputs_are_batched_with_their_like_in_length_and_embed_as_they_would_alone():
    """A question's passages run from a word to a paragraph; padding each batch to its longest wasted
    most of the encoder's work."""
    encoder = OnnxSentenceEncoder(minilm_path(), cache_dir(), stem="minilm")
    texts = ["Revenue.", "The Aurora carries 8,500 TEU.", " ".join(REPORT), "Crew.", REPORT[1], "Dividend per share."]
    masks: list[np.ndarray] = []
    session = encoder.session

    class Recording:
        def run(self, names, feed, *rest):
            masks.append(feed["attention_mask"])
            return session.run(names, feed, *rest)

    encoder.session = Recording()
    together = encoder.encode(texts)
    assert all(mask.sum() >= 0.8 * mask.size for mask in masks)  # at most a fifth of each batch is padding
    alone = np.vstack([encoder.encode([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-5)


def test_several_query_vectors_search_a_space_at_once_as_each_would_alone(tmp_path):
    """A question's keywords (up to eight) are matched against every entity: one pass over the vectors."""
    store = open_store(tmp_path / "store")
    rng = np.random.default_rng(7)
    items = [(f"e{i}|d{i % 3}", f"d{i % 3}") for i in range(300)]
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    store.put_vectors(ENTITY_SPACE, items, np.vstack([vectors[:150], vectors[:150]]))  # ties: ordered by rowid
    for doc in ("d0", "d1", "d2"):
        store.write_document(Document(doc, f"/tmp/{doc}.pdf", doc, "pdf", [], content_hash=doc))
        store.set_stage(doc, STAGE_READY)
    queries = rng.standard_normal((5, 16)).astype(np.float32)
    for scope in (None, ["d1"], ["d0", "d2"]):
        together = store.vector_search_many(ENTITY_SPACE, queries, 7, scope)
        alone = [store.vector_search(ENTITY_SPACE, q, 7, scope) for q in queries]
        assert [[item for item, _ in hits] for hits in together] == [[item for item, _ in hits] for hits in alone]
        assert [s for hits in together for _, s in hits] == pytest.approx([s for hits in alone for _, s in hits])
    assert store.vector_search_many(ENTITY_SPACE, queries[:0], 7) == []
    store.close()


@pytest.fixture
def fleet_only(tmp_path, embedder, pdf_writer):
    pdf_writer(tmp_path / "fleet.pdf", FLEET, title="Fleet report")
    pdf_writer(tmp_path / "parks.pdf", PARKS, title="Parks report")
    col = Collection(tmp_path / "col", embedder=embedder)
    assert not col.add([tmp_path / "fleet.pdf"]).failed
    yield col, tmp_path / "parks.pdf"
    col.close()


def cited_titles(col: Collection, question: str, mode: str) -> set[str]:
    return {c.title for c in col.ask(question, mode=mode).citations}


@pytest.mark.parametrize("mode", ["auto", "hybrid"])
def test_warm_answers_see_a_document_added_and_forget_one_removed(fleet_only, mode):
    col, parks = fleet_only
    question = "How many visitors does Vondel Park receive?"
    shown = "Parks of the city"  # the title its first page sets largest (the metadata says "Parks report")
    assert shown not in cited_titles(col, question, mode)
    assert not col.add([parks]).failed
    assert shown in cited_titles(col, question, mode)
    col.remove("parks.pdf")
    assert shown not in cited_titles(col, question, mode)


def test_auto_reports_where_its_time_went(fleet_only):
    col, _ = fleet_only
    stages = col.retrieve("How many TEU does the Aurora carry?", mode="auto").meta["stage_seconds"]
    assert {"candidates", "features", "ranker"} <= set(stages)
