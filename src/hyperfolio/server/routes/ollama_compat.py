"""Ollama-compatible chat: each collection is a model, so Open WebUI's Ollama connection or the `ollama`
client can ask it (host `http://<host>:<port>`, model `hyperfolio/<collection>`, with or without `:latest`;
another tag names a retrieval mode, `hyperfolio/<collection>:bm25`).

- `GET /api/version`: `{"version": <hyperfolio's version>}`.
- `GET /api/tags`: Ollama's model list, `hyperfolio/<collection>:latest` for each collection, its size
  (the collection's files), the time its files last changed, a digest that changes with them, and
  `details.parameter_size` saying how many documents it holds.
- `POST /api/chat`: Ollama's request (options, format, keep_alive, tools... accepted and left unread).
  `stream` is true unless set false, as Ollama's: NDJSON, one `{"model", "created_at", "message":
  {"role": "assistant", "content"}, "done": false}` line per piece of the reply, then a last line with
  `"done": true, "done_reason": "stop"`, the counts and durations, and the extra `hyperfolio` field
  (`chat_replies.extra_field`); with `stream: false`, that last object holding the whole reply. Counts
  are words, not tokens.

Errors are Ollama's shape, `{"error": "<message>"}`: an unknown model is a 404, bad messages a 400; an
error once the stream has begun is its last line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from hyperfolio.errors import HyperfolioError
from hyperfolio.server.access import Caller, visible
from hyperfolio.server.chat_replies import (
    DEFAULT_TAG,
    OWNER,
    ChatMessage,
    ChatRun,
    collection_files,
    conversation,
    error_responses,
    model_for,
    model_id,
    shaped_errors,
)
from hyperfolio.server.library import Library
from hyperfolio.server.state import State
from hyperfolio.version import package_version

log = logging.getLogger(__name__)

ERROR_SCHEMA: dict[str, Any] = {
    "title": "OllamaError",
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}},
}
ERRORS = error_responses(ERROR_SCHEMA, "Ollama's")
NDJSON = "application/x-ndjson"
OLLAMA_PATHS = (
    "/api/version",
    "/api/tags",
    "/api/show",
    "/api/chat",
)  # refused in Ollama's error shape (app.require_key)


def ollama_error(status: int, message: str, code: str = "") -> Response:
    return JSONResponse({"error": message}, status_code=status)


router = APIRouter(tags=["ollama-compatible"], route_class=shaped_errors(ollama_error), responses=ERRORS)


class OllamaChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=200, description="hyperfolio/<collection>[:latest|:<mode>]")
    messages: list[ChatMessage] = Field(min_length=1, max_length=500)
    stream: bool | None = Field(True, description="NDJSON pieces (the default), or one object when false.")


@router.get("/api/version", summary="The service's version, as Ollama reports its own.")
def version() -> dict[str, str]:
    return {"version": package_version()}


@router.get("/api/tags", summary="The collections (those the caller's key may read), as Ollama models.")
def tags(state: State, caller: Caller) -> dict[str, Any]:
    lib = state.library
    return {"models": [_tag_row(lib, name) for name in visible(caller, lib.names())]}


class OllamaShowRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str | None = Field(None, min_length=1, max_length=200, description="hyperfolio/<collection>[:tag]")
    name: str | None = Field(None, min_length=1, max_length=200, description="The same, as older clients send it.")


@router.post("/api/show", summary="One collection as an Ollama model: its details (front ends ask before chatting).")
def show(state: State, body: OllamaShowRequest, caller: Caller) -> dict[str, Any]:
    asked = body.model or body.name
    if not asked:
        raise HyperfolioError('give the model to show: {"model": "hyperfolio/<collection>"}')
    name = model_for(state.library, caller, asked)
    row = _tag_row(state.library, name.collection)
    return {
        "license": "",
        "modelfile": "",
        "parameters": "",
        "template": "",
        "details": row["details"],
        "model_info": {"general.architecture": OWNER, "hyperfolio.collection": name.collection},
        "capabilities": ["completion"],
        "modified_at": row["modified_at"],
    }


@router.post(
    "/api/chat",
    summary="Answer the conversation's last question with citations, as an Ollama chat reply.",
    response_model=None,
    responses={200: {"content": {"application/json": {}, NDJSON: {}}}},
)
async def chat(state: State, body: OllamaChatRequest, request: Request, caller: Caller) -> Response:
    began = time.monotonic_ns()
    messages = [m.model_dump() for m in body.messages]
    conv = conversation(state.library, caller, body.model, messages)
    streaming = body.stream is not False
    run = await ChatRun.open(state.library, conv, request)
    await run.start(streaming)
    if streaming:
        return StreamingResponse(_lines(run, body.model, began), media_type=NDJSON)
    text = await run.whole()
    return JSONResponse(_last(run, body.model, began, text))


async def _lines(run: ChatRun, model: str, began: int) -> AsyncIterator[str]:
    try:
        async for piece in run.pieces():
            yield _line(_message(model, piece) | {"done": False})
        yield _line(_last(run, model, began, ""))
    except HyperfolioError as exc:  # the stream has begun: the error is its last line
        yield _line({"error": str(exc)})
    except Exception as exc:
        log.exception("the Ollama chat stream failed")
        yield _line({"error": f"unexpected error: {type(exc).__name__} (see the server log)"})


def _message(model: str, content: str) -> dict[str, Any]:
    return {"model": model, "created_at": _now(), "message": {"role": "assistant", "content": content}}


def _last(run: ChatRun, model: str, began: int, content: str) -> dict[str, Any]:
    """The reply's last object: `content` (all of it, or "" after a stream), the counts (words) and the
    durations (nanoseconds), and the `hyperfolio` field."""
    prompt, written = run.usage()
    took = time.monotonic_ns() - began
    return _message(model, content) | {
        "done": True,
        "done_reason": "stop",
        "total_duration": took,
        "load_duration": 0,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": 0,
        "eval_count": written,
        "eval_duration": took,
        "hyperfolio": run.extra(),
    }


def _line(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False) + "\n"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _tag_row(lib: Library, name: str) -> dict[str, Any]:
    files = collection_files(lib, name)
    size = sum(f.st_size for f in files)
    changed = max((f.st_mtime_ns for f in files), default=lib.path(name).stat().st_mtime_ns)
    documents = len(lib.reader(name).documents())
    tag = model_id(name, DEFAULT_TAG)
    return {
        "name": tag,
        "model": tag,
        "modified_at": datetime.fromtimestamp(changed / 1e9, UTC).isoformat().replace("+00:00", "Z"),
        "size": size,
        "digest": hashlib.sha256(f"{name}:{changed}:{size}".encode()).hexdigest(),
        "details": {
            "parent_model": "",
            "format": OWNER,
            "family": OWNER,
            "families": [OWNER],
            "parameter_size": f"{documents} document{'' if documents == 1 else 's'}",
            "quantization_level": "",
        },
    }
