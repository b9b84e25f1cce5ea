"""Questions: a cited answer, the same answer streamed as the model writes it, or the evidence alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, Field

from hyperfolio.collection import Collection
from hyperfolio.errors import HyperfolioError
from hyperfolio.model import Scope
from hyperfolio.render import answer_dict, evidence_dict
from hyperfolio.retrieve import RetrievalMode
from hyperfolio.server.state import State

router = APIRouter(tags=["questions"])


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=4000, description="The question.")
    mode: RetrievalMode | None = Field(
        None, description="Retrieval mode; the collection's default (auto) when omitted."
    )
    k: int | None = Field(None, ge=1, le=100, description="Evidence chunks to retrieve.")
    doc: list[str] | None = Field(
        None, min_length=1, max_length=50, description="Scope to these documents (ids or titles)."
    )
    options: dict[str, str | int | float | bool] | None = Field(
        None, description="Per-call retrieval knobs of the mode (e.g. concepts=15, by_modality=true)."
    )


async def evidence_of(state: State, name: str, body: AskRequest) -> tuple[Collection, Any]:
    """The collection and the question's evidence, found before the stream starts (see `job_of`)."""
    col = state.library.reader(name)
    return col, await col.aretrieve(body.question, **_scope(body))


@router.post("/api/collections/{name}/ask", summary="Answer a question with citations.")
def ask(state: State, name: str, body: AskRequest) -> dict[str, Any]:
    col = state.library.reader(name)
    answer = col.ask(body.question, **_scope(body))
    return answer_dict(answer)


@router.post(
    "/api/collections/{name}/ask/stream",
    response_class=EventSourceResponse,
    summary="Answer as server-sent events: the evidence first, then the answer as the model writes it.",
)
async def ask_stream(
    body: AskRequest, found: Annotated[tuple[Collection, Any], Depends(evidence_of)]
) -> AsyncIterable[ServerSentEvent]:
    col, evidence = found
    yield ServerSentEvent(data=evidence_dict(evidence), event="evidence")
    loop = asyncio.get_running_loop()
    written: asyncio.Queue[str] = asyncio.Queue()

    def on_text(text: str) -> None:  # called on the model client's thread
        loop.call_soon_threadsafe(written.put_nowait, text)

    answering = asyncio.ensure_future(asyncio.to_thread(col.answer, body.question, evidence, body.mode, on_text))
    while not answering.done() or not written.empty():
        waiting = asyncio.ensure_future(written.get())
        await asyncio.wait({answering, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            yield ServerSentEvent(data={"text": waiting.result()}, event="delta")
        else:
            waiting.cancel()
    try:
        answer = answering.result()
    except HyperfolioError as exc:  # the stream has started: the error is its last event
        yield ServerSentEvent(data={"status": 400, "detail": str(exc)}, event="error")
        return
    yield ServerSentEvent(data=answer_dict(answer), event="answer")


@router.post("/api/collections/{name}/retrieve", summary="Ranked, cited evidence.")
def retrieve(state: State, name: str, body: AskRequest) -> dict[str, Any]:
    evidence = state.library.reader(name).retrieve(body.question, **_scope(body))
    return evidence_dict(evidence)


def _scope(body: AskRequest) -> Scope:
    """The request's scope; its knobs as given (the collection types them against the mode it runs: a
    mistake is a 400)."""
    options = {k: str(v) for k, v in body.options.items()} if body.options else None
    return Scope(mode=body.mode, k=body.k, doc=body.doc, options=options)
