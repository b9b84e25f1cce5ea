"""The public API: a collection of documents in a directory or a database, and questions asked of it.

Only this module knows all the parts: it wires a location to a store, a component set (`components.py`)
and the ingest pipeline (`ingest/pipeline.py`); every face goes through it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Unpack

from hyperfolio.answer.extractive import Answerer
from hyperfolio.components import ComponentSet, offline_extractor
from hyperfolio.config import Settings
from hyperfolio.dialogue import Asking, Rewrite, Turn, carried, owned
from hyperfolio.embed.local import make_embedder
from hyperfolio.embed.protocols import Embedder
from hyperfolio.errors import HyperfolioError
from hyperfolio.hypergraph.ledger import OFFLINE
from hyperfolio.hypergraph.pipeline import GraphReport
from hyperfolio.ingest.embedding import EMBED_BATCH_CHUNKS, embedding_text
from hyperfolio.ingest.pipeline import IngestPipeline
from hyperfolio.ingest.repair import check_store
from hyperfolio.ingest.report import AddProgress, AddReport, AddResult, collection_stats, expand_paths
from hyperfolio.llm.registry import ModelSet
from hyperfolio.model import Answer, ConversationRecord, Decision, DocumentInfo, EvidencePackage, Scope
from hyperfolio.parse.unlock import Password
from hyperfolio.retrieve import STRATEGIES, Query, Strategy, make_strategy
from hyperfolio.retrieve.encoding import TextCache
from hyperfolio.retrieve.features import Candidates, candidate_features
from hyperfolio.retrieve.graph_walk import prebuild
from hyperfolio.retrieve.ranker import RankerSet
from hyperfolio.retrieve.routing import routed
from hyperfolio.retrieve.run import document_first, ready_scope, run_strategy
from hyperfolio.store import (
    Store,
    display_name,
    is_server_location,
    local_folder,
    open_store,
    resolve_location,
    store_exists,
)
from hyperfolio.store.base import STAGE_READY
from hyperfolio.store.claims import Claims
from hyperfolio.store.integrity import IntegrityReport
from hyperfolio.store.lookup import find_document
from hyperfolio.viz.views import Picture, page_picture, page_regions

if TYPE_CHECKING:  # loaded when first used: a question needs none of them
    from hyperfolio.hypergraph.estimate import WorkEstimate
    from hyperfolio.store.bundle import BundleReport
    from hyperfolio.viz.probe import Choice

RETRIEVAL_MODES: tuple[str, ...] = tuple(STRATEGIES)
# Names other modules take from here: the public API is one import.
__all__ = [
    "RETRIEVAL_MODES", "STAGE_READY", "AddProgress", "AddReport", "AddResult", "Collection", "Conversation", "Picture",
    "Turn",
]  # fmt: skip
__all__ += ["EMBED_BATCH_CHUNKS", "embedding_text", "expand_paths", "is_collection"]

T = TypeVar("T")


class _Part(Generic[T]):
    """An attribute of a collection read from its component set (`Collection.parts`)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, collection: Collection, owner: type | None = None) -> T:
        part: T = getattr(collection.parts, self.name)
        return part


class Collection:
    """One searchable collection of documents: a folder, or a PostgreSQL database.

    `path` is read as every face reads `-c`: a bare name ("reports") is the collection of that name under
    the data root (~/.local/share/hyperfolio), the one the CLI, the service and MCP call "reports"; a `Path`
    or a string with a slash ("./reports", "/data/reports") is that folder; a postgresql:// URL a database.

    >>> col = Collection("reports")
    >>> col.add(["report.pdf"])
    >>> col.ask("What was the revenue in 2023?").text
    """

    def __init__(
        self,
        path: str | Path,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        answerer: Answerer | None = None,
        folder: str | Path | None = None,
    ) -> None:
        # A directory, or a database URL (postgresql://...): then the files beside the store (page
        # images, settings, the model-reply cache, the ranker) live in `folder`, by default a local
        # folder named after the database.
        server = is_server_location(path)
        self.location = resolve_location(path)
        if server:
            self.path = Path(folder).expanduser() if folder is not None else local_folder(self.location)
            # Made now: the model cache treats a path that is not a directory as its database file.
            self.path.mkdir(parents=True, exist_ok=True)
        else:
            self.path = Path(self.location)
        self.settings = settings or Settings.load(self.path / "settings.toml")
        self.store: Store = open_store(self.location)
        # One writer at a time per collection object: add and remove check, then write.
        self._lock = threading.RLock()
        self.parts = ComponentSet(self.settings, self.store, self.location, self.path, self._lock, embedder, answerer)
        self._texts = TextCache()  # words of chunks and pages, for `auto`'s features across questions
        self.claims = Claims(self.store)  # documents this object is indexing, so other workers leave them be
        # The chunk batch and text are this module's at opening time (a test tunes them here).
        parts = self.parts.for_ingest(self.resolve)
        self._ingest = IngestPipeline(
            self.store, self.settings, self.path, self.claims, self._lock, parts, EMBED_BATCH_CHUNKS, embedding_text
        )

    @property
    def label(self) -> str:
        """The collection as messages name it: its name under the data root, a URL without password, a path."""
        return display_name(self.location)

    # Read from the component set, each built when first read (components.py).
    embedder: _Part[Embedder] = _Part()
    embedder_name: _Part[str] = _Part()  # the indexed embedder, else the configured one
    graph_embedder: _Part[Embedder] = _Part()
    models: _Part[ModelSet] = _Part()
    answerer: _Part[Answerer] = _Part()
    ranker: _Part[RankerSet] = _Part()

    @property
    def indexed_embedder(self) -> str | None:
        """The embedder this collection's vectors were made with; None while nothing is embedded."""
        return self.store.get_meta("embedder")

    def use_ranker(self, ranker: RankerSet | None, save: bool = False) -> None:
        self.parts.use_ranker(ranker, save)

    def documents(self) -> list[DocumentInfo]:
        return self.store.list_documents()

    def titles(self) -> dict[str, str]:
        """Document id -> title."""
        return self.store.titles()

    def resolve(self, ref: str) -> DocumentInfo:
        """Find a document by id, id prefix, file name, title or source path."""
        return find_document(self.store, ref)

    def add(
        self,
        paths: Iterable[str | Path] | str | Path,
        progress: AddProgress | None = None,
        workers: int | None = None,
        ray: str | None = None,
        password: Password | None = None,
    ) -> AddReport:
        """Index files, folders or glob patterns; a failing file is reported and the rest go on.

        Pages are parsed by `workers` processes (default: settings, one per core) or on Ray
        (`ray`: "local", "auto" or an address) while this process writes, embeds and builds the
        hypergraph file by file, in the order given.

        `password` opens encrypted PDFs and Office files: a string tried on each, or a
        `PasswordPrompt` asked `(path, wrong_tries)` for each one that needs parsing (up to 3 times;
        None gives the file up). It is held in memory only: never stored, logged or reported.
        """
        return self._ingest.add(paths, progress, workers, ray, password)

    def build_graph(
        self, rebuild: bool = False, progress: AddProgress | None = None, retry_model: bool = False
    ) -> list[GraphReport]:
        """Build the hypergraph for documents indexed without one (or, with `rebuild`, for all).

        `retry_model`: rebuild the documents some of whose parts were built offline because the
        model failed; the parts the model built come from the response cache at no cost.
        """
        return self._ingest.build_graph(rebuild, progress, retry_model)

    def variant(self, path: str | Path, settings: Settings) -> Collection:
        """A copy of this collection's documents and chunks under other build settings, its graph rebuilt
        (for ablations); reused when `path` already holds one built with the same settings and graph."""
        embedder = self.parts.shared_embedder()
        return self._ingest.variant(path, settings, lambda at, chosen: Collection(at, chosen, embedder=embedder))

    def remove(self, ref: str) -> DocumentInfo:
        """Delete a document (by id, name or path) and everything only it supported."""
        return self._ingest.remove(ref)

    @property
    def last_graph_report(self) -> GraphReport | None:
        """What building the hypergraph of the last document `add` indexed did (None before any)."""
        return self._ingest.last_graph_report

    def estimate(self, paths: Iterable[str | Path] | str | Path, password: Password | None = None) -> WorkEstimate:
        """Model calls, tokens, time and price that adding `paths` would take (nothing is indexed).

        With a model configured, the server is probed (once; the profile is kept) for its context,
        slots and speed; this collection's past replies calibrate the reply lengths. `password`: as for `add`.
        """
        from hyperfolio.ingest.estimate import estimate_adding

        return estimate_adding(paths, password, self.settings, self.models, offline_extractor(self.parts.role_parts()))

    def check(self, repair: bool = False) -> IntegrityReport:
        """Find rows of the store that point at rows no longer there (store/integrity.py lists the kinds).

        With `repair`: delete what dangles, rebuild the keyword index, embed chunks of ready documents that
        have no vector, then check again. Documents not fully indexed are named apart (`unfinished`). Run it
        while no `add` is writing to the collection: a document half built looks like dangling rows.
        """
        return check_store(
            self.store,
            self._lock,
            lambda: self.embedder,
            repair,
            EMBED_BATCH_CHUNKS,
            embedding_text,
            self.parts.get("carder"),
        )

    def _strategy(self, mode: str | None) -> Strategy:
        """The one place a mode is resolved: the one asked for, else the collection's default."""
        return make_strategy(mode or self.settings.default_mode)

    def retrieve(self, question: str, **scope: Unpack[Scope]) -> EvidencePackage:
        """Ranked, cited evidence for a question, over the collection or scoped to documents.

        `scope` (model.Scope): the mode, k, the documents, and `options` that change the mode's knobs for
        this call (`DualOptions`, `ConceptOptions`, `TopDownOptions`; `by_modality` and the per-modality
        limits for the flat modes), typed against the mode this call runs (the collection's default when
        none is given): strings from a command line or a form will do."""
        if not question.strip():
            raise HyperfolioError("the question is empty")
        strategy = self._strategy(scope.get("mode"))
        k = scope.get("k")
        if k is not None and k < 1:
            raise HyperfolioError(f"k must be at least 1, not {k}")
        query = Query(text=question, k=k or self.settings.top_k, doc_ids=ready_scope(scope.get("doc"), self.resolve))
        started = time.perf_counter()
        context = self.parts.retrieval_context(self._texts)
        if strategy.needs_ranker:
            context.ranker = self.ranker
        return run_strategy(strategy, query, context, scope.get("options"), started)

    def candidates(
        self, question: str, doc: str | Sequence[str] | None = None, exclude: Sequence[str] = ()
    ) -> Candidates:
        """The candidate chunks `auto` ranks, with their feature rows (for fitting and inspecting the ranker);
        `exclude` leaves feature groups and the candidates only they find out."""
        if not question.strip():
            raise HyperfolioError("the question is empty")
        query = Query(text=question, k=self.settings.top_k, doc_ids=ready_scope(doc, self.resolve))
        context = self.parts.retrieval_context(self._texts)
        query, found = routed(query, context)  # as `auto` asks it
        candidates = candidate_features(query, context, exclude)
        if found is not None:
            candidates.meta["routed_to"] = found.doc_ids
        return candidates

    def document_first(self, evidence: EvidencePackage, doc: str | Sequence[str] | None = None) -> EvidencePackage:
        """Evidence ranked outside `retrieve` (the evaluation's held-out rankers) finished as `retrieve`
        finishes it: the pages the question names, the tables of its best page when it works on rows, the
        parts it counts lead (`retrieve.run.document_first`)."""
        query = Query(text=evidence.question, k=self.settings.top_k, doc_ids=ready_scope(doc, self.resolve))
        return document_first(evidence, query, self.parts.retrieval_context(self._texts))

    def warm(self, wait: bool = False) -> None:
        """Load the models and the vector spaces now, so the first question is as fast as the others; with
        `wait`, also wait for the indexes a large collection makes in the background (minutes at a million
        chunks the first time; a reopened collection takes up the ones it saved); and build the random
        walk's graphs of the long documents (`retrieve.graph_walk.prebuild`)."""
        self.embedder.embed(["warm up"])
        self.graph_embedder.embed(["warm up"])
        self.store.warm(wait)
        if self.settings.build.hypergraph:
            prebuild(self.parts.retrieval_context(self._texts))

    def ask(
        self,
        question: str,
        history: Sequence[Turn] | None = None,
        on_text: Callable[[str], None] | None = None,
        **scope: Unpack[Scope],
    ) -> Answer:
        """Answer a question with citations to document, page and region.

        With `history` (the conversation's earlier turns, oldest first) a follow-up ("and in 2022?",
        "why?") is first rewritten into a question that stands alone (`followup`); the answer's
        `question` is then that one, and `meta["followup"]` says what was asked and how it was read.
        A language model's answer is passed to `on_text` as it is written (`answer`). A lexical mode
        (bm25) stays lexical end to end: without a language model the passages are scored by their
        words, so no embedding model loads (an answer from the CLI in about a second).
        """
        return self.finish(self.prepare(question, history or [], **scope), on_text)

    def prepare(self, question: str, history: Sequence[Turn] = (), **scope: Unpack[Scope]) -> Asking:
        """`ask` up to its evidence: a follow-up read against `history`, then retrieval (`finish` answers)."""
        rewrite, carried = self.followup(question, history, scope)
        return Asking(question, rewrite, scope, carried, self.retrieve(rewrite.standalone, **carried))

    def finish(self, asking: Asking, on_text: Callable[[str], None] | None = None) -> Answer:
        """The answer to a prepared question, saying how a follow-up was read (`meta["followup"]`)."""
        answer = self.answer(asking.rewrite.standalone, asking.evidence, asking.scope.get("mode"), on_text)
        followup = asking.followup_meta()
        if followup is not None:
            answer.meta["followup"] = followup
        return answer

    def followup(self, question: str, history: Sequence[Turn], scope: Scope) -> tuple[Rewrite, Scope]:
        """A follow-up as the question it stands for, and the scope it is asked in (`dialogue.carried`)."""
        rewrite = self.parts.get("rewriter").rewrite(question, history)
        return rewrite, carried(rewrite, history, scope)

    def conversation(self, conversation_id: str | None = None, owner: str = "", keep: bool = False) -> Conversation:
        """A conversation with this collection: its `ask` keeps the turns. In memory by default; `keep`
        starts one stored in the collection (it outlives the process; its `id` finds it again), and
        `conversation_id` reopens a stored one of `owner`'s."""
        if conversation_id is not None:
            return Conversation(self, stored=owned(self.store, conversation_id, owner))
        return Conversation(self, stored=self.store.create_conversation(owner) if keep else None)

    def conversations(self, owner: str = "") -> list[ConversationRecord]:
        """`owner`'s stored conversations, the latest first (their turns not read)."""
        return self.store.list_conversations(owner)

    def delete_conversation(self, conversation_id: str, owner: str = "") -> None:
        self.store.delete_conversation(owned(self.store, conversation_id, owner).conversation_id)

    def answer(
        self,
        question: str,
        evidence: EvidencePackage,
        mode: str | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Answer:
        """The answer to a question from evidence already retrieved (`retrieve`) with `mode`; a language
        model's answer is passed to `on_text` as it is written (the text so far, each time it grows)."""
        return self.parts.answerer_for(self._strategy(mode)).answer(question, evidence, on_text)

    def conflicts(self, doc: str | None = None) -> list[Decision]:
        """Every reconciliation decision (what, why, on which chunks), or one document's."""
        return self.store.decisions(self.resolve(doc).doc_id if doc else None)

    def offline_parts(self, doc: str | None = None) -> list[tuple[str, str, str, str]]:
        """(doc_id, stage, item, reason) of every part built offline because the model failed."""
        doc_id = self.resolve(doc).doc_id if doc else None
        return [(d, stage, item, reason) for d, stage, item, _, reason in self.store.builds(doc_id, OFFLINE)]

    def stats(self) -> dict[str, Any]:
        return collection_stats(self.store, self.settings.embedder, self.models.usage.totals())

    def pages(self, ref: str) -> list[dict[str, Any]]:
        """A document's pages: size in points and each chunk's id, modality, region and text."""
        from hyperfolio.viz.views import document_pages

        return document_pages(self.store, self.resolve(ref).doc_id)

    def page_image(
        self, ref: str, page: int, boxes: Sequence[Sequence[float]] = (), dpi: int = 110, quotes: Sequence[str] = ()
    ) -> bytes:
        """PNG of a page of a PDF document with `boxes` (cited regions, in points) highlighted and, inside
        them, the lines of `quotes` (a citation's `quotes()`: what answers in its region) marked more strongly."""
        return page_picture(self.resolve(ref), page, boxes, dpi, quotes)

    def page_regions(
        self, ref: str, page: int, boxes: Sequence[Sequence[float]], quotes: Sequence[str]
    ) -> dict[str, Any]:
        """Each of `quotes` inside `boxes` on a page of a PDF: its boxes in points, a line each (`viz.page`)."""
        return page_regions(self.resolve(ref), page, boxes, quotes)

    def visualize(
        self,
        out: str | Path,
        doc: str | None = None,
        query: str | None = None,
        entity: str | None = None,
        layout: str | None = None,
        mode: str = "dual",
    ) -> Picture:
        """Draw a document's hypergraph, the evidence behind a question or an entity's neighbourhood
        to `out` (.png, .svg, or .html for the interactive view), with its id mapping beside it."""
        from hyperfolio.viz.views import draw, focus_graph

        if sum(x is not None for x in (doc, query, entity)) != 1:
            raise HyperfolioError("choose exactly one of a document, a question or an entity to draw")
        info = self.resolve(doc) if doc is not None else None
        evidence = self.retrieve(query, mode=mode) if query is not None else None
        return draw(
            self.store, focus_graph(self.store, info, entity, evidence), Path(out), query or entity or "", layout
        )

    def probe_layouts(self, k: int = 15, doc: str | None = None) -> Choice:
        """Ask the vision model to read probes drawn in each dual view and keep the one it reads best
        as this collection's default for pictures (VizRAG's layout choice)."""
        from hyperfolio.viz.views import probe_layouts

        docs = [self.resolve(doc)] if doc else self.documents()
        if not docs:
            raise HyperfolioError("the collection has no documents")
        return probe_layouts(self.store, docs, self.models.get("vision"), k)

    def sibling(self, embed_threads: int | None = None) -> Collection:
        """A second handle with its own database connection (a service reads through one while the other
        writes); it shares the loaded models, or, with `embed_threads`, gets its own chunk embedder bounded
        to that many cores (a writer's long embedding batches then leave the other cores to questions)."""
        embedder = self.embedder
        if embed_threads is not None:
            embedder = make_embedder(self.embedder_name, self.settings.embed_batch, threads=embed_threads)
        twin = Collection(self.location, self.settings, embedder=embedder, folder=self.path)
        self.parts.shared_with(twin.parts)
        return twin

    # The work is CPU- and disk-bound; a thread keeps an event loop (e.g. the web service) responsive.
    async def aadd(self, paths: Iterable[str | Path] | str | Path, progress: AddProgress | None = None) -> AddReport:
        return await asyncio.to_thread(self.add, paths, progress)

    async def aretrieve(self, question: str, **scope: Unpack[Scope]) -> EvidencePackage:
        """`retrieve` in a thread."""
        return await asyncio.to_thread(lambda: self.retrieve(question, **scope))

    async def aask(self, question: str, **scope: Unpack[Scope]) -> Answer:
        """`ask` in a thread."""
        return await asyncio.to_thread(lambda: self.ask(question, **scope))

    async def aremove(self, ref: str) -> DocumentInfo:
        return await asyncio.to_thread(self.remove, ref)

    async def astats(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.stats)

    def export_bundle(self, out_dir: str | Path) -> BundleReport:
        """Write this collection (store, pictures, model-call records) as a bundle in a new directory."""
        from hyperfolio.store.bundle import export_bundle

        with self._lock:
            return export_bundle(self.store, Path(out_dir), files=self.path, records=self.models.records)

    def import_bundle(self, bundle_dir: str | Path) -> BundleReport:
        """Load a bundle into this collection, which must be empty (see `store.bundle`)."""
        from hyperfolio.store.bundle import import_bundle

        with self._lock:
            return import_bundle(
                self.store, Path(bundle_dir), self.parts.embed_imported, files=self.path, records=self.models.records
            )

    def close(self) -> None:
        self.claims.close()
        self.parts.close()
        self.store.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_collection(path: str | Path) -> bool:
    """Whether a directory holds a collection (opening one that does not would create it)."""
    return store_exists(path)


class Conversation:
    """A thread of questions to one collection: each `ask` reads the turns before it and adds its own,
    and, for a stored thread, writes it to the collection's store."""

    def __init__(self, collection: Collection, turns: Iterable[Turn] = (), stored: ConversationRecord | None = None):
        self.collection = collection
        self.stored = stored
        self.turns: list[Turn] = list(turns) or [Turn.from_dict(t) for t in (stored.turns if stored else [])]
        self.number = len(self.turns)  # the latest turn's number in the thread

    @property
    def id(self) -> str | None:
        """The stored thread's id (None: kept in memory only)."""
        return self.stored.conversation_id if self.stored else None

    def ask(self, question: str, on_text: Callable[[str], None] | None = None, **scope: Unpack[Scope]) -> Answer:
        return self.finish(self.prepare(question, **scope), on_text)

    def prepare(self, question: str, **scope: Unpack[Scope]) -> Asking:
        """The question read against the turns so far, and its evidence (`finish` answers and keeps it)."""
        return self.collection.prepare(question, self.turns, **scope)

    def finish(self, asking: Asking, on_text: Callable[[str], None] | None = None) -> Answer:
        answer = self.collection.finish(asking, on_text)
        turn = Turn.of(answer, asking.question, asking.doc_scope(), time.time())
        self.turns.append(turn)
        self.number = len(self.turns)
        if self.stored is not None:  # the store numbers it: another ask in the thread may have come first
            self.number = self.collection.store.add_turn(self.stored.conversation_id, turn.to_dict())
        return answer

    def new(self) -> None:
        """Start over: later questions lean on nothing asked before (a stored thread starts a new one)."""
        self.turns.clear()
        self.number = 0
        if self.stored is not None:
            self.stored = self.collection.store.create_conversation(self.stored.owner)
