"""The MCP server: an agent indexes documents and asks cited questions through tools.

The same server runs over stdio (`run_stdio`, one client spawning it) or inside the HTTP service,
mounted at `/mcp` (`build_mcp(library, gate).streamable_http_app()`). Every tool goes through the
`Library` the HTTP API uses, so both see the same collections; the blocking work runs on worker
threads so one slow question never stalls the other sessions. In the service, every call passes the
caller's key through the same access rule as the HTTP API (`mcp_access`).
"""

from __future__ import annotations

import inspect
import json
import re
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
import pydantic_core
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, ContentBlock, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.applications import Starlette

from hyperfolio.collection import AddResult, Collection
from hyperfolio.errors import HyperfolioError
from hyperfolio.model import MAX_QUESTION_CHARS, MAX_QUOTE_CHARS, Citation, Scope
from hyperfolio.parse.unlock import NEEDED
from hyperfolio.render import answer_dict, evidence_dict
from hyperfolio.retrieve import RetrievalMode
from hyperfolio.server.access import Gate, Principal, visible
from hyperfolio.server.library import CollectionNotFound, Library
from hyperfolio.server.mcp_access import ToolGate, principal_of
from hyperfolio.version import package_version

T = TypeVar("T")

DEFAULT_COLLECTION = "default"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
EXCERPT_CHARS = 400  # evidence text shown per item in the readable result; the structured one has more
LEGEND_LINES = 80  # entities and hyperedges named under a hypergraph picture
QUOTE_CHARS = 160  # of a citation's quote in the readable result (the structured one has all of it)

Mode = RetrievalMode
# A tool result that always carries structured content (a JSON object) beside the text an agent reads.
Structured = Annotated[CallToolResult, dict[str, Any]]

CollectionArg = Annotated[
    str, Field(description="Collection name (letters, digits, '-' or '_'); see list_collections.")
]
ModeArg = Annotated[
    Mode | None,
    Field(description="Retrieval mode; omit for the collection's default ('auto' picks per question)."),
]
KArg = Annotated[int | None, Field(ge=1, le=100, description="How many evidence passages to retrieve.")]
DocArg = Annotated[
    str | list[str] | None,
    Field(description="Only search these documents (doc id, title or file name; one or a list)."),
]
QuestionArg = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question.")]
ConversationArg = Annotated[
    str | None,
    Field(
        max_length=64,
        description='Continue a conversation: the `conversation` id an earlier ask returned, or "new" to start '
        'one; a follow-up ("and in 2022?", "why?") is then read against its earlier turns. Omit it for a '
        "question on its own.",
    ),
]
OptionsArg = Annotated[
    dict[str, str | int | float | bool] | None,
    Field(
        max_length=20,
        description="Retrieval knobs of the mode for this call, as the CLI's --set takes them "
        '(e.g. {"scoring": "keyword"} for concept, {"entity_threshold": 0.4} for dual).',
    ),
]

INSTRUCTIONS = """\
hyperfolio answers questions about indexed documents (PDF, Word, PowerPoint, Excel/CSV, images,
Markdown, HTML, text) with citations to document, page and region. Start with list_collections /
list_documents. Index files with add_document (a path on the server's machine; pass password for
encrypted PDF and Office files). Use ask for a cited answer, retrieve for the ranked evidence,
get_page to see a cited page (pass the citation's box to highlight it, and its quote to mark what
answers inside it) and draw_hypergraph to
picture how entities are connected. Collections default to "default"."""


class HyperfolioMCP(MCPServer):
    """MCPServer whose HTTP app serves at its own root and accepts loopback hosts with or without a port.

    The SDK's app answers at `/mcp` inside itself, so mounted at `/mcp` it would live at `/mcp/mcp`;
    its default DNS-rebinding guard also refuses `Host: localhost` without a port. Every tool call passes
    its `guard` (who may call which tool on which collection) when it has one.
    """

    guard: ToolGate | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self.guard is None:
            return await super().call_tool(name, arguments, context)
        return await self.guard.call(name, arguments, context, super().call_tool)

    def streamable_http_app(
        self,
        *,
        streamable_http_path: str = "/",
        transport_security: TransportSecuritySettings | None = None,
        host: str = "127.0.0.1",
        **options: Any,
    ) -> Starlette:
        """The ASGI app to mount (path `/` inside it); `host` is the service's bind address.

        Bound to loopback, requests must name a loopback host (a web page cannot reach the tools
        through DNS rebinding); bound elsewhere the SDK turns the check off and the service's API
        key guards the endpoint.
        """
        if transport_security is None and host in ("127.0.0.1", "localhost", "::1"):
            transport_security = loopback_security()
        return super().streamable_http_app(
            streamable_http_path=streamable_http_path, transport_security=transport_security, host=host, **options
        )


def loopback_security() -> TransportSecuritySettings:
    """DNS-rebinding protection that lets any loopback client in, on any port or none."""
    hosts = [h for name in LOOPBACK_HOSTS for h in (name, f"{name}:*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{h}" for scheme in ("http", "https") for h in hosts],
    )


READING = ToolAnnotations(read_only_hint=True, open_world_hint=False)
INDEXING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)


def build_mcp(library: Library, gate: Gate | None = None) -> MCPServer:
    """The MCP server over `library`'s collections: seven tools, text for the agent plus structured data.
    With the service's `gate`, what each tool call may do is its caller's key's, and `add_document` is
    audited."""
    mcp = HyperfolioMCP("hyperfolio", version=package_version(), instructions=INSTRUCTIONS, log_level="WARNING")
    tools = Tools(library, over_http=gate is not None)
    registered = (
        (tools.list_collections, READING),
        (tools.list_documents, READING),
        (tools.add_document, INDEXING),
        (tools.ask, READING),
        (tools.retrieve, READING),
        (tools.get_page, READING),
        (tools.draw_hypergraph, READING),
    )
    for tool, hints in registered:
        mcp.add_tool(tool, annotations=hints)
    scoped = frozenset(tool.__name__ for tool, _ in registered if "collection" in inspect.signature(tool).parameters)
    mcp.guard = ToolGate(library, gate, DEFAULT_COLLECTION, scoped)
    return mcp


def run_stdio(root: str | Path) -> None:
    """Serve the collections under `root` to one client over stdin/stdout until it disconnects."""
    library = Library(root)
    try:
        build_mcp(library).run("stdio")
    finally:
        library.close()


# ---------------------------------------------------------------------- text for the agent
def _result(text: str, data: dict[str, Any], error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=error)


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """JSON-ready values only (NumPy scalars and paths become numbers and strings), so the wire never fails."""
    return pydantic_core.to_jsonable_python(data, fallback=str)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _box(bbox: list[float] | None) -> str:
    return "[" + ", ".join(f"{v:.1f}" for v in bbox) + "]" if bbox else ""


def _reason(reason: str) -> str:
    """The library's NEEDED names the CLI's option; an agent passes the tool's argument instead."""
    return "encrypted: a password is needed (pass add_document's password argument)" if reason == NEEDED else reason


def _add_row(r: AddResult) -> dict[str, Any]:
    """What an agent needs of an added file (the service's jobs give every field)."""
    row = {key: getattr(r, key) for key in ("status", "doc_id", "title", "pages", "chunks")}
    return {"file": r.path, **row, "seconds": round(r.seconds, 3), "reason": _reason(r.reason)}


def _add_line(r: AddResult) -> str:
    name = Path(r.path).name or r.path
    if not r.ok:
        return f"{name}: failed - {_one_line(_reason(r.reason))}"
    extra = f" ({r.reason})" if r.reason else ""
    built = f"; {r.model_summary()}" if r.built else ""
    return f"{name}: {r.status} as {r.doc_id} '{r.title}', {r.pages} pages, {r.chunks} chunks{extra}{built}"


def _cite(number: int, c: dict[str, Any]) -> str:
    label = c.get("page_label") or ""
    # "slide 3" / "sheet Revenue" name their own unit (Citation.label); a PDF's printed label is extra
    where = label if label.startswith(Citation.UNIT_LABELS) else f"page {c['page']}"
    printed = f" (printed page {label})" if label and where != label else ""
    region = f", box {_box(c['bbox'])}" if c.get("bbox") else ""
    said = c.get("quotes") or []
    quote = f", quote {' | '.join(json.dumps(_one_line(q)[:QUOTE_CHARS]) for q in said)}" if said else ""
    return f"[{number}] {c['title']} (doc {c['doc_id']}), {where}{printed}{region}{quote}"


def _answer_text(data: dict[str, Any]) -> str:
    lines = [data["answer"]]
    followup = (data.get("meta") or {}).get("followup")
    if followup and followup.get("standalone") != followup.get("asked"):
        lines.insert(0, f"(Read as: {followup['standalone']})")
    if not data["sufficient"]:
        lines.append("(The evidence found does not support an answer; try retrieve, another mode or a larger k.)")
    if data["citations"]:
        lines += ["", "Citations:"]
        lines += [_cite(n, c) for n, c in enumerate(data["citations"], 1)]
    if data.get("conversation"):
        lines += ["", f"Conversation: {data['conversation']} (pass it as `conversation` to ask a follow-up)"]
    return "\n".join(lines)


def _evidence_text(data: dict[str, Any]) -> str:
    if not data["items"]:
        return "No evidence found for this question."
    lines = []
    for item in data["items"]:
        c = item["citation"]
        head = _cite(item["rank"], c)
        text = _one_line(item["text"])
        cut = text[:EXCERPT_CHARS] + ("..." if len(text) > EXCERPT_CHARS else "")
        lines.append(f"{head} - {item['modality']}, score {item['score']:.3f}\n    {cut}")
    return "\n".join(lines)


def _page_text(title: str, page: dict[str, Any]) -> str:
    lines = [f"{title}, page {page['number']} ({page['width']:.0f} x {page['height']:.0f} points)"]
    if not page["chunks"]:
        lines.append("(no text chunks on this page)")
    for chunk in page["chunks"]:
        lines.append(f"- {chunk['modality']} {_box(chunk['bbox'])}: {_one_line(chunk['text'])}")
    for found in page.get("regions", []):  # the quotes get_page was given, where they are on the page
        where = ", ".join(_box(b) for b in found["boxes"]) or "not found on the page (the box is what shows it)"
        lines.append(f"Marked {json.dumps(_one_line(found['quote'])[:QUOTE_CHARS])}: {where}")
    return "\n".join(lines)


def _graph_text(summary: dict[str, Any]) -> str:
    mapping = summary["mapping"]
    lines = [f"{summary['entities']} entities, {summary['hyperedges']} hyperedges drawn"]
    if summary["pruned"]:
        lines[0] += f" ({summary['pruned']} left out to keep the picture legible)"
    legend = [f"{vid} {e['name']}" + (f" ({e['type']})" if e["type"] else "") for vid, e in mapping["entities"].items()]
    legend += [f"{vid}: {h['description']} [{'; '.join(h['members'])}]" for vid, h in mapping["hyperedges"].items()]
    lines += legend[:LEGEND_LINES]
    if len(legend) > LEGEND_LINES:
        lines.append(f"... and {len(legend) - LEGEND_LINES} more (see the structured mapping)")
    return "\n".join(lines)


# ---------------------------------------------------------------------- the tools
@dataclass(frozen=True)
class Thread:
    """The conversation an `ask` continues ("new" starts one) and whose it is (the calling key's id)."""

    conversation: str
    owner: str


Answering = Callable[["Tools", Collection, str, Scope, Thread | None], dict[str, Any]]
ToolMethod = Callable[..., Awaitable[CallToolResult]]


def question_tool(
    render: Callable[[dict[str, Any]], str], conversational: bool = False
) -> Callable[[Answering], ToolMethod]:
    """The tools that take a question and its scope (ask, retrieve) share one signature, declared here;
    a `conversational` one also takes a conversation id.

    The decorated method turns (collection, question, scope, conversation) into a JSON-ready dict; its
    name and docstring become the tool's, and `render` writes the text the agent reads.
    """

    def make(answering: Answering) -> ToolMethod:
        async def run(self: Tools, question: str, scope: Scope, collection: str, thread: Thread | None) -> Structured:
            col = self.library.reader
            data = await self.work(lambda: answering(self, col(collection), question, scope, thread))
            return _result(render(data), _plain(data))

        # Two declarations, as the SDK reads a tool's parameters off its signature: one takes a thread.
        async def threaded(
            self: Tools,
            question: QuestionArg,
            mode: ModeArg = None,
            k: KArg = None,
            doc: DocArg = None,
            collection: CollectionArg = DEFAULT_COLLECTION,
            options: OptionsArg = None,
            conversation: ConversationArg = None,
            ctx: Context[Any, Any] | None = None,
        ) -> Structured:
            thread = Thread(conversation, self.caller(ctx).key_id) if conversation else None
            return await run(self, question, Scope(mode=mode, k=k, doc=doc, options=options), collection, thread)

        async def single(
            self: Tools,
            question: QuestionArg,
            mode: ModeArg = None,
            k: KArg = None,
            doc: DocArg = None,
            collection: CollectionArg = DEFAULT_COLLECTION,
            options: OptionsArg = None,
        ) -> Structured:
            return await run(self, question, Scope(mode=mode, k=k, doc=doc, options=options), collection, None)

        tool = threaded if conversational else single
        # Not functools.wraps: its __wrapped__ would make the SDK read the decorated method's signature.
        tool.__name__, tool.__qualname__, tool.__doc__ = answering.__name__, answering.__qualname__, answering.__doc__
        return tool

    return make


@dataclass
class Tools:
    """The tools over one library (registered by `build_mcp`): each tool's name, docstring and parameters
    are what an agent sees. The blocking work runs on worker threads (`work`)."""

    library: Library
    over_http: bool = False  # inside the service: every call's caller is its request's key

    def caller(self, ctx: Context[Any, Any] | None) -> Principal:
        return principal_of(ctx, self.over_http)

    async def work(self, call: Callable[[], T]) -> T:
        """Run blocking library work on a thread; a library error becomes the tool's one-line error."""
        try:
            return await anyio.to_thread.run_sync(call)
        except CollectionNotFound as exc:
            names = await anyio.to_thread.run_sync(self.library.names)
            known = ", ".join(names) if names else "none yet"
            raise ToolError(
                f"no collection named {exc.name!r} (collections: {known}); add_document creates one"
            ) from None
        except HyperfolioError as exc:
            raise ToolError(_one_line(str(exc))) from None

    async def list_collections(self, ctx: Context[Any, Any] | None = None) -> Structured:
        """List the collections on this server and how many documents each holds."""
        library = self.library
        caller = self.caller(ctx)

        def run() -> list[dict[str, Any]]:
            names = visible(caller, library.names())
            return [{"name": name, "documents": len(library.reader(name).documents())} for name in names]

        rows = await self.work(run)
        if not rows:
            text = "No collections yet; add_document creates one."
        else:
            text = "\n".join(f"{r['name']}: {r['documents']} document(s)" for r in rows)
        return _result(text, {"collections": rows})

    async def list_documents(self, collection: CollectionArg = DEFAULT_COLLECTION) -> Structured:
        """List a collection's documents: id, title, kind, pages, chunks and indexing status.

        Use a document's id (or title) as `doc` in ask, retrieve, get_page and draw_hypergraph.
        """
        infos = await self.work(lambda: self.library.reader(collection).documents())
        rows = [
            {
                "doc_id": i.doc_id,
                "title": i.title,
                "kind": i.kind,
                "pages": i.num_pages,
                "chunks": i.num_chunks,
                "status": i.status,
            }
            for i in infos
        ]
        lines = [
            f"{r['doc_id']}  {r['title']} ({r['kind']}, {r['pages']} pages, {r['chunks']} chunks, {r['status']})"
            for r in rows
        ]
        text = "\n".join(lines) if lines else f"Collection {collection!r} has no documents yet."
        return _result(text, {"collection": collection, "documents": rows})

    async def add_document(
        self,
        path: Annotated[
            str,
            Field(description="Absolute path of a file or folder on the server's machine (globs allowed)."),
        ],
        collection: CollectionArg = DEFAULT_COLLECTION,
        password: Annotated[
            str | None,
            Field(
                max_length=1024,
                description="Password of encrypted PDF and Office files (tried on each); used once, never stored.",
                json_schema_extra={"format": "password", "writeOnly": True},
            ),
        ] = None,
    ) -> Structured:
        """Index a file or every supported file in a folder into a collection (PDF, Word, PowerPoint,
        Excel/CSV, images, Markdown, HTML, text).

        Creates the collection if needed. Takes seconds per document; a file already indexed
        unchanged is skipped. An encrypted file fails asking for `password` when none is given.
        Returns each file's status, pages, chunks and, on failure, why.
        """
        target = str(Path(path).expanduser())

        def run() -> list[AddResult]:
            self.library.create(collection)
            return self.library.writer(collection).add([target], password=password or None).results

        results = await self.work(run)
        rows = [_add_row(r) for r in results]
        lines = [_add_line(r) for r in results] or [f"{path}: no supported files found"]
        failed = not results or all(not r.ok for r in results)
        data = {"collection": collection, "files": rows}
        return _result("\n".join(lines), data, error=failed)

    @question_tool(_answer_text, conversational=True)
    def ask(self, col: Collection, question: str, scope: Scope, thread: Thread | None) -> dict[str, Any]:
        """Answer a question from the collection's documents, with numbered citations.

        Each citation [n] names the document (title and doc id), the page (and the printed page
        label where it differs), the region on the page as a box [x0, y0, x1, y1] in points and what
        answers inside it (the quoted sentence, or a table row's cells); pass the doc id, page, box and
        quote to get_page to see it. With `conversation` ("new", or the id an
        earlier answer returned) a follow-up is read against the turns before it, and the answer says
        the question as it was read.
        """
        if thread is None:
            return answer_dict(col.ask(question, **scope))
        if thread.conversation == "new":
            kept = col.conversation(owner=thread.owner, keep=True)
        else:
            kept = col.conversation(thread.conversation, owner=thread.owner)
        return answer_dict(kept.ask(question, **scope)) | {"conversation": kept.id}

    @question_tool(_evidence_text)
    def retrieve(self, col: Collection, question: str, scope: Scope, thread: Thread | None) -> dict[str, Any]:
        """Rank the passages (text, tables, figures) that bear on a question, each with its citation.

        Use it to read the evidence itself rather than a composed answer.
        """
        return evidence_dict(col.retrieve(question, **scope))

    async def get_page(
        self,
        doc: Annotated[str, Field(description="Document id, title or file name.")],
        page: Annotated[int, Field(ge=1, description="1-based page number (the citation's page).")],
        collection: CollectionArg = DEFAULT_COLLECTION,
        boxes: Annotated[
            list[list[float]] | None,
            Field(max_length=50, description="Regions to highlight, each [x0, y0, x1, y1] in points."),
        ] = None,
        quote: Annotated[
            list[Annotated[str, Field(max_length=MAX_QUOTE_CHARS)]] | None,
            Field(
                max_length=50,
                description="What answers inside the regions: the citation's quote, or each of its cells (a "
                "table row's key and value). Its lines are found on the page and marked more strongly.",
            ),
        ] = None,
    ) -> Structured:
        """Show a page as a PNG image with regions highlighted, plus the text of its chunks.

        Given a citation's quote (or cells), the lines that answer inside its box are marked more
        strongly than the box, and `regions` gives their boxes (none for a quote not found on the page:
        a scanned page without a text layer, say). Non-PDF documents have no page image; their chunks'
        text is still returned.
        """

        quotes = [q for q in quote or [] if q.strip()]

        def run() -> tuple[dict[str, Any], bytes | None, str]:
            col = self.library.reader(collection)
            info = col.resolve(doc)
            pages = col.pages(info.doc_id)
            found = next((p for p in pages if p["number"] == page), None)
            if found is None:
                raise HyperfolioError(f"{info.title} has {len(pages)} pages; there is no page {page}")
            if info.kind != "pdf":
                return found, None, info.title
            if quotes:
                found = found | {"regions": col.page_regions(info.doc_id, page, boxes or [], quotes)["quotes"]}
            return found, col.page_image(info.doc_id, page, boxes or [], quotes=quotes), info.title

        found, png, title = await self.work(run)
        content: list[ContentBlock] = []
        if png is not None:
            content.append(Image(data=png, format="png").to_image_content())
        content.append(TextContent(type="text", text=_page_text(title, found)))
        data = {"doc": doc, "title": title, **found}
        return CallToolResult(content=content, structured_content=_plain(data))

    async def draw_hypergraph(
        self,
        collection: CollectionArg = DEFAULT_COLLECTION,
        doc: Annotated[str | None, Field(description="Draw this document's hypergraph (id or title).")] = None,
        query: Annotated[
            str | None, Field(max_length=MAX_QUESTION_CHARS, description="Draw the evidence for this question.")
        ] = None,
        entity: Annotated[str | None, Field(max_length=200, description="Draw this entity's neighbourhood.")] = None,
    ) -> Structured:
        """Draw part of the collection's hypergraph as a PNG: entities (E1, E2, ...) joined by hyperedges
        (H1, ...), for exactly one of a document, a question or an entity. The text names every id."""

        def run() -> tuple[bytes, dict[str, Any]]:
            col = self.library.reader(collection)
            with tempfile.TemporaryDirectory(prefix="hyperfolio-mcp-") as tmp:
                picture = col.visualize(Path(tmp) / "graph.png", doc=doc, query=query, entity=entity)
                mapping = json.loads(picture.mapping.read_text(encoding="utf-8"))
                summary = {
                    "entities": picture.entities,
                    "hyperedges": picture.hyperedges,
                    "pruned": picture.pruned,
                    "mapping": mapping,
                }
                return picture.path.read_bytes(), summary

        png, summary = await self.work(run)
        content: list[ContentBlock] = [
            Image(data=png, format="png").to_image_content(),
            TextContent(type="text", text=_graph_text(summary)),
        ]
        return CallToolResult(content=content, structured_content=_plain(summary))
