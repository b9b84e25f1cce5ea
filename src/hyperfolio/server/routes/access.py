"""Access: the service's keys (listed, revoked) and its audit log, for a key with the admin scope over every
collection. Keys are made with `hyperfolio keys create`, which shows the secret once; here none is shown."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from hyperfolio.server.access import Caller
from hyperfolio.server.keys import KeyNotFound
from hyperfolio.server.problems import Problem
from hyperfolio.server.state import State

router = APIRouter(tags=["access"])


@router.get("/api/keys", summary="The service's API keys (never their secrets), revoked ones included.")
def list_keys(state: State) -> list[dict[str, Any]]:
    return [key.to_dict() for key in state.gate.store.list_keys()]


@router.delete("/api/keys/{key_id}", summary="Revoke a key: refused from the next request on.")
def revoke_key(state: State, key_id: str, caller: Caller) -> dict[str, Any]:
    try:
        key = state.gate.store.revoke(key_id, by=caller.by)
    except KeyNotFound as exc:
        raise Problem(404, str(exc)) from None
    return key.to_dict()


@router.get("/api/audit", summary="The audit log, newest first: uploads, removals, new collections, key changes.")
def audit(state: State, limit: Annotated[int, Query(ge=1, le=10_000)] = 100) -> list[dict[str, Any]]:
    return [entry.to_dict() for entry in state.gate.store.audit(limit)]
