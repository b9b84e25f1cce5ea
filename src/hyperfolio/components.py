"""Each component a model can do: the model's when one is configured for its role, else the offline one.

One row per component says which model role it asks for, how to build the offline one and how to build
the model's (handed the chat model and the offline component, its fallback). Adding a component is a
row; the choice between offline and model is made here only. The model modules load only when a model
is configured.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperfolio.answer.extractive import Answerer, ExtractiveAnswerer
from hyperfolio.config import Settings
from hyperfolio.dialogue import OfflineRewriter
from hyperfolio.embed.local import make_embedder
from hyperfolio.embed.protocols import Embedder
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.layers_offline import OfflineThemer
from hyperfolio.hypergraph.reconcile_offline import OfflineDetector, OfflineResolver
from hyperfolio.hypergraph.refine_offline import OfflineRefiner
from hyperfolio.ingest.cards import offline_carder
from hyperfolio.ingest.embedding import embed_chunks
from hyperfolio.ingest.pipeline import Components
from hyperfolio.llm.registry import ModelSet
from hyperfolio.model import Chunk, DocumentInfo
from hyperfolio.retrieve.base import RetrievalContext, Strategy
from hyperfolio.retrieve.encoding import TextCache
from hyperfolio.retrieve.keywords import OfflineDecomposer
from hyperfolio.retrieve.ranker import COLLECTION_FILE, RankerSet, load_ranker
from hyperfolio.store.base import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Parts:
    """What the builders take from a collection."""

    settings: Settings
    models: ModelSet
    store: Store
    embedder: Callable[[], Embedder]
    image_bytes: Callable[[str], bytes | None]  # a page image stored beside the collection
    chunk_picture: Callable[[str], bytes | None]  # a picture of a chunk's hypergraph, for a vision model


@dataclass(frozen=True)
class Role:
    model_role: str  # the [models] role it asks for: "extract", "answer"
    offline: Callable[[Parts], Any]
    model: Callable[[Any, Any, Parts], Any]  # (chat model, offline component, parts) -> the model's component


def offline_extractor(parts: Parts) -> OfflineExtractor:
    build = parts.settings.build
    return OfflineExtractor(multimodal=build.multimodal, max_entities_per_page=build.max_entities_per_page)


def _model_extractor(chat: Any, offline: OfflineExtractor, parts: Parts) -> Any:
    from hyperfolio.hypergraph.extract_model import LLMExtractor

    multimodal = parts.settings.build.multimodal
    return LLMExtractor(
        chat,
        parts.models.get("vision") if multimodal else None,
        multimodal=multimodal,
        resolve_image=parts.image_bytes,
        offline=offline,
        keep_note=lambda chunk_id, note: parts.store.annotate_chunk(chunk_id, "description", note),
    )


def _summariser(chat: Any, _offline: None, parts: Parts) -> Any:
    from hyperfolio.hypergraph.summarise_model import DescriptionSummariser

    return DescriptionSummariser(chat, max_chars=parts.settings.build.max_description_chars)


def _reconcilers(chat: Any, _offline: Any, _parts: Parts) -> Any:
    from hyperfolio.hypergraph.reconcile_model import LLMDetector, LLMResolver

    return LLMDetector(chat), LLMResolver(chat)


def _themer(chat: Any, _offline: Any, parts: Parts) -> Any:
    from hyperfolio.hypergraph.layers_model import LLMThemer

    return LLMThemer(chat, vision=parts.models.get("vision"), picture=parts.chunk_picture)


def _carder(chat: Any, _offline: Any, _parts: Parts) -> Any:
    from hyperfolio.cards.card_model import LLMCarder

    return LLMCarder(chat)


def _refiner(chat: Any, _offline: Any, _parts: Parts) -> Any:
    from hyperfolio.hypergraph.refine_model import LLMRefiner

    return LLMRefiner(chat)


def extractive_answerer(settings: Settings, embedder: Embedder | None) -> ExtractiveAnswerer:
    """The offline answerer as the settings configure it (`embedder` None: it scores by words only)."""
    return ExtractiveAnswerer(
        embedder,
        max_passages=settings.answer_sentences,
        min_score=settings.min_answer_score,
        min_anchor_share=settings.min_anchor_share,
    )


def _extractive(parts: Parts) -> ExtractiveAnswerer:
    return extractive_answerer(parts.settings, parts.embedder())


def _answerer(chat: Any, extractive: ExtractiveAnswerer, parts: Parts) -> Any:
    from hyperfolio.answer.model import LLMAnswerer

    return LLMAnswerer(chat, extractive, vision=parts.models.get("vision"))


def _decomposer(chat: Any, _offline: Any, _parts: Parts) -> Any:
    from hyperfolio.retrieve.keywords_model import LLMDecomposer

    return LLMDecomposer(chat)


def _rewriter(chat: Any, _offline: Any, _parts: Parts) -> Any:
    from hyperfolio.dialogue.followups_model import LLMRewriter

    return LLMRewriter(chat)


ROLES: dict[str, Role] = {
    "extractor": Role("extract", offline_extractor, _model_extractor),
    "summariser": Role("extract", lambda _parts: None, _summariser),  # offline: descriptions joined, not summarised
    "reconcilers": Role("extract", lambda _parts: (OfflineDetector(), OfflineResolver()), _reconcilers),
    "themer": Role("extract", lambda _parts: OfflineThemer(), _themer),
    "refiner": Role("extract", lambda _parts: OfflineRefiner(), _refiner),
    "carder": Role("extract", lambda _parts: offline_carder(), _carder),  # the offline one reads the PDF's cover
    "answerer": Role("answer", _extractive, _answerer),
    "decomposer": Role("keywords", lambda _parts: OfflineDecomposer(), _decomposer),
    "rewriter": Role("keywords", lambda _parts: OfflineRewriter(), _rewriter),  # follow-ups made to stand alone
}


def component(name: str, parts: Parts) -> Any:
    """The component `name` (a key of ROLES): the model's when its role has a model, else the offline one."""
    role = ROLES[name]
    offline = role.offline(parts)
    chat = parts.models.get(role.model_role)
    return offline if chat is None else role.model(chat, offline, parts)


class ComponentSet:
    """One collection's components, each built when first asked for and then kept: the chunk and graph
    embedders, the model clients, `auto`'s rankers and every row of ROLES. A handle that never indexes or
    asks never loads a model."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        location: str,
        folder: Path,
        lock: threading.RLock,
        embedder: Embedder | None = None,
        answerer: Answerer | None = None,
    ) -> None:
        self.settings, self.store, self.location, self.folder, self.lock = settings, store, location, folder, lock
        self._embedder = embedder
        self._graph_embedder: Embedder | None = None
        self._answerer = answerer
        self._models: ModelSet | None = None
        self._ranker: RankerSet | None = None

    @property
    def embedder(self) -> Embedder:
        """The chunk embedder: the one the collection's vectors were made with, else the configured one."""
        with self.lock:
            if self._embedder is None:
                stored = self.store.get_meta("embedder")
                if stored and stored != self.settings.embedder != Settings().embedder:
                    # Said only when the user chose another embedder: the default changing is not news.
                    log.warning(
                        "collection %s was embedded with %r; using it instead of %r",
                        self.folder,
                        stored,
                        self.settings.embedder,
                    )
                self._embedder = make_embedder(stored or self.settings.embedder, self.settings.embed_batch)
            return self._embedder

    @property
    def embedder_name(self) -> str:
        """The embedder queries will use: the indexed one, else the configured one."""
        return self.store.get_meta("embedder") or self.settings.embedder

    @property
    def graph_embedder(self) -> Embedder:
        """Embeds entities and hyperedges: many short texts, so the fast static model by default."""
        with self.lock:
            if self._graph_embedder is None:
                name = self.settings.build.graph_embedder
                self._graph_embedder = self.embedder if name == self.embedder_name else make_embedder(name)
            return self._graph_embedder

    @property
    def models(self) -> ModelSet:
        """Language and vision model clients for the configured roles, sharing this collection's cache."""
        with self.lock:
            if self._models is None:
                self._models = ModelSet(self.settings, self.location)
            return self._models

    def usage_note(self) -> str:
        """' (12 model calls, 34,567 tokens, 3 cached)' while language models are in use this run, else ''."""
        if self._models is None or not self._models.configured:
            return ""
        usage = self._models.snapshot().values()
        calls = sum(u.calls for u in usage)
        tokens = sum(u.total_tokens for u in usage)
        hits = sum(u.cache_hits for u in usage)
        return f" ({calls} model calls, {tokens:,} tokens, {hits} cached)"

    def get(self, name: str) -> Any:
        """The component `name` of ROLES, built now (components are cheap; the models they use are kept)."""
        return component(name, self.role_parts())

    def role_parts(self) -> Parts:
        """What the ROLES builders take from this collection."""
        return Parts(
            self.settings, self.models, self.store, lambda: self.embedder, self._image_bytes, self._chunk_picture
        )

    def _image_bytes(self, relative: str) -> bytes | None:
        path = self.folder / relative
        return path.read_bytes() if path.is_file() else None

    def _chunk_picture(self, chunk_id: str) -> bytes | None:
        from hyperfolio.viz import Budget, Style, from_store, prune, render

        graph = from_store(self.store, self.store.chunk_hyperedges(chunk_id), "")
        if not graph.entities:
            return None
        prune(graph, "", Budget(width=900, height=700))
        target = self.folder / "pictures" / f"chunk-{chunk_id.replace(':', '-')}.png"
        return render(graph, ["set-force"], target, Style(width_px=900, height_px=700)).read_bytes()

    @property
    def answerer(self) -> Answerer:
        if self._answerer is None:
            self._answerer = self.get("answerer")
        return self._answerer

    def answerer_for(self, strategy: Strategy) -> Answerer:
        """A lexical strategy's extractive answer scores passages by their words: no embedding model loads."""
        answerer = self.answerer
        if strategy.lexical and isinstance(answerer, ExtractiveAnswerer):
            return extractive_answerer(self.settings, None)
        return answerer

    @property
    def ranker(self) -> RankerSet:
        """The learned rankers of `auto`: this collection's own (`hyperfolio tune`), else the packaged ones."""
        if self._ranker is None:
            self._ranker = load_ranker(self.folder)
        return self._ranker

    def use_ranker(self, ranker: RankerSet | None, save: bool = False) -> None:
        """Rank `auto` with these weights from now on (None: back to the default); `save` keeps them
        in the collection directory."""
        self._ranker = ranker
        target = self.folder / COLLECTION_FILE
        if save and ranker is not None:
            ranker.save(target)
        elif save and target.exists():
            target.unlink()

    def retrieval_context(self, texts: TextCache) -> RetrievalContext:
        """What a strategy reads for one question; `texts` (words of indexed texts) outlive the question."""
        return RetrievalContext(
            store=self.store,
            embedder=self.embedder,
            titles=self.store.titles(),
            rrf_k=self.settings.rrf_k,
            graph_embedder=self.graph_embedder,
            dual=self.settings.dual,
            concept=self.settings.concept,
            topdown=self.settings.topdown,
            decomposer=self.get("decomposer"),
            texts=texts,
            vision_model=self.models.get("vision"),
        )

    def for_ingest(self, resolve: Callable[[str], DocumentInfo]) -> Components:
        """The parts the ingest pipeline uses, as getters of these lazily built ones: a getter sees a part
        set after the pipeline was made (`Collection.sibling` shares its graph embedder so)."""
        return Components(
            embedder=lambda: self.embedder,
            graph_embedder=lambda: self.graph_embedder,
            models=lambda: self.models,
            usage_note=self.usage_note,
            extractor=lambda: self.get("extractor"),
            summariser=lambda: self.get("summariser"),
            reconcilers=lambda: self.get("reconcilers"),
            themer=lambda: self.get("themer"),
            refiner=lambda: self.get("refiner"),
            resolve=resolve,
            carder=lambda: self.get("carder"),
        )

    def embed_imported(self, store: Store, chunks: list[Chunk]) -> int:
        """An imported bundle's chunk vectors, made as `add` makes them; the embedder is looked up per call,
        so the imported meta (which embedder the bundle was indexed with) decides it."""
        from hyperfolio.store.bundle import EMBED_BATCH

        return embed_chunks(store, self.embedder, chunks, batch=EMBED_BATCH)

    def shared_embedder(self) -> Embedder | None:
        """The chunk embedder if it is loaded (a copy of the collection shares it), else None."""
        return self._embedder

    def shared_with(self, twin: ComponentSet) -> None:
        """`twin` (a second handle on the same collection) uses this set's graph embedder and answerer."""
        twin._graph_embedder, twin._answerer = self.graph_embedder, self._answerer

    def close(self) -> None:
        if self._models is not None:
            self._models.close()
