"""Per-page extraction of a multimodal hypergraph (Hyper-M2RAG section 4.2).

Each page-level unit yields entities (text, table and visual) and hyperedges: pairwise
`low` edges and n-ary `high` edges, each with the chunks that evidence it. Extractors
share these types, so the offline extractor and a language-model one are swappable.
They also yield facts (HVM-GraphRAG 3.1): `fact` hyperedges with a head, a relation label
and a tail, and a concept (a category such as Company or Metric) for every entity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from hyperfolio.model import Chunk

LOW, HIGH, REFINE, FACT = "low", "high", "refine", "fact"


@dataclass
class ExtractedEntity:
    name: str
    type: str  # e.g. "organization", "quantity", "table", "figure", "table_header", "concept"
    modality: str  # "text", "table", "visual"
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)  # chunk ids of the evidence
    score: float = 1.0
    concept: str = ""  # the category it belongs to (one per entity): "Company", "Year", "Vessel"


@dataclass
class ExtractedEdge:
    level: str  # LOW (two members), HIGH (three or more), REFINE (cross-page), FACT (head, relation, tail)
    members: list[str]  # entity names, as extracted
    description: str
    keywords: list[str] = field(default_factory=list)
    strength: float = 1.0
    chunks: list[str] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)  # member name -> role ("table", "row", "column", ...)
    relation: str = ""  # FACT only: snake_case label; members are [head, tail]


@dataclass
class PageGraph:
    doc_id: str
    page: int
    entities: list[ExtractedEntity] = field(default_factory=list)
    edges: list[ExtractedEdge] = field(default_factory=list)


@dataclass
class PageUnit:
    """What an extractor sees: one page's chunks with their document context."""

    doc_id: str
    title: str
    page: int
    chunks: list[Chunk]


def page_units(doc_id: str, title: str, chunks: Iterable[Chunk]) -> list[PageUnit]:
    """A document's chunks as the page units an extractor reads, page by page."""
    by_page: dict[int, list[Chunk]] = {}
    for chunk in chunks:
        by_page.setdefault(chunk.page, []).append(chunk)
    return [PageUnit(doc_id, title, page, on_page) for page, on_page in sorted(by_page.items())]


class Extractor(Protocol):
    name: str

    def extract_document(self, units: list[PageUnit]) -> list[PageGraph]:
        """One graph per page; the whole document is given so statistics can span it."""
