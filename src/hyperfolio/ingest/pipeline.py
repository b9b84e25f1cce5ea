"""The ingestion pipeline: files in, documents indexed (read, parsed, written, embedded, their hypergraph built).

`Collection` delegates `add`, `build_graph`, `remove` and `variant` here. The pipeline is handed what it
works with (the store, the settings, the folder beside the store, the claims, the writer's lock and the
collection's parts as getters) instead of the collection itself, so this module never imports the public
API above it, and ingestion reads as one piece: a file is claimed, read, parsed (ahead, on the executor),
written, embedded batch by batch, its hypergraph built, each step recorded as a stage of the document so
a run cut off anywhere is finished by the next `add`.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from hyperfolio.config import Settings
from hyperfolio.embed.protocols import Embedder, LoadsModel
from hyperfolio.errors import DuplicateDocument, HyperfolioError, ParseError, StoreError
from hyperfolio.hypergraph.ledger import MODEL, OFFLINE, BuildLedger
from hyperfolio.hypergraph.pipeline import (
    BuildRun,
    CountsCalls,
    GraphParts,
    GraphReport,
    KeepsLedger,
    build_document_graph,
)
from hyperfolio.hypergraph.refine import refine_anchors
from hyperfolio.ingest.cards import attach_card, attach_themes, offline_carder
from hyperfolio.ingest.embedding import EMBED_BATCH_CHUNKS, TextOf, embed_away, embed_chunks, embedding_text
from hyperfolio.ingest.executors import Executor, default_workers, make_executor
from hyperfolio.ingest.parse_ahead import FileJob, ParseAhead
from hyperfolio.ingest.report import AddProgress, AddReport, AddResult, Paths, expand_paths
from hyperfolio.llm.progress import ModelProgress
from hyperfolio.model import Document, DocumentInfo
from hyperfolio.parse import quick_page_count
from hyperfolio.parse.unlock import Password
from hyperfolio.store import Store, copy_store, remove_store, store_exists
from hyperfolio.store.base import (
    CHUNK_SPACE,
    STAGE_EMBEDDED,
    STAGE_GRAPH_WRITTEN,
    STAGE_GRAPHED,
    STAGE_PARSED,
    STAGE_READY,
)
from hyperfolio.store.claims import Claims, describe
from hyperfolio.timing import StageTimes

if TYPE_CHECKING:  # the language-model stages load only when a model is configured
    from hyperfolio.cards.card import Carder
    from hyperfolio.hypergraph.extract import Extractor
    from hyperfolio.hypergraph.layers import Themer
    from hyperfolio.hypergraph.reconcile import ConflictDetector, ConflictResolver
    from hyperfolio.hypergraph.refine import Refiner
    from hyperfolio.hypergraph.summarise_model import DescriptionSummariser
    from hyperfolio.llm.registry import ModelSet

log = logging.getLogger(__name__)

SMALL_JOB_BYTES = 2_000_000  # one PDF smaller than this parses faster here than worker processes start


@dataclass(frozen=True)
class Components:
    """The collection's parts the pipeline uses, as getters: each (a loaded embedder, a model client) is
    built when a file first needs it, so a handle that never ingests never builds it; and a getter sees a
    part set after the pipeline was made (`Collection.sibling` shares its graph embedder so)."""

    embedder: Callable[[], Embedder]
    graph_embedder: Callable[[], Embedder]
    models: Callable[[], ModelSet]
    usage_note: Callable[[], str]  # " (12 model calls, ...)" for the progress lines while a model is in use
    extractor: Callable[[], Extractor]
    summariser: Callable[[], DescriptionSummariser | None]
    reconcilers: Callable[[], tuple[ConflictDetector, ConflictResolver]]
    themer: Callable[[], Themer]
    refiner: Callable[[], Refiner]
    resolve: Callable[[str], DocumentInfo]  # a document by id, id prefix, name or path
    carder: Callable[[], Carder] = offline_carder  # makes a new document's card (a model's when configured)


class Opened(Protocol):
    """What `variant` needs of the collection it opens on the copy: its store and a graph build."""

    store: Store

    def build_graph(self) -> object: ...

    def close(self) -> None: ...


OpenedT = TypeVar("OpenedT", bound=Opened)


@dataclass(eq=False)  # compared and hashed by identity, as a worker object is
class IngestPipeline:
    """Adds files to one store, one file at a time under `lock` (the collection's single writer), and
    rebuilds, replaces and removes what it indexed.

    `folder` holds the files beside the store (page images). `chunk_batch` and `text_of` say how chunks
    are embedded (`ingest.embedding`); a collection passes its own, so a caller that tunes them there
    (smaller batches, to interrupt an `add` mid-document) tunes this pipeline."""

    store: Store
    settings: Settings
    folder: Path
    claims: Claims
    lock: threading.RLock
    parts: Components
    chunk_batch: int = EMBED_BATCH_CHUNKS
    text_of: TextOf = embedding_text
    last_graph_report: GraphReport | None = field(default=None, init=False)

    # ------------------------------------------------------------------ adding files
    def add(
        self,
        paths: Paths,
        progress: AddProgress | None,
        workers: int | None,
        ray: str | None,
        password: Password | None,
    ) -> AddReport:
        """`Collection.add`: the files are parsed ahead on the executor, written here in the order given."""
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
                    with self.lock:
                        result = self._add_one(job, ahead, progress)
                    job.data, job.parts, job.cover = b"", [], None  # the next files', not every file's, stay in memory
                    report.results.append(result)
                    progress.file_finished(result)
        except BaseException:  # an interrupt: stop the workers now, what was written stays
            ahead.executor.close(abandon=True)
            for job in jobs[len(report.results) - len(problems) :]:  # claimed ahead, never reached
                if job.content_hash:
                    self.claims.release(job.content_hash)
            raise
        ahead.executor.close()
        report.seconds = time.perf_counter() - started
        return report

    def _load_models(self, progress: AddProgress) -> None:
        """Load the embedders a new file needs (MiniLM a few seconds; the graph embedder, on a first use,
        distilled in tens of seconds) while the workers parse, so the first file's rates are its own."""
        needed = [self.parts.embedder()] + ([self.parts.graph_embedder()] if self.settings.build.hypergraph else [])
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
        """Read a file and decide whether it needs parsing: the store may hold its content already, or another
        process sharing the collection be indexing it. A file to parse is claimed now, before its pages go to
        the workers, so that several `add` runs on one collection share its files instead of each parsing
        every one (the claim is held until the writer is done with it)."""
        job.read(self.settings.parse)
        if job.error is None:
            job.parse = self.store.document_by_hash(job.content_hash) is None
            if job.parse and self.claims.take(job.content_hash) is not None:
                job.parse = False  # the writer reports who holds it when it gets there

    def _add_one(self, job: FileJob, ahead: ParseAhead, progress: AddProgress) -> AddResult:
        """Add one file under a claim on its content: another worker indexing it now makes this one pass."""
        if job.error is not None or not job.content_hash:
            if job.content_hash:  # claimed when read, then refused (a limit): it holds no claim
                self.claims.release(job.content_hash)
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
        """Add one file, from whatever stage the store holds its content at; a failure is the file's result."""
        started = time.perf_counter()
        result = AddResult(str(job.path), "added")
        times = StageTimes()
        doc_id = ""
        try:
            if job.error is not None:
                raise job.error
            existing = self.store.document_by_hash(job.content_hash)
            if existing is not None and existing.status == STAGE_READY:
                result.status, result.reason = "skipped", "already indexed (same content)"
                self._describe(result, existing)
                self._drop_older_versions(job.path, existing.doc_id)
                return result
            if existing is None:
                if not job.parse:  # its content was stored (or due) when planned, and is not now: parse it
                    job.prepared = False
                    ahead.fill([job], self._prepare)
                doc = ahead.document(job, times, on_page=progress.pages_parsed)
                doc_id = doc.doc_id
                with times.stage("card"):
                    attach_card(doc, self.parts.carder(), ahead.cover(job))
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
            self._index_counting(info, progress, times, result, ahead.executor)
            self._describe(result, info)
            if self._drop_older_versions(job.path, info.doc_id) and result.status == "added":
                result.status = "replaced"
        except ParseError as exc:
            result.status, result.reason = "failed", exc.reason
        except HyperfolioError as exc:
            result.status, result.reason = "failed", str(exc)
        except Exception as exc:  # a bug or an unexpected library error: report it, go on with the rest
            log.exception("unexpected error while adding %s", job.path)
            result.status, result.reason = "failed", f"unexpected error: {type(exc).__name__}: {exc}"
        finally:
            self._record_times(job.path, doc_id, times)
        result.seconds = time.perf_counter() - started
        result.stage_seconds = dict(times.ordered())
        return result

    def _index_counting(
        self, info: DocumentInfo, progress: AddProgress, times: StageTimes, result: AddResult, away: Executor
    ) -> None:
        """Index a document and count, into its result, the model calls it took and how its parts were built."""
        calls = self.parts.models().usage.total().calls
        graph_due = info.status != STAGE_READY and self.settings.build.hypergraph
        self._index(info, progress, times, away)
        result.model_calls = self.parts.models().usage.total().calls - calls
        if graph_due:
            for _, stage, _, how, _ in self.store.builds(info.doc_id):
                by = result.built.setdefault(stage, {MODEL: 0, OFFLINE: 0})
                by[how] = by.get(how, 0) + 1

    @staticmethod
    def _describe(result: AddResult, info: DocumentInfo) -> None:
        result.doc_id, result.title = info.doc_id, info.title
        result.pages, result.chunks = info.num_pages, info.num_chunks

    def _record_times(self, path: Path, doc_id: str, times: StageTimes) -> None:
        """Add this run's stage seconds to the document's, when it got as far as being stored."""
        try:
            if doc_id and times.seconds and self.store.get_document(doc_id) is not None:
                self.store.add_stage_times(doc_id, times.seconds)
        except StoreError as exc:  # a busy database must not hide the file's own result
            log.warning("%s: stage times not recorded: %s", path, exc)

    def _write(self, doc: Document) -> None:
        """Assign ids, put image bytes on disk, then persist the parsed document in one transaction."""
        image_dir = self.folder / "images" / doc.doc_id
        doc.assign_chunk_ids()
        for chunk in doc.chunks:
            if chunk.image is not None:
                image_dir.mkdir(parents=True, exist_ok=True)
                target = image_dir / f"p{chunk.page}-{chunk.order}.{chunk.image_ext}"
                target.write_bytes(chunk.image)
                chunk.image_path = str(target.relative_to(self.folder))
                chunk.image = None
        self.store.write_document(doc)

    def _index(
        self, info: DocumentInfo, progress: AddProgress, times: StageTimes | None = None, away: Executor | None = None
    ) -> None:
        """Embed the chunks that have no vector yet, batch by batch, then build the hypergraph; resumable at
        any point, each step recorded as the document's stage. With workers (`away`), they embed while this
        process builds the graph (which reads no chunk vectors); the vectors are stored after it, and any a
        cut-off run left missing are made before the document is ready."""
        self._check_embedder()
        stage_times = times if times is not None else StageTimes()
        timed = functools.partial(stage_times.stage, "chunk embedding")
        embedder = self.parts.embedder()
        # Embedded already, or parsed with a graph begun by a run that embedded on workers: a build of its
        # hypergraph may have been cut off before its graph was written (which is one transaction); anything an
        # older version wrote of it goes first. Linked: the graph was written, the build goes on from refinement.
        interrupted = info.status == STAGE_EMBEDDED or (
            info.status in ("", STAGE_PARSED) and bool(self.store.document_entities(info.doc_id))
        )
        pending = None
        if info.status in ("", STAGE_PARSED):
            missing = self.store.missing_vectors(CHUNK_SPACE, info.doc_id)
            if away is not None and self.settings.build.hypergraph:
                pending = embed_away(away, embedder, missing, self.text_of)
            if pending is None:
                embed_chunks(
                    self.store,
                    embedder,
                    missing,
                    batch=self.chunk_batch,
                    text_of=self.text_of,
                    on_batch=progress.chunks_embedded,
                    timed=timed,
                )
                self.store.set_stage(info.doc_id, STAGE_EMBEDDED)
                info.status = STAGE_EMBEDDED
            else:
                progress.chunks_embedded(0, pending.total)
        if pending is not None or info.status in (STAGE_EMBEDDED, STAGE_GRAPH_WRITTEN):
            if self.settings.build.hypergraph:
                resume = info.status == STAGE_GRAPH_WRITTEN
                progress.graph_stage("building hypergraph" + (" (graph written; refining on)" if resume else ""))
                self.last_graph_report = self._build_graph_of(
                    info, progress, clear=interrupted, times=stage_times, checkpoint=True, resume=resume
                )
                progress.graph_stage("built" + self.parts.usage_note())
            self.store.set_stage(info.doc_id, STAGE_GRAPHED)
        if pending is not None:
            pending.store(self.store, embedder, on_batch=progress.chunks_embedded, times=stage_times)
        else:  # a resumed document whose workers' vectors were cut off
            missing = self.store.missing_vectors(CHUNK_SPACE, info.doc_id)
            embed_chunks(self.store, embedder, missing, batch=self.chunk_batch, text_of=self.text_of, timed=timed)
        self.store.set_stage(info.doc_id, STAGE_READY)

    def _check_embedder(self) -> None:
        """Refuse an embedder whose vectors do not fit the stored ones; record the first one's name and size."""
        embedder = self.parts.embedder()
        stored_dim = self.store.get_meta("embed_dim")
        if stored_dim is not None and int(stored_dim) != embedder.dim:
            raise HyperfolioError(
                f"embedder {embedder.name!r} makes {embedder.dim}-dimensional vectors but this "
                f"collection holds {stored_dim}-dimensional ones from {self.store.get_meta('embedder')!r}"
            )
        if self.store.get_meta("embedder") is None:
            self.store.set_meta("embedder", embedder.name)
        if stored_dim is None:  # not with the name: a crash between their two writes must not lose it
            self.store.set_meta("embed_dim", str(embedder.dim))

    # ------------------------------------------------------------------ the hypergraph
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
        detector, resolver = self.parts.reconcilers()
        ledger = BuildLedger()
        extractor, themer = self.parts.extractor(), self.parts.themer()
        for part in (extractor, themer):
            if isinstance(part, KeepsLedger):
                part.ledger = ledger
        if isinstance(extractor, CountsCalls):
            meter = ModelProgress(self.parts.models().usage, lambda line: progress.graph_stage(line))
            extractor.on_progress = meter.calls
        doc_id = info.doc_id

        def written() -> None:  # inside the transaction that writes the document's graph
            self.store.record_builds(doc_id, [(o.stage, o.item, o.how, o.reason) for o in ledger.outcomes])
            if checkpoint:
                self.store.set_stage(doc_id, STAGE_GRAPH_WRITTEN)

        parts = GraphParts(
            extractor,
            self.parts.refiner(),
            self.parts.graph_embedder(),
            self.parts.summariser(),
            detector,
            resolver,
            themer,
        )

        def on_stage(stage: str) -> None:
            progress.graph_stage(stage + self.parts.usage_note())

        run = BuildRun(on_stage, times if times is not None else StageTimes(), written, resume)
        report = build_document_graph(self.store, info.doc_id, info.title, parts, self.settings.build, run)
        # The record written with the graph, and what the later steps added (all a resumed build has).
        rows = {(stage, item): (stage, item, how, reason) for _, stage, item, how, reason in self.store.builds(doc_id)}
        rows.update({(o.stage, o.item): (o.stage, o.item, o.how, o.reason) for o in ledger.outcomes})
        self.store.record_builds(doc_id, list(rows.values()))
        report.offline = sum(1 for row in rows.values() if row[2] == OFFLINE)
        attach_themes(self.store, doc_id)  # the theme layer is built: the card names its top themes
        return report

    def build_graph(
        self, rebuild: bool = False, progress: AddProgress | None = None, retry_model: bool = False
    ) -> list[GraphReport]:
        """`Collection.build_graph`: each ready document due a graph, under a claim on its content."""
        progress = progress or AddProgress()
        reports = []
        retry = {row[0] for row in self.store.builds(how=OFFLINE)} if retry_model else set()
        with self.lock:
            for info in self.store.list_documents():
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

    def variant(self, path: str | Path, settings: Settings, open_at: Callable[[Path, Settings], OpenedT]) -> OpenedT:
        """`Collection.variant`; `open_at(folder, settings)` opens a collection on the copy."""
        # The source graph's shape is part of the key: after a rebuild here (new code, new documents)
        # a variant built from the old one would no longer be comparable.
        shape = {
            k: v for k, v in self.store.graph_stats().items() if k in ("entities_by_modality", "hyperedges_by_level")
        }
        signature = json.dumps({"build": settings.build.__dict__, "source": shape}, sort_keys=True)
        target = Path(path)
        if store_exists(target):
            existing = open_at(target, settings)
            if existing.store.get_meta("build_settings") == signature:
                return existing
            existing.close()
            remove_store(target)
        copy_store(self.store, target).close()
        copy = open_at(target, settings)
        copy.store.clear_graph()
        copy.build_graph()
        copy.store.set_meta("build_settings", signature)
        return copy

    # ------------------------------------------------------------------ removing
    def _drop_older_versions(self, path: Path, keep: str) -> bool:
        """A changed file replaces its old version, once the new one is fully indexed."""
        dropped = False
        for old in self.store.documents_by_source(str(path)):
            if old.doc_id != keep:
                self.remove(old.doc_id)
                dropped = True
        return dropped

    def remove(self, ref: str) -> DocumentInfo:
        """`Collection.remove`: the document, what only it supported, and its page images."""
        with self.lock:
            info = self.parts.resolve(ref)
            touched = self.store.document_entities(info.doc_id)
            self.store.remove_document(info.doc_id)
            if touched and self.settings.build.hypergraph and self.settings.build.refine:
                # Anchors that shared pages with the removed document lost part of their star: refine them again.
                survivors = [e.entity_id for e in self.store.get_entities(touched)]
                build = self.settings.build
                refiner = self.parts.refiner()
                refine_anchors(self.store, refiner, survivors, build.anchor_min_pages, cover=build.anchor_cover)
        image_dir = self.folder / "images" / info.doc_id
        if image_dir.exists():
            for file in image_dir.iterdir():
                file.unlink()
            image_dir.rmdir()
        return info
