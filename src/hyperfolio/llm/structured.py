"""JSON replies from a chat server: the format ladder, then repair, validation, checks and one retry.

The client asks for `response_format: json_schema` first. Servers differ (llama-cpp-python's
server answers HTTP 500 to it and accepts only `json_object`), so when the first structured call
is refused the client steps down a ladder - `json_schema`, `json_object` carrying the schema, bare
`json_object`, then plain prompting - and remembers the first rung that worked. Whatever the
server returns is parsed with repair, validated against a pydantic model and checked for content
that only looks valid (llm/reply_checks.py: echoes of the schema or the instructions, loops); an
invalid or rejected reply is sent back once with the error so the model can correct it, and is
never cached.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from hyperfolio.llm.cache import cache_key
from hyperfolio.llm.errors import ModelCallError, ModelOutputError
from hyperfolio.llm.json_repair import JSONRepairError, parse_json_reply
from hyperfolio.llm.json_shape import json_instruction
from hyperfolio.llm.messages import user_message
from hyperfolio.llm.reply_cache import ReplyCache
from hyperfolio.llm.reply_checks import RejectedReply, reply_problem
from hyperfolio.llm.server_profile import FORMAT_PROBE_PROMPT, FORMAT_PROBE_SCHEMA, ServerProfile
from hyperfolio.llm.streaming import StreamError
from hyperfolio.llm.transport import ChatTransport, Completion, FormatRejected

T = TypeVar("T")

# Structured-output strategies, most to least constrained.
MODES = ("json_schema", "json_object_schema", "json_object", "prompt")


@dataclass
class StructuredRequest:
    """One structured call: what is asked, the schema the reply must follow, how it is sampled and counted."""

    messages: Sequence[Mapping[str, Any]]
    schema: dict[str, Any]
    stage: str
    sampling: dict[str, Any]
    name: str  # the reply type's name (json_schema mode sends it)
    on_text: Callable[[str], None] | None = None  # sees the raw reply so far as it streams


@functools.cache
def schema_of(model_type: type[BaseModel]) -> dict[str, Any]:
    """A reply type's JSON schema, built once: pydantic rebuilds it on every call otherwise."""
    return model_type.model_json_schema()


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


def _describe_validation(exc: ValidationError, limit: int = 8) -> str:
    lines = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        lines.append(f"{where}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - limit
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)


class StructuredReplies:
    """Validated JSON replies over one transport, with what has been learned of the server's formats."""

    def __init__(self, http: ChatTransport, replies: ReplyCache, structured: str = "auto") -> None:
        if structured != "auto" and structured not in MODES:
            raise ValueError(f"structured must be 'auto' or one of {', '.join(MODES)}, not {structured!r}")
        self.http = http
        self.replies = replies
        # Structured-output support: None = not yet known, True = works, False = refused.
        first = 0 if structured == "auto" else MODES.index(structured)
        self.modes: dict[str, bool | None] = {m: (False if i < first else None) for i, m in enumerate(MODES)}
        self.modes["prompt"] = True
        if structured != "auto":
            self.modes[structured] = True
        self._probe_lock: asyncio.Lock | None = None

    @property
    def mode(self) -> str:
        """The structured-output strategy the next call will try first."""
        return next(m for m in MODES if self.modes[m] is not False)

    def adopt(self, profile: ServerProfile) -> None:
        """Take the modes a profile has already tried, where this client knows nothing yet."""
        for mode, works in profile.structured.items():
            if mode in self.modes and mode != "prompt" and works is not None and self.modes[mode] is None:
                self.modes[mode] = works

    def forget_lock(self) -> None:
        """Drop the probe lock: it belongs to the event loop that is closing."""
        self._probe_lock = None

    def _remember(self) -> None:
        link = self.http.link
        if link.profile is None or link.profile.structured == self.modes:
            return
        link.profile.structured = dict(self.modes)
        link.save(link.profile)

    # ------------------------------------------------------------------ a validated reply
    async def ask(self, request: StructuredRequest, validate: Callable[[Any], T]) -> T:
        """The reply, parsed with repair, validated and checked; a bad one is sent back once to be corrected."""
        schema, stage, messages = request.schema, request.stage, request.messages
        key = cache_key(self.http.model, messages, schema, request.sampling)

        def accepted(parsed: Any) -> T:
            """The reply validated, then checked: schema-valid is not usable when it echoes the schema
            or the prompt or loops (RejectedReply); a cached one that fails now is a miss."""
            value = validate(parsed)
            rejected = reply_problem(parsed, schema, messages)
            if rejected is not None:
                raise RejectedReply(rejected)
            return value

        cached = await self.replies.get(key, stage, lambda text: accepted(parse_json_reply(text)))
        if cached is not None:
            return cached
        conversation = [dict(m) for m in messages]
        attempts = 0
        while True:
            attempts += 1
            reply = await self._send(request, conversation)
            try:
                parsed = parse_json_reply(reply.text)
                value = accepted(parsed)
            except JSONRepairError as exc:
                problem, feedback = f"invalid JSON after repair: {exc}", f"It could not be parsed as JSON: {exc}."
            except ValidationError as exc:
                detail = _describe_validation(exc)
                problem = f"the reply does not match the {request.name} schema: {detail}"
                feedback = f"It is JSON but does not match the schema: {detail}."
            except RejectedReply as exc:
                if self.http.usage is not None:
                    await asyncio.to_thread(self.http.usage.record_rejected, stage)
                problem = f"the reply was rejected: {exc}"
                feedback = f"It is valid JSON, but {exc}: write content from the task and the evidence instead."
            else:
                reply.text = json.dumps(parsed, ensure_ascii=False)
                await self.replies.put(key, reply)
                return value
            if attempts >= 2:
                raise ModelOutputError(
                    self.http.model, self.http.base_url, problem, raw=reply.text, stage=stage, attempts=attempts
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

    # ------------------------------------------------------------------ down the format ladder
    async def _send(self, request: StructuredRequest, messages: list[dict[str, Any]]) -> Completion:
        """One reply in the first mode the server takes; a mode not yet known is tried by one call at a time."""
        refused_now: list[str] = []
        try:
            while True:
                mode = self.mode
                body = self.body(messages, request.schema, request.sampling, mode, request.name)
                try:
                    if self.modes[mode] is None:
                        if self._probe_lock is None:
                            self._probe_lock = asyncio.Lock()
                        async with self._probe_lock:
                            if self.modes[mode] is not None:
                                continue  # another call settled this mode while we waited: go again, unlocked
                            reply = await self.http.send(body, request.stage, probe=True, on_text=request.on_text)
                    else:
                        reply = await self.http.send(body, request.stage, probe=False, on_text=request.on_text)
                except FormatRejected:
                    self.modes[mode] = False
                    refused_now.append(mode)
                    continue
                if self.modes[mode] is not True:
                    self.modes[mode] = True
                    self._remember()
                reply.mode = mode
                return reply
        except ModelCallError:
            # Everything failed, probably not because of the format: forget what this call concluded.
            for mode in refused_now:
                if self.modes[mode] is False:
                    self.modes[mode] = None
            raise

    def body(
        self,
        messages: Sequence[Mapping[str, Any]],
        schema: dict[str, Any],
        sampling: dict[str, Any],
        mode: str,
        name: str,
    ) -> dict[str, Any]:
        """The request body asking for JSON in `mode`: the schema in `response_format`, the prompt, or both."""
        if mode != "json_schema":
            messages = _with_instruction(messages, json_instruction(schema))
        body: dict[str, Any] = {"model": self.http.model, "messages": messages, **sampling}
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

    async def probe_formats(self, profile: ServerProfile) -> None:
        """Which structured-output modes the server takes, each tried once with a tiny schema."""
        messages = [user_message(FORMAT_PROBE_PROMPT)]
        timeout = self.http.timeout
        for mode in MODES[:-1]:
            if self.modes[mode] is False:
                continue
            body = self.body(messages, FORMAT_PROBE_SCHEMA, {"max_tokens": 12, "temperature": 0}, mode, "ok")
            try:
                status, _, _, reply = await self.http.post(body, "probe", max(timeout, 60.0), timeout)
            except (TimeoutError, httpx.HTTPError, StreamError):
                return  # not the format's fault: leave the rest to be learned by real calls
            if reply is not None:
                self.modes[mode] = True
                break
            if status in (401, 403, 404, 429):
                return
            self.modes[mode] = False
        profile.structured = dict(self.modes)
