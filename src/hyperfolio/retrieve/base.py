"""The retrieval strategy interface: a question in, an evidence package out."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar, cast

import numpy as np

from hyperfolio.config import ConceptOptions, DualOptions, TopDownOptions, coerce_settings
from hyperfolio.embed.protocols import Embedder
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.model import DocumentInfo, EvidencePackage
from hyperfolio.retrieve.encoding import QueryMemo, TextCache
from hyperfolio.retrieve.keywords import Decomposer, Keywords, OfflineDecomposer
from hyperfolio.store.base import STAGE_READY, Store
from hyperfolio.timing import StageTimes

T = TypeVar("T")


class Scorer(Protocol):
    def score(self, matrix: np.ndarray) -> np.ndarray: ...


class Rankers(Protocol):
    """The learned rankers `auto` reads (`retrieve.ranker.RankerSet`): injected, so this interface never
    imports the strategy built on it."""

    @property
    def exclude(self) -> list[str]: ...

    def for_layout(self, layout: str) -> Scorer: ...


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
    decomposer: Decomposer = field(default_factory=OfflineDecomposer)  # a keywords model when one is configured
    vision_model: StructuredChatModel | None = None  # reads pictures of the graph (top-down retrieval)
    ranker: Rankers | None = None  # the learned rankers `auto` uses; None: the packaged ones
    memo: QueryMemo = field(default_factory=QueryMemo)  # one question's encodings; a new context per call
    texts: TextCache = field(default_factory=TextCache)  # words of indexed texts, kept by the collection
    times: StageTimes = field(default_factory=StageTimes)  # seconds per stage a strategy reports, this call

    def kept(self, key: Hashable, compute: Callable[[], T], also: Hashable = None) -> T:
        """A value derived from the collection's documents (the ready ones, their cards), kept across
        questions while the store's documents version (and `also`, another version it depends on) stays
        the same: read once per change, not per question (a library of thousands of documents). One
        value per key: a change replaces it, so a service whose documents come and go all day keeps
        no stale ones."""
        version = (self.memo.value(("documents-version",), self.store.documents_version), also)
        found = self.texts.get(("kept", key))
        if found is not None and found[0] == version:
            return cast(T, found[1])
        value = compute()
        self.texts.put(("kept", key), (version, value))
        return value

    def ready_documents(self) -> list[DocumentInfo]:
        """The collection's fully indexed documents."""
        return self.kept(
            ("ready-documents",), lambda: [d for d in self.store.list_documents() if d.status == STAGE_READY]
        )

    def keywords(self, question: str) -> Keywords:
        """K_low and K_high of the question, decomposed once per call."""
        return self.memo.value(
            ("keywords", question), lambda: self.decomposer.decompose(question, self.dual.max_keywords)
        )

    def offline_keywords(self, question: str) -> Keywords:
        """The offline decomposer's keywords whatever model is configured: `auto`'s ranker was fitted on
        features computed from them, and a model's keywords would move every feature it weighs."""
        if isinstance(self.decomposer, OfflineDecomposer):
            return self.keywords(question)
        return self.memo.value(
            ("offline-keywords", question), lambda: OfflineDecomposer().decompose(question, self.dual.max_keywords)
        )


@dataclass(frozen=True)
class Query:
    text: str
    k: int = 10
    doc_ids: Sequence[str] | None = None  # None: the whole collection


class Strategy(Protocol):
    name: str
    needs_ranker: bool
    lexical: bool
    groups_by_modality: bool

    def retrieve(self, query: Query, ctx: RetrievalContext) -> EvidencePackage: ...


class Traits:
    """What a strategy needs beyond the index, declared by the strategy instead of checked by its name."""

    needs_ranker = False  # the learned rankers, injected as `RetrievalContext.ranker` (auto)
    lexical = False  # words only, end to end: its extractive answer loads no embedding model (bm25)
    groups_by_modality = False  # groups its evidence by modality itself (concept), so `by_modality` is its own


# Per-call knobs: each mode with a settings section takes its own; the modality layout (kept in the
# concept section) serves every mode.
KNOB_SECTIONS: dict[str, type] = {"dual": DualOptions, "concept": ConceptOptions, "topdown": TopDownOptions}
LAYOUT_KNOBS = frozenset({"by_modality", "k_text", "k_table", "k_image"})


def split_knobs(mode: str, options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Knobs by the settings section they belong to."""
    own = mode if mode in KNOB_SECTIONS else "concept"
    out: dict[str, dict[str, Any]] = {}
    for key, value in options.items():
        section = "concept" if key in LAYOUT_KNOBS else own
        out.setdefault(section, {})[key] = value
    return out


def with_knobs(context: RetrievalContext, mode: str, options: dict[str, Any]) -> RetrievalContext:
    """The context with per-call knobs applied to their sections."""
    for section, values in split_knobs(mode, options).items():
        context = replace(context, **{section: replace(getattr(context, section), **values)})
    return context


def typed_knobs(mode: str, values: dict[str, Any]) -> dict[str, Any]:
    """Loosely typed knobs (strings from a command line) as the types of their settings fields."""
    typed: dict[str, Any] = {}
    for section, raw in split_knobs(mode, values).items():
        chosen = coerce_settings(KNOB_SECTIONS[section], raw)  # unknown keys: ValueError
        typed.update({key: getattr(chosen, key) for key in raw})
    return typed
