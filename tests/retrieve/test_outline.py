"""Questions about a document's outline: the headings under a section it names, read off the whole
document's section paths, each cited."""

from __future__ import annotations

import pytest
from tests.conftest import indexed

from hyperfolio.model import Chunk
from hyperfolio.retrieve.outline import asked_outline, sub_headings

GUIDE = """# Retrieval

Retrieval finds the passages an answer needs, from many sources.

## Retrieval Source

Sources are documents, tables and knowledge graphs, each indexed apart.

## Query Optimization

Queries are expanded and rewritten before the search.

# Augmentation

Augmentation decides how often and how deep to retrieve.

## Iterative Retrieval

The search is repeated with the answer drafted so far.

## Recursive Retrieval

Each query is broken into smaller ones that are searched in turn.

## Adaptive Retrieval

The model decides by itself when retrieval is needed.

# Conclusion

Retrieval and augmentation together make the answers grounded.
"""


@pytest.fixture(scope="module")
def guide(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("outline")
    source = root / "guide.md"
    source.write_text(GUIDE, encoding="utf-8")
    yield from indexed(root, embedder, source)


def test_the_heading_whose_parts_a_question_asks_for():
    assert asked_outline('Which subsections does the section "AUGMENTATION" include?') == "AUGMENTATION"
    assert asked_outline("How many subsections does the section Query Optimization have?") == "Query Optimization"
    assert asked_outline("What are the sections of chapter 3?") == "chapter 3"
    assert asked_outline("Which section discusses augmentation?") is None  # where, not what it holds
    assert asked_outline("What does the augmentation section say?") is None


def test_the_headings_under_a_named_section_answer_in_reading_order_each_cited(guide):
    answer = guide.ask('Which subsections does the section "AUGMENTATION" include?')
    assert answer.short == "Iterative Retrieval, Recursive Retrieval, Adaptive Retrieval"
    assert answer.citations and all("Augmentation" in " ".join(c.section_path) for c in answer.citations)
    counted = guide.ask("How many subsections does the section Retrieval have?")
    assert counted.short == "2"  # Retrieval Source and Query Optimization, not the sections below it


def test_a_numbered_chapter_is_found_by_its_number():
    chunks = [
        Chunk(page=1, order=0, modality="text", text="a", section_path=["3 Results", "3.1 Accuracy"]),
        Chunk(page=2, order=0, modality="text", text="b", section_path=["Chapter 3: Results", "Speed"]),
        Chunk(page=3, order=0, modality="text", text="c", section_path=["13 Appendix", "Tables"]),
    ]
    assert list(sub_headings("chapter 3", chunks)) == ["3.1 Accuracy", "Speed"]


def test_a_section_the_document_does_not_have_leaves_the_evidence_alone(guide):
    answer = guide.ask('Which subsections does the section "Evaluation" include?')
    assert answer.meta.get("answer_kind") != "inventory"
