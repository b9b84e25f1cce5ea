"""Per-page extraction of a multimodal hypergraph (Hyper-M2RAG section 4.2).

Each page-level unit yields entities (text, table and visual) and hyperedges: pairwise
`low` edges and n-ary `high` edges, each with the chunks that evidence it. Extractors
share these types, so the offline extractor and a language-model one are swappable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from hyperfolio.model import Chunk

LOW, HIGH, REFINE = "low", "high", "refine"


@dataclass
class ExtractedEntity:
    name: str
    type: str  # e.g. "organization", "quantity", "table", "figure", "table_header", "concept"
    modality: str  # "text", "table", "visual"
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)  # chunk ids of the evidence
    score: float = 1.0


@dataclass
class ExtractedEdge:
    level: str  # LOW (two members), HIGH (three or more), REFINE (cross-page, from refinement)
    members: list[str]  # entity names, as extracted
    description: str
    keywords: list[str] = field(default_factory=list)
    strength: float = 1.0
    chunks: list[str] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)  # member name -> role ("table", "row", "column", ...)


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


class Extractor(Protocol):
    name: str

    def extract_document(self, units: list[PageUnit]) -> list[PageGraph]:
        """One graph per page; the whole document is given so statistics can span it."""
