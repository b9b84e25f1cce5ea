"""Chunk vectors, made one way wherever they are made: by `add`, by a repairing check, by a bundle import.

One text per chunk (the chunk with its nearest headings), so that a chunk embedded on any of these paths gets
the vector a search expects, stored as it is made, batch by batch. `add` with worker processes (or Ray) has
the workers embed (`embed_away`) while the writer builds the document's hypergraph, which needs no chunk
vectors; the writer only stores what comes back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

from hyperfolio.embed.local import worker_embedder
from hyperfolio.embed.protocols import Embedder, Portable, Recipe
from hyperfolio.ingest.executors import Executor
from hyperfolio.model import Chunk
from hyperfolio.store.base import CHUNK_SPACE, Store
from hyperfolio.timing import StageTimes

log = logging.getLogger(__name__)

# Chunks embedded, committed and reported as one step of `add`: a step of long chunks takes about a
# second on two cores, so the progress moves; smaller batches, sorted by length, lose no throughput.
EMBED_BATCH_CHUNKS = 16

TextOf = Callable[[Sequence[str], str], str]


def embedding_text(section_path: Sequence[str], text: str) -> str:
    """The text a chunk is embedded as: its nearest headings give it context."""
    heading = " > ".join(section_path[-2:])
    return f"{heading}\n{text}" if heading else text


def _by_length(chunks: Sequence[Chunk], text_of: TextOf) -> list[tuple[str, Chunk]]:
    """Longest texts first, so each batch pads its texts to about one length."""
    return sorted(((text_of(c.section_path, c.text), c) for c in chunks), key=lambda pair: -len(pair[0]))


def embed_chunks(
    store: Store,
    embedder: Embedder,
    chunks: Sequence[Chunk],
    *,
    batch: int = EMBED_BATCH_CHUNKS,
    text_of: TextOf = embedding_text,
    on_batch: Callable[[int, int], None] | None = None,
    timed: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> int:
    """Embed `chunks` and store their vectors a batch at a time, so an interrupted run keeps what it did
    and the next one embeds only what is missing. Longest texts first, so each small batch pads its texts
    to about one length. `on_batch(done, total)` is called before the first batch (0) and after each one;
    `timed` wraps each batch's embedding and write. Returns how many chunks were embedded."""
    texts = _by_length(chunks, text_of)
    if on_batch is not None:
        on_batch(0, len(texts))
    for start in range(0, len(texts), batch):
        part = texts[start : start + batch]
        with timed():
            vectors = embedder.embed([text for text, _ in part])
            store.put_vectors(CHUNK_SPACE, [(c.chunk_id, c.doc_id) for _, c in part], vectors)
        if on_batch is not None:
            on_batch(start + len(part), len(texts))
    return len(texts)


# Chunks one worker task embeds: a few seconds of one core, long enough that sending the texts and the
# vectors costs little, short enough that two workers share a document's chunks.
WORKER_BATCH_CHUNKS = 64
WRITER_EMBEDDING = "chunk embedding (writer)"  # batches the writer took back from the workers, or redid
EMBEDDING_WAIT = "embedding wait"  # the writer waiting for the workers' vectors


def embed_part(recipe: Recipe, texts: list[str]) -> tuple[np.ndarray, float]:
    """Task function: the vectors of `texts`, made in the worker that runs it, and the seconds they took."""
    embedder = worker_embedder(recipe)
    embedder.load()  # a worker's first task loads the model: not embedding time
    began = time.perf_counter()
    return _in_batches(embedder, texts), time.perf_counter() - began


def _in_batches(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """The vectors of `texts`, embedded `EMBED_BATCH_CHUNKS` at a time: a task's 64 long chunks in one call
    would hold four times the activations (several hundred MB more per process)."""
    parts = [embedder.embed(texts[n : n + EMBED_BATCH_CHUNKS]) for n in range(0, len(texts), EMBED_BATCH_CHUNKS)]
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), np.float32)


@dataclass
class PendingVectors:
    """A document's chunk vectors being made on the executor's workers, a batch per task."""

    parts: list[tuple[list[Chunk], list[str], Future]]

    @property
    def total(self) -> int:
        return sum(len(chunks) for chunks, _, _ in self.parts)

    def store(
        self,
        store: Store,
        fallback: Embedder,
        *,
        on_batch: Callable[[int, int], None] | None = None,
        times: StageTimes | None = None,
    ) -> int:
        """Store each batch's vectors as it comes back. A batch no worker has started yet when this process
        gets here is taken back and embedded here (the writer has nothing else to do, and the workers go on
        parsing the next files), and so is a batch whose worker failed or died: the document gets every
        vector either way. `times` gets the workers' embedding seconds as "chunk embedding" (as parsing stages
        are measured in the workers), this process's as WRITER_EMBEDDING, its wait for the workers as
        EMBEDDING_WAIT and the vectors' writes as "vector writes". Returns how many chunks were stored."""
        times = times if times is not None else StageTimes()
        times.add(EMBEDDING_WAIT, 0.0)  # reported when nothing was waited for too: a zero is a measurement
        done, total = 0, self.total
        left = list(range(len(self.parts)))
        while left:
            ready = next((n for n in left if self.parts[n][2].done()), None)
            if ready is None:  # none back: take back the last one not yet started, else wait for one
                ready = next((n for n in reversed(left) if self.parts[n][2].cancel()), None)
            if ready is None:
                with times.stage(EMBEDDING_WAIT):
                    wait([self.parts[n][2] for n in left], return_when=FIRST_COMPLETED)
                continue
            left.remove(ready)
            chunks, texts, future = self.parts[ready]
            vectors = self._vectors(future, texts, fallback, times)
            with times.stage("vector writes"):
                store.put_vectors(CHUNK_SPACE, [(c.chunk_id, c.doc_id) for c in chunks], vectors)
            done += len(chunks)
            if on_batch is not None:
                on_batch(done, total)
        return done

    @staticmethod
    def _vectors(future: Future, texts: list[str], fallback: Embedder, times: StageTimes) -> np.ndarray:
        """A batch's vectors: the worker's, or made here when it was taken back or its worker failed."""
        if not future.cancelled():
            try:
                vectors, seconds = future.result()
                times.add("chunk embedding", seconds)
                return np.asarray(vectors)
            except Exception as exc:  # a worker's error, or a pool that broke: this process embeds the batch
                log.warning("embedding on a worker failed (%s: %s); embedding here", type(exc).__name__, exc)
        with times.stage(WRITER_EMBEDDING):
            return _in_batches(fallback, texts)


def embed_away(
    executor: Executor, embedder: Embedder, chunks: Sequence[Chunk], text_of: TextOf = embedding_text
) -> PendingVectors | None:
    """Send `chunks` to the executor's workers to be embedded; None when there are no workers or `embedder`
    cannot be rebuilt in them (a custom embedder embeds in the writer, as without workers)."""
    recipe = embedder.recipe() if isinstance(embedder, Portable) else None
    if executor.workers == 0 or recipe is None or not chunks:
        return None
    texts = _by_length(chunks, text_of)
    parts = []
    for start in range(0, len(texts), WORKER_BATCH_CHUNKS):
        part = texts[start : start + WORKER_BATCH_CHUNKS]
        batch = [text for text, _ in part]
        parts.append(([c for _, c in part], batch, executor.submit(embed_part, recipe, batch)))
    return PendingVectors(parts)
