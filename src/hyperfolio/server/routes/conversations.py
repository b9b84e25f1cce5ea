"""Conversations: threads of questions kept in the collection's store, so a restart keeps them.

A thread belongs to whoever started it — the API key's id, or "" for one person on a laptop without
keys — and is listed, read, asked in and deleted only by them; another's thread answers 404, as one that
never was.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.sse import EventSourceResponse, ServerSentEvent

from hyperfolio.collection import Conversation
from hyperfolio.dialogue import Asking
from hyperfolio.model import ConversationRecord
from hyperfolio.render import answer_dict
from hyperfolio.server.access import Caller
from hyperfolio.server.answer_stream import answer_events
from hyperfolio.server.routes.questions import AskRequest, scope_of
from hyperfolio.server.state import State

router = APIRouter(tags=["conversations"])
ROOT = "/api/collections/{name}/conversations"


def summary(record: ConversationRecord) -> dict[str, Any]:
    return {
        "id": record.conversation_id,
        "title": record.title,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }


@router.post(ROOT, status_code=201, summary="Start a conversation.")
def create(state: State, name: str, caller: Caller) -> dict[str, Any]:
    conversation = state.library.reader(name).conversation(owner=caller.key_id, keep=True)
    assert conversation.stored is not None
    return summary(conversation.stored)


@router.get(ROOT, summary="Your conversations, the latest first.")
def list_conversations(state: State, name: str, caller: Caller) -> list[dict[str, Any]]:
    return [summary(r) for r in state.library.reader(name).conversations(caller.key_id)]


@router.get(ROOT + "/{conversation}", summary="A conversation and its turns.")
def get(state: State, name: str, conversation: str, caller: Caller) -> dict[str, Any]:
    thread = state.library.reader(name).conversation(conversation, owner=caller.key_id)
    assert thread.stored is not None
    return summary(thread.stored) | {"turns": [turn.to_dict() for turn in thread.turns]}


@router.post(ROOT + "/{conversation}/ask", summary="Ask in a conversation: a follow-up reads the turns before it.")
def ask(state: State, name: str, conversation: str, body: AskRequest, caller: Caller) -> dict[str, Any]:
    thread = state.library.reader(name).conversation(conversation, owner=caller.key_id)
    answer = thread.ask(body.question, **scope_of(body))
    return answer_dict(answer) | {"conversation": conversation, "turn": thread.number}


async def prepared(
    state: State, name: str, conversation: str, body: AskRequest, caller: Caller
) -> tuple[Conversation, Asking]:
    """The thread and the question read against it with its evidence, before the stream starts (so a
    refusal is an HTTP error, not a broken stream)."""
    thread = await asyncio.to_thread(state.library.reader(name).conversation, conversation, caller.key_id)
    return thread, await asyncio.to_thread(lambda: thread.prepare(body.question, **scope_of(body)))


@router.post(
    ROOT + "/{conversation}/ask/stream",
    response_class=EventSourceResponse,
    summary="Ask in a conversation, as server-sent events: the evidence, the answer as it is written.",
)
async def ask_stream(
    found: Annotated[tuple[Conversation, Asking], Depends(prepared)],
) -> AsyncIterable[ServerSentEvent]:
    thread, asking = found
    async for event in answer_events(asking.evidence, lambda on_text: thread.finish(asking, on_text)):
        yield event


@router.delete(ROOT + "/{conversation}", summary="Delete a conversation.")
def delete(state: State, name: str, conversation: str, caller: Caller) -> dict[str, Any]:
    state.library.reader(name).delete_conversation(conversation, owner=caller.key_id)
    return {"id": conversation, "deleted": True}
