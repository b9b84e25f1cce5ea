"""Documents: upload them for indexing, read them back page by page, remove them."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Response, UploadFile

from hyperfolio.server.problems import Problem
from hyperfolio.server.state import State
from hyperfolio.server.uploads import MAX_PASSWORD, discard, receive_all

router = APIRouter(tags=["documents"])

Password = Annotated[
    str,
    Form(
        max_length=MAX_PASSWORD,
        description="Password of the encrypted PDF and Office files in this upload (tried on each); "
        "empty: none. Used for this upload's indexing only, never stored.",
        json_schema_extra={"format": "password", "writeOnly": True},
    ),
]


@router.get("/api/collections/{name}/documents", summary="Documents with their status.")
def list_documents(state: State, name: str) -> list[dict[str, Any]]:
    return [_doc(info) for info in state.library.reader(name).documents()]


@router.post(
    "/api/collections/{name}/documents",
    status_code=202,
    summary="Upload files to index (PDF, Word, PowerPoint, Excel/CSV, images, Markdown, HTML, text); "
    "answers with the ingestion job.",
    description="A file that cannot be indexed is listed under `rejected` (or, when none can, the upload is "
    "refused with them). An encrypted PDF or Office file is checked with `password` as it arrives: without "
    "it, or with a wrong one, it is refused with 422 and `encrypted: true` in its `rejected` entry.",
)
def upload(
    state: State,
    name: str,
    files: Annotated[list[UploadFile], File(description="The files.")],
    password: Password = "",
) -> dict[str, Any]:
    col = state.library.reader(name)
    accepted, rejected = receive_all(col, files, state.config, password or None)
    # The password goes along only when a file needs it, and only in memory (see JobQueue.submit).
    job = state.jobs.submit(name, accepted, password if any(u.encrypted for u in accepted) else None)
    return {**job.summary(), "rejected": rejected, "events": f"/api/jobs/{job.job_id}/events"}


@router.get("/api/collections/{name}/documents/{doc}", summary="One document.")
def get_document(state: State, name: str, doc: str) -> dict[str, Any]:
    return _doc(state.library.reader(name).resolve(doc))


@router.delete("/api/collections/{name}/documents/{doc}", summary="Remove a document.")
def delete_document(state: State, name: str, doc: str) -> dict[str, Any]:
    if state.jobs.busy():
        raise Problem(409, "an ingestion job is running; remove the document once it has finished")
    info = state.library.writer(name).remove(doc)
    discard(state.library.path(name), info.source)
    return _doc(info) | {"removed": True}


@router.get("/api/collections/{name}/documents/{doc}/pages", summary="Pages and chunks.")
def pages(state: State, name: str, doc: str) -> list[dict[str, Any]]:
    return state.library.reader(name).pages(doc)


@router.get(
    "/api/collections/{name}/documents/{doc}/pages/{page}/image",
    summary="PNG of a page with cited regions highlighted (box=x0,y0,x1,y1 in points, repeatable).",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}},
)
def page_image(
    state: State,
    name: str,
    doc: str,
    page: int,
    box: Annotated[list[str] | None, Query(max_length=50)] = None,
    dpi: Annotated[int, Query(ge=18, le=300)] = 110,
) -> Response:
    boxes = [_box(text) for text in box or []]
    png = state.library.reader(name).page_image(doc, page, boxes, dpi)
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=300"})


def _doc(info: Any) -> dict[str, Any]:
    row = asdict(info)
    row.pop("source", None)  # a server path: not the caller's business
    return row


def _box(text: str) -> tuple[float, float, float, float]:
    try:
        x0, y0, x1, y1 = (float(v) for v in text.split(","))
    except ValueError:
        raise Problem(400, f"box {text!r}: give four numbers x0,y0,x1,y1 in points") from None
    if not all(abs(v) < 1e6 for v in (x0, y0, x1, y1)):
        raise Problem(400, f"box {text!r}: coordinates out of range")
    return x0, y0, x1, y1
