"""OpenAI-compatible chat: each collection is a model, so Open WebUI, LibreChat, Continue or the `openai`
client can ask it (base URL `http://<host>:<port>/v1`, model `hyperfolio/<collection>`).

- `GET /v1/models`, `GET /v1/models/{model}`: OpenAI's list and model shapes, one model per collection.
- `POST /v1/chat/completions`: OpenAI's request (what it carries beyond the messages — temperature,
  max_tokens, tools... — is accepted and left unread) plus three optional fields of hyperfolio's own:
  `mode` (a retrieval mode; wins over the model's `:<mode>` tag), `k` (evidence chunks) and `doc`
  (documents to scope to). The reply is a `chat.completion`, or with `stream: true` server-sent
  `chat.completion.chunk`s ending `data: [DONE]`; its content is the answer with numbered citations and
  its sources (`chat_replies`). The completion, and the stream's last chunk, carry an extra top-level
  field `hyperfolio` with the citations, the question as retrieval ran it and the evidence
  (`chat_replies.extra_field`). `usage` counts words, not tokens.

Errors are OpenAI's shape, `{"error": {"message", "type", "code", "param"}}`: an unknown model is a 404
(`model_not_found`), bad messages a 400; an error once the stream has begun is its last `data:` line.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from hyperfolio.errors import HyperfolioError
from hyperfolio.retrieve import RetrievalMode
from hyperfolio.server.access import Caller, visible
from hyperfolio.server.chat_replies import (
    OWNER,
    ChatMessage,
    ChatRun,
    collection_files,
    conversation,
    error_code,
    error_responses,
    error_status,
    model_for,
    model_id,
    shaped_errors,
)
from hyperfolio.server.library import Library
from hyperfolio.server.state import State

log = logging.getLogger(__name__)

ERROR_SCHEMA: dict[str, Any] = {
    "title": "OpenAIError",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "code": {"type": ["string", "null"]},
                "param": {"type": ["string", "null"]},
            },
        }
    },
}
ERRORS = error_responses(ERROR_SCHEMA, "OpenAI's")
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def error_body(status: int, message: str, code: str) -> dict[str, Any]:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def openai_error(status: int, message: str, code: str) -> Response:
    return JSONResponse(error_body(status, message, code), status_code=status)


router = APIRouter(tags=["openai-compatible"], route_class=shaped_errors(openai_error), responses=ERRORS)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool | None = Field(None, description="A last chunk with `usage` and no choices.")


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=200, description="hyperfolio/<collection>[:<mode>]")
    messages: list[ChatMessage] = Field(min_length=1, max_length=500)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    mode: RetrievalMode | None = Field(None, description="Retrieval mode (hyperfolio's); wins over the model's tag.")
    k: int | None = Field(None, ge=1, le=100, description="Evidence chunks to retrieve (hyperfolio's).")
    doc: list[str] | None = Field(
        None, min_length=1, max_length=50, description="Scope to these documents, ids or titles (hyperfolio's)."
    )


def model_row(library: Library, name: str) -> dict[str, Any]:
    """`created`: when the collection's oldest file was last written (its folder's time moves as it is
    opened)."""
    files = collection_files(library, name)
    created = int(min((f.st_mtime for f in files), default=library.path(name).stat().st_mtime))
    return {"id": model_id(name), "object": "model", "created": created, "owned_by": OWNER}


@router.get("/v1/models", summary="The collections (those the caller's key may read), as OpenAI models.")
def list_models(state: State, caller: Caller) -> dict[str, Any]:
    lib = state.library
    return {"object": "list", "data": [model_row(lib, name) for name in visible(caller, lib.names())]}


@router.get("/v1/models/{model:path}", summary="One collection as an OpenAI model.")
def get_model(state: State, model: str, caller: Caller) -> dict[str, Any]:
    name = model_for(state.library, caller, model)
    return model_row(state.library, name.collection) | {"id": model}


@router.post(
    "/v1/chat/completions",
    summary="Answer the conversation's last question with citations, as an OpenAI chat completion.",
    response_model=None,
    responses={200: {"content": {"application/json": {}, "text/event-stream": {}}}},
)
async def chat_completions(state: State, body: ChatCompletionRequest, request: Request, caller: Caller) -> Response:
    messages = [m.model_dump() for m in body.messages]
    conv = conversation(state.library, caller, body.model, messages, body.mode, body.k, body.doc)
    run = await ChatRun.open(state.library, conv, request)
    await run.start(streaming=bool(body.stream))
    head = {"id": f"chatcmpl-{uuid4().hex}", "created": int(time.time()), "model": body.model}
    if body.stream:
        usage = bool(body.stream_options and body.stream_options.include_usage)
        return StreamingResponse(_chunks(run, head, usage), media_type="text/event-stream", headers=STREAM_HEADERS)
    text = await run.whole()
    return JSONResponse(
        {
            **head,
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": _usage(run),
            "system_fingerprint": None,
            "hyperfolio": run.extra(),
        }
    )


async def _chunks(run: ChatRun, head: dict[str, Any], with_usage: bool) -> AsyncIterator[str]:
    """The reply as `chat.completion.chunk`s: the role, the text as it grows, the finish with the
    `hyperfolio` field, the usage when asked for, `[DONE]`."""
    head = {**head, "object": "chat.completion.chunk", "system_fingerprint": None}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _event({**head, "choices": [choice], **extra})

    yield chunk({"role": "assistant", "content": ""})
    try:
        async for piece in run.pieces():
            yield chunk({"content": piece})
        yield chunk({}, "stop", hyperfolio=run.extra())
    except HyperfolioError as exc:  # the stream has begun: the error is its last event
        yield _event(error_body(error_status(exc), str(exc), error_code(exc)))
    except Exception as exc:
        log.exception("the chat completion stream failed")
        yield _event(error_body(500, f"unexpected error: {type(exc).__name__} (see the server log)", "server_error"))
    else:
        if with_usage:
            yield _event({**head, "choices": [], "usage": _usage(run)})
    yield "data: [DONE]\n\n"


def _event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _usage(run: ChatRun) -> dict[str, int]:
    """Words, not tokens (see chat_replies)."""
    prompt, completion = run.usage()
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
