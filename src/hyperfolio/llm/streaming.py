"""Reading a streamed chat completion (server-sent events) with an inactivity deadline.

A slow local server may take minutes to write a long reply, yet it is alive as long as tokens
keep coming. So the deadline is not the whole request's: the first token must arrive within a
budget that covers reading the prompt, and after that each piece must follow the previous one
within the idle timeout. When a deadline passes, the caller leaves the `async with` of the
stream, which closes the connection; llama.cpp, vLLM and Ollama then stop generating for it, so
no server time goes to a reply nobody will read.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any


class StreamError(Exception):
    """The server reported an error inside the stream (an `error` event)."""

    def __init__(self, message: str, status: int = 500) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class StreamResult:
    text: str = ""
    pieces: int = 0  # content deltas received: close to the number of generated tokens
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    first_token_at: float | None = None  # monotonic times, for the speed probe
    last_token_at: float | None = None
    done: bool = False  # the stream ended with [DONE] or a finish_reason


def _delta_text(choice: dict[str, Any]) -> str:
    delta = choice.get("delta") or {}
    text = delta.get("content") if isinstance(delta, dict) else None
    if text is None:
        text = choice.get("text")  # completions-style chunks
    if isinstance(text, list):
        text = "".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
    return str(text or "")


async def read_stream(
    lines: AsyncIterator[str],
    deadline: asyncio.Timeout,
    idle: float,
    on_text: Callable[[str], None] | None = None,
) -> StreamResult:
    """Collect the content of an SSE chat-completion stream.

    `deadline` is the running asyncio.Timeout of the request: each received event pushes it `idle`
    seconds ahead, so only silence ends the request, never length. `on_text` is called with the
    reply so far after each piece (a service streams the answer to its caller as it is written).
    """
    loop = asyncio.get_running_loop()
    out = StreamResult()
    parts: list[str] = []
    async for raw in lines:
        # Before the first token, a role-only opening event must not shorten the prompt-reading budget.
        when = loop.time() + idle
        if out.first_token_at is None and deadline.when() is not None:
            when = max(when, deadline.when() or when)
        deadline.reschedule(when)
        line = raw.strip()
        if not line or line.startswith(":") or not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            out.done = True
            break
        try:
            event = json.loads(payload)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("error"):
            error = event["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            code = error.get("code") if isinstance(error, dict) else None
            raise StreamError(str(message), code if isinstance(code, int) else 500)
        if isinstance(event.get("usage"), dict):
            out.usage = event["usage"]
        timings = event.get("timings")
        if isinstance(timings, dict) and not out.usage and "prompt_n" in timings and "predicted_n" in timings:
            out.usage = {"prompt_tokens": timings["prompt_n"], "completion_tokens": timings["predicted_n"]}
        for choice in event.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            text = _delta_text(choice)
            if text:
                now = time.monotonic()
                out.first_token_at = out.first_token_at or now
                out.last_token_at = now
                out.pieces += 1
                parts.append(text)
                if on_text is not None:
                    on_text("".join(parts))
            if choice.get("finish_reason"):
                out.finish_reason = str(choice["finish_reason"])
    out.text = "".join(parts)
    out.done = out.done or out.finish_reason is not None
    return out
