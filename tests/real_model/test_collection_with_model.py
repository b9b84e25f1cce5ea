"""`add` and `ask` through the Python API with every model role on a real llama.cpp server.

A small model writes poor JSON and poor answers; these tests do not grade it. They check that a
real server's replies are accepted at every stage (no exception, nothing lost), that the model
was really called, and that answers keep their citations whatever the model wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pymupdf
import pytest

from hyperfolio.collection import RETRIEVAL_MODES, AddReport, Collection
from hyperfolio.config import Settings
from hyperfolio.llm.usage import StageUsage, read_usage
from hyperfolio.store.base import STAGE_READY

pytestmark = [pytest.mark.real_model, pytest.mark.long]

QUESTION = "How much drinking water did Greywater Reservoir supply in 2023?"


@dataclass
class Indexed:
    """The module's collection with the small report added once (extraction is the slow part)."""

    col: Collection
    report: AddReport
    pages: int  # as PyMuPDF counts them, not hyperfolio


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, model_settings: Settings, small_pdf: Path) -> Iterator[Indexed]:
    """One add per module: every ask test reads the same collection."""
    with pymupdf.open(small_pdf) as pdf:
        pages = pdf.page_count
    col = Collection(tmp_path_factory.mktemp("real-model-collection"), settings=model_settings)
    try:
        yield Indexed(col, col.add([small_pdf]), pages)
    finally:
        col.close()


def replied(usage: StageUsage | None) -> int:
    """Replies a stage got from the server, now or earlier (a cache hit was once a reply)."""
    return 0 if usage is None else usage.calls + usage.cache_hits


def test_add_indexes_every_page_with_real_model_calls(indexed: Indexed) -> None:
    """Whatever the model wrote, no page may be lost, and extraction must have used it."""
    report = indexed.report
    assert not report.failed, [(r.path, r.reason) for r in report.failed]
    assert [r.status for r in report.results] == ["added"], report.results
    assert report.pages == indexed.pages

    (info,) = indexed.col.documents()
    assert info.status == STAGE_READY
    assert info.num_pages == indexed.pages
    chunks = list(indexed.col.store.iter_chunks(info.doc_id))
    assert {c.page for c in chunks} == set(range(1, indexed.pages + 1)), "a page has no chunk"
    stats = indexed.col.stats()
    assert stats["pages"] == indexed.pages
    assert stats["vectors"] >= stats["chunks"] == len(chunks) > 0

    # Every page is accounted for: the model built it, or the offline path did and says why.
    built = {item: how for doc, stage, item, how, _ in indexed.col.store.builds(info.doc_id) if stage == "extract"}
    assert set(built) == {f"p.{n}" for n in range(1, indexed.pages + 1)}, built
    offline = {item: reason for _, stage, item, reason in indexed.col.offline_parts() if stage == "extract"}
    assert all(reason.strip() for reason in offline.values()), offline
    assert {item for item, how in built.items() if how == "offline"} == set(offline)
    assert stats["built_by"]["extract"] == {h: list(built.values()).count(h) for h in set(built.values())}

    # Usage is kept in memory and in the database; both must show extraction really ran on the server.
    for usage in (indexed.col.models.snapshot(), read_usage(indexed.col.path)):
        extract = usage.get("extract")
        assert extract is not None and extract.calls >= 1, usage
        assert extract.prompt_tokens > 0 and extract.completion_tokens > 0, extract


@pytest.mark.parametrize("mode", RETRIEVAL_MODES)
def test_ask_cites_the_document_in_every_mode(indexed: Indexed, mode: str) -> None:
    """Each mode hands a real model its own evidence layout; the answer must stay cited either way."""
    assert not indexed.report.failed, "nothing to ask: add failed"
    (info,) = indexed.col.documents()
    before = replied(indexed.col.models.snapshot().get("answer"))

    answer = indexed.col.ask(QUESTION, mode=mode)

    assert answer.text.strip(), answer
    assert answer.citations, f"{mode}: no citation ({answer.answerer}): {answer.text}"
    for citation in answer.citations:
        assert citation.doc_id == info.doc_id, citation
        assert citation.title == info.title, citation
        assert 1 <= citation.page <= indexed.pages, citation
    # The answer role is on the server: it must have replied (falling back is allowed, skipping it is not).
    after = replied(indexed.col.models.snapshot().get("answer"))
    assert after > before, f"{mode}: the answer model was not asked ({answer.answerer})"
