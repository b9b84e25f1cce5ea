"""The retrieval strategy interface: a question in, an evidence package out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hyperfolio.config import ConceptOptions, DualOptions, TopDownOptions
from hyperfolio.model import EvidencePackage
from hyperfolio.models.protocols import Embedder, StructuredChatModel
from hyperfolio.store.base import Store


@dataclass
class RetrievalContext:
    """What a strategy may read: the index and the models, never the build stages."""

    store: Store
    embedder: Embedder
    titles: dict[str, str] = field(default_factory=dict)  # doc_id -> title, for citations
    rrf_k: int = 60
    graph_embedder: Embedder | None = None  # embeds keywords for entity/hyperedge search (graph strategies)
    dual: DualOptions = field(default_factory=DualOptions)
    concept: ConceptOptions = field(default_factory=ConceptOptions)
    topdown: TopDownOptions = field(default_factory=TopDownOptions)
    keyword_model: StructuredChatModel | None = None  # decomposes questions when a model is configured
    vision_model: StructuredChatModel | None = None  # reads pictures of the graph (top-down retrieval)


@dataclass(frozen=True)
class Query:
    text: str
    k: int = 10
    doc_ids: Sequence[str] | None = None  # None: the whole collection


class Strategy(Protocol):
    name: str

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage: ...
