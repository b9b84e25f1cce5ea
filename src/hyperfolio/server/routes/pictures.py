"""Pictures of the hypergraph: a document's, a question's evidence or an entity's neighbourhood."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from hyperfolio.model import MAX_QUESTION_CHARS
from hyperfolio.retrieve import RetrievalMode
from hyperfolio.server.state import State

router = APIRouter(tags=["pictures"])

MEDIA = {"png": "image/png", "svg": "image/svg+xml", "html": "text/html; charset=utf-8"}


@router.get(
    "/api/collections/{name}/graph",
    summary="Draw part of the hypergraph: a document's, a question's evidence or an entity's neighbourhood.",
    response_class=Response,
    responses={200: {"content": {"image/png": {}, "image/svg+xml": {}, "text/html": {}}}},
)
def graph(
    state: State,
    name: str,
    doc: str | None = None,
    query: Annotated[str | None, Query(max_length=MAX_QUESTION_CHARS)] = None,
    entity: Annotated[str | None, Query(max_length=200)] = None,
    format: Literal["png", "svg", "html"] = "png",  # noqa: A002 - the API's word
    layout: Annotated[str | None, Query(max_length=60)] = None,
    mode: RetrievalMode = "dual",
) -> Response:
    col = state.library.reader(name)
    with tempfile.TemporaryDirectory(prefix="hyperfolio-graph-") as tmp:
        picture = col.visualize(Path(tmp) / f"graph.{format}", doc, query, entity, layout, mode)
        data = picture.path.read_bytes()
    headers = {"X-Entities": str(picture.entities), "X-Hyperedges": str(picture.hyperedges)}
    return Response(data, media_type=MEDIA[format], headers=headers)
