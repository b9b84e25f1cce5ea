"""Model plug-in protocols: every stage that calls a model goes through one of these."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


@runtime_checkable
class ChatModel(Protocol):
    """Messages in, text out; `schema` asks for JSON that validates against it."""

    name: str

    def complete(
        self, messages: Sequence[dict[str, Any]], *, schema: dict[str, Any] | None = None, **params: Any
    ) -> str: ...


@runtime_checkable
class VisionModel(Protocol):
    """Like a chat model, but messages may carry images (PNG bytes)."""

    name: str

    def describe(self, prompt: str, images: Sequence[bytes], **params: Any) -> str: ...


@runtime_checkable
class StructuredChatModel(ChatModel, Protocol):
    """A chat model that returns replies validated against a pydantic model, counted under `stage`."""

    def complete_json(
        self,
        messages: Sequence[dict[str, Any]],
        model_type: type[M],
        stage: str | None = None,
        on_text: Callable[[str], None] | None = None,
        **params: Any,
    ) -> M: ...

    async def acomplete_json(
        self, messages: Sequence[dict[str, Any]], model_type: type[M], stage: str | None = None, **params: Any
    ) -> M: ...

    def complete_json_many(
        self,
        batch: Sequence[Sequence[dict[str, Any]]],
        model_type: type[M],
        stage: str | None = None,
        *,
        return_exceptions: bool = False,
        on_done: Callable[[], None] | None = None,
        **params: Any,
    ) -> list[M | BaseException]: ...
