"""Probing a server once: what it is, which JSON formats it takes and how fast it reads and writes.

The answers (see server_profile) size deadlines and in-flight limits before the first real call.
"""

from __future__ import annotations

import time

import httpx

from hyperfolio.llm.messages import user_message
from hyperfolio.llm.server_profile import (
    PROBE_PROMPT,
    ServerProfile,
    context_from_error,
    read_models,
    read_ollama_show,
    read_props,
)
from hyperfolio.llm.streaming import StreamError
from hyperfolio.llm.structured import StructuredReplies
from hyperfolio.llm.transport import ChatTransport


async def probe_server(http: ChatTransport, formats: StructuredReplies) -> ServerProfile:
    """The server's profile: its self-description, its structured-output modes, its measured speed."""
    profile = ServerProfile(http.base_url, http.model, probed_at=time.time())
    await _describe(http, profile)
    await formats.probe_formats(profile)
    await _measure_speed(http, profile)
    return profile


async def _describe(http: ChatTransport, profile: ServerProfile) -> None:
    """What the server says of itself: llama.cpp's /props, the /models listing, Ollama's /api/show."""
    root = http.base_url[: -len("/v1")] if http.base_url.endswith("/v1") else http.base_url
    props = await http.get_json(f"{root}/props")
    if isinstance(props, dict) and ("total_slots" in props or "default_generation_settings" in props):
        read_props(props, profile)
    listing = await http.get_json(f"{http.base_url}/models")
    if isinstance(listing, dict):
        read_models(listing, profile)
    if profile.kind in ("unknown", "ollama"):
        shown = await http.get_json(f"{root}/api/show", "POST", {"model": http.model})
        if isinstance(shown, dict) and "model_info" in shown:
            read_ollama_show(shown, profile)


async def _measure_speed(http: ChatTransport, profile: ServerProfile) -> None:
    """Reading and writing speed from one short streamed reply (or a note saying why not)."""
    body = {"model": http.model, "messages": [user_message(PROBE_PROMPT)], "max_tokens": 24, "temperature": 0}
    try:
        status, text, _, reply = await http.post(body, "probe", max(http.timeout, 120.0), http.timeout)
    except (TimeoutError, httpx.HTTPError, StreamError) as exc:
        profile.notes.append(f"speed probe failed: {type(exc).__name__}")
        return
    if reply is None:
        profile.notes.append(f"speed probe refused: HTTP {status} {' '.join(text.split())[:120]}")
        context = context_from_error(text)
        profile.context_tokens = profile.context_tokens or context
        return
    profile.streaming = http.stream
    if reply.first_token_seconds and reply.prompt_tokens:
        profile.prompt_tps = round(reply.prompt_tokens / max(reply.first_token_seconds, 1e-3), 2)
    if reply.generation_seconds and reply.pieces > 1:
        profile.generation_tps = round((reply.pieces - 1) / max(reply.generation_seconds, 1e-3), 2)
    elif reply.seconds and reply.completion_tokens:
        profile.generation_tps = round(reply.completion_tokens / reply.seconds, 2)
