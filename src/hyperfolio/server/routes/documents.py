"""Documents: upload them for indexing, read them back page by page, remove them."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Query, Response, UploadFile
from pydantic import BaseModel, Field

from hyperfolio.model import MAX_QUOTE_CHARS
from hyperfolio.server.access import Caller
from hyperfolio.server.keys import REMOVE_DOCUMENT, UPLOAD
from hyperfolio.server.problems import Problem
from hyperfolio.server.state import State
from hyperfolio.server.uploads import MAX_PASSWORD, discard, receive_all

router = APIRouter(tags=["documents"])
MAX_QUOTE = MAX_QUOTE_CHARS

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
    caller: Caller,
    password: Password = "",
) -> dict[str, Any]:
    col = state.library.reader(name)
    accepted, rejected = receive_all(col, files, state.config, password or None)
    # The password goes along only when a file needs it, and only in memory (see JobQueue.submit).
    job = state.jobs.submit(name, accepted, password if any(u.encrypted for u in accepted) else None)
    names = ", ".join(u.name for u in accepted)
    state.gate.record(caller, UPLOAD, name, None, f"job {job.job_id}: {names}")
    return {**job.summary(), "rejected": rejected, "events": f"/api/jobs/{job.job_id}/events"}


@router.get("/api/collections/{name}/documents/{doc}", summary="One document.")
def get_document(state: State, name: str, doc: str) -> dict[str, Any]:
    return _doc(state.library.reader(name).resolve(doc))


@router.delete("/api/collections/{name}/documents/{doc}", summary="Remove a document.")
def delete_document(state: State, name: str, doc: str, caller: Caller) -> dict[str, Any]:
    if state.jobs.busy():
        raise Problem(409, "an ingestion job is running; remove the document once it has finished")
    info = state.library.writer(name).remove(doc)
    discard(state.library.path(name), info.source)
    state.gate.record(caller, REMOVE_DOCUMENT, name, info.doc_id, f"title={info.title}")
    return _doc(info) | {"removed": True}


@router.get("/api/collections/{name}/documents/{doc}/pages", summary="Pages and chunks.")
def pages(state: State, name: str, doc: str) -> list[dict[str, Any]]:
    return state.library.reader(name).pages(doc)


Boxes = Annotated[
    list[str] | None,
    Query(max_length=50, description="A cited region, x0,y0,x1,y1 in points (repeatable): a citation's `bbox`."),
]
# One text or several (`quote=` repeated), so the schema says both: a query string has no types, and a lone
# `quote=...` is as much a one-item list as a string. Their length is checked by the route (a 400), not declared:
# a schema's limit sends fuzzers past what an HTTP server takes in a request line.
Quotes = Annotated[
    list[str],
    Query(
        max_length=50,
        default_factory=list,
        description="What answers inside the regions (repeatable, each at most "
        f"{MAX_QUOTE} characters): a citation's `quote`, or each of its `cells` (the answering row's key "
        "and value). Found among the page's words inside the boxes (anywhere on the page without a box).",
        json_schema_extra={"type": ["array", "string"]},
    ),
]


class QuoteRegions(BaseModel):
    quote: str
    found: Literal["exact", "close"] | None = Field(
        description="exact: its letters and digits run on in the page's words; close: a window of the page's "
        "words holds most of its words; null: not found (show the region itself)."
    )
    boxes: list[list[float]] = Field(description="One box per line of the page it is on, x0,y0,x1,y1 in points.")


class PageRegions(BaseModel):
    page: int
    width: float = Field(description="The page's width in points, as shown (rotation applied).")
    height: float
    boxes: list[list[float]] = Field(description="The regions searched, as given.")
    quotes: list[QuoteRegions] = Field(description="Each quote, in the order given.")


@router.get(
    "/api/collections/{name}/documents/{doc}/pages/{page}/image",
    summary="PNG of a page with cited regions highlighted (box=x0,y0,x1,y1 in points, repeatable) and, "
    "inside them, the lines of what answers (quote=, repeatable) marked more strongly.",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}},
)
def page_image(
    state: State,
    name: str,
    doc: str,
    page: int,
    quote: Quotes,
    box: Boxes = None,
    dpi: Annotated[int, Query(ge=18, le=300)] = 110,
) -> Response:
    boxes = [_box(text) for text in box or []]
    png = state.library.reader(name).page_image(doc, page, boxes, dpi, _quotes(quote))
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=300"})


@router.get(
    "/api/collections/{name}/documents/{doc}/pages/{page}/regions",
    summary="Where what answers is inside cited regions: each quote's boxes on the page, one per line, in points.",
    response_model=PageRegions,
)
def page_regions(state: State, name: str, doc: str, page: int, quote: Quotes, box: Boxes = None) -> Any:
    boxes = [_box(text) for text in box or []]
    return state.library.reader(name).page_regions(doc, page, boxes, _quotes(quote))


def _doc(info: Any) -> dict[str, Any]:
    row = asdict(info)
    row.pop("source", None)  # a server path: not the caller's business
    return row


def _quotes(given: list[str]) -> list[str]:
    for text in given:
        if len(text) > MAX_QUOTE:
            raise Problem(400, f"a quote is at most {MAX_QUOTE} characters, not {len(text)}")
    return [text for text in given if text.strip()]


def _box(text: str) -> tuple[float, float, float, float]:
    try:
        x0, y0, x1, y1 = (float(v) for v in text.split(","))
    except ValueError:
        raise Problem(400, f"box {text!r}: give four numbers x0,y0,x1,y1 in points") from None
    if not all(abs(v) < 1e6 for v in (x0, y0, x1, y1)):
        raise Problem(400, f"box {text!r}: coordinates out of range")
    return x0, y0, x1, y1
