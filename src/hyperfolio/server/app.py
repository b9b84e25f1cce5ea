"""The HTTP service: a documented API, the web app at `/` and the MCP endpoint at `/mcp`.

One process keeps every collection open (models loaded once); queries run on worker threads
through each collection's reader while one ingestion thread writes (see `library`, `jobs`).
Everything goes through `Collection`, the public API. This module assembles the app: its state,
start-up, its gate (keys, rate limits and the access rule: `access`), the routers (one per tag, in
`routes/`) and the MCP server.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI, Request, Response
from fastapi.middleware.cors import CORSMiddleware
from starlette.applications import Starlette

from hyperfolio.server.access import Gate, Refusal, route_path, token_of
from hyperfolio.server.config import ServerConfig
from hyperfolio.server.jobs import JobQueue, unfinished_uploads
from hyperfolio.server.keys import KeyStore
from hyperfolio.server.library import Library
from hyperfolio.server.problems import PROBLEM_RESPONSES, install, problem_response
from hyperfolio.server.routes import ROUTERS
from hyperfolio.server.routes.ollama_compat import OLLAMA_PATHS, ollama_error
from hyperfolio.server.routes.openai_compat import openai_error
from hyperfolio.server.state import ServiceState
from hyperfolio.server.uploads import UPLOAD_DIR
from hyperfolio.version import package_version

__all__ = ["ServerConfig", "create_app"]

log = logging.getLogger(__name__)


def create_app(config: ServerConfig, library: Library | None = None) -> FastAPI:
    config.check()
    lib = library or Library(config.root)
    gate = Gate(KeyStore(lib.root), config)
    state = ServiceState(lib, JobQueue(lib.writer, workers=config.workers), config, gate)
    mcp_app = None
    if config.mcp:
        from hyperfolio.server.mcp import build_mcp

        mcp_app = build_mcp(lib, gate).streamable_http_app(host=config.host)

    app = FastAPI(
        title="hyperfolio",
        summary="Ask questions of complex documents through a layered multimodal hypergraph.",
        version=package_version(),
        docs_url=None,  # the bundled page never loads scripts from a CDN; the schema is at /openapi.json
        redoc_url=None,
        lifespan=_lifespan(state, mcp_app),
        responses=PROBLEM_RESPONSES,
    )
    app.state.service = state
    install(app)
    app.middleware("http")(require_key)
    if config.cors_origins:  # added last, so outermost: a refusal by the gate carries its CORS headers too
        app.add_middleware(
            CORSMiddleware,
            allow_origins=config.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            expose_headers=["Retry-After"],
        )
    for router in ROUTERS:
        app.include_router(router)
    if mcp_app is not None:
        app.mount("/mcp", mcp_app)
    return app


def start_up(state: ServiceState) -> None:
    """Load every collection's models now, not at its first question, and resume the uploads that
    a stopped service left unfinished."""
    lib = state.library
    try:
        for name in lib.names():
            col = lib.reader(name)
            if state.config.warm:
                col.warm()
            left = unfinished_uploads(col, lib.path(name) / UPLOAD_DIR)
            if left:
                log.warning("%s: resuming %d unfinished upload(s)", name, len(left))
                state.jobs.submit(name, left)
    except Exception:  # a collection that cannot open must not keep the others from being served
        log.exception("start-up of the collections failed")
    finally:
        state.warm.set()


def _lifespan(state: ServiceState, mcp_app: Starlette | None) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Start-up on a thread (the service answers `/api/ready` with 503 meanwhile), freed memory returned
    while it runs (`memory`), the MCP server's own lifespan inside the app's, and every collection closed at
    the end."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(target=start_up, args=(state,), name="hyperfolio-start-up", daemon=True).start()
        state.trimmer.start()
        if mcp_app is not None:
            async with mcp_app.router.lifespan_context(mcp_app):
                yield
        else:
            yield
        state.trimmer.stop()
        state.jobs.close()
        state.library.close()
        state.gate.store.close()

    return lifespan


async def require_key(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """The API (but its health probe), the OpenAI-compatible `/v1` and the MCP endpoint pass the service's
    gate (`access.Gate.admit`): who calls (put on `request.state.principal`), how often, and whether their
    key may do what the path asks. A refusal comes in the endpoint's clients' error shape."""
    if request.method == "OPTIONS":  # a CORS preflight carries no key
        return await call_next(request)
    gate: Gate = request.app.state.service.gate
    admitted = gate.admit(request.method, route_path(request), token_of(request))
    if isinstance(admitted, Refusal):
        return _refusal(request, admitted)
    if admitted is not None:
        request.state.principal = admitted
    return await call_next(request)


def _refusal(request: Request, refused: Refusal) -> Response:
    """401 (with a Bearer challenge), 403 or 429 (with Retry-After) as problem details, or as OpenAI's or
    Ollama's error for their endpoints."""
    headers = {"WWW-Authenticate": "Bearer"} if refused.status == 401 else {}
    if refused.retry_after:
        headers["Retry-After"] = str(refused.retry_after)
    path = route_path(request)
    if path.startswith("/v1"):
        response = openai_error(refused.status, refused.detail, refused.code)
    elif path in OLLAMA_PATHS:
        response = ollama_error(refused.status, refused.detail)
    else:
        return problem_response(refused.status, refused.detail, request, headers=headers or None)
    response.headers.update(headers)
    return response
