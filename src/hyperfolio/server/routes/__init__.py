"""The HTTP API, one router per tag, in the order the OpenAPI schema lists them; the web app last."""

from __future__ import annotations

from hyperfolio.server.routes import collections, documents, health, jobs, pictures, questions, web

ROUTERS = (
    health.router,
    collections.router,
    documents.router,
    jobs.router,
    questions.router,
    pictures.router,
    web.router,
)
