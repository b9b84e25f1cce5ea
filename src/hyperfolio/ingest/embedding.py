"""Chunk vectors, made one way wherever they are made: by `add`, by a repairing check, by a bundle import.

One function, so that a chunk embedded on any of these paths gets the vector a search expects (the same
text: the chunk with its nearest headings) and is stored as it is made, batch by batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from hyperfolio.embed.protocols import Embedder
from hyperfolio.model import Chunk
from hyperfolio.store.base import CHUNK_SPACE, Store

# Chunks embedded, committed and reported as one step of `add`: a step of long chunks takes about a
# second on two cores, so the progress moves; smaller batches, sorted by length, lose no throughput.
EMBED_BATCH_CHUNKS = 16

TextOf = Callable[[Sequence[str], str], str]


def embedding_text(section_path: Sequence[str], text: str) -> str:
    """The text a chunk is embedded as: its nearest headings give it context."""
    heading = " > ".join(section_path[-2:])
    return f"{heading}\n{text}" if heading else text


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
    texts = sorted(((text_of(c.section_path, c.text), c) for c in chunks), key=lambda pair: -len(pair[0]))
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
