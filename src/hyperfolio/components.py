"""Each component a model can do: the model's when one is configured for its role, else the offline one.

One row per component says which model role it asks for, how to build the offline one and how to build
the model's (handed the chat model and the offline component, its fallback). Adding a component is a
row; the choice between offline and model is made here only. The model modules load only when a model
is configured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.config import Settings
from hyperfolio.embed.protocols import Embedder
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.layers import OfflineThemer
from hyperfolio.hypergraph.reconcile import OfflineDetector, OfflineResolver
from hyperfolio.hypergraph.refine import OfflineRefiner
from hyperfolio.llm.registry import ModelSet
from hyperfolio.store.base import Store


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
    from hyperfolio.hypergraph.summarise import DescriptionSummariser

    return DescriptionSummariser(chat, max_chars=parts.settings.build.max_description_chars)


def _reconcilers(chat: Any, _offline: Any, _parts: Parts) -> Any:
    from hyperfolio.hypergraph.reconcile_model import LLMDetector, LLMResolver

    return LLMDetector(chat), LLMResolver(chat)


def _themer(chat: Any, _offline: Any, parts: Parts) -> Any:
    from hyperfolio.hypergraph.layers_model import LLMThemer

    return LLMThemer(chat, vision=parts.models.get("vision"), picture=parts.chunk_picture)


def _refiner(chat: Any, _offline: Any, _parts: Parts) -> Any:
    from hyperfolio.hypergraph.refine_model import LLMRefiner

    return LLMRefiner(chat)


def _extractive(parts: Parts) -> ExtractiveAnswerer:
    settings = parts.settings
    return ExtractiveAnswerer(
        parts.embedder(), max_passages=settings.answer_sentences, min_score=settings.min_answer_score
    )


def _answerer(chat: Any, extractive: ExtractiveAnswerer, parts: Parts) -> Any:
    from hyperfolio.answer.model import LLMAnswerer

    return LLMAnswerer(chat, extractive, vision=parts.models.get("vision"))


ROLES: dict[str, Role] = {
    "extractor": Role("extract", offline_extractor, _model_extractor),
    "summariser": Role("extract", lambda _parts: None, _summariser),  # offline: descriptions joined, not summarised
    "reconcilers": Role("extract", lambda _parts: (OfflineDetector(), OfflineResolver()), _reconcilers),
    "themer": Role("extract", lambda _parts: OfflineThemer(), _themer),
    "refiner": Role("extract", lambda _parts: OfflineRefiner(), _refiner),
    "answerer": Role("answer", _extractive, _answerer),
}


def component(name: str, parts: Parts) -> Any:
    """The component `name` (a key of ROLES): the model's when its role has a model, else the offline one."""
    role = ROLES[name]
    offline = role.offline(parts)
    chat = parts.models.get(role.model_role)
    return offline if chat is None else role.model(chat, offline, parts)
