"""A client for OpenAI-compatible chat servers (vLLM, SGLang, Ollama, llama.cpp server, hosted APIs).

Structured output: the client asks for `response_format: json_schema` first. Servers differ
(llama-cpp-python's server answers HTTP 500 to it and accepts only `json_object`), so when the
first structured call is refused the client steps down a ladder - `json_schema`, `json_object`
carrying the schema, bare `json_object`, then plain prompting - and remembers the first rung that
worked. Whatever the server returns is parsed with repair, validated against a pydantic model and
checked for content that only looks valid (llm/reply_checks.py: echoes of the schema or the
instructions, loops); an invalid or rejected reply is sent back once with the error so the model
can correct it, and is never cached.

Transport: replies are streamed, and the timeout measures silence, not length: the first token
must come within a budget sized to the prompt (from the server's measured reading speed), then
each piece within `timeout` seconds of the last, so a slow but alive generation finishes. A
request that times out is retried with twice the budget, never the same one; leaving a stream
closes its connection, so the server stops generating for it. Connection errors, 429 (honouring
Retry-After) and 5xx are retried with exponential backoff and jitter. Requests in flight are
bounded by an AdaptiveLimit shared by every client of the same server (its slot count, else
learned), and a CircuitBreaker takes a stage offline after repeated failures. All HTTP runs on one
private event loop in a background thread (one per ModelSet), so the synchronous methods work
from plain code and from threads, the async ones from any event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ValidationError

from hyperfolio.llm.budget import call_budget
from hyperfolio.llm.cache import ResponseCache, cache_key
from hyperfolio.llm.errors import (
    ModelCallError,
    ModelConnectionError,
    ModelContextError,
    ModelHTTPError,
    ModelOutputError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from hyperfolio.llm.flow import AdaptiveLimit, CircuitBreaker
from hyperfolio.llm.json_shape import json_instruction
from hyperfolio.llm.messages import user_message
from hyperfolio.llm.reply_checks import RejectedReply, reply_problem
from hyperfolio.llm.server_profile import (
    FORMAT_PROBE_PROMPT,
    FORMAT_PROBE_SCHEMA,
    PROBE_PROMPT,
    ProfileStore,
    ServerProfile,
    context_from_error,
    read_models,
    read_ollama_show,
    read_props,
)
from hyperfolio.llm.streaming import StreamError, read_stream
from hyperfolio.llm.usage import UsageMeter, estimate_tokens

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

# Structured-output strategies, most to least constrained.
MODES = ("json_schema", "json_object_schema", "json_object", "prompt")
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "response format", "grammar", "schema")


# --------------------------------------------------------------------------- messages and images
# --------------------------------------------------------------------------- JSON with repair
class JSONRepairError(ValueError):
    """Text that stays unparseable after every repair."""


_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)```", re.S)
_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _string_end(text: str, start: int, quote: str) -> int:
    """Index just past the string literal opened at `start` (len(text) when it never closes)."""
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        i += 1
    return len(text)


def _structure(text: str, start: int) -> Iterator[tuple[int, str]]:
    """(index, character) of each bracket and comma outside string literals, from `start` on."""
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i, '"')
            continue
        if ch in "{[]},":
            yield i, ch
        i += 1


def _json_start(text: str) -> int | None:
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    return min(starts) if starts else None


def _outermost(text: str) -> str | None:
    """The first balanced {...} or [...] in `text`, skipping brackets inside strings."""
    start = _json_start(text)
    if start is None:
        return None
    stack: list[str] = []
    for i, ch in _structure(text, start):
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                break
            stack.pop()
            if not stack:
                return text[start : i + 1]
    # Unbalanced: fall back to the last closing bracket of the opening kind.
    end = text.rfind("}" if text[start] == "{" else "]")
    return text[start : end + 1] if end > start else None


def _normalise(text: str, single_quotes: bool) -> str:
    """Drop trailing commas, turn Python literals into JSON ones and, if asked, 'strings' into "strings"."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = _string_end(text, i, '"')
            out.append(text[i:j])
            i = j
            continue
        if ch == "'" and single_quotes:
            j = i + 1
            buf: list[str] = []
            while j < n and text[j] != "'":
                if text[j] == "\\" and j + 1 < n:
                    buf.append("'" if text[j + 1] == "'" else text[j : j + 2])
                    j += 2
                    continue
                buf.append('\\"' if text[j] == '"' else text[j])
                j += 1
            out.append('"' + "".join(buf) + '"')
            i = j + 1
            continue
        if ch == ",":
            k = i + 1
            while k < n and text[k].isspace():
                k += 1
            if k < n and text[k] in "}]":
                i += 1
                continue
        if ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_LITERALS.get(word, word))
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _close_truncated(text: str, tries: int = 40) -> Any:
    """The longest complete prefix of a reply cut off mid-JSON (finish_reason "length"), closed.

    Walks the text once, noting after each complete value (a comma or closing bracket outside
    strings) which brackets are still open; then, from the end backwards, cuts there and closes
    them until one cut parses. Items after the last complete one are lost, the rest is kept.
    """
    start = _json_start(text)
    if start is None:
        raise ValueError("no JSON")
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    for i, ch in _structure(text, start):
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
            cuts.append((i + 1, "".join(reversed(stack))))
            if not stack:
                break
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    for end, closing in reversed(cuts[-tries:]):
        try:
            return json.loads(_normalise(text[start:end], single_quotes=False) + closing, strict=False)
        except json.JSONDecodeError:
            continue
    raise ValueError("no complete prefix")


def parse_json_reply(text: str) -> Any:
    """Parse a model's JSON reply, repairing what models commonly get wrong.

    Tries, in order: the text as is; fenced blocks; the outermost {...}/[...] span; that span
    without trailing commas and with Python literals fixed; with single-quoted strings turned
    into double-quoted ones; and finally, for a reply cut off mid-way, its longest complete
    prefix with the open brackets closed. Raises JSONRepairError when nothing parses.
    """
    cleaned = _THINK.sub("", text or "").strip()
    if not cleaned:
        raise JSONRepairError("the reply is empty")
    candidates = [cleaned, *(block.strip() for block in _FENCE.findall(cleaned))]
    first_error: json.JSONDecodeError | None = None
    seen: set[str] = set()
    for candidate in candidates:
        span = _outermost(candidate)
        variants = [candidate]
        if span is not None:
            variants += [span, _normalise(span, single_quotes=False), _normalise(span, single_quotes=True)]
        for variant in variants:
            if variant in seen:
                continue
            seen.add(variant)
            try:
                return json.loads(variant, strict=False)
            except json.JSONDecodeError as exc:
                first_error = first_error or exc
    if not any(ch in cleaned for ch in "{["):
        raise JSONRepairError("the reply contains no JSON object or array")
    for candidate in candidates:  # a reply cut off mid-way: keep its complete part
        with contextlib.suppress(ValueError):
            return _close_truncated(candidate)
    detail = f"{first_error.msg} at line {first_error.lineno} column {first_error.colno}" if first_error else ""
    raise JSONRepairError(f"the reply is not valid JSON even after repair ({detail})")


def _describe_validation(exc: ValidationError, limit: int = 8) -> str:
    lines = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        lines.append(f"{where}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - limit
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)


# --------------------------------------------------------------------------- the event loop thread
class _LoopThread:
    """One private event loop in a daemon thread, started on first use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    @property
    def started(self) -> bool:
        return self._loop is not None

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.in_loop_thread():
            raise RuntimeError("a synchronous model call was made from the client's own event loop")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop())
        return future.result()

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop())
        return await asyncio.wrap_future(future)

    def stop(self, final: Callable[[], Awaitable[Any]] | None = None) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        if final is not None and thread is not threading.current_thread():
            with contextlib.suppress(Exception):  # closing must not fail
                asyncio.run_coroutine_threadsafe(final(), loop).result(timeout=5)  # type: ignore[arg-type]
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
            loop.close()


# --------------------------------------------------------------------------- the client
@dataclass
class Completion:
    """One reply: its text, token counts (estimated when the server sent none) and time spent."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    seconds: float = 0.0
    cached: bool = False
    mode: str | None = None  # structured-output strategy that produced it
    finish_reason: str | None = None
    first_token_seconds: float | None = None  # streamed replies: wait for the first token
    generation_seconds: float | None = None  # streamed replies: first to last token
    pieces: int = 0  # streamed replies: content pieces received (about one per token)


@dataclass
class ServerLink:
    """What the clients of one server share: the event loop, the in-flight limit, the breaker, the profile."""

    limit: AdaptiveLimit
    breaker: CircuitBreaker
    profile: ServerProfile | None = None
    profiles: ProfileStore | None = None
    runner: _LoopThread | None = None


class _FormatRejected(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


def _normalise_base_url(url: str) -> str:
    url = url.strip().rstrip("/")
    for suffix in ("/chat/completions", "/completions"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    if urlsplit(url).path in ("", "/"):
        url += "/v1"
    return url


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _mentions_context(body: str) -> bool:
    low = body.lower()
    return any(word in low for word in ("context", "n_ctx", "too long", "exceed"))


def _mentions_format(body: str) -> bool:
    low = body.lower()
    return any(word in low for word in _FORMAT_WORDS)


def _schema_name(name: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]
    return clean or "reply"


def _with_instruction(messages: Sequence[Mapping[str, Any]], extra: str) -> list[dict[str, Any]]:
    """A copy of `messages` with `extra` appended to the last user message (or a new one)."""
    out = [dict(m) for m in messages]
    for message in reversed(out):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = content + extra
            return out
        if isinstance(content, list):
            message["content"] = [*content, {"type": "text", "text": extra.strip()}]
            return out
    out.append({"role": "user", "content": extra.strip()})
    return out


@functools.cache
def _schema(model_type: type[BaseModel]) -> dict[str, Any]:
    """A reply type's JSON schema, built once: pydantic rebuilds it on every call otherwise."""
    return model_type.model_json_schema()


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
        if structured != "auto" and structured not in MODES:
            raise ValueError(f"structured must be 'auto' or one of {', '.join(MODES)}, not {structured!r}")
        self.base_url = _normalise_base_url(base_url)
        self.model = model
        self.name = model
        self.role = role
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.concurrency = max(1, int(concurrency))
        self.temperature = temperature
        self.max_tokens = max_tokens or None
        self.cache = cache
        self.usage = usage
        self.backoff = float(backoff)
        self.max_retry_wait = float(max_retry_wait)
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._transport = transport
        # Structured-output support: None = not yet known, True = works, False = refused.
        first = 0 if structured == "auto" else MODES.index(structured)
        self._modes: dict[str, bool | None] = {m: (False if i < first else None) for i, m in enumerate(MODES)}
        self._modes["prompt"] = True
        if structured != "auto":
            self._modes[structured] = True
        self.link = link or ServerLink(AdaptiveLimit(self.concurrency, slots=self.concurrency), CircuitBreaker())
        shared = link.runner if link is not None else None  # the loop of the registry's server, if any
        self._owns_runner = shared is None
        self._runner = shared if shared is not None else _LoopThread(f"hyperfolio-llm-{role}")
        self.stream = stream
        self._http: httpx.AsyncClient | None = None
        self._probe_lock: asyncio.Lock | None = None

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
        """The reply as a validated `model_type` instance (see the module docstring for the strategy).

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
        return next(m for m in MODES if self._modes[m] is not False)

    @property
    def structured_support(self) -> dict[str, bool | None]:
        return dict(self._modes)

    def probe(self) -> ServerProfile:
        """Ask the server what it is and measure its speed with one short streamed reply (see server_profile)."""
        return self._runner.run(self._aprobe())

    async def _aprobe(self) -> ServerProfile:
        profile = ServerProfile(self.base_url, self.model, probed_at=time.time())
        http = self._client()
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url

        async def get_json(url: str, method: str = "GET", payload: Any = None) -> Any:
            try:
                async with asyncio.timeout(min(10.0, self.timeout)):
                    resp = await http.request(method, url, headers=self._headers, json=payload)
                return resp.json() if resp.status_code < 400 else None
            except (TimeoutError, httpx.HTTPError, ValueError):
                return None

        props = await get_json(f"{root}/props")
        if isinstance(props, dict) and ("total_slots" in props or "default_generation_settings" in props):
            read_props(props, profile)
        listing = await get_json(f"{self.base_url}/models")
        if isinstance(listing, dict):
            read_models(listing, profile)
        if profile.kind in ("unknown", "ollama"):
            shown = await get_json(f"{root}/api/show", "POST", {"model": self.model})
            if isinstance(shown, dict) and "model_info" in shown:
                read_ollama_show(shown, profile)
        await self._probe_formats(profile)
        body = {"model": self.model, "messages": [user_message(PROBE_PROMPT)], "max_tokens": 24, "temperature": 0}
        try:
            status, text, _, reply = await self._post(body, "probe", max(self.timeout, 120.0), self.timeout)
        except (TimeoutError, httpx.HTTPError, StreamError) as exc:
            profile.notes.append(f"speed probe failed: {type(exc).__name__}")
            return profile
        if reply is None:
            profile.notes.append(f"speed probe refused: HTTP {status} {' '.join(text.split())[:120]}")
            context = context_from_error(text)
            profile.context_tokens = profile.context_tokens or context
            return profile
        profile.streaming = self.stream
        if reply.first_token_seconds and reply.prompt_tokens:
            profile.prompt_tps = round(reply.prompt_tokens / max(reply.first_token_seconds, 1e-3), 2)
        if reply.generation_seconds and reply.pieces > 1:
            profile.generation_tps = round((reply.pieces - 1) / max(reply.generation_seconds, 1e-3), 2)
        elif reply.seconds and reply.completion_tokens:
            profile.generation_tps = round(reply.completion_tokens / reply.seconds, 2)
        return profile

    async def _probe_formats(self, profile: ServerProfile) -> None:
        """Which structured-output modes the server takes, each tried once with a tiny schema."""
        messages = [user_message(FORMAT_PROBE_PROMPT)]
        for mode in MODES[:-1]:
            if self._modes[mode] is False:
                continue
            body = self._structured_body(
                messages, FORMAT_PROBE_SCHEMA, {"max_tokens": 12, "temperature": 0}, mode, "ok"
            )
            try:
                status, _, _, reply = await self._post(body, "probe", max(self.timeout, 60.0), self.timeout)
            except (TimeoutError, httpx.HTTPError, StreamError):
                return  # not the format's fault: leave the rest to be learned by real calls
            if reply is not None:
                self._modes[mode] = True
                break
            if status in (401, 403, 404, 429):
                return
            self._modes[mode] = False
        profile.structured = dict(self._modes)

    def adopt(self, profile: ServerProfile) -> None:
        """Use what a profile says: structured-output modes already tried, streaming, slots."""
        self.link.profile = profile
        for mode, works in profile.structured.items():
            if mode in self._modes and mode != "prompt" and works is not None and self._modes[mode] is None:
                self._modes[mode] = works
        if profile.streaming is False:
            self.stream = False

    def _remember_modes(self) -> None:
        profile = self.link.profile
        if profile is None or profile.structured == self._modes:
            return
        profile.structured = dict(self._modes)
        if self.link.profiles is not None:
            self.link.profiles.put(profile)

    def models(self) -> list[str]:
        """Model ids the server lists at /models (one GET; retried like any call)."""

        async def fetch() -> list[str]:
            http = self._client()
            try:
                async with asyncio.timeout(self.timeout):
                    resp = await http.get(f"{self.base_url}/models", headers=self._headers)
            except (TimeoutError, httpx.TimeoutException) as exc:
                raise ModelTimeoutError(self.model, self.base_url, f"timeout after {self.timeout:g} s") from exc
            except httpx.TransportError as exc:
                raise ModelConnectionError(self.model, self.base_url, f"cannot connect ({exc!r})") from exc
            if resp.status_code >= 400:
                raise ModelHTTPError(self.model, self.base_url, resp.status_code, resp.text)
            return [str(item.get("id")) for item in resp.json().get("data", [])]

        return self._runner.run(fetch())

    def close(self) -> None:
        async def shutdown() -> None:
            if self._http is not None:
                await self._http.aclose()
                self._http = None

        if self._owns_runner:
            self._runner.stop(shutdown)
        elif self._runner.started and not self._runner.in_loop_thread():
            with contextlib.suppress(Exception):  # closing must not fail
                self._runner.run(shutdown())
        self._probe_lock = None

    def __enter__(self) -> OpenAICompatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals (run on the private loop)
    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            # Deadlines are enforced per request (see _post); httpx only bounds connecting.
            limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(None, connect=min(30.0, self.timeout)), limits=limits, transport=self._transport
            )
        return self._http

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
        if schema is not None:
            obj = await self._astructured(messages, dict(schema), stage, params, "reply", lambda value: value)
            return json.dumps(obj, ensure_ascii=False)
        sampling = self._sampling(params)
        key = cache_key(self.model, messages, None, sampling)
        hit = await self._cache_get(key, stage)
        if hit is not None:
            return hit
        reply = await self._send({"model": self.model, "messages": list(messages), **sampling}, stage, probe=False)
        await self._cache_put(key, reply)
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
        schema = _schema(model_type)
        validate = model_type.model_validate
        return await self._astructured(messages, schema, stage, params, model_type.__name__, validate, on_text)

    async def _astructured(
        self,
        messages: Sequence[Mapping[str, Any]],
        schema: dict[str, Any],
        stage: str,
        params: dict[str, Any],
        name: str,
        validate: Callable[[Any], T],
        on_text: Callable[[str], None] | None = None,
    ) -> T:
        sampling = self._sampling(params)
        key = cache_key(self.model, messages, schema, sampling)

        def accepted(parsed: Any) -> T:
            """The reply validated, then checked: schema-valid is not usable when it echoes the schema
            or the prompt or loops (RejectedReply); a cached one that fails now is a miss."""
            value = validate(parsed)
            rejected = reply_problem(parsed, schema, messages)
            if rejected is not None:
                raise RejectedReply(rejected)
            return value

        cached = await self._cache_get(key, stage, lambda text: accepted(parse_json_reply(text)))
        if cached is not None:
            return cached
        conversation = [dict(m) for m in messages]
        attempts = 0
        while True:
            attempts += 1
            reply = await self._send_structured(conversation, schema, stage, sampling, name, on_text)
            try:
                parsed = parse_json_reply(reply.text)
                value = accepted(parsed)
            except JSONRepairError as exc:
                problem, feedback = f"invalid JSON after repair: {exc}", f"It could not be parsed as JSON: {exc}."
            except ValidationError as exc:
                detail = _describe_validation(exc)
                problem = f"the reply does not match the {name} schema: {detail}"
                feedback = f"It is JSON but does not match the schema: {detail}."
            except RejectedReply as exc:
                if self.usage is not None:
                    await asyncio.to_thread(self.usage.record_rejected, stage)
                problem = f"the reply was rejected: {exc}"
                feedback = f"It is valid JSON, but {exc}: write content from the task and the evidence instead."
            else:
                reply.text = json.dumps(parsed, ensure_ascii=False)
                await self._cache_put(key, reply)
                return value
            if attempts >= 2:
                raise ModelOutputError(
                    self.model, self.base_url, problem, raw=reply.text, stage=stage, attempts=attempts
                )
            conversation = [
                *conversation,
                {"role": "assistant", "content": reply.text},
                {
                    "role": "user",
                    "content": f"Your previous reply cannot be used. {feedback} "
                    "Send the corrected JSON now, and nothing else.",
                },
            ]

    async def _send_structured(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        stage: str,
        sampling: dict[str, Any],
        name: str,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        refused_now: list[str] = []
        try:
            while True:
                mode = self.structured_mode
                body = self._structured_body(messages, schema, sampling, mode, name)
                try:
                    if self._modes[mode] is None:
                        if self._probe_lock is None:
                            self._probe_lock = asyncio.Lock()
                        async with self._probe_lock:
                            if self._modes[mode] is not None:
                                continue  # another call settled this mode while we waited: go again, unlocked
                            reply = await self._send(body, stage, probe=True, on_text=on_text)
                    else:
                        reply = await self._send(body, stage, probe=False, on_text=on_text)
                except _FormatRejected:
                    self._modes[mode] = False
                    refused_now.append(mode)
                    continue
                if self._modes[mode] is not True:
                    self._modes[mode] = True
                    self._remember_modes()
                reply.mode = mode
                return reply
        except ModelCallError:
            # Everything failed, probably not because of the format: forget what this call concluded.
            for mode in refused_now:
                if self._modes[mode] is False:
                    self._modes[mode] = None
            raise

    def _structured_body(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        sampling: dict[str, Any],
        mode: str,
        name: str,
    ) -> dict[str, Any]:
        if mode != "json_schema":
            messages = _with_instruction(messages, json_instruction(schema))
        body: dict[str, Any] = {"model": self.model, "messages": messages, **sampling}
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(name), "schema": schema, "strict": False},
            }
        elif mode == "json_object_schema":
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    async def _cache_get(self, key: str, stage: str, validate: Callable[[str], Any] | None = None) -> Any:
        """The cached reply (validated by `validate` when given), counted as a hit; None on a miss.

        A cached reply that no longer validates is dropped, so the call goes to the server.
        """
        if self.cache is None:
            return None
        cached = await asyncio.to_thread(self.cache.get, key)
        if cached is None:
            return None
        value: Any = cached.response
        if validate is not None:
            try:
                value = validate(cached.response)
            except (JSONRepairError, ValidationError, RejectedReply):
                await asyncio.to_thread(self.cache.discard, key)
                return None
        if self.usage is not None:
            await asyncio.to_thread(self.usage.record_hit, stage)
        return value

    async def _cache_put(self, key: str, reply: Completion) -> None:
        if self.cache is not None:
            await asyncio.to_thread(
                self.cache.put, key, self.model, reply.text, reply.prompt_tokens, reply.completion_tokens
            )

    def _wait(self, attempt: int) -> float:
        base = min(self.max_retry_wait, self.backoff * (2**attempt))
        return base * random.uniform(0.5, 1.0)

    @property
    def profile(self) -> ServerProfile | None:
        return self.link.profile

    def first_token_budget(self, body: Mapping[str, Any]) -> float:
        """Seconds to wait for the first token: the timeout, or more when the prompt takes longer to read."""
        profile = self.link.profile
        if profile is None or not profile.prompt_tps:
            return self.timeout
        reading = estimate_tokens(body.get("messages") or []) / profile.prompt_tps
        return max(self.timeout, 2.0 * reading + 5.0)

    async def _send(
        self, body: dict[str, Any], stage: str, *, probe: bool, on_text: Callable[[str], None] | None = None
    ) -> Completion:
        """POST one chat completion with retries; raises a ModelCallError subclass or _FormatRejected."""
        breaker, limit = self.link.breaker, self.link.limit
        has_format = "response_format" in body
        attempts = self.max_retries + 1
        first, idle = self.first_token_budget(body), self.timeout
        budgets: list[float] = []
        failure: ModelCallError | None = None
        for attempt in range(attempts):
            started = time.monotonic()
            wait = self._wait(attempt)
            await limit.acquire()
            try:
                # Checked at every attempt: calls queued behind the ones that opened the circuit fail fast.
                if not breaker.allow(stage):
                    raise ModelUnavailableError(
                        self.model,
                        self.base_url,
                        "skipped: the model failed repeatedly, this stage runs offline",
                        stage=stage,
                    )
                started = time.monotonic()
                status, text, headers, reply = await self._post(body, stage, first, idle, on_text)
            except (TimeoutError, httpx.TimeoutException):
                budgets.append(first)
                waited = "timeout: no reply within " + ", then ".join(f"{b:g} s" for b in budgets)
                failure = ModelTimeoutError(self.model, self.base_url, waited, stage=stage)
                limit.overloaded()
                first, idle, wait = first * 2, idle * 2, 0.0  # never again at the same budget
            except (httpx.TransportError, StreamError) as exc:
                if isinstance(exc, StreamError):
                    failure = ModelHTTPError(self.model, self.base_url, exc.status, str(exc), stage=stage)
                else:
                    reason = f"connection failed ({type(exc).__name__}: {exc})"
                    failure = ModelConnectionError(self.model, self.base_url, reason, stage=stage)
            else:
                if reply is not None:
                    breaker.succeeded(stage)
                    limit.succeeded(reply.completion_tokens)
                    return reply
                context = context_from_error(text) if status in (400, 413, 422, 500) else None
                if context is not None and _mentions_context(text):
                    self._learn_context(context)
                    raise ModelContextError(
                        self.model,
                        self.base_url,
                        f"the prompt does not fit: {' '.join(text.split())[:200]}",
                        context_tokens=context,
                        stage=stage,
                    )
                if has_format and status != 429:
                    refused = status in (400, 422, 500) and _mentions_format(text)
                    if refused or (probe and status not in (401, 403, 404)):
                        raise _FormatRejected(status, text)
                failure = ModelHTTPError(self.model, self.base_url, status, text, stage=stage)
                if status in (429, 503):
                    limit.overloaded()
                if status == 429:
                    after = _retry_after(headers.get("Retry-After"))
                    if after is not None:
                        wait = min(after, self.max_retry_wait)
                elif status < 500 and status != 408:
                    raise type(failure)(**_rebuild(failure, attempt + 1))
            finally:
                await limit.release()
            if attempt + 1 >= attempts:
                break
            if self.usage is not None:
                await asyncio.to_thread(self.usage.record_retry, stage, time.monotonic() - started)
            await asyncio.sleep(wait)
        assert failure is not None
        breaker.failed(stage, failure.reason)
        raise type(failure)(**_rebuild(failure, attempts))

    def _learn_context(self, tokens: int) -> None:
        profile = self.link.profile
        if profile is not None and profile.context_tokens != tokens:
            profile.context_tokens = tokens
            if self.link.profiles is not None:
                self.link.profiles.put(profile)

    async def _post(
        self,
        body: dict[str, Any],
        stage: str,
        first: float,
        idle: float,
        on_text: Callable[[str], None] | None = None,
    ) -> tuple[int, str, Mapping[str, str], Completion | None]:
        """One request: (status, error text, headers, None) on an HTTP error, else the reply.

        Streamed when the server streams: `first` bounds the wait for the first token, `idle` each
        later silence. Unstreamed, the whole reply must come within `first` plus what the server
        needs to write `max_tokens` (from the probe), or `first` + `idle` when that is unknown.
        """
        http = self._client()
        url = f"{self.base_url}/chat/completions"
        profile = self.link.profile
        streaming = self.stream and (profile is None or profile.streaming is not False)
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        if not streaming:
            total = first + idle
            if profile is not None and profile.generation_tps and body.get("max_tokens"):
                total = first + 1.5 * float(body["max_tokens"]) / profile.generation_tps
            async with asyncio.timeout(total):
                resp = await http.post(url, json=body, headers=self._headers)
            if resp.status_code >= 400:
                return resp.status_code, resp.text, resp.headers, None
            return 200, "", resp.headers, await self._parsed(resp.text, body, stage, time.monotonic() - started)
        async with asyncio.timeout(first) as deadline:
            async with http.stream("POST", url, json={**body, "stream": True}, headers=self._headers) as resp:
                if resp.status_code >= 400:
                    text = (await resp.aread()).decode("utf-8", "replace")
                    if resp.status_code in (400, 422) and "stream" in text.lower() and not _mentions_format(text):
                        self._no_streaming()
                        return await self._post(body, stage, first, idle, on_text)
                    return resp.status_code, text, resp.headers, None
                if "text/event-stream" not in resp.headers.get("content-type", ""):
                    deadline.reschedule(loop.time() + idle)
                    text = (await resp.aread()).decode("utf-8", "replace")
                    return 200, "", resp.headers, await self._parsed(text, body, stage, time.monotonic() - started)
                result = await read_stream(resp.aiter_lines(), deadline, idle, on_text)
        if not result.done:
            raise httpx.RemoteProtocolError("the stream ended before the reply was complete")
        data = {
            "choices": [{"message": {"content": result.text}, "finish_reason": result.finish_reason}],
            "usage": result.usage or {"completion_tokens": result.pieces} if result.pieces else result.usage,
        }
        reply = await self._completion(data, body, stage, time.monotonic() - started, 0)
        reply.first_token_seconds = (result.first_token_at - started) if result.first_token_at else None
        reply.generation_seconds = (
            result.last_token_at - result.first_token_at if result.first_token_at and result.last_token_at else None
        )
        reply.pieces = result.pieces
        return 200, "", resp.headers, reply

    def _no_streaming(self) -> None:
        if self.link.profile is None:
            self.link.profile = ServerProfile(self.base_url, self.model)
        self.link.profile.streaming = False
        if self.link.profiles is not None:
            self.link.profiles.put(self.link.profile)
        self.stream = False

    async def _parsed(self, text: str, body: Mapping[str, Any], stage: str, elapsed: float) -> Completion:
        try:
            data = json.loads(text)
        except ValueError:
            raise StreamError("body is not JSON: " + text[:300], 502) from None
        return await self._completion(data, body, stage, elapsed, 0)

    async def _completion(
        self, data: Mapping[str, Any], body: Mapping[str, Any], stage: str, elapsed: float, retries: int
    ) -> Completion:
        try:
            choice = data["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content")
            if text is None:
                text = choice.get("text") or ""
            if isinstance(text, list):  # some servers return content parts
                text = "".join(str(p.get("text", "")) for p in text if isinstance(p, Mapping))
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            excerpt = json.dumps(data)[:300]
            raise ModelCallError(
                self.model, self.base_url, f"unexpected response shape ({exc!r}): {excerpt}", stage=stage
            ) from exc
        usage = data.get("usage") or {}
        prompt_tokens = usage.get("prompt_tokens")
        completion_tokens = usage.get("completion_tokens")
        estimated = prompt_tokens is None or completion_tokens is None
        if prompt_tokens is None:
            prompt_tokens = estimate_tokens(body.get("messages") or [])
        if completion_tokens is None:
            completion_tokens = estimate_tokens(str(text))
        reply = Completion(
            text=str(text),
            prompt_tokens=int(prompt_tokens),
            completion_tokens=int(completion_tokens),
            estimated=estimated,
            seconds=elapsed,
            finish_reason=choice.get("finish_reason") if isinstance(choice, Mapping) else None,
        )
        if self.usage is not None:
            await asyncio.to_thread(
                self.usage.record,
                stage,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                seconds=elapsed,
                estimated=estimated,
            )
        return reply


def _rebuild(failure: ModelCallError, attempts: int) -> dict[str, Any]:
    """Constructor arguments that recreate `failure` with the final attempt count in its message."""
    if isinstance(failure, ModelHTTPError):
        return {
            "model": failure.model,
            "base_url": failure.base_url,
            "status": failure.status,
            "body": failure.body,
            "stage": failure.stage,
            "attempts": attempts,
        }
    return {
        "model": failure.model,
        "base_url": failure.base_url,
        "reason": failure.reason,
        "stage": failure.stage,
        "attempts": attempts,
    }
