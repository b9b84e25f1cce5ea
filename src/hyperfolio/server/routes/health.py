"""Whether the service is up, and whether it is ready for questions (for probes and the CLI)."""

from __future__ import annotations

import tempfile

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from hyperfolio.server.access import Caller, visible
from hyperfolio.server.problems import problem_response
from hyperfolio.server.state import State

router = APIRouter(tags=["service"])


@router.get("/api/health", summary="The process is up.")
def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/api/ready", summary="Ready for questions: the collection root is writable.")
def ready(state: State, caller: Caller) -> Response:
    lib = state.library
    try:
        with tempfile.NamedTemporaryFile(dir=lib.root):
            pass
    except OSError as exc:
        return problem_response(503, f"{lib.root} is not writable: {exc.strerror or exc}")
    if not state.warm.is_set():
        return problem_response(503, "loading the models and opening the collections; ready in a few seconds")
    seen = visible(caller, lib.names())
    return JSONResponse({"status": "ready", "collections": len(seen), "ingesting": state.jobs.busy()})
