"""The HTTP link to one OpenAI-compatible server: deadlines, retries, streaming, replies counted.

Replies are streamed, and the timeout measures silence, not length: the first token must come
within a budget sized to the prompt (from the server's measured reading speed), then each piece
within `timeout` seconds of the last, so a slow but alive generation finishes. A request that
times out is retried with twice the budget, never the same one; leaving a stream closes its
connection, so the server stops generating for it. Connection errors, 429 (honouring
Retry-After) and 5xx are retried with exponential backoff and jitter. Requests in flight are
bounded by an AdaptiveLimit shared by every client of the same server (its slot count, else
learned), and a CircuitBreaker takes a stage offline after repeated failures.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from hyperfolio.llm.errors import (
    ModelCallError,
    ModelConnectionError,
    ModelContextError,
    ModelHTTPError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from hyperfolio.llm.flow import AdaptiveLimit, CircuitBreaker
from hyperfolio.llm.loop_thread import LoopThread
from hyperfolio.llm.server_profile import ProfileStore, ServerProfile, context_from_error
from hyperfolio.llm.streaming import StreamError, read_stream
from hyperfolio.llm.usage import UsageMeter, estimate_tokens

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "response format", "grammar", "schema")


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


# What one request answers: (status, error text, headers, None) on an HTTP error, else (200, "", headers, reply).
Posted = tuple[int, str, Mapping[str, str], Completion | None]


@dataclass
class ServerLink:
    """What the clients of one server share: the event loop, the in-flight limit, the breaker, the profile."""

    limit: AdaptiveLimit
    breaker: CircuitBreaker
    profile: ServerProfile | None = None
    profiles: ProfileStore | None = None
    runner: LoopThread | None = None

    def save(self, profile: ServerProfile) -> None:
        """Keep `profile` in the collection's records, when the link has them."""
        if self.profiles is not None:
            self.profiles.put(profile)


class FormatRejected(Exception):
    """The server refused the request's `response_format`: the structured path tries the next mode."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


def normalise_base_url(url: str) -> str:
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


def _reply_text(choice: Any) -> str:
    """The text of a reply's first choice, however the server shaped it."""
    message = choice.get("message") or {}
    text = message.get("content")
    if text is None:
        text = choice.get("text") or ""
    if isinstance(text, list):  # some servers return content parts
        text = "".join(str(p.get("text", "")) for p in text if isinstance(p, Mapping))
    return str(text)


@dataclass(kw_only=True, eq=False)
class ChatTransport:
    """POSTs chat completions to one server for one model, within the link's limit and breaker."""

    base_url: str
    model: str
    link: ServerLink
    headers: dict[str, str] = field(repr=False)  # may carry the API key
    timeout: float
    max_retries: int
    concurrency: int
    backoff: float
    max_retry_wait: float
    stream: bool
    usage: UsageMeter | None = None
    transport: httpx.AsyncBaseTransport | None = None
    _http: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    def client(self) -> httpx.AsyncClient:
        if self._http is None:
            # Deadlines are enforced per request (see post); httpx only bounds connecting.
            limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(None, connect=min(30.0, self.timeout)), limits=limits, transport=self.transport
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def first_token_budget(self, body: Mapping[str, Any]) -> float:
        """Seconds to wait for the first token: the timeout, or more when the prompt takes longer to read."""
        profile = self.link.profile
        if profile is None or not profile.prompt_tps:
            return self.timeout
        reading = estimate_tokens(body.get("messages") or []) / profile.prompt_tps
        return max(self.timeout, 2.0 * reading + 5.0)

    def _wait(self, attempt: int) -> float:
        base = min(self.max_retry_wait, self.backoff * (2**attempt))
        return base * random.uniform(0.5, 1.0)

    # ------------------------------------------------------------------ one call, retried
    async def send(
        self, body: dict[str, Any], stage: str, *, probe: bool, on_text: Callable[[str], None] | None = None
    ) -> Completion:
        """POST one chat completion with retries; raises a ModelCallError subclass or FormatRejected."""
        breaker, limit = self.link.breaker, self.link.limit
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
                status, text, headers, reply = await self.post(body, stage, first, idle, on_text)
            except (TimeoutError, httpx.TimeoutException):
                budgets.append(first)
                waited = "timeout: no reply within " + ", then ".join(f"{b:g} s" for b in budgets)
                failure = ModelTimeoutError(self.model, self.base_url, waited, stage=stage)
                limit.overloaded()
                first, idle, wait = first * 2, idle * 2, 0.0  # never again at the same budget
            except (httpx.TransportError, StreamError) as exc:
                failure = self._transport_failure(exc, stage)
            else:
                if reply is not None:
                    breaker.succeeded(stage)
                    limit.succeeded(reply.completion_tokens)
                    return reply
                failure = self._refusal(body, status, text, stage, probe)
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

    def _transport_failure(self, exc: httpx.TransportError | StreamError, stage: str) -> ModelCallError:
        if isinstance(exc, StreamError):
            return ModelHTTPError(self.model, self.base_url, exc.status, str(exc), stage=stage)
        reason = f"connection failed ({type(exc).__name__}: {exc})"
        return ModelConnectionError(self.model, self.base_url, reason, stage=stage)

    def _refusal(self, body: Mapping[str, Any], status: int, text: str, stage: str, probe: bool) -> ModelHTTPError:
        """The error an HTTP refusal makes; raises at once when the prompt does not fit or the format is refused."""
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
        if "response_format" in body and status != 429:
            refused = status in (400, 422, 500) and _mentions_format(text)
            if refused or (probe and status not in (401, 403, 404)):
                raise FormatRejected(status, text)
        return ModelHTTPError(self.model, self.base_url, status, text, stage=stage)

    def _learn_context(self, tokens: int) -> None:
        profile = self.link.profile
        if profile is not None and profile.context_tokens != tokens:
            profile.context_tokens = tokens
            self.link.save(profile)

    # ------------------------------------------------------------------ one request
    async def post(
        self,
        body: dict[str, Any],
        stage: str,
        first: float,
        idle: float,
        on_text: Callable[[str], None] | None = None,
    ) -> Posted:
        """One request: (status, error text, headers, None) on an HTTP error, else the reply.

        Streamed when the server streams: `first` bounds the wait for the first token, `idle` each
        later silence. Unstreamed, the whole reply must come within `first` plus what the server
        needs to write `max_tokens` (from the probe), or `first` + `idle` when that is unknown.
        """
        profile = self.link.profile
        if self.stream and (profile is None or profile.streaming is not False):
            return await self._post_streamed(body, stage, first, idle, on_text)
        total = first + idle
        if profile is not None and profile.generation_tps and body.get("max_tokens"):
            total = first + 1.5 * float(body["max_tokens"]) / profile.generation_tps
        started = time.monotonic()
        async with asyncio.timeout(total):
            resp = await self.client().post(self._url, json=body, headers=self.headers)
        if resp.status_code >= 400:
            return resp.status_code, resp.text, resp.headers, None
        return 200, "", resp.headers, await self._parsed(resp.text, body, stage, time.monotonic() - started)

    @property
    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    async def _post_streamed(
        self, body: dict[str, Any], stage: str, first: float, idle: float, on_text: Callable[[str], None] | None
    ) -> Posted:
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        async with asyncio.timeout(first) as deadline:
            async with self.client().stream(
                "POST", self._url, json={**body, "stream": True}, headers=self.headers
            ) as resp:
                if resp.status_code >= 400:
                    text = (await resp.aread()).decode("utf-8", "replace")
                    if resp.status_code in (400, 422) and "stream" in text.lower() and not _mentions_format(text):
                        self._no_streaming()
                        return await self.post(body, stage, first, idle, on_text)
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
        reply = await self._completion(data, body, stage, time.monotonic() - started)
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
        self.link.save(self.link.profile)
        self.stream = False

    async def _parsed(self, text: str, body: Mapping[str, Any], stage: str, elapsed: float) -> Completion:
        try:
            data = json.loads(text)
        except ValueError:
            raise StreamError("body is not JSON: " + text[:300], 502) from None
        return await self._completion(data, body, stage, elapsed)

    async def _completion(
        self, data: Mapping[str, Any], body: Mapping[str, Any], stage: str, elapsed: float
    ) -> Completion:
        try:
            choice = data["choices"][0]
            text = _reply_text(choice)
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
            completion_tokens = estimate_tokens(text)
        reply = Completion(
            text=text,
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

    # ------------------------------------------------------------------ other endpoints
    async def get_json(self, url: str, method: str = "GET", payload: Any = None) -> Any:
        """A short side request's JSON body (the probe's), or None on any failure."""
        try:
            async with asyncio.timeout(min(10.0, self.timeout)):
                resp = await self.client().request(method, url, headers=self.headers, json=payload)
            return resp.json() if resp.status_code < 400 else None
        except (TimeoutError, httpx.HTTPError, ValueError):
            return None

    async def list_models(self) -> list[str]:
        """Model ids the server lists at /models, or a ModelCallError."""
        try:
            async with asyncio.timeout(self.timeout):
                resp = await self.client().get(f"{self.base_url}/models", headers=self.headers)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise ModelTimeoutError(self.model, self.base_url, f"timeout after {self.timeout:g} s") from exc
        except httpx.TransportError as exc:
            raise ModelConnectionError(self.model, self.base_url, f"cannot connect ({exc!r})") from exc
        if resp.status_code >= 400:
            raise ModelHTTPError(self.model, self.base_url, resp.status_code, resp.text)
        return [str(item.get("id")) for item in resp.json().get("data", [])]


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
