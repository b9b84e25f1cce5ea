"""The HTTP API, one router per tag, in the order the OpenAPI schema lists them; then the OpenAI- and
Ollama-compatible chat endpoints (a collection as a chat model); the web app last."""

from __future__ import annotations

from hyperfolio.server.routes import (
    access,
    collections,
    conversations,
    documents,
    health,
    jobs,
    ollama_compat,
    openai_compat,
    pictures,
    questions,
    web,
)

ROUTERS = (
    health.router,
    collections.router,
    documents.router,
    jobs.router,
    questions.router,
    conversations.router,
    pictures.router,
    access.router,
    openai_compat.router,
    ollama_compat.router,
    web.router,
)
