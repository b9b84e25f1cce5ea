"""What the OpenAI- and Ollama-compatible chat endpoints share (`routes/openai_compat`, `routes/ollama_compat`).

A chat client sees a collection as a model, `hyperfolio/<collection>`, and may name a retrieval mode
as the model's tag (`hyperfolio/<collection>:bm25`; Ollama's `:latest` is the collection's default).
Its messages are a conversation: the earlier user and assistant messages are the turns a follow-up is
read against (`Collection.ask(..., history=...)`), the last user message is the question. The reply is
the answer with its numbered citations ([1], [2]) and a list of sources: title, page, printed page
label and a link to the page's picture on this service, the cited region outlined. What a program
reads rather than shows (the citations, the question as retrieval ran it, the evidence) rides in the
reply's extra `hyperfolio` field (`extra_field`).

Usage is counted in words, not tokens: no tokenizer is loaded for a client's bookkeeping.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlencode

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from hyperfolio.answer.model import bare_answer
from hyperfolio.collection import Collection
from hyperfolio.dialogue import Asking, Turn, turns_from_messages
from hyperfolio.errors import HyperfolioError
from hyperfolio.llm.fence import TAG_PREFIX
from hyperfolio.llm.messages import message_text
from hyperfolio.model import MAX_QUESTION_CHARS, Answer, Citation, Scope
from hyperfolio.render import answer_dict
from hyperfolio.retrieve import STRATEGIES
from hyperfolio.server.access import READ, Principal, allowed
from hyperfolio.server.answer_stream import written_while_answering
from hyperfolio.server.library import Library
from hyperfolio.server.problems import status_of

MODEL_PREFIX = "hyperfolio/"
DEFAULT_TAG = "latest"  # Ollama's name for a model's default variant: the collection's own mode
MAX_QUESTION = MAX_QUESTION_CHARS
OWNER = "hyperfolio"

# What a model's answer may end in, half written, that reads otherwise once it is whole: a citation
# marker ("[1, 2") and an evidence block tag it echoes ("<ev-"), both dropped from the finished answer
# (answer/model.bare_answer). A draft waits for the rest of them.
_OPEN_MARKER = re.compile(r"\[[\d\s,;\u2013-]*$")
_TAG_STARTS = "|".join(re.escape(TAG_PREFIX[:n]) for n in range(len(TAG_PREFIX)))  # "", "e", "ev"
_OPEN_TAG = re.compile(rf"<\s*/?\s*(?:{_TAG_STARTS}|{re.escape(TAG_PREFIX)}[^<>\n]*)$", re.IGNORECASE)


class UnknownModel(HyperfolioError):
    """A model name that names no collection (or no mode): 404, as OpenAI and Ollama answer it."""

    def __init__(self, model: str) -> None:
        super().__init__(
            f"no model named {model!r}: the models are {MODEL_PREFIX}<collection>, optionally with "
            f":<mode> ({', '.join(STRATEGIES)}); GET /v1/models or /api/tags lists them"
        )
        self.model = model


@dataclass(frozen=True)
class ModelName:
    collection: str
    mode: str | None  # None: the collection's default


def read_model(library: Library, model: str) -> ModelName:
    """The collection and mode a model name stands for: `hyperfolio/<collection>[:<mode>|:latest]`
    (the prefix may be left out)."""
    base, _, tag = model.strip().removeprefix(MODEL_PREFIX).partition(":")
    mode = None if tag in ("", DEFAULT_TAG) else tag
    if mode is not None and mode not in STRATEGIES:
        raise UnknownModel(model)
    try:
        known = library.exists(base)
    except HyperfolioError:  # not a collection name at all
        known = False
    if not known:
        raise UnknownModel(model)
    return ModelName(base, mode)


def model_for(library: Library, caller: Principal, model: str) -> ModelName:
    """`read_model`, for a caller whose key may read that collection; to another key it is the unknown
    model it would be if the collection did not exist (a 404 that does not tell the two apart)."""
    name = read_model(library, model)
    if not allowed(caller, READ, name.collection):
        raise UnknownModel(model)
    return name


def model_id(collection: str, tag: str = "") -> str:
    return f"{MODEL_PREFIX}{collection}" + (f":{tag}" if tag else "")


class ChatMessage(BaseModel):
    """A chat message as OpenAI and Ollama send it; what else it carries (names, images, tool calls) is
    accepted and left unread."""

    model_config = ConfigDict(extra="allow")
    role: str = Field(max_length=32, description="system, user, assistant (or tool: not read)")
    content: str | list[dict[str, Any]] | None = Field(
        None, description="The text, or OpenAI's list of parts (the text parts are read)."
    )


@dataclass
class Conversation:
    """A chat request read: which collection, how to retrieve, the turns before and the question."""

    collection: str
    scope: Scope
    turns: list[Turn]
    question: str
    prompt_words: int


def conversation(
    library: Library,
    caller: Principal,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    mode: str | None = None,
    k: int | None = None,
    doc: list[str] | None = None,
) -> Conversation:
    """A chat request as a question of a collection the caller may read; a mode in the request wins over
    the model's tag."""
    name = model_for(library, caller, model)
    turns, question = turns_from_messages(messages)
    for turn in turns:  # what an earlier reply cited, read back off its Sources links (clients keep only text)
        turn.pages = cited_pages(turn.answer)
        turn.doc_ids = list(dict.fromkeys(doc for doc, _ in turn.pages))
    if len(question) > MAX_QUESTION:
        raise HyperfolioError(f"the question is {len(question)} characters long; ask in at most {MAX_QUESTION}")
    scope = Scope(mode=mode or name.mode, k=k, doc=doc)
    prompt = sum(words(message_text(m.get("content"))) for m in messages)
    return Conversation(name.collection, scope, turns, question, prompt)


_CITED_PAGE = re.compile(r"/documents/([^/?#>\s]+)/pages/(\d+)/image")


def cited_pages(reply: str) -> list[tuple[str, int]]:
    """(doc_id, page) of each page an earlier reply linked in its Sources list (`page_url`), in order."""
    return list(dict.fromkeys((unquote(doc), int(page)) for doc, page in _CITED_PAGE.findall(reply)))


def collection_files(library: Library, name: str) -> list[os.stat_result]:
    """The files under a collection's folder (one written or removed meanwhile may be missed)."""
    found = []
    for path in library.path(name).rglob("*"):
        try:
            if path.is_file():
                found.append(path.stat())
        except OSError:
            continue
    return found


def words(text: str) -> int:
    return len(text.split())


@dataclass
class Source:
    """A numbered citation as a reply lists it."""

    number: int
    citation: Citation
    url: str | None  # the page's picture on this service (PDF pages only)

    def line(self) -> str:
        c = self.citation
        if c.page_label.startswith(Citation.UNIT_LABELS):  # "slide 3", "sheet Revenue": their own unit
            where = c.page_label
        else:
            where = f"p. {c.page}" + (f" (printed {c.page_label})" if c.page_label else "")
        link = f": <{self.url}>" if self.url else ""
        return f"- [{self.number}] {c.title}, {where}{link}"


def page_url(base_url: str, collection: str, citation: Citation) -> str:
    """The page-image endpoint (routes/documents.page_image) for a citation, its region outlined and the
    answering sentence or cells marked inside it."""
    path = (
        f"/api/collections/{quote(collection, safe='')}/documents/{quote(citation.doc_id, safe='')}"
        f"/pages/{citation.page}/image"
    )
    query = [("box", ",".join(f"{v:.0f}" for v in citation.bbox))] if citation.bbox else []
    if citation.bbox:  # what answers, marked inside the region
        query += [("quote", text) for text in citation.quotes()]
    return f"{base_url.rstrip('/')}{path}" + (f"?{urlencode(query, safe=',')}" if query else "")


def sources_of(col: Collection, collection: str, answer: Answer, base_url: str) -> list[Source]:
    """The answer's citations, numbered as its text cites them; pages of PDFs linked to their picture."""
    kinds: dict[str, str] = {}
    for citation in answer.citations:
        if citation.doc_id not in kinds:
            try:
                kinds[citation.doc_id] = col.resolve(citation.doc_id).kind
            except HyperfolioError:  # removed since: listed without a link
                kinds[citation.doc_id] = ""
    return [
        Source(n, c, page_url(base_url, collection, c) if kinds[c.doc_id] == "pdf" else None)
        for n, c in enumerate(answer.citations, 1)
    ]


def sources_text(sources: Sequence[Source]) -> str:
    """The list that follows the answer ("" when nothing is cited)."""
    if not sources:
        return ""
    return "\n\nSources:\n" + "\n".join(s.line() for s in sources)


def extra_field(conv: Conversation, answer: Answer, sources: Sequence[Source]) -> dict[str, Any]:
    """The reply's `hyperfolio` field: `collection`, `mode` (null: the collection's default), `question`
    (as asked), `standalone` (what retrieval ran: a follow-up rewritten), `followup` (how it was rewritten,
    or null), `answer`, `short`, `sufficient`, `answerer`, `support`, `meta`, `citations` (each with its
    `number` in the text and `image_url`) and `evidence` (render.evidence_dict)."""
    data = answer_dict(answer)
    for cited, source in zip(data["citations"], sources, strict=True):
        cited["number"], cited["image_url"] = source.number, source.url
    return {
        "collection": conv.collection,
        "mode": conv.scope.get("mode"),
        "question": conv.question,
        "standalone": data.pop("question"),
        "followup": answer.meta.get("followup"),
        **data,
    }


class Draft:
    """A model's answer as it is written (the text so far, each time it grows), sent as what it grows by.
    It is read as the finished answer reads the model's text (`bare_answer`: its own citation markers
    left out, whitespace folded), and a marker or tag still being written waits for its end: the
    finished answer numbers its citations afresh and ends with them, so what was sent is the start of
    the answer."""

    def __init__(self) -> None:
        self.sent = ""

    def feed(self, written: str) -> str:
        if (open_tag := _OPEN_TAG.search(written)) is not None:
            written = written[: open_tag.start()]
        text = bare_answer(_OPEN_MARKER.sub("", written))
        if not text.startswith(self.sent):  # the model went back on itself: the finished answer follows
            return ""
        piece, self.sent = text[len(self.sent) :], text
        return piece

    def finish(self, final: str) -> str:
        """The rest of the finished answer; the whole of it, after the draft, when it reads otherwise (a
        model's answer that failed its citation check is replaced by the offline answerer's)."""
        if final.startswith(self.sent):
            return final[len(self.sent) :]
        return "\n\n" + final


class ChatRun:
    """One reply. `start` does what may refuse the question (so a refusal is an HTTP error, not a broken
    stream); then `whole` or `pieces` gives the reply's text, after which `answer` and `sources` are set."""

    def __init__(self, col: Collection, conv: Conversation, base_url: str) -> None:
        self.col, self.conv, self.base_url = col, conv, base_url
        self.answer: Answer | None = None
        self.sources: list[Source] = []
        self.text = ""
        self.asking: Asking | None = None  # a streamed question, prepared: its evidence first

    @classmethod
    async def open(cls, library: Library, conv: Conversation, request: Request) -> ChatRun:
        col = await asyncio.to_thread(library.reader, conv.collection)
        return cls(col, conv, str(request.base_url))

    async def start(self, streaming: bool) -> None:
        """Whole: the answer (`Collection.ask`, which rewrites a follow-up). Streamed: the evidence, for
        `pieces` to answer as the model writes."""
        conv = self.conv
        if streaming:
            await asyncio.to_thread(self._retrieve)
        else:
            self.answer = await asyncio.to_thread(
                lambda: self.col.ask(conv.question, history=conv.turns or None, **conv.scope)
            )

    def _retrieve(self) -> None:
        """What `Collection.ask` does before it answers (`Collection.prepare`): a follow-up rewritten,
        asked where the thread was, and the evidence retrieved."""
        conv = self.conv
        self.asking = self.col.prepare(conv.question, conv.turns, **conv.scope)

    async def whole(self) -> str:
        async for _ in self.pieces():
            pass
        return self.text

    async def pieces(self) -> AsyncIterator[str]:
        """The reply's text as it grows: the answer, then its sources."""
        draft = Draft()
        if self.answer is None:
            assert self.asking is not None, "start() first"
            asking = self.asking
            answering = written_while_answering(lambda on_text: self.col.finish(asking, on_text))
            async with aclosing(answering) as written_so_far:
                async for written in written_so_far:
                    if isinstance(written, Answer):
                        self.answer = written
                    elif piece := draft.feed(written):
                        self.text += piece
                        yield piece
        answer = self.answer
        assert answer is not None
        self.sources = await asyncio.to_thread(sources_of, self.col, self.conv.collection, answer, self.base_url)
        rest = draft.finish(answer.text) + sources_text(self.sources)
        self.text += rest
        if rest:
            yield rest

    def extra(self) -> dict[str, Any]:
        """The reply's `hyperfolio` field, as plain JSON data (see `extra_field`)."""
        assert self.answer is not None
        data: dict[str, Any] = jsonable_encoder(extra_field(self.conv, self.answer, self.sources))
        return data

    def usage(self) -> tuple[int, int]:
        """Words in the messages and in the reply."""
        return self.conv.prompt_words, words(self.text)


# An error as the compatible API shapes it: (status, message, code) -> response.
ErrorShape = Callable[[int, str, str], Response]


def error_code(exc: HyperfolioError) -> str:
    return "model_not_found" if isinstance(exc, UnknownModel) else "invalid_request"


def error_status(exc: HyperfolioError) -> int:
    return 404 if isinstance(exc, UnknownModel) else status_of(exc)


def validation_detail(exc: RequestValidationError) -> str:
    errors = exc.errors()
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = str(first.get("msg", "invalid request"))
    return f"{where}: {message}" if where else message


def error_responses(schema: dict[str, Any], whose: str) -> dict[int | str, dict[str, Any]]:
    """The errors a compatible router declares in the OpenAPI schema (instead of problem details)."""
    content = {"application/json": {"schema": schema}}
    return {
        "4XX": {"description": f"Refused, in {whose} error shape.", "content": content},
        "5XX": {"description": f"Failed, in {whose} error shape.", "content": content},
    }


def shaped_errors(shape: ErrorShape) -> type[APIRoute]:
    """A route class answering its refusals in the compatible API's error shape rather than as problem
    details: an invalid body is a 400 (OpenAI's and Ollama's status), a library error its usual status."""

    class ShapedRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def shaped(request: Request) -> Response:
                try:
                    return await handler(request)
                except RequestValidationError as exc:
                    return shape(400, validation_detail(exc), "invalid_request")
                except HTTPException as exc:  # a body that could not be read at all
                    return shape(exc.status_code, str(exc.detail), "invalid_request")
                except HyperfolioError as exc:
                    return shape(error_status(exc), str(exc), error_code(exc))

            return shaped

    return ShapedRoute
