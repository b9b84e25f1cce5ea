"""A client for OpenAI-compatible chat servers (vLLM, SGLang, Ollama, llama.cpp server, hosted APIs).

The façade over three parts: `transport` (deadlines, retries, streaming, the in-flight limit and
breaker shared per server), `structured` (JSON replies down the format ladder, repaired,
validated, checked and corrected once) and `loop_thread` (all HTTP on one private event loop in
a background thread, one per ModelSet, so the synchronous methods work from plain code and from
threads, the async ones from any event loop). Replies are cached by model, prompt and parameters.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from hyperfolio.llm.budget import call_budget
from hyperfolio.llm.cache import ResponseCache, cache_key
from hyperfolio.llm.flow import AdaptiveLimit, CircuitBreaker
from hyperfolio.llm.loop_thread import LoopThread
from hyperfolio.llm.messages import user_message
from hyperfolio.llm.probe import probe_server
from hyperfolio.llm.reply_cache import ReplyCache
from hyperfolio.llm.server_profile import ServerProfile
from hyperfolio.llm.structured import StructuredReplies, StructuredRequest, schema_of
from hyperfolio.llm.transport import ChatTransport, ServerLink, normalise_base_url
from hyperfolio.llm.usage import UsageMeter

M = TypeVar("M", bound=BaseModel)


def _of_transport(name: str) -> Any:
    """A read-only attribute of the client that is its transport's setting."""
    return property(lambda self: getattr(self.http, name))


class OpenAICompatClient:
    """Chat and vision over an OpenAI-compatible `/chat/completions` endpoint.

    Implements the ChatModel and VisionModel protocols, plus typed JSON helpers. Sync methods
    (`complete`, `complete_json`, `complete_json_many`, `describe`) block the calling thread;
    async twins (`acomplete`, `acomplete_json`, `adescribe`) can be awaited from any event loop.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        role: str = "chat",
        timeout: float = 60.0,
        max_retries: int = 4,
        concurrency: int = 4,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        structured: str = "auto",
        cache: ResponseCache | None = None,
        usage: UsageMeter | None = None,
        backoff: float = 0.5,
        max_retry_wait: float = 60.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        stream: bool = True,
        link: ServerLink | None = None,
    ) -> None:
        if not model:
            raise ValueError("a model name is required")
        self.model = self.name = model
        self.role = role
        self.temperature = temperature
        self.max_tokens = max_tokens or None
        self.cache = cache
        self.usage = usage
        sent = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            sent["Authorization"] = f"Bearer {api_key}"
        slots = max(1, int(concurrency))
        self.http = ChatTransport(
            base_url=normalise_base_url(base_url),
            model=model,
            link=link or ServerLink(AdaptiveLimit(slots, slots=slots), CircuitBreaker()),
            headers=sent,
            timeout=float(timeout),
            max_retries=max(0, int(max_retries)),
            concurrency=slots,
            backoff=float(backoff),
            max_retry_wait=float(max_retry_wait),
            stream=stream,
            usage=usage,
            transport=transport,
        )
        self.base_url = self.http.base_url
        self._replies = ReplyCache(model, cache, usage)
        self._json = StructuredReplies(self.http, self._replies, structured)
        shared = link.runner if link is not None else None  # the loop of the registry's server, if any
        self._owns_runner = shared is None
        self._runner = shared if shared is not None else LoopThread(f"hyperfolio-llm-{role}")

    # The transport's settings, read through the client (read-only: the transport owns them).
    link: ServerLink = _of_transport("link")
    timeout: float = _of_transport("timeout")
    max_retries: int = _of_transport("max_retries")
    concurrency: int = _of_transport("concurrency")
    backoff: float = _of_transport("backoff")
    max_retry_wait: float = _of_transport("max_retry_wait")
    stream: bool = _of_transport("stream")

    def __repr__(self) -> str:
        return f"OpenAICompatClient(model={self.model!r}, base_url={self.base_url!r}, role={self.role!r})"

    # ------------------------------------------------------------------ public: sync
    def complete(
        self, messages: Sequence[Mapping[str, Any]], *, schema: Mapping[str, Any] | None = None, **params: Any
    ) -> str:
        """The reply's text; with `schema`, a JSON text (repaired, parsed and re-serialised)."""
        return self._runner.run(self._acomplete(messages, schema, params))

    def complete_json(
        self,
        messages: Sequence[Mapping[str, Any]],
        model_type: type[M],
        stage: str | None = None,
        on_text: Callable[[str], None] | None = None,
        **params: Any,
    ) -> M:
        """The reply as a validated `model_type` instance (see llm/structured.py for the strategy).

        `on_text` sees the raw reply so far as it streams (from the client's thread; it starts again
        from nothing when an attempt is retried)."""
        return self._runner.run(self._acomplete_json(messages, model_type, stage, params, on_text))

    def complete_json_many(
        self,
        batch: Sequence[Sequence[Mapping[str, Any]]],
        model_type: type[M],
        stage: str | None = None,
        *,
        return_exceptions: bool = False,
        on_done: Callable[[], None] | None = None,
        **params: Any,
    ) -> list[M | BaseException]:
        """Many `complete_json` calls at once, as many in flight as the server takes; results in input
        order. `on_done` is called (from the client's thread) as each call finishes, for progress."""

        async def one(messages: Sequence[Mapping[str, Any]]) -> M:
            try:
                return await self._acomplete_json(messages, model_type, stage, params)
            finally:
                if on_done is not None:
                    on_done()

        async def run_all() -> list[Any]:
            return await asyncio.gather(*(one(m) for m in batch), return_exceptions=return_exceptions)

        return self._runner.run(run_all())

    def describe(self, prompt: str, images: Sequence[bytes], **params: Any) -> str:
        """VisionModel: the reply to `prompt` about `images` (PNG/JPEG bytes)."""
        params.setdefault("stage", "vision")
        return self.complete([user_message(prompt, images)], **params)

    # ------------------------------------------------------------------ public: async
    async def acomplete(
        self, messages: Sequence[Mapping[str, Any]], *, schema: Mapping[str, Any] | None = None, **params: Any
    ) -> str:
        return await self._runner.run_async(self._acomplete(messages, schema, params))

    async def acomplete_json(
        self, messages: Sequence[Mapping[str, Any]], model_type: type[M], stage: str | None = None, **params: Any
    ) -> M:
        return await self._runner.run_async(self._acomplete_json(messages, model_type, stage, params))

    async def adescribe(self, prompt: str, images: Sequence[bytes], **params: Any) -> str:
        params.setdefault("stage", "vision")
        return await self.acomplete([user_message(prompt, images)], **params)

    # ------------------------------------------------------------------ public: state
    @property
    def structured_mode(self) -> str:
        """The structured-output strategy the next call will try first."""
        return self._json.mode

    @property
    def structured_support(self) -> dict[str, bool | None]:
        return dict(self._json.modes)

    @property
    def profile(self) -> ServerProfile | None:
        return self.link.profile

    def first_token_budget(self, body: Mapping[str, Any]) -> float:
        """Seconds to wait for the first token: the timeout, or more when the prompt takes longer to read."""
        return self.http.first_token_budget(body)

    def probe(self) -> ServerProfile:
        """Ask the server what it is and measure its speed with one short streamed reply (see server_profile)."""
        return self._runner.run(probe_server(self.http, self._json))

    def adopt(self, profile: ServerProfile) -> None:
        """Use what a profile says: structured-output modes already tried, streaming, slots."""
        self.link.profile = profile
        self._json.adopt(profile)
        if profile.streaming is False:
            self.http.stream = False

    def models(self) -> list[str]:
        """Model ids the server lists at /models (one GET; retried like any call)."""
        return self._runner.run(self.http.list_models())

    def close(self) -> None:
        if self._owns_runner:
            self._runner.stop(self.http.aclose)
        elif self._runner.started and not self._runner.in_loop_thread():
            with contextlib.suppress(Exception):  # closing must not fail
                self._runner.run(self.http.aclose())
        self._json.forget_lock()

    def __enter__(self) -> OpenAICompatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals (run on the private loop)
    def _sampling(self, params: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.max_tokens:
            out["max_tokens"] = self.max_tokens
        elif self.link.profile is not None and self.link.profile.context_tokens:
            # A known context: a reply may take its share, never run on to the end of it.
            out["max_tokens"] = call_budget(self.link.profile).max_tokens
        out.update({k: v for k, v in params.items() if v is not None})
        return out

    async def _acomplete(
        self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any] | None, params: dict[str, Any]
    ) -> str:
        params = dict(params)
        stage = params.pop("stage", None) or self.role
        sampling = self._sampling(params)
        if schema is not None:
            request = StructuredRequest(messages, dict(schema), stage, sampling, "reply")
            obj = await self._json.ask(request, lambda value: value)
            return json.dumps(obj, ensure_ascii=False)
        key = cache_key(self.model, messages, None, sampling)
        hit = await self._replies.get(key, stage)
        if hit is not None:
            return hit
        reply = await self.http.send({"model": self.model, "messages": list(messages), **sampling}, stage, probe=False)
        await self._replies.put(key, reply)
        return reply.text

    async def _acomplete_json(
        self,
        messages: Sequence[Mapping[str, Any]],
        model_type: type[M],
        stage: str | None,
        params: dict[str, Any],
        on_text: Callable[[str], None] | None = None,
    ) -> M:
        params = dict(params)
        stage = stage or params.pop("stage", None) or self.role
        params.pop("stage", None)
        request = StructuredRequest(
            messages, schema_of(model_type), stage, self._sampling(params), model_type.__name__, on_text
        )
        return await self._json.ask(request, model_type.model_validate)
