"""Collections: list and create them, their counts and their reconciliation decisions."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from hyperfolio.server.state import State

router = APIRouter(tags=["collections"])


class CollectionRequest(BaseModel):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


@router.get("/api/collections", summary="Collections under the service's root.")
def list_collections(state: State) -> list[dict[str, Any]]:
    lib = state.library
    return [{"name": name, "documents": len(lib.reader(name).documents())} for name in lib.names()]


@router.post(
    "/api/collections",
    status_code=201,
    summary="Create a collection.",
    responses={200: {"description": "The collection already existed."}},
)
def create_collection(state: State, body: CollectionRequest, response: Response) -> dict[str, Any]:
    _, made = state.library.create(body.name)
    if not made:
        response.status_code = 200
    return {"name": body.name, "created": made}


@router.get("/api/collections/{name}/stats", summary="Counts, stage times and model usage.")
def stats(state: State, name: str) -> dict[str, Any]:
    return state.library.reader(name).stats()


@router.get("/api/collections/{name}/conflicts", summary="Reconciliation decisions.")
def conflicts(state: State, name: str, doc: str | None = None) -> list[dict[str, Any]]:
    return [asdict(d) for d in state.library.reader(name).conflicts(doc)]
