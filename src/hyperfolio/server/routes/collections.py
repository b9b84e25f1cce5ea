"""Collections: list and create them, their counts and their reconciliation decisions."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from hyperfolio.server.access import WRITE, Caller, authorize, visible
from hyperfolio.server.keys import CREATE_COLLECTION
from hyperfolio.server.state import State

router = APIRouter(tags=["collections"])


class CollectionRequest(BaseModel):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


@router.get("/api/collections", summary="Collections under the service's root (those the caller's key may read).")
def list_collections(state: State, caller: Caller) -> list[dict[str, Any]]:
    lib = state.library
    return [{"name": name, "documents": len(lib.reader(name).documents())} for name in visible(caller, lib.names())]


@router.post(
    "/api/collections",
    status_code=201,
    summary="Create a collection.",
    responses={200: {"description": "The collection already existed."}},
)
def create_collection(state: State, body: CollectionRequest, response: Response, caller: Caller) -> dict[str, Any]:
    authorize(caller, WRITE, body.name)
    _, made = state.library.create(body.name)
    if made:
        state.gate.record(caller, CREATE_COLLECTION, body.name)
    else:
        response.status_code = 200
    return {"name": body.name, "created": made}


@router.get("/api/collections/{name}/stats", summary="Counts, stage times and model usage.")
def stats(state: State, name: str) -> dict[str, Any]:
    return state.library.reader(name).stats()


@router.get("/api/collections/{name}/conflicts", summary="Reconciliation decisions.")
def conflicts(state: State, name: str, doc: str | None = None) -> list[dict[str, Any]]:
    return [asdict(d) for d in state.library.reader(name).conflicts(doc)]
