"""The HTTP service: a documented API, the web app at `/` and the MCP endpoint at `/mcp`.

One process keeps every collection open (models loaded once); queries run on worker threads
through each collection's reader while one ingestion thread writes (see `library`, `jobs`).
Everything goes through `Collection`, the public API; this module only speaks HTTP.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import shutil
import tempfile
import threading
import uuid
from collections.abc import AsyncIterable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, File, Form, Query, Request, Response, UploadFile
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, Field

from hyperfolio.collection import Collection
from hyperfolio.errors import HyperfolioError, ParseError
from hyperfolio.parse import SUPPORTED_SUFFIXES, inspect_bytes
from hyperfolio.parse.unlock import WrongPassword, is_encrypted, unlock
from hyperfolio.render import answer_dict, evidence_dict
from hyperfolio.retrieve import RetrievalMode
from hyperfolio.server.jobs import PASSWORD_NEEDED, Job, JobQueue, Upload, unfinished_uploads
from hyperfolio.server.library import Library
from hyperfolio.server.problems import PROBLEM_RESPONSES, Problem, install, problem_response
from hyperfolio.version import package_version

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "::1", "localhost")
UPLOAD_DIR = "uploads"
READ_BLOCK = 1 << 20
MAX_PASSWORD = 1024  # characters; PDF and Office passwords are far shorter


@dataclass
class ServerConfig:
    root: Path
    host: str = "127.0.0.1"
    port: int = 8765
    api_key: str = ""
    cors_origins: list[str] = field(default_factory=list)
    max_upload_mb: float = 200.0
    max_pages: int = 2000
    workers: int = 0  # parse processes per ingest; 0 parses on the ingest thread
    warm: bool = True  # load the models at start-up, so the first question is as fast as the others
    mcp: bool = True

    def check(self) -> None:
        """A service reachable from other machines must ask for a key."""
        if self.host not in LOOPBACK and not self.api_key:
            raise HyperfolioError(
                f"--host {self.host} makes the service reachable from other machines: set an API key "
                "(--api-key or HYPERFOLIO_API_KEY), or keep the default --host 127.0.0.1"
            )
        if self.max_upload_mb <= 0 or self.max_pages < 1:
            raise HyperfolioError("--max-upload-mb and --max-pages must be positive")


Mode = RetrievalMode


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=4000, description="The question.")
    mode: Mode | None = Field(None, description="Retrieval mode; the collection's default (auto) when omitted.")
    k: int | None = Field(None, ge=1, le=100, description="Evidence chunks to retrieve.")
    doc: list[str] | None = Field(
        None, min_length=1, max_length=50, description="Scope to these documents (ids or titles)."
    )
    options: dict[str, str | int | float | bool] | None = Field(
        None, description="Per-call retrieval knobs of the mode (e.g. concepts=15, by_modality=true)."
    )


class CollectionRequest(BaseModel):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def _static(name: str) -> Path:
    return Path(str(resources.files("hyperfolio.server").joinpath("static", name)))


def _vis_network() -> Path:
    return Path(str(resources.files("hyperfolio.viz").joinpath("assets", "vis-network.min.js")))


def create_app(config: ServerConfig, library: Library | None = None) -> FastAPI:
    config.check()
    lib = library or Library(config.root)
    queue = JobQueue(lib.writer, workers=config.workers)
    mcp_app = None
    if config.mcp:
        from hyperfolio.server.mcp import build_mcp

        mcp_server = build_mcp(lib)
        mcp_app = mcp_server.streamable_http_app(host=config.host)

    warm = threading.Event()

    def start_up() -> None:
        """Load every collection's models now, not at its first question, and resume the uploads that
        a stopped service left unfinished."""
        try:
            for name in lib.names():
                col = lib.reader(name)
                if config.warm:
                    col.embedder.embed(["warm up"])
                    col.graph_embedder.embed(["warm up"])
                left = unfinished_uploads(col, lib.path(name) / UPLOAD_DIR)
                if left:
                    log.warning("%s: resuming %d unfinished upload(s)", name, len(left))
                    queue.submit(name, left)
        except Exception:  # a collection that cannot open must not keep the others from being served
            log.exception("start-up of the collections failed")
        finally:
            warm.set()

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202 - FastAPI's own type
        threading.Thread(target=start_up, name="hyperfolio-start-up", daemon=True).start()
        if mcp_app is not None:
            async with mcp_app.router.lifespan_context(mcp_app):
                yield
        else:
            yield
        queue.close()
        lib.close()

    app = FastAPI(
        title="hyperfolio",
        summary="Ask questions of complex documents through a layered multimodal hypergraph.",
        version=package_version(),
        docs_url=None,  # the bundled page never loads scripts from a CDN; the schema is at /openapi.json
        redoc_url=None,
        lifespan=lifespan,
        responses=PROBLEM_RESPONSES,
    )
    app.state.library, app.state.jobs, app.state.config = lib, queue, config
    install(app)
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=config.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        )

    @app.middleware("http")
    async def require_key(request: Request, call_next):  # noqa: ANN001, ANN202
        path = request.url.path
        guarded = (path.startswith("/api/") and path not in ("/api/health",)) or path.startswith("/mcp")
        if config.api_key and guarded and request.method != "OPTIONS":
            sent = request.headers.get("authorization", "")
            token = sent[7:] if sent.lower().startswith("bearer ") else request.query_params.get("key", "")
            if not hmac.compare_digest(token.encode(), config.api_key.encode()):
                return problem_response(
                    401,
                    "this service needs its API key: send 'Authorization: Bearer <key>'",
                    request,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await call_next(request)

    # ------------------------------------------------------------------ service
    @app.get("/api/health", tags=["service"], summary="The process is up.")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/api/ready", tags=["service"], summary="Ready for questions: the collection root is writable.")
    def ready() -> Response:
        try:
            with tempfile.NamedTemporaryFile(dir=lib.root):
                pass
        except OSError as exc:
            return problem_response(503, f"{lib.root} is not writable: {exc.strerror or exc}")
        if not warm.is_set():
            return problem_response(503, "loading the models and opening the collections; ready in a few seconds")
        return JSONResponse({"status": "ready", "collections": len(lib.names()), "ingesting": queue.busy()})

    # ------------------------------------------------------------------ collections
    @app.get("/api/collections", tags=["collections"], summary="Collections under the service's root.")
    def list_collections() -> list[dict[str, Any]]:
        out = []
        for name in lib.names():
            col = lib.reader(name)
            out.append({"name": name, "documents": len(col.documents())})
        return out

    @app.post(
        "/api/collections",
        tags=["collections"],
        status_code=201,
        summary="Create a collection.",
        responses={200: {"description": "The collection already existed."}},
    )
    def create_collection(body: CollectionRequest, response: Response) -> dict[str, Any]:
        _, made = lib.create(body.name)
        if not made:
            response.status_code = 200
        return {"name": body.name, "created": made}

    @app.get("/api/collections/{name}/stats", tags=["collections"], summary="Counts, stage times and model usage.")
    def stats(name: str) -> dict[str, Any]:
        return lib.reader(name).stats()

    @app.get("/api/collections/{name}/conflicts", tags=["collections"], summary="Reconciliation decisions.")
    def conflicts(name: str, doc: str | None = None) -> list[dict[str, Any]]:
        return [asdict(d) for d in lib.reader(name).conflicts(doc)]

    # ------------------------------------------------------------------ documents
    @app.get("/api/collections/{name}/documents", tags=["documents"], summary="Documents with their status.")
    def list_documents(name: str) -> list[dict[str, Any]]:
        return [_doc(info) for info in lib.reader(name).documents()]

    @app.post(
        "/api/collections/{name}/documents",
        tags=["documents"],
        status_code=202,
        summary="Upload files to index (PDF, Word, PowerPoint, Excel/CSV, images, Markdown, HTML, text); "
        "answers with the ingestion job.",
        description="A file that cannot be indexed is listed under `rejected` (or, when none can, the upload is "
        "refused with them). An encrypted PDF or Office file is checked with `password` as it arrives: without "
        "it, or with a wrong one, it is refused with 422 and `encrypted: true` in its `rejected` entry.",
    )
    def upload(
        name: str,
        files: Annotated[list[UploadFile], File(description="The files.")],
        password: Annotated[
            str,
            Form(
                max_length=MAX_PASSWORD,
                description="Password of the encrypted PDF and Office files in this upload (tried on each); "
                "empty: none. Used for this upload's indexing only, never stored.",
                json_schema_extra={"format": "password", "writeOnly": True},
            ),
        ] = "",
    ) -> dict[str, Any]:
        col = lib.reader(name)
        if not files:
            raise Problem(400, "no files in the upload (send multipart/form-data with 'files' parts)")
        accepted: list[Upload] = []
        rejected: list[dict[str, Any]] = []
        for part in files:
            try:
                accepted.append(_receive(col, part, config, password or None))
            except Problem as exc:
                shown = _shown_name(part.filename)
                rejected.append({"name": shown, "status": exc.status, "reason": exc.detail, **exc.extra})
        if not accepted:
            worst = max(r["status"] for r in rejected)
            first = rejected[0]
            raise Problem(worst, f"{first['name']}: {first['reason']}", rejected=rejected)
        # The password goes along only when a file needs it, and only in memory (see JobQueue.submit).
        job = queue.submit(name, accepted, password if any(u.encrypted for u in accepted) else None)
        return {**job.summary(), "rejected": rejected, "events": f"/api/jobs/{job.job_id}/events"}

    @app.get("/api/collections/{name}/documents/{doc}", tags=["documents"], summary="One document.")
    def get_document(name: str, doc: str) -> dict[str, Any]:
        return _doc(lib.reader(name).resolve(doc))

    @app.delete("/api/collections/{name}/documents/{doc}", tags=["documents"], summary="Remove a document.")
    def delete_document(name: str, doc: str) -> dict[str, Any]:
        if queue.busy():
            raise Problem(409, "an ingestion job is running; remove the document once it has finished")
        info = lib.writer(name).remove(doc)
        upload_dir = lib.path(name) / UPLOAD_DIR
        source = Path(info.source)
        if source.parent.parent == upload_dir.resolve() and source.is_file():
            shutil.rmtree(source.parent, ignore_errors=True)  # the service's copy of an uploaded file
        return _doc(info) | {"removed": True}

    @app.get("/api/collections/{name}/documents/{doc}/pages", tags=["documents"], summary="Pages and chunks.")
    def pages(name: str, doc: str) -> list[dict[str, Any]]:
        return lib.reader(name).pages(doc)

    @app.get(
        "/api/collections/{name}/documents/{doc}/pages/{page}/image",
        tags=["documents"],
        summary="PNG of a page with cited regions highlighted (box=x0,y0,x1,y1 in points, repeatable).",
        response_class=Response,
        responses={200: {"content": {"image/png": {}}}},
    )
    def page_image(
        name: str,
        doc: str,
        page: int,
        box: Annotated[list[str] | None, Query(max_length=50)] = None,
        dpi: Annotated[int, Query(ge=18, le=300)] = 110,
    ) -> Response:
        boxes = [_box(text) for text in box or []]
        png = lib.reader(name).page_image(doc, page, boxes, dpi)
        return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=300"})

    # ------------------------------------------------------------------ jobs
    @app.get("/api/collections/{name}/jobs", tags=["ingestion"], summary="This collection's ingestion jobs.")
    def list_jobs(name: str) -> list[dict[str, Any]]:
        lib.reader(name)
        return [job.summary() for job in queue.jobs(name)]

    @app.get("/api/jobs/{job_id}", tags=["ingestion"], summary="An ingestion job: status, results, failures.")
    def get_job(job_id: str) -> dict[str, Any]:
        return _job(queue, job_id).summary()

    @app.get(
        "/api/jobs/{job_id}/events",
        tags=["ingestion"],
        response_class=EventSourceResponse,
        summary="Live progress as server-sent events (stage, pages, pages/s, each file's result).",
    )
    async def job_events(job: Annotated[Job, Depends(_job_of)], request: Request) -> AsyncIterable[ServerSentEvent]:
        sent = _last_event_id(request)
        while True:
            for event in job.events_after(sent):
                sent = event["seq"]
                yield ServerSentEvent(data=event, event=event["type"], id=str(sent))
            if job.over and sent >= len(job.events):
                return
            if await request.is_disconnected():
                return
            await asyncio.sleep(0.2)

    # ------------------------------------------------------------------ questions
    @app.post("/api/collections/{name}/ask", tags=["questions"], summary="Answer a question with citations.")
    def ask(name: str, body: AskRequest) -> dict[str, Any]:
        col = lib.reader(name)
        answer = col.ask(body.question, mode=body.mode, k=body.k, doc=body.doc, options=_options(body))
        return answer_dict(answer)

    @app.post(
        "/api/collections/{name}/ask/stream",
        tags=["questions"],
        response_class=EventSourceResponse,
        summary="Answer as server-sent events: the evidence first, then the answer as the model writes it.",
    )
    async def ask_stream(
        body: AskRequest, found: Annotated[tuple[Collection, Any], Depends(_evidence_of)]
    ) -> AsyncIterable[ServerSentEvent]:
        col, evidence = found
        yield ServerSentEvent(data=evidence_dict(evidence), event="evidence")
        loop = asyncio.get_running_loop()
        written: asyncio.Queue[str] = asyncio.Queue()

        def on_text(text: str) -> None:  # called on the model client's thread
            loop.call_soon_threadsafe(written.put_nowait, text)

        answering = asyncio.ensure_future(asyncio.to_thread(col.answer, body.question, evidence, body.mode, on_text))
        while not answering.done() or not written.empty():
            waiting = asyncio.ensure_future(written.get())
            await asyncio.wait({answering, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():
                yield ServerSentEvent(data={"text": waiting.result()}, event="delta")
            else:
                waiting.cancel()
        try:
            answer = answering.result()
        except HyperfolioError as exc:  # the stream has started: the error is its last event
            yield ServerSentEvent(data={"status": 400, "detail": str(exc)}, event="error")
            return
        yield ServerSentEvent(data=answer_dict(answer), event="answer")

    @app.post("/api/collections/{name}/retrieve", tags=["questions"], summary="Ranked, cited evidence.")
    def retrieve(name: str, body: AskRequest) -> dict[str, Any]:
        evidence = lib.reader(name).retrieve(body.question, body.mode, body.k, body.doc, _options(body))
        return evidence_dict(evidence)

    # ------------------------------------------------------------------ pictures
    @app.get(
        "/api/collections/{name}/graph",
        tags=["pictures"],
        summary="Draw part of the hypergraph: a document's, a question's evidence or an entity's neighbourhood.",
        response_class=Response,
        responses={200: {"content": {"image/png": {}, "image/svg+xml": {}, "text/html": {}}}},
    )
    def graph(
        name: str,
        doc: str | None = None,
        query: Annotated[str | None, Query(max_length=4000)] = None,
        entity: Annotated[str | None, Query(max_length=200)] = None,
        format: Literal["png", "svg", "html"] = "png",  # noqa: A002 - the API's word
        layout: Annotated[str | None, Query(max_length=60)] = None,
        mode: Mode = "dual",
    ) -> Response:
        col = lib.reader(name)
        with tempfile.TemporaryDirectory(prefix="hyperfolio-graph-") as tmp:
            picture = col.visualize(Path(tmp) / f"graph.{format}", doc, query, entity, layout, mode)
            data = picture.path.read_bytes()
        media = {"png": "image/png", "svg": "image/svg+xml", "html": "text/html; charset=utf-8"}[format]
        headers = {"X-Entities": str(picture.entities), "X-Hyperedges": str(picture.hyperedges)}
        return Response(data, media_type=media, headers=headers)

    # ------------------------------------------------------------------ web app
    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(_static("index.html").read_text(encoding="utf-8"))

    @app.get("/static/{asset}", include_in_schema=False)
    def static(asset: str) -> FileResponse:
        if asset == "vis-network.min.js":
            return FileResponse(_vis_network(), media_type="text/javascript")
        shipped = {p.name for p in Path(str(resources.files("hyperfolio.server").joinpath("static"))).iterdir()}
        if asset not in shipped:  # only the files shipped with the package, never a path from the request
            raise Problem(404, f"no such asset: {asset}")
        return FileResponse(_static(asset))

    if mcp_app is not None:
        app.mount("/mcp", mcp_app)
    return app


# ---------------------------------------------------------------------- helpers
def _doc(info: Any) -> dict[str, Any]:
    row = asdict(info)
    row.pop("source", None)  # a server path: not the caller's business
    return row


def _job(queue: JobQueue, job_id: str) -> Job:
    job = queue.get(job_id)
    if job is None:
        raise Problem(404, f"no ingestion job {job_id!r} (jobs are kept while the service runs)")
    return job


# A streamed route's checks run in dependencies: once its first event is sent, a 4xx can no longer be.
def _job_of(job_id: str, request: Request) -> Job:
    return _job(request.app.state.jobs, job_id)


async def _evidence_of(name: str, body: AskRequest, request: Request) -> tuple[Collection, Any]:
    col = request.app.state.library.reader(name)
    options = _options(body)
    return col, await asyncio.to_thread(col.retrieve, body.question, body.mode, body.k, body.doc, options)


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id", "")
    return int(raw) if raw.isdigit() else 0


def _options(body: AskRequest) -> dict[str, Any] | None:
    """The knobs as given; the collection types them against the mode it runs (a mistake: 400)."""
    return {k: str(v) for k, v in body.options.items()} if body.options else None


def _box(text: str) -> tuple[float, float, float, float]:
    try:
        x0, y0, x1, y1 = (float(v) for v in text.split(","))
    except ValueError:
        raise Problem(400, f"box {text!r}: give four numbers x0,y0,x1,y1 in points") from None
    if not all(abs(v) < 1e6 for v in (x0, y0, x1, y1)):
        raise Problem(400, f"box {text!r}: coordinates out of range")
    return x0, y0, x1, y1


def _shown_name(filename: str | None) -> str:
    """The uploaded file's own name, reduced to its last part: shown to people, never used as a path."""
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return base[:200] or "upload"


def _safe_name(shown: str) -> str:
    """A file name made only of safe characters that keeps the suffix (parsers dispatch on it)."""
    stem, dot, suffix = shown.rpartition(".")
    if not dot:
        stem, suffix = shown, ""
    clean = "".join(c if c.isalnum() or c in "-_ " else "_" for c in stem).strip(" _")[:80] or "document"
    return f"{clean}.{suffix.lower()}" if suffix else clean


def _receive(col: Collection, part: UploadFile, config: ServerConfig, password: str | None) -> Upload:
    """Check and store one uploaded file under the collection's uploads folder, in a fresh directory.
    An encrypted file is stored as it came (its identity is its own bytes) and checked decrypted."""
    shown = _shown_name(part.filename)
    suffix = Path(_safe_name(shown)).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(SUPPORTED_SUFFIXES)
        raise Problem(415, f"unsupported file type {suffix or '(no suffix)'!r}; supported: {supported}")
    limit = int(config.max_upload_mb * (1 << 20))
    chunks, size = [], 0
    while block := part.file.read(READ_BLOCK):
        size += len(block)
        if size > limit:
            raise Problem(413, f"larger than the upload limit of {config.max_upload_mb:g} MB")
        chunks.append(block)
    data = b"".join(chunks)
    target = col.path / UPLOAD_DIR / uuid.uuid4().hex / _safe_name(shown)
    encrypted = is_encrypted(target, data)
    try:
        pages = inspect_bytes(target, _unlocked(target, data, password) if encrypted else data, col.settings.parse)
    except ParseError as exc:
        raise Problem(415 if "unsupported" in exc.reason else 422, exc.reason) from None
    if pages > config.max_pages:
        raise Problem(413, f"{pages} pages; the limit is {config.max_pages} pages per document")
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return Upload(shown, target, pages, encrypted)


def _unlocked(target: Path, data: bytes, password: str | None) -> bytes:
    """The decrypted bytes, so a missing or wrong password is refused with the upload rather than
    found later by the job; `encrypted` in the refusal tells a client that a password would help."""
    if not password:
        raise Problem(422, PASSWORD_NEEDED, encrypted=True)
    try:
        return unlock(target, data, password)
    except WrongPassword:
        raise Problem(422, "wrong password", encrypted=True) from None
