"""The keyword index: a tantivy index of chunk terms in a folder, ranked by BM25 as SQLite's FTS5 ranked.

Why tantivy: an inverted index with top-k pruning (block-max WAND) finds the best chunks of a million
without scoring every chunk that holds a question word, which BM25 in SQL must do (FTS5: 0.6 s, the
PostgreSQL SQL: 2.6 s at 1M chunks). Its own scores are close to, not exactly, the BM25 hyperfolio has
always used (fields are scored apart, lengths are stored in a byte, its IDF is ln(1 + ...)), so it only
proposes candidates: `depth(k)` of them, each rescored exactly — FTS5's formula (k1 1.2, b 0.75, the
heading's words at weight 0.5, lengths counting text, heading and the document id, IDF max(ln((N - n +
0.5) / (n + 0.5)), 1e-6)) over the same tokens (`tokens.py`). A chunk outside the candidates can only
be missed when tantivy's approximation ranks it below `depth(k)` others; `benchmarks/keyword_engine.py`
measures how often at 1M chunks.

The index holds the chunks of documents ready to search, and a manifest (`manifest.json`) of which
version of each document it holds: `sync.py` keeps it in step with the database.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tantivy

from hyperfolio.errors import StoreError
from hyperfolio.store.keywords.tokens import query_terms, terms, tokens

log = logging.getLogger(__name__)

K1, B = 1.2, 0.75
HEADING_WEIGHT = 0.5
MANIFEST = "manifest.json"
FORMAT = 1  # bump when the schema or the terms change: an index of another format is rebuilt
EVERY = "_"  # a word in every chunk's entry and in no text's ("_" splits words): counts entries, deleted ones too
MAX_TERM = 200  # longer "words" (encoded blobs) are left out of the index; they still count in lengths
WRITER_HEAP = 64_000_000
WRITER_WAIT = 10.0  # seconds to wait for another process's writer before giving up this time


def idf(total: float, holding: float) -> float:
    """FTS5's IDF: never below a millionth, so a word in most chunks still counts for something."""
    return max(math.log((total - holding + 0.5) / (holding + 0.5)), 1e-6)


def depth(k: int) -> int:
    """How many of tantivy's candidates are rescored for a top-k."""
    return max(3 * k, k + 100)


@dataclass(frozen=True)
class KeywordRow:
    """A chunk as the index reads it."""

    chunk_id: str
    doc_id: str
    text: str
    heading: str


@dataclass
class Manifest:
    """What the index holds: per document its version and its chunk and token counts; the database epoch
    it was last brought up to; the database it belongs to."""

    owner: str = ""
    epoch: str = ""
    docs: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    serial: int = 0  # documents added so far: ties in score rank by it, as rows added earlier did in FTS5
    format: int = FORMAT

    _totals: tuple[int, int] | None = field(default=None, repr=False, compare=False)

    @property
    def chunks(self) -> int:
        return self.totals()[0]

    @property
    def tokens(self) -> int:
        return self.totals()[1]

    def totals(self) -> tuple[int, int]:
        """(chunks, tokens) over every document held, summed once per change."""
        if self._totals is None:
            self._totals = (sum(n for _, n, _ in self.docs.values()), sum(t for _, _, t in self.docs.values()))
        return self._totals

    def changed(self) -> None:
        self._totals = None

    @classmethod
    def read(cls, path: Path) -> Manifest | None:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            docs = {d: (str(v), int(n), int(t)) for d, (v, n, t) in raw["docs"].items()}
            return cls(raw["owner"], raw["epoch"], docs, int(raw["serial"]), int(raw["format"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, path: Path) -> None:
        body = {"format": self.format, "owner": self.owner, "epoch": self.epoch, "serial": self.serial}
        body["docs"] = self.docs
        # A name of its own per write: two handles of one collection in one process (the service's reader
        # and writer) may write at once, and a shared name let one move the other's file away.
        fd, temporary = tempfile.mkstemp(prefix=f"{path.stem}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(body))
        os.replace(temporary, path)


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("doc", stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("words", stored=False, tokenizer_name="terms", index_option="freq")
    builder.add_bytes_field("counts", stored=True)  # what rescoring reads: terms of text | heading
    builder.add_integer_field("length", stored=True)
    builder.add_integer_field("order", stored=True)
    return builder.build()


def open_index(folder: Path, create: bool = False) -> tantivy.Index:
    """The tantivy index in `folder` (made empty when `create`), its whitespace analyser registered."""
    index = tantivy.Index(_SCHEMA, path=str(folder), reuse=False) if create else tantivy.Index.open(str(folder))
    index.register_tokenizer("terms", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    return index


def _encode(text_terms: Sequence[str], heading_terms: Sequence[str]) -> bytes:
    return (" ".join(text_terms) + "\n" + " ".join(heading_terms)).encode("utf-8")


def _weights(stored: bytes, wanted: set[str]) -> dict[str, float]:
    """Each wanted term's frequency in a chunk as FTS5 weighs it: 1 in the text, 0.5 in the heading."""
    text, _, heading = stored.decode("utf-8").partition("\n")
    out: dict[str, float] = {}
    for term, n in Counter(t for t in text.split(" ") if t in wanted).items():
        out[term] = float(n)
    for term, n in Counter(t for t in heading.split(" ") if t in wanted).items():
        out[term] = out.get(term, 0.0) + HEADING_WEIGHT * n
    return out


class KeywordIndex:
    """One collection's keyword index in `folder`; thread-safe within a process, one writer across them."""

    def __init__(self, folder: Path, owner: str) -> None:
        self.folder = folder
        self.owner = owner
        self._lock = threading.RLock()
        self._index: tantivy.Index | None = None
        self._manifest = Manifest(owner=owner)
        self._seen: tuple[int, int, int] | None = None  # the manifest file last read: (inode, mtime, size)

    # ------------------------------------------------------------------ opening
    def _open(self) -> tantivy.Index:
        """The index, created (or made again, if it is of another format or database) when needed."""
        if self._index is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            manifest = Manifest.read(self.folder / MANIFEST)
            usable = manifest is not None and manifest.owner == self.owner and manifest.format == FORMAT
            index = None
            if usable and tantivy.Index.exists(str(self.folder)):
                try:
                    index = open_index(self.folder)
                except ValueError as exc:  # damaged files: the index is derived, so it is made again
                    log.warning("keyword index in %s unreadable (%s): making it again", self.folder, exc)
            if index is None:
                index = open_index(self.folder, create=True)
                manifest = Manifest(owner=self.owner)
                manifest.write(self.folder / MANIFEST)
            self._index = index
            self._manifest = manifest or Manifest(owner=self.owner)
            self._seen = self._stamp()
        return self._index

    def _stamp(self) -> tuple[int, int, int] | None:
        """Which manifest file is there: each write replaces it, so a new one has a new inode."""
        try:
            st = (self.folder / MANIFEST).stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def manifest(self) -> Manifest:
        """What the index holds now, re-read (and the searcher reloaded) when another process changed it."""
        with self._lock:
            index = self._open()
            stamp = self._stamp()
            if stamp != self._seen:
                self._manifest = Manifest.read(self.folder / MANIFEST) or Manifest(owner=self.owner)
                self._seen = stamp
                index.reload()
            return self._manifest

    def count(self, doc_id: str) -> int:
        """How many chunks of a document the index itself holds (the integrity check compares it)."""
        with self._lock:
            self.manifest()
            searcher = self._open().searcher()
        return _count(searcher, tantivy.Query.term_query(_SCHEMA, "doc", doc_id))

    # ------------------------------------------------------------------ writing
    def apply(
        self, epoch: str, changes: Iterable[tuple[str, str | None, Sequence[KeywordRow]]], wait: float = WRITER_WAIT
    ) -> bool:
        """Bring documents to the versions given: (doc_id, version or None to drop, its rows). False when
        another process held the writer for `wait` seconds (nothing changed; the caller tries later)."""
        with self._lock:
            index = self._open()
            writer = self._writer(index, wait)
            if writer is None:
                return False
            manifest = self.manifest()
            touched = False
            try:
                for doc_id, version, rows in changes:
                    touched = True
                    writer.delete_documents_by_term("doc", doc_id)
                    manifest.docs.pop(doc_id, None)
                    if version is None:
                        continue
                    length_total = 0
                    for i, row in enumerate(rows):
                        length_total += self._add(writer, row, manifest.serial * 1_000_000 + i)
                    manifest.docs[doc_id] = (version, len(rows), length_total)
                    manifest.serial += 1
                manifest.epoch = epoch
                manifest.changed()
                if touched:  # else only the epoch moves on (a stage before ready, a title): no commit to pay for
                    writer.commit()
                    writer.wait_merging_threads()
            except BaseException:
                writer.rollback()
                self._seen = None  # the manifest in memory was changed: read it again
                raise
            manifest.write(self.folder / MANIFEST)
            del writer  # its lock goes with it (tantivy holds it until the writer is dropped)
            self._seen = self._stamp()
            if touched:
                index.reload()
            return True

    @staticmethod
    def _writer(index: tantivy.Index, wait: float) -> tantivy.IndexWriter | None:
        deadline = time.monotonic() + wait
        while True:
            try:
                return index.writer(heap_size=WRITER_HEAP, num_threads=1)
            except ValueError as exc:
                if "lock" not in str(exc).lower():
                    raise StoreError(f"keyword index: {exc}") from exc
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.05)

    @staticmethod
    def _add(writer: tantivy.IndexWriter, row: KeywordRow, order: int) -> int:
        text_terms, heading_terms = terms(row.text), terms(row.heading)
        length = len(text_terms) + len(heading_terms) + len(tokens(row.doc_id))
        words = " ".join([EVERY, *(t for t in (*text_terms, *heading_terms) if len(t) <= MAX_TERM)])
        writer.add_document(
            tantivy.Document(
                chunk=row.chunk_id,
                doc=row.doc_id,
                words=words,
                counts=_encode(text_terms, heading_terms),
                length=length,
                order=order,
            )
        )
        return length

    # ------------------------------------------------------------------ searching
    def search(self, question: str, k: int, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """The k best chunks for `question` (of `doc_ids` only, if given) with their BM25 scores."""
        wanted = query_terms(question)
        if not wanted or k < 1:
            return []
        with self._lock:
            manifest = self.manifest()
            searcher = self._open().searcher()
        total, length = manifest.chunks, manifest.tokens
        if not total:
            return []
        avgdl = max(length / total, 1e-9)
        multiplicity = Counter(t for t in wanted if len(t) <= MAX_TERM)
        # Tantivy's document frequencies count deleted entries until their segment is merged: exact only
        # while the index holds none (every entry holds EVERY), else each term's live chunks are counted.
        if searcher.doc_freq("words", EVERY) == searcher.num_docs:
            holding = {t: searcher.doc_freq("words", t) for t in multiplicity}
        else:
            holding = {t: _count(searcher, tantivy.Query.term_query(_SCHEMA, "words", t)) for t in multiplicity}
        weight = {t: n * idf(total, holding[t]) for t, n in multiplicity.items()}
        query = self._query(searcher, weight, total, doc_ids)
        if query is None:
            return []
        hits = searcher.search(query, limit=depth(k), count=False).hits
        scored, terms_asked = [], set(weight)
        for _, address in hits:
            stored = searcher.doc(address)
            tf = _weights(stored["counts"][0], terms_asked)
            norm = K1 * (1 - B + B * stored["length"][0] / avgdl)
            score = sum(weight[t] * f * (K1 + 1) / (f + norm) for t, f in tf.items())
            # Equal scores (to rounding: sums in another order differ in their last bit) rank by insertion.
            scored.append((-float(f"{score:.12g}"), stored["order"][0], stored["chunk"][0], score))
        scored.sort()
        return [(chunk, score) for _, _, chunk, score in scored[:k]]

    @staticmethod
    def _query(
        searcher: tantivy.Searcher, weight: dict[str, float], total: int, doc_ids: Sequence[str] | None
    ) -> tantivy.Query | None:
        """An OR of the terms, each boosted so that tantivy's IDF becomes FTS5's; within `doc_ids` if given."""
        should = []
        for term, w in weight.items():
            holding = searcher.doc_freq("words", term)
            if not holding:
                continue
            own = math.log(1 + (total - holding + 0.5) / (holding + 0.5))
            term_query = tantivy.Query.term_query(_SCHEMA, "words", term)
            should.append((tantivy.Occur.Should, tantivy.Query.boost_query(term_query, max(w / max(own, 1e-9), 1e-6))))
        if not should:
            return None
        words = tantivy.Query.boolean_query(should)
        if not doc_ids:
            return words
        scope = tantivy.Query.term_set_query(_SCHEMA, "doc", list(doc_ids))
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, words), (tantivy.Occur.Must, scope)])


def _count(searcher: tantivy.Searcher, query: tantivy.Query) -> int:
    """How many live chunks match `query`."""
    return int(getattr(searcher.search(query, limit=1, count=True), "count", 0) or 0)


_SCHEMA = _schema()
