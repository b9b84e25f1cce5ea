"""The public API: a collection of documents in a directory, and questions asked of it.

Only this module knows all the parts: it wires settings, the store, the embedder,
the parsers, retrieval strategies and the answerer.
"""

from __future__ import annotations

import asyncio
import glob
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperfolio.answer import Answerer, ExtractiveAnswerer
from hyperfolio.config import Settings
from hyperfolio.errors import DocumentNotFound, DuplicateDocument, HyperfolioError, ParseError, StoreError
from hyperfolio.hypergraph.extract import Extractor
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.layers import OfflineThemer, Themer
from hyperfolio.hypergraph.ledger import MODEL, OFFLINE, BuildLedger
from hyperfolio.hypergraph.pipeline import EXTRACTION_COUNTS, GraphReport, build_document_graph
from hyperfolio.hypergraph.reconcile import ConflictDetector, ConflictResolver, OfflineDetector, OfflineResolver
from hyperfolio.hypergraph.refine import OfflineRefiner, Refiner, refine_anchors
from hyperfolio.ingest import Executor, FileJob, ParseAhead, default_workers, make_executor
from hyperfolio.model import Answer, Decision, Document, DocumentInfo, EvidencePackage
from hyperfolio.models.embed_local import make_embedder
from hyperfolio.models.progress import ModelProgress
from hyperfolio.models.protocols import Embedder, LoadsModel
from hyperfolio.models.registry import ModelSet
from hyperfolio.parse import SUPPORTED_SUFFIXES, parse_bytes, quick_page_count
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
    copy_store,
    display_name,
    is_server_location,
    local_folder,
    open_store,
    remove_store,
    resolve_location,
    store_exists,
)
from hyperfolio.store.base import (
    CHUNK_SPACE,
    STAGE_EMBEDDED,
    STAGE_GRAPH_WRITTEN,
    STAGE_GRAPHED,
    STAGE_PARSED,
    STAGE_READY,
)
from hyperfolio.store.claims import Claims, describe, died_here
from hyperfolio.store.integrity import REPAIR_ROUNDS, IntegrityReport, Unfinished
from hyperfolio.timing import StageTimes

if TYPE_CHECKING:  # the language-model stages load only when a model is configured
    from hyperfolio.hypergraph.estimate import WorkEstimate
    from hyperfolio.hypergraph.summarise import DescriptionSummariser
    from hyperfolio.store.bundle import BundleReport
    from hyperfolio.viz.probe import Choice

log = logging.getLogger(__name__)

# Chunks embedded, committed and reported as one step of `add`: a step of long chunks takes about a
# second on two cores, so the progress moves; smaller batches, sorted by length, lose no throughput.
EMBED_BATCH_CHUNKS = 16
SMALL_JOB_BYTES = 2_000_000  # one PDF smaller than this parses faster here than worker processes start
RETRIEVAL_MODES: tuple[str, ...] = tuple(STRATEGIES)


@dataclass
class AddResult:
    path: str
    status: str  # "added", "resumed", "replaced", "skipped", "failed", "unsupported" (in a folder: not read)
    doc_id: str = ""
    title: str = ""
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    reason: str = ""
    stage_seconds: dict[str, float] = field(default_factory=dict)  # this run's seconds per stage
    # With a model configured: per stage, how many parts (pages, themes...) the model built and how
    # many fell back to the offline path; and the model calls this file took (cache hits apart).
    built: dict[str, dict[str, int]] = field(default_factory=dict)
    model_calls: int = 0

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    @property
    def model_built_nothing(self) -> bool:
        """A model was asked to build parts of this file and every one fell back offline."""
        return bool(self.built) and all(not by.get(MODEL) for by in self.built.values())

    def model_summary(self) -> str:
        """ "model built 3 of 4 extract (1 fell back offline), 9 of 9 themes; 14 model calls" ("" offline)."""
        if not self.built:
            return ""
        parts = []
        for stage, by in sorted(self.built.items()):
            model, offline = by.get(MODEL, 0), by.get(OFFLINE, 0)
            parts.append(
                f"{model} of {model + offline} {stage}" + (f" ({offline} fell back offline)" if offline else "")
            )
        calls = f"{self.model_calls} model call" + ("" if self.model_calls == 1 else "s")
        return "model built " + ", ".join(parts) + f"; {calls}"


@dataclass
class AddReport:
    results: list[AddResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> list[AddResult]:
        return [r for r in self.results if not r.ok]

    @property
    def pages(self) -> int:
        return sum(r.pages for r in self.results if r.status in {"added", "resumed", "replaced"})

    @property
    def model_built_nothing(self) -> bool:
        """Files were built with a configured model this run, and the model built none of their parts."""
        built = [r for r in self.results if r.built]
        return bool(built) and all(r.model_built_nothing for r in built)


@dataclass
class Picture:
    """A drawing of part of the hypergraph and the JSON mapping of its ids to names."""

    path: Path
    mapping: Path
    entities: int
    hyperedges: int
    pruned: int


class AddProgress:
    """Callbacks for long ingestion; the CLI draws a progress bar from them (`ingest.progress.Tracker`)."""

    def planned(self, pages: dict[str, int]) -> None:
        """Called once before work starts: each file's pages, a quick count (1 for formats without pages,
        whose pages are made when they are read); `pages_parsed` gives the count each file is stored with."""

    def file_started(self, path: str) -> None: ...

    def file_finished(self, result: AddResult) -> None: ...

    def chunks_embedded(self, count: int, total: int = 0) -> None:
        """Chunks of the current file embedded so far, after each batch (`EMBED_BATCH_CHUNKS`), from 0."""

    def pages_parsed(self, done: int, total: int) -> None:
        """Pages of the current file parsed so far, of its `total`; the last call gives its parsed count."""

    def graph_stage(self, stage: str) -> None: ...

    def preparing(self, what: str) -> None:
        """Before the first file with new content: the models are loading (on a first use, also being
        prepared), a one-time cost of the run that no file's time includes."""


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[AddResult]]:
    """Files, folders (recursively, supported types only) and glob patterns -> files."""
    files: list[Path] = []
    problems: list[AddResult] = []
    for raw in paths:
        text = str(raw)
        path = Path(text).expanduser()
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            found = [p for p in inside if p.suffix.lower() in SUPPORTED_SUFFIXES]
            for other in inside:  # listed in the report, not skipped silently
                if other.suffix.lower() not in SUPPORTED_SUFFIXES:
                    kind = other.suffix or "(no suffix)"
                    problems.append(AddResult(str(other), "unsupported", reason=f"unsupported file type {kind}"))
            if not found:
                problems.append(AddResult(text, "failed", reason="folder holds no supported files"))
            files.extend(found)
        elif path.exists():
            files.append(path)
        elif any(ch in text for ch in "*?["):
            matched = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
            if not matched:
                problems.append(AddResult(text, "failed", reason="pattern matches no files"))
            files.extend(matched)
        else:
            problems.append(AddResult(text, "failed", reason="no such file or folder"))
    unique = list(dict.fromkeys(p.resolve() for p in files))
    return unique, problems


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
        self.last_graph_report: GraphReport | None = None
        # One writer at a time per collection object: add and remove check, then write.
        self._lock = threading.RLock()
        self.claims = Claims(self.store)  # documents this object is indexing, so other workers leave them be

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

    def _offline_extractor(self) -> OfflineExtractor:
        return OfflineExtractor(
            multimodal=self.settings.build.multimodal,
            max_entities_per_page=self.settings.build.max_entities_per_page,
        )

    @property
    def extractor(self) -> Extractor:
        offline = self._offline_extractor()
        chat = self.models.get("extract")
        if chat is None:
            return offline
        from hyperfolio.hypergraph.extract_llm import LLMExtractor

        vision = self.models.get("vision") if self.settings.build.multimodal else None
        return LLMExtractor(
            chat,
            vision,
            multimodal=self.settings.build.multimodal,
            resolve_image=self._image_bytes,
            offline=offline,
            keep_note=lambda chunk_id, note: self.store.annotate_chunk(chunk_id, "description", note),
        )

    @property
    def summariser(self) -> DescriptionSummariser | None:
        """Merged entity descriptions summarised by the extract model, when one is configured."""
        chat = self.models.get("extract")
        if chat is None:
            return None
        from hyperfolio.hypergraph.summarise import DescriptionSummariser

        return DescriptionSummariser(chat, max_chars=self.settings.build.max_description_chars)

    @property
    def reconcilers(self) -> tuple[ConflictDetector, ConflictResolver]:
        """Conflict detector and resolver: the extract model when configured, offline rules otherwise."""
        chat = self.models.get("extract")
        if chat is None:
            return OfflineDetector(), OfflineResolver()
        from hyperfolio.hypergraph.reconcile_llm import LLMDetector, LLMResolver

        return LLMDetector(chat), LLMResolver(chat)

    @property
    def themer(self) -> Themer:
        """Chunk themes for the top layer: the extract model (with the vision model reading a picture of
        the chunk's hypergraph, when one is configured), offline statistics otherwise."""
        chat = self.models.get("extract")
        if chat is None:
            return OfflineThemer()
        from hyperfolio.hypergraph.themes_llm import LLMThemer

        return LLMThemer(chat, vision=self.models.get("vision"), picture=self._chunk_picture)

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
        chat = self.models.get("extract")
        if chat is None:
            return OfflineRefiner()
        from hyperfolio.hypergraph.refine_llm import LLMRefiner

        return LLMRefiner(chat)

    @property
    def answerer(self) -> Answerer:
        if self._answerer is None:
            extractive = ExtractiveAnswerer(
                self.embedder,
                max_passages=self.settings.answer_sentences,
                min_score=self.settings.min_answer_score,
            )
            chat = self.models.get("answer")
            if chat is None:
                self._answerer = extractive
            else:
                from hyperfolio.answer_llm import LLMAnswerer

                self._answerer = LLMAnswerer(chat, extractive, vision=self.models.get("vision"))
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
        if isinstance(paths, (str, Path)):
            paths = [paths]
        started = time.perf_counter()
        progress = progress or AddProgress()
        files, problems = expand_paths(paths)
        report = AddReport(results=list(problems))
        jobs = [FileJob(path, password=password) for path in files]
        progress.planned({str(job.path): quick_page_count(job.path) for job in jobs})
        executor = self._executor(jobs, workers, ray)
        ahead = ParseAhead(executor, self.settings.parse)
        try:
            with self.store.bulk():  # a PostgreSQL space outgrowing exact search gets its index once, at the end
                for index, job in enumerate(jobs):
                    ahead.fill(jobs[index:], self._prepare)
                    if job.parse and job.error is None:
                        self._load_models(progress)
                    progress.file_started(str(job.path))
                    with self._lock:
                        result = self._add_one(job, ahead, progress)
                    job.data, job.parts = b"", []  # the next files' bytes, not every file's, stay in memory
                    report.results.append(result)
                    progress.file_finished(result)
        except BaseException:  # an interrupt: stop the workers now, what was written stays
            ahead.executor.close(abandon=True)
            raise
        ahead.executor.close()
        report.seconds = time.perf_counter() - started
        return report

    def _load_models(self, progress: AddProgress) -> None:
        """Load the embedders a new file needs (MiniLM a few seconds; the graph embedder, on a first use,
        distilled in tens of seconds) while the workers parse, so the first file's rates are its own."""
        needed = [self.embedder] + ([self.graph_embedder] if self.settings.build.hypergraph else [])
        waiting = [e for e in dict.fromkeys(needed) if isinstance(e, LoadsModel) and not e.loaded]
        if waiting:
            progress.preparing("loading the embedding models")
            for embedder in waiting:
                embedder.load()

    def _executor(self, jobs: list[FileJob], workers: int | None, ray: str | None) -> Executor:
        """Ray when asked; else worker processes (-1: one per core, unless the files are so few that
        starting them costs more); 0, the default of the Python API, parses in this process."""
        ray = ray if ray is not None else self.settings.ray
        chosen = workers if workers is not None else self.settings.workers
        if not ray and chosen < 0:
            pdfs = [j for j in jobs if j.path.suffix.lower() == ".pdf"]
            small = sum(j.path.stat().st_size for j in pdfs if j.path.is_file()) < SMALL_JOB_BYTES
            chosen = 0 if len(pdfs) <= 1 and small else default_workers()
        return make_executor(chosen, ray or None, self.settings.parse.worker_memory_mb)

    def _prepare(self, job: FileJob) -> None:
        """Read a file and decide whether it needs parsing: the store may hold its content already."""
        job.read(self.settings.parse)
        if job.error is None:
            job.parse = self.store.document_by_hash(job.content_hash) is None

    def _add_one(self, job: FileJob, ahead: ParseAhead, progress: AddProgress) -> AddResult:
        """Add one file under a claim on its content: another worker indexing it now makes this one pass."""
        if job.error is not None or not job.content_hash:
            return self._add_claimed(job, ahead, progress)
        holder = self.claims.take(job.content_hash)
        if holder is not None:
            reason = f"being indexed by another worker ({describe(holder)}) right now"
            return AddResult(str(job.path), "skipped", reason=reason)
        try:
            return self._add_claimed(job, ahead, progress)
        finally:
            self.claims.release(job.content_hash)

    def _add_claimed(self, job: FileJob, ahead: ParseAhead, progress: AddProgress) -> AddResult:
        started = time.perf_counter()
        path = job.path
        result = AddResult(str(path), "added")
        times = StageTimes()
        doc_id = ""
        try:
            if job.error is not None:
                raise job.error
            existing = self.store.document_by_hash(job.content_hash)
            if existing is not None and existing.status == STAGE_READY:
                result.status, result.reason = "skipped", "already indexed (same content)"
                result.doc_id, result.title = existing.doc_id, existing.title
                result.pages, result.chunks = existing.num_pages, existing.num_chunks
                self._drop_older_versions(path, existing.doc_id)
                return result
            if existing is None:
                if not job.parse:  # its content was stored (or due) when planned, and is not now: parse it
                    job.prepared = False
                    ahead.fill([job], self._prepare)
                doc = ahead.document(job, times, on_page=progress.pages_parsed)
                doc_id = doc.doc_id
                try:
                    with times.stage("write"):
                        self._write(doc)
                except DuplicateDocument:
                    # Another process wrote the same content meanwhile: carry on from its state.
                    result.status = "resumed"
                info = self.store.get_document(doc.doc_id)
            else:
                result.status = "resumed"
                info = existing
            assert info is not None
            doc_id = info.doc_id
            calls = self.models.usage.total().calls
            graph_due = info.status != STAGE_READY and self.settings.build.hypergraph
            self._index(info, progress, times)
            result.model_calls = self.models.usage.total().calls - calls
            if graph_due:
                for _, stage, _, how, _ in self.store.builds(doc_id):
                    by = result.built.setdefault(stage, {MODEL: 0, OFFLINE: 0})
                    by[how] = by.get(how, 0) + 1
            result.doc_id, result.title = info.doc_id, info.title
            result.pages, result.chunks = info.num_pages, info.num_chunks
            if self._drop_older_versions(path, info.doc_id) and result.status == "added":
                result.status = "replaced"
        except ParseError as exc:
            result.status, result.reason = "failed", exc.reason
        except HyperfolioError as exc:
            result.status, result.reason = "failed", str(exc)
        except Exception as exc:  # a bug or an unexpected library error: report it, go on with the rest
            log.exception("unexpected error while adding %s", path)
            result.status, result.reason = "failed", f"unexpected error: {type(exc).__name__}: {exc}"
        finally:
            try:
                if doc_id and times.seconds and self.store.get_document(doc_id) is not None:
                    self.store.add_stage_times(doc_id, times.seconds)
            except StoreError as exc:  # a busy database must not hide the file's own result
                log.warning("%s: stage times not recorded: %s", path, exc)
        result.seconds = time.perf_counter() - started
        result.stage_seconds = dict(times.ordered())
        return result

    def _write(self, doc: Document) -> None:
        """Assign ids, put image bytes on disk, then persist the parsed document in one transaction."""
        image_dir = self.path / "images" / doc.doc_id
        doc.assign_chunk_ids()
        for chunk in doc.chunks:
            if chunk.image is not None:
                image_dir.mkdir(parents=True, exist_ok=True)
                target = image_dir / f"p{chunk.page}-{chunk.order}.{chunk.image_ext}"
                target.write_bytes(chunk.image)
                chunk.image_path = str(target.relative_to(self.path))
                chunk.image = None
        self.store.write_document(doc)

    def _index(self, info: DocumentInfo, progress: AddProgress, times: StageTimes | None = None) -> None:
        """Embed the chunks that have no vector yet, batch by batch; resumable at any point."""
        stored_dim = self.store.get_meta("embed_dim")
        if stored_dim is not None and int(stored_dim) != self.embedder.dim:
            raise HyperfolioError(
                f"embedder {self.embedder.name!r} makes {self.embedder.dim}-dimensional vectors but this "
                f"collection holds {stored_dim}-dimensional ones from {self.store.get_meta('embedder')!r}"
            )
        if self.store.get_meta("embedder") is None:
            self.store.set_meta("embedder", self.embedder.name)
        if stored_dim is None:  # not with the name: a crash between their two writes must not lose it
            self.store.set_meta("embed_dim", str(self.embedder.dim))
        times = times if times is not None else StageTimes()
        # Embedded already: a build of its hypergraph may have begun and been cut off before its graph was
        # written (which is one transaction); anything an older version wrote of it goes first. Linked: the
        # graph was written, the build goes on from refinement.
        interrupted = info.status == STAGE_EMBEDDED
        if info.status in ("", STAGE_PARSED):
            chunks = self.store.missing_vectors(CHUNK_SPACE, info.doc_id)
            # Longest first, so each small batch pads its texts to about one length.
            missing = sorted(((embedding_text(c.section_path, c.text), c) for c in chunks), key=lambda p: -len(p[0]))
            progress.chunks_embedded(0, len(missing))
            for start in range(0, len(missing), EMBED_BATCH_CHUNKS):
                batch = missing[start : start + EMBED_BATCH_CHUNKS]
                with times.stage("chunk embedding"):
                    vectors = self.embedder.embed([text for text, _ in batch])
                    self.store.put_vectors(CHUNK_SPACE, [(c.chunk_id, c.doc_id) for _, c in batch], vectors)
                progress.chunks_embedded(start + len(batch), len(missing))
            self.store.set_stage(info.doc_id, STAGE_EMBEDDED)
            info.status = STAGE_EMBEDDED
        if info.status in (STAGE_EMBEDDED, STAGE_GRAPH_WRITTEN):
            if self.settings.build.hypergraph:
                resume = info.status == STAGE_GRAPH_WRITTEN
                progress.graph_stage("building hypergraph" + (" (graph written; refining on)" if resume else ""))
                self.last_graph_report = self._build_graph_of(
                    info, progress, clear=interrupted, times=times, checkpoint=True, resume=resume
                )
                progress.graph_stage("built" + self._usage_note())
            self.store.set_stage(info.doc_id, STAGE_GRAPHED)
        self.store.set_stage(info.doc_id, STAGE_READY)

    def _build_graph_of(
        self,
        info: DocumentInfo,
        progress: AddProgress,
        clear: bool = False,
        times: StageTimes | None = None,
        checkpoint: bool = False,
        resume: bool = False,
    ) -> GraphReport:
        """`checkpoint`: mark the document graph-written once its graph is written (with that write), so a
        cut-off build resumes from there (`resume`)."""
        if clear:  # drop what the earlier build made, the offline-built parts included
            self.store.clear_document_graph(info.doc_id)
        detector, resolver = self.reconcilers
        ledger = BuildLedger()
        extractor, themer = self.extractor, self.themer
        for part in (extractor, themer):
            if hasattr(part, "ledger"):
                part.ledger = ledger
        if hasattr(extractor, "on_progress"):
            meter = ModelProgress(self.models.usage, lambda line: progress.graph_stage(line))
            extractor.on_progress = meter.calls
        doc_id = info.doc_id

        def written() -> None:  # inside the transaction that writes the document's graph
            self.store.record_builds(doc_id, [(o.stage, o.item, o.how, o.reason) for o in ledger.outcomes])
            if checkpoint:
                self.store.set_stage(doc_id, STAGE_GRAPH_WRITTEN)

        report = build_document_graph(
            self.store,
            info.doc_id,
            info.title,
            extractor,
            self.refiner,
            self.graph_embedder,
            self.settings.build,
            on_stage=lambda stage: progress.graph_stage(stage + self._usage_note()),
            summarise=self.summariser,
            detector=detector,
            resolver=resolver,
            themer=themer,
            times=times,
            on_written=written,
            resume=resume,
        )
        # The record written with the graph, and what the later steps added (all a resumed build has).
        rows = {(stage, item): (stage, item, how, reason) for _, stage, item, how, reason in self.store.builds(doc_id)}
        rows.update({(o.stage, o.item): (o.stage, o.item, o.how, o.reason) for o in ledger.outcomes})
        self.store.record_builds(doc_id, list(rows.values()))
        report.offline = sum(1 for row in rows.values() if row[2] == OFFLINE)
        return report

    def build_graph(
        self, rebuild: bool = False, progress: AddProgress | None = None, retry_model: bool = False
    ) -> list[GraphReport]:
        """Build the hypergraph for documents indexed without one (or, with `rebuild`, for all).

        `retry_model`: rebuild the documents some of whose parts were built offline because the
        model failed; the parts the model built come from the response cache at no cost.
        """
        progress = progress or AddProgress()
        reports = []
        retry = {row[0] for row in self.store.builds(how=OFFLINE)} if retry_model else set()
        with self._lock:
            for info in self.documents():
                if info.status != STAGE_READY:
                    continue
                if not (rebuild or info.doc_id in retry or not self.store.document_entities(info.doc_id)):
                    continue
                holder = self.claims.take(info.content_hash)
                if holder is not None:
                    log.warning("%s: not rebuilt, another worker (%s) is indexing it", info.source, describe(holder))
                    continue
                try:
                    progress.file_started(info.source)
                    reports.append(self._build_graph_of(info, progress, clear=rebuild or info.doc_id in retry))
                finally:
                    self.claims.release(info.content_hash)
        return reports

    def variant(self, path: str | Path, settings: Settings) -> Collection:
        """A copy of this collection's documents and chunks under other build settings, its graph rebuilt.

        Used for ablations: the same chunks and vectors, a hypergraph built another way. Reused
        when `path` already holds a variant built with the same settings from the same graph.
        """
        # The source graph's shape is part of the key: after a rebuild here (new code, new documents)
        # a variant built from the old one would no longer be comparable.
        shape = {
            k: v for k, v in self.store.graph_stats().items() if k in ("entities_by_modality", "hyperedges_by_level")
        }
        signature = json.dumps({"build": settings.build.__dict__, "source": shape}, sort_keys=True)
        target = Path(path)
        if store_exists(target):
            existing = Collection(target, settings=settings, embedder=self._embedder)
            if existing.store.get_meta("build_settings") == signature:
                return existing
            existing.close()
            remove_store(target)
        copy_store(self.store, target).close()
        copy = Collection(target, settings=settings, embedder=self._embedder)
        copy.store.clear_graph()
        copy.build_graph()
        copy.store.set_meta("build_settings", signature)
        return copy

    def _drop_older_versions(self, path: Path, keep: str) -> bool:
        """A changed file replaces its old version, once the new one is fully indexed."""
        dropped = False
        for old in self.store.documents_by_source(str(path)):
            if old.doc_id != keep:
                self.remove(old.doc_id)
                dropped = True
        return dropped

    def remove(self, ref: str) -> DocumentInfo:
        """Delete a document (by id, name or path) and everything only it supported."""
        with self._lock:
            info = self.resolve(ref)
            touched = self.store.document_entities(info.doc_id)
            self.store.remove_document(info.doc_id)
            if touched and self.settings.build.hypergraph and self.settings.build.refine:
                # Anchors that shared pages with the removed document lost part of their star: refine them again.
                survivors = [e.entity_id for e in self.store.get_entities(touched)]
                build = self.settings.build
                refine_anchors(self.store, self.refiner, survivors, build.anchor_min_pages, cover=build.anchor_cover)
        image_dir = self.path / "images" / info.doc_id
        if image_dir.exists():
            for file in image_dir.iterdir():
                file.unlink()
            image_dir.rmdir()
        return info

    # ------------------------------------------------------------------ questions
    def _decomposer(self) -> Decomposer:
        chat = self.models.get("keywords")
        if chat is None:
            return OfflineDecomposer()
        from hyperfolio.retrieve.keywords_llm import LLMDecomposer

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
            offline=self._offline_extractor(),
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
                        for start in range(0, len(missing), EMBED_BATCH_CHUNKS):
                            batch = missing[start : start + EMBED_BATCH_CHUNKS]
                            vectors = self.embedder.embed([embedding_text(c.section_path, c.text) for c in batch])
                            self.store.put_vectors(CHUNK_SPACE, [(c.chunk_id, c.doc_id) for c in batch], vectors)
                        embedded += len(missing)
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
        self, question: str, mode: str | None = None, k: int | None = None, doc: str | Sequence[str] | None = None
    ) -> EvidencePackage:
        return await asyncio.to_thread(self.retrieve, question, mode, k, doc)

    async def aask(
        self, question: str, mode: str | None = None, k: int | None = None, doc: str | Sequence[str] | None = None
    ) -> Answer:
        return await asyncio.to_thread(self.ask, question, mode, k, doc)

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
        from hyperfolio.store.bundle import embed_chunks_with, import_bundle

        with self._lock:
            return import_bundle(
                self.store, Path(bundle_dir), embed_chunks_with(self), files=self.path, records=self.models.records
            )

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


def embedding_text(section_path: Sequence[str], text: str) -> str:
    """The text a chunk is embedded as: its nearest headings give it context."""
    heading = " > ".join(section_path[-2:])
    return f"{heading}\n{text}" if heading else text
