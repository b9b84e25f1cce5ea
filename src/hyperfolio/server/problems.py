"""Errors as RFC 9457 problem details (`application/problem+json`): one clear line in `detail`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hyperfolio.errors import ConversationNotFound, DocumentNotFound, HyperfolioError, ParseError, UnsupportedFileError

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"
TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
    },
}
# Declared on every operation (the app's `responses`), so the schema says what errors look like.
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {
        "description": "The request was refused (RFC 9457 problem details).",
        "content": {PROBLEM: {"schema": PROBLEM_SCHEMA}},
    },
    "5XX": {
        "description": "The service failed or is not ready (problem details).",
        "content": {PROBLEM: {"schema": PROBLEM_SCHEMA}},
    },
}


class Problem(Exception):
    """Raised by a route to answer with a problem document."""

    def __init__(self, status: int, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.detail, self.extra = status, detail, extra


def problem_response(
    status: int, detail: str, request: Request | None = None, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    body = {"type": "about:blank", "title": TITLES.get(status, "Error"), "status": status, "detail": detail}
    if request is not None:
        body["instance"] = request.url.path
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def status_of(exc: HyperfolioError) -> int:
    """The HTTP status a library error stands for."""
    from hyperfolio.server.library import CollectionNotFound

    if isinstance(exc, (DocumentNotFound, CollectionNotFound, ConversationNotFound)):
        return 404
    if isinstance(exc, UnsupportedFileError):
        return 415
    if isinstance(exc, ParseError):
        return 422
    return 400


def install(app: FastAPI) -> None:
    """Every error the service answers with, as a problem document."""

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        return problem_response(exc.status, exc.detail, request, **exc.extra)

    @app.exception_handler(HyperfolioError)
    async def _library(request: Request, exc: HyperfolioError) -> JSONResponse:
        return problem_response(status_of(exc), str(exc), request)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        detail = f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid request"))
        shown = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in errors]
        return problem_response(422, detail, request, errors=shown)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return problem_response(exc.status_code, str(exc.detail), request, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return problem_response(500, f"unexpected error: {type(exc).__name__} (see the server log)", request)
