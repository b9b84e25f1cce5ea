"""Questions: a cited answer, the same answer streamed as the model writes it, or the evidence alone."""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, Field

from hyperfolio.collection import Collection
from hyperfolio.model import MAX_QUESTION_CHARS, Scope
from hyperfolio.render import answer_dict, evidence_dict
from hyperfolio.retrieve import RetrievalMode
from hyperfolio.server.answer_stream import answer_events
from hyperfolio.server.state import State

router = APIRouter(tags=["questions"])


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question.")
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
    return col, await col.aretrieve(body.question, **scope_of(body))


@router.post("/api/collections/{name}/ask", summary="Answer a question with citations.")
def ask(state: State, name: str, body: AskRequest) -> dict[str, Any]:
    col = state.library.reader(name)
    answer = col.ask(body.question, **scope_of(body))
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
    async for event in answer_events(evidence, lambda on_text: col.answer(body.question, evidence, body.mode, on_text)):
        yield event


@router.post("/api/collections/{name}/retrieve", summary="Ranked, cited evidence.")
def retrieve(state: State, name: str, body: AskRequest) -> dict[str, Any]:
    evidence = state.library.reader(name).retrieve(body.question, **scope_of(body))
    return evidence_dict(evidence)


def scope_of(body: AskRequest) -> Scope:
    """The request's scope; its knobs as given (the collection types them against the mode it runs: a
    mistake is a 400)."""
    options = {k: str(v) for k, v in body.options.items()} if body.options else None
    return Scope(mode=body.mode, k=body.k, doc=body.doc, options=options)
