"""The public API: a collection of documents in a directory, and questions asked of it.

Only this module knows all the parts: it wires settings, the store, the embedder,
the parsers, retrieval strategies and the answerer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperfolio.answer.extractive import Answerer, ExtractiveAnswerer
from hyperfolio.components import Parts, component, offline_extractor
from hyperfolio.config import Settings
from hyperfolio.embed.local import make_embedder
from hyperfolio.embed.protocols import Embedder
from hyperfolio.errors import DocumentNotFound, HyperfolioError
from hyperfolio.hypergraph.extract import Extractor
from hyperfolio.hypergraph.layers import Themer
from hyperfolio.hypergraph.ledger import OFFLINE
from hyperfolio.hypergraph.pipeline import EXTRACTION_COUNTS, GraphReport
from hyperfolio.hypergraph.reconcile import ConflictDetector, ConflictResolver
from hyperfolio.hypergraph.refine import Refiner
from hyperfolio.ingest.embedding import EMBED_BATCH_CHUNKS as EMBED_BATCH_CHUNKS
from hyperfolio.ingest.embedding import embed_chunks
from hyperfolio.ingest.embedding import embedding_text as embedding_text
from hyperfolio.ingest.pipeline import Components, IngestPipeline
from hyperfolio.ingest.report import AddProgress as AddProgress
from hyperfolio.ingest.report import AddReport as AddReport
from hyperfolio.ingest.report import AddResult as AddResult
from hyperfolio.ingest.report import expand_paths as expand_paths
from hyperfolio.llm.registry import ModelSet
from hyperfolio.model import Answer, Chunk, Decision, DocumentInfo, EvidencePackage
from hyperfolio.parse import parse_bytes
from hyperfolio.parse.unlock import Password, read_unlocked
from hyperfolio.retrieve import STRATEGIES, Query, RetrievalContext, make_strategy
from hyperfolio.retrieve.base import typed_knobs, with_knobs
from hyperfolio.retrieve.encoding import TextCache
from hyperfolio.retrieve.evidence import regroup
from hyperfolio.retrieve.features import Candidates, candidate_features
from hyperfolio.retrieve.keywords import Decomposer, OfflineDecomposer
from hyperfolio.retrieve.ranker import COLLECTION_FILE, RankerSet, load_ranker
from hyperfolio.store import (
    Store,
    display_name,
    is_server_location,
    local_folder,
    open_store,
    resolve_location,
    store_exists,
)
from hyperfolio.store.base import CHUNK_SPACE, STAGE_READY
from hyperfolio.store.claims import Claims, describe, died_here
from hyperfolio.store.integrity import REPAIR_ROUNDS, IntegrityReport, Unfinished

if TYPE_CHECKING:  # the language-model stages load only when a model is configured
    from hyperfolio.hypergraph.estimate import WorkEstimate
    from hyperfolio.hypergraph.summarise import DescriptionSummariser
    from hyperfolio.store.bundle import BundleReport
    from hyperfolio.viz.probe import Choice

log = logging.getLogger(__name__)

RETRIEVAL_MODES: tuple[str, ...] = tuple(STRATEGIES)


@dataclass
class Picture:
    """A drawing of part of the hypergraph and the JSON mapping of its ids to names."""

    path: Path
    mapping: Path
    entities: int
    hyperedges: int
    pruned: int


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
        self._embedder = embedder
        self._graph_embedder: Embedder | None = None
        self._answerer = answerer
        self._models: ModelSet | None = None
        self._ranker: RankerSet | None = None
        self._texts = TextCache()  # words of chunks and pages, for `auto`'s features across questions
        # One writer at a time per collection object: add and remove check, then write.
        self._lock = threading.RLock()
        self.claims = Claims(self.store)  # documents this object is indexing, so other workers leave them be
        self._ingest = self._pipeline()

    def _pipeline(self) -> IngestPipeline:
        """The ingestion pipeline on this collection's store, folder, claims and lock. Its parts are getters
        of this object's lazily built ones; the chunk batch and text are this module's at opening time."""
        parts = Components(
            embedder=lambda: self.embedder,
            graph_embedder=lambda: self.graph_embedder,
            models=lambda: self.models,
            usage_note=self._usage_note,
            extractor=lambda: self.extractor,
            summariser=lambda: self.summariser,
            reconcilers=lambda: self.reconcilers,
            themer=lambda: self.themer,
            refiner=lambda: self.refiner,
            resolve=self.resolve,
        )
        return IngestPipeline(
            self.store,
            self.settings,
            self.path,
            self.claims,
            self._lock,
            parts,
            chunk_batch=EMBED_BATCH_CHUNKS,
            text_of=embedding_text,
        )

    @property
    def label(self) -> str:
        """The collection as messages name it: its name under the data root, a URL without password, a path."""
        return display_name(self.location)

    # ------------------------------------------------------------------ models
    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                stored = self.store.get_meta("embedder")
                if stored and stored != self.settings.embedder:
                    log.warning(
                        "collection %s was embedded with %r; using it instead of %r",
                        self.path,
                        stored,
                        self.settings.embedder,
                    )
                self._embedder = make_embedder(stored or self.settings.embedder, self.settings.embed_batch)
            return self._embedder

    @property
    def indexed_embedder(self) -> str | None:
        """The embedder this collection's vectors were made with; None while nothing is embedded."""
        return self.store.get_meta("embedder")

    @property
    def embedder_name(self) -> str:
        """The embedder queries will use: the indexed one, else the configured one."""
        return self.indexed_embedder or self.settings.embedder

    @property
    def graph_embedder(self) -> Embedder:
        """Embeds entities and hyperedges: many short texts, so the fast static model by default."""
        with self._lock:
            if self._graph_embedder is None:
                name = self.settings.build.graph_embedder
                self._graph_embedder = self.embedder if name == self.embedder_name else make_embedder(name)
            return self._graph_embedder

    @property
    def models(self) -> ModelSet:
        """Language and vision model clients for the configured roles, sharing this collection's cache."""
        with self._lock:
            if self._models is None:
                self._models = ModelSet(self.settings, self.location)
            return self._models

    def _usage_note(self) -> str:
        """' (12 calls, 34,567 tokens)' while language models are in use this run, else ''."""
        if self._models is None or not self._models.configured:
            return ""
        usage = self._models.snapshot().values()
        calls = sum(u.calls for u in usage)
        tokens = sum(u.total_tokens for u in usage)
        hits = sum(u.cache_hits for u in usage)
        return f" ({calls} model calls, {tokens:,} tokens, {hits} cached)"

    def _image_bytes(self, relative: str) -> bytes | None:
        path = self.path / relative
        return path.read_bytes() if path.is_file() else None

    def _parts(self) -> Parts:
        return Parts(
            self.settings, self.models, self.store, lambda: self.embedder, self._image_bytes, self._chunk_picture
        )

    @property
    def extractor(self) -> Extractor:
        extractor: Extractor = component("extractor", self._parts())
        return extractor

    @property
    def summariser(self) -> DescriptionSummariser | None:
        """Merged entity descriptions summarised by the extract model, when one is configured."""
        summariser: DescriptionSummariser | None = component("summariser", self._parts())
        return summariser

    @property
    def reconcilers(self) -> tuple[ConflictDetector, ConflictResolver]:
        """Conflict detector and resolver: the extract model when configured, offline rules otherwise."""
        detector, resolver = component("reconcilers", self._parts())
        return detector, resolver

    @property
    def themer(self) -> Themer:
        """Chunk themes for the top layer: the extract model (with the vision model reading a picture of
        the chunk's hypergraph, when one is configured), offline statistics otherwise."""
        themer: Themer = component("themer", self._parts())
        return themer

    def _chunk_picture(self, chunk_id: str) -> bytes | None:
        from hyperfolio.viz import Budget, Style, from_store, prune, render

        graph = from_store(self.store, self.store.chunk_hyperedges(chunk_id), "")
        if not graph.entities:
            return None
        prune(graph, "", Budget(width=900, height=700))
        target = self.path / "pictures" / f"chunk-{chunk_id.replace(':', '-')}.png"
        return render(graph, ["set-force"], target, Style(width_px=900, height_px=700)).read_bytes()

    @property
    def refiner(self) -> Refiner:
        refiner: Refiner = component("refiner", self._parts())
        return refiner

    @property
    def answerer(self) -> Answerer:
        if self._answerer is None:
            self._answerer = component("answerer", self._parts())
        return self._answerer

    @property
    def ranker(self) -> RankerSet:
        """The learned rankers of `auto`: this collection's own (`hyperfolio tune`), else the packaged ones."""
        if self._ranker is None:
            self._ranker = load_ranker(self.path)
        return self._ranker

    def use_ranker(self, ranker: RankerSet | None, save: bool = False) -> None:
        """Rank `auto` with these weights from now on (None: back to the default); `save` keeps them
        in the collection directory."""
        self._ranker = ranker
        target = self.path / COLLECTION_FILE
        if save and ranker is not None:
            ranker.save(target)
        elif save and target.exists():
            target.unlink()

    # ------------------------------------------------------------------ documents
    def documents(self) -> list[DocumentInfo]:
        return self.store.list_documents()

    def resolve(self, ref: str) -> DocumentInfo:
        """Find a document by id, id prefix, file name, title or source path."""
        direct = self.store.get_document(ref)
        if direct is not None:
            return direct
        docs = self.documents()
        exact = [d for d in docs if ref in (d.doc_id, d.source, d.title, Path(d.source).name)]
        if not exact:
            exact = [d for d in docs if d.doc_id.startswith(ref)]
        if len(exact) == 1:
            return exact[0]
        if len(exact) > 1:
            raise HyperfolioError(f"{ref!r} matches {len(exact)} documents; use a document id")
        raise DocumentNotFound(ref)

    # ------------------------------------------------------------------ ingestion (ingest/pipeline.py)
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
        """A copy of this collection's documents and chunks under other build settings, its graph rebuilt.

        Used for ablations: the same chunks and vectors, a hypergraph built another way. Reused
        when `path` already holds a variant built with the same settings from the same graph.
        """
        return self._ingest.variant(
            path, settings, lambda at, chosen: Collection(at, settings=chosen, embedder=self._embedder)
        )

    def remove(self, ref: str) -> DocumentInfo:
        """Delete a document (by id, name or path) and everything only it supported."""
        return self._ingest.remove(ref)

    @property
    def last_graph_report(self) -> GraphReport | None:
        """What building the hypergraph of the last document `add` indexed did (None before any)."""
        return self._ingest.last_graph_report

    # ------------------------------------------------------------------ questions
    def _decomposer(self) -> Decomposer:
        chat = self.models.get("keywords")
        if chat is None:
            return OfflineDecomposer()
        from hyperfolio.retrieve.keywords_model import LLMDecomposer

        return LLMDecomposer(chat)

    def _context(self) -> RetrievalContext:
        titles = self.store.titles()
        return RetrievalContext(
            store=self.store,
            embedder=self.embedder,
            titles=titles,
            rrf_k=self.settings.rrf_k,
            graph_embedder=self.graph_embedder,
            dual=self.settings.dual,
            concept=self.settings.concept,
            topdown=self.settings.topdown,
            decomposer=self._decomposer(),
            texts=self._texts,
            vision_model=self.models.get("vision"),
        )

    def _scope(self, doc: str | Sequence[str] | None) -> list[str] | None:
        if doc is None:
            return None
        refs = [doc] if isinstance(doc, str) else list(doc)
        if not refs:
            raise HyperfolioError("the document scope is an empty list: name at least one document, or leave it out")
        infos = [self.resolve(r) for r in refs]
        for info in infos:
            if info.status != STAGE_READY:
                raise HyperfolioError(
                    f"{info.title} ({info.doc_id}) is not fully indexed yet (stage {info.status!r}); "
                    "run `add` on it again to finish"
                )
        return [info.doc_id for info in infos]

    def retrieve(
        self,
        question: str,
        mode: str | None = None,
        k: int | None = None,
        doc: str | Sequence[str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> EvidencePackage:
        """Ranked, cited evidence for a question, over the collection or scoped to documents.

        `options` change the mode's knobs for this call (`DualOptions`, `ConceptOptions`, `TopDownOptions`;
        `by_modality` and the per-modality limits for the flat modes), typed here against the mode this call
        runs (the collection's default when none is given): strings from a command line or a form will do."""
        if not question.strip():
            raise HyperfolioError("the question is empty")
        strategy = make_strategy(mode or self.settings.default_mode)
        if k is not None and k < 1:
            raise HyperfolioError(f"k must be at least 1, not {k}")
        query = Query(text=question, k=k or self.settings.top_k, doc_ids=self._scope(doc))
        started = time.perf_counter()
        context = self._context()
        if strategy.name == "auto":
            context.ranker = self.ranker
        if options:
            options = typed_knobs(strategy.name, options)  # unknown or mistyped: ConfigError naming the knob
            context = with_knobs(context, strategy.name, options)
        evidence = strategy.retrieve(query, context)
        if strategy.name != "concept" and (options or {}).get("by_modality"):
            c = context.concept  # the shared modality-aware step, for any strategy
            evidence = regroup(evidence, {"text": c.k_text, "table": c.k_table, "image": c.k_image})
        disputed = self.store.dropped_in([item.chunk.chunk_id for item in evidence.items])
        if disputed:  # statements judged wrong while indexing: answerers must not repeat them
            evidence.meta["disputed"] = [
                {"fact": d.fact, "instead": d.other, "chunks": d.evidence, "reason": d.reason} for d in disputed
            ]
        if doc is None:  # a document still being indexed (or cut off) is not searched yet: say which
            unfinished = self.store.unfinished_documents()
            if unfinished:
                evidence.meta["not_fully_indexed"] = [
                    {"doc_id": d.doc_id, "title": d.title, "source": d.source, "status": d.status} for d in unfinished
                ]
        evidence.meta["seconds"] = time.perf_counter() - started
        if context.times.seconds:  # where the strategy's time went (auto: candidates, features, ranker)
            evidence.meta["stage_seconds"] = dict(context.times.seconds)
        return evidence

    def candidates(
        self, question: str, doc: str | Sequence[str] | None = None, exclude: Sequence[str] = ()
    ) -> Candidates:
        """The candidate chunks `auto` ranks, with their feature rows (for fitting and inspecting the ranker);
        `exclude` leaves feature groups and the candidates only they find out."""
        if not question.strip():
            raise HyperfolioError("the question is empty")
        query = Query(text=question, k=self.settings.top_k, doc_ids=self._scope(doc))
        return candidate_features(query, self._context(), exclude)

    def ask(
        self,
        question: str,
        mode: str | None = None,
        k: int | None = None,
        doc: str | Sequence[str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Answer:
        """Answer a question with citations to document, page and region.

        A BM25 question stays lexical end to end: without a language model the passages are
        scored by their words, so no embedding model loads (an answer from the CLI in about a second).
        """
        evidence = self.retrieve(question, mode=mode, k=k, doc=doc, options=options)
        return self.answer(question, evidence, mode)

    def answer(
        self,
        question: str,
        evidence: EvidencePackage,
        mode: str | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Answer:
        """The answer to a question from evidence already retrieved (`retrieve`) with `mode`; a language
        model's answer is passed to `on_text` as it is written (the text so far, each time it grows)."""
        answerer = self.answerer
        if (mode or self.settings.default_mode) == "bm25" and isinstance(answerer, ExtractiveAnswerer):
            answerer = ExtractiveAnswerer(
                None, max_passages=self.settings.answer_sentences, min_score=self.settings.min_answer_score
            )
        return answerer.answer(question, evidence, on_text)

    def conflicts(self, doc: str | None = None) -> list[Decision]:
        """Every reconciliation decision (what, why, on which chunks), or one document's."""
        return self.store.decisions(self.resolve(doc).doc_id if doc else None)

    def offline_parts(self, doc: str | None = None) -> list[tuple[str, str, str, str]]:
        """(doc_id, stage, item, reason) of every part built offline because the model failed."""
        doc_id = self.resolve(doc).doc_id if doc else None
        return [(d, stage, item, reason) for d, stage, item, _, reason in self.store.builds(doc_id, OFFLINE)]

    def estimate(self, paths: Iterable[str | Path] | str | Path, password: Password | None = None) -> WorkEstimate:
        """Model calls, tokens, time and price that adding `paths` would take (nothing is indexed).

        With a model configured, the server is probed (once; the profile is kept) for its context,
        slots and speed; this collection's past replies calibrate the reply lengths. `password`: as for `add`.
        """
        from hyperfolio.hypergraph.estimate import estimate_work

        files, failed = expand_paths([paths] if isinstance(paths, (str, Path)) else paths)
        if failed:
            raise HyperfolioError(f"{failed[0].path}: {failed[0].reason}")
        documents = [parse_bytes(path, read_unlocked(path, password), self.settings.parse) for path in files]
        opts = self.settings.models
        client = self.models.get("extract") if self.models.configured else None
        return estimate_work(
            documents,
            client.profile if client is not None else None,
            history=self.models.usage.totals(),
            max_tokens=opts.max_tokens or None,
            build=self.settings.build,
            slots=client.link.limit.limit if client is not None else 1,
            price_input=opts.price_input,
            price_output=opts.price_output,
            offline=offline_extractor(self._parts()),
        )

    def stats(self) -> dict[str, Any]:
        out = self.store.stats()
        # A model's extraction counts are recorded with reconciliation's, per document: shown apart.
        totals = out.get("reconciliation", {})
        extraction = {name: totals.pop(name) for name in EXTRACTION_COUNTS if name in totals}
        if extraction:
            out["extraction"] = extraction
        out["embedder"] = self.store.get_meta("embedder") or self.settings.embedder
        out["model_usage"] = {stage: asdict(usage) for stage, usage in self.models.usage.totals().items()}
        return out

    def check(self, repair: bool = False) -> IntegrityReport:
        """Find rows of the store that point at rows no longer there (store/integrity.py lists the kinds).

        With `repair`: delete what dangles, rebuild the keyword index, embed chunks of ready documents that
        have no vector, then check again (a repair can leave rows dangling that another kind covers).
        Documents not fully indexed are named apart (`unfinished`, no finding), never indexed here: `add`
        finishes them. Run it while no `add` is writing to the collection: a document half built looks like
        dangling rows.
        """
        documents = self.store.unfinished_documents()
        holders = self.store.claim_holders([d.content_hash for d in documents])
        live = {key: describe(owner) for key, owner in holders.items() if not died_here(owner)}
        unfinished = [Unfinished(d.doc_id, d.source, d.status, live.get(d.content_hash, "")) for d in documents]
        report = IntegrityReport(self.store.integrity(), unfinished=unfinished)
        if not repair:
            return report
        with self._lock:
            for _ in range(REPAIR_ROUNDS):
                fixable = report.repairable
                if not fixable:
                    break
                changed = self.store.repair(fixable)
                if any(f.kind == "chunks_without_vector" for f in fixable):
                    embedded = 0
                    for doc_id in [d.doc_id for d in self.store.list_documents() if d.status == STAGE_READY]:
                        missing = self.store.missing_vectors(CHUNK_SPACE, doc_id)
                        if missing:  # the embedder is made (and its model loaded) only for chunks to embed
                            embedded += embed_chunks(
                                self.store, self.embedder, missing, batch=EMBED_BATCH_CHUNKS, text_of=embedding_text
                            )
                    changed["chunks_without_vector"] = embedded
                for kind, rows in changed.items():
                    report.repaired[kind] = report.repaired.get(kind, 0) + rows
                report.findings = self.store.integrity()
                if not any(changed.values()):
                    break
        return report

    # ------------------------------------------------------------------ pages and pictures
    def pages(self, ref: str) -> list[dict[str, Any]]:
        """A document's pages: size in points and each chunk's id, modality, region and text."""
        info = self.resolve(ref)
        chunks: dict[int, list[dict[str, Any]]] = {}
        for chunk in self.store.iter_chunks(info.doc_id):
            chunks.setdefault(chunk.page, []).append(
                {
                    "chunk_id": chunk.chunk_id,
                    "modality": chunk.modality,
                    "bbox": list(chunk.bbox) if chunk.bbox else None,
                    "section_path": chunk.section_path,
                    "text": chunk.text,
                }
            )
        return [
            {"number": page.number, "width": page.width, "height": page.height, "chunks": chunks.get(page.number, [])}
            for page in self.store.get_pages(info.doc_id)
        ]

    def page_image(self, ref: str, page: int, boxes: Sequence[Sequence[float]] = (), dpi: int = 110) -> bytes:
        """PNG of a page of a PDF document with `boxes` (cited regions, in points) highlighted."""
        from hyperfolio.viz.page import render_page

        info = self.resolve(ref)
        if info.kind != "pdf":
            raise HyperfolioError(f"{info.title} is a {info.kind} document; pages are drawn for PDFs only")
        return render_page(info.source, page, boxes, dpi)

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
        import copy

        from hyperfolio.viz import document_graph, entity_graph, evidence_graph, prune, render, write_html
        from hyperfolio.viz.probe import DEFAULT_PAIR

        if sum(x is not None for x in (doc, query, entity)) != 1:
            raise HyperfolioError("choose exactly one of a document, a question or an entity to draw")
        target = Path(out)
        if doc is not None:
            info = self.resolve(doc)
            graph = document_graph(self.store, info.doc_id, info.title)
        elif entity is not None:
            ids = self.store.entities_matching(entity)
            if not ids:
                raise HyperfolioError(f"no entity named {entity!r} in this collection")
            graph = entity_graph(self.store, ids, f"around {entity}")
        else:
            graph = evidence_graph(self.store, self.retrieve(query or "", mode=mode))
        full = copy.deepcopy(graph)
        report = prune(graph, query or entity or "")
        if target.suffix.lower() == ".html":  # opens on the pruned view; clicks bring in the rest
            path = write_html(full, graph, target)
            graph = full
        else:
            chosen = layout or self.store.get_meta("viz_layouts") or ",".join(DEFAULT_PAIR)
            path = render(graph, [name.strip() for name in chosen.split(",") if name.strip()], target)
        mapping = path.with_suffix(".json")
        mapping.write_text(json.dumps(graph.mapping(), indent=2, ensure_ascii=False))
        return Picture(path, mapping, len(graph.entities), len(graph.edges), len(report.removed))

    def probe_layouts(self, k: int = 15, doc: str | None = None) -> Choice:
        """Ask the vision model to read probes drawn in each dual view and keep the one it reads best
        as this collection's default for pictures (VizRAG's layout choice)."""
        from hyperfolio.viz import document_graph
        from hyperfolio.viz.probe import choose_layouts, make_probes

        docs = [self.resolve(doc)] if doc else self.documents()
        if not docs:
            raise HyperfolioError("the collection has no documents")
        graph = document_graph(self.store, docs[0].doc_id, docs[0].title)
        for info in docs[1:]:
            more = document_graph(self.store, info.doc_id)
            graph.entities.update(more.entities)
            graph.edges.update(more.edges)
        choice = choose_layouts(make_probes(graph.number(), k=k), self.models.get("vision"))
        self.store.set_meta("viz_layouts", ",".join(choice.pair))
        return choice

    def titles(self) -> dict[str, str]:
        """Document id -> title."""
        return self.store.titles()

    def sibling(self, embed_threads: int | None = None) -> Collection:
        """A second handle on this collection with its own database connection: a service reads through
        one while the other writes, and neither waits for the other. It shares the loaded models, or,
        with `embed_threads`, gets its own chunk embedder bounded to that many cores (a writer's long
        embedding batches then leave the other cores to questions)."""
        embedder = self.embedder
        if embed_threads is not None:
            embedder = make_embedder(self.embedder_name, self.settings.embed_batch, threads=embed_threads)
        twin = Collection(self.location, self.settings, embedder=embedder, answerer=self._answerer, folder=self.path)
        twin._graph_embedder = self.graph_embedder
        return twin

    # ------------------------------------------------------------------ async twins
    # The work is CPU- and disk-bound; a thread keeps an event loop (e.g. the web service) responsive.
    async def aadd(self, paths: Iterable[str | Path] | str | Path, progress: AddProgress | None = None) -> AddReport:
        return await asyncio.to_thread(self.add, paths, progress)

    async def aretrieve(
        self,
        question: str,
        mode: str | None = None,
        k: int | None = None,
        doc: str | Sequence[str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> EvidencePackage:
        return await asyncio.to_thread(self.retrieve, question, mode, k, doc, options)

    async def aask(
        self,
        question: str,
        mode: str | None = None,
        k: int | None = None,
        doc: str | Sequence[str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Answer:
        return await asyncio.to_thread(self.ask, question, mode, k, doc, options)

    async def aremove(self, ref: str) -> DocumentInfo:
        return await asyncio.to_thread(self.remove, ref)

    async def astats(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.stats)

    # ------------------------------------------------------------------ moving between backends
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
                self.store, Path(bundle_dir), self._embed_imported, files=self.path, records=self.models.records
            )

    def _embed_imported(self, store: Store, chunks: list[Chunk]) -> int:
        """An imported bundle's chunk vectors, made as `add` makes them; the embedder is looked up per call,
        so the imported meta (which embedder the bundle was indexed with) decides it."""
        from hyperfolio.store.bundle import EMBED_BATCH

        return embed_chunks(store, self.embedder, chunks, batch=EMBED_BATCH)

    def close(self) -> None:
        self.claims.close()
        if self._models is not None:
            self._models.close()
        self.store.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_collection(path: str | Path) -> bool:
    """Whether a directory holds a collection (opening one that does not would create it)."""
    return store_exists(path)
