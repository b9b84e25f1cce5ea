"""Keyword search for both backends: the keyword index (`store/keywords/`) kept in step with the database.

The index is derived, never the record: it lives beside an SQLite collection's database, and for a
PostgreSQL collection in each machine's cache, so every machine sharing the collection searches its own
copy. Each copy is brought up to date from the database before it is searched, which makes every
machine read the same documents:

- every change of what is searchable (a document's stage set, a document removed; its meta or title
  too) writes a new random documents epoch in the same transaction (`sql/documents.py`); an index whose
  manifest holds that epoch is up to date, which costs one read of one row per search;
- otherwise the index is compared with the ready documents' (doc_id, updated_at) and brought to them:
  documents gone or changed are dropped, new or changed ones added from their chunks. This compares
  states, not a log of events, so changes committed out of order (two PostgreSQL writers) are never
  missed, and redoing it after a crash is harmless.

The process that changes a stage brings its index up to date at once, so the next question does not pay
for the indexing. Only one process writes an index at a time; one that waits too long searches the index
as it is, without the documents no longer ready.
"""

from __future__ import annotations

import logging
import shutil
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from hyperfolio.store.base import STAGE_READY, chunk_doc_page
from hyperfolio.store.integrity import EXAMPLES, Finding, finding
from hyperfolio.store.keywords import engine
from hyperfolio.store.keywords.engine import KeywordIndex, KeywordRow
from hyperfolio.store.sql.documents import DOCUMENTS_EPOCH, GRAPH_EPOCH
from hyperfolio.store.sql.host import SqlHost

log = logging.getLogger(__name__)

OWNER_KEY = "keywords_owner"  # which database an index belongs to: a folder of another is made anew
# Meta that belongs to the database it is in, not to the collection: copies and bundles leave it behind.
LOCAL_META = ("schema_version", OWNER_KEY, DOCUMENTS_EPOCH, GRAPH_EPOCH)
BATCH_DOCUMENTS = 100  # documents written per commit while catching up (a long rebuild keeps its progress)
READY_VERSIONS = (
    "SELECT s.doc_id, s.updated_at FROM doc_status s JOIN documents d ON d.doc_id = s.doc_id"
    " WHERE s.stage = ? ORDER BY d.added_at, d.doc_id"
)
KEYWORD_ROWS = "SELECT chunk_id, doc_id, text, section_path FROM chunks WHERE doc_id = ? ORDER BY page, ord"


def version_of(updated_at: float) -> str:
    """A document's version in the index: when its stage was last set (doc_status.updated_at)."""
    return repr(float(updated_at))


class KeywordTables(SqlHost):
    """The keyword index of the collection: where it lives is the backend's (`_keyword_folder`)."""

    def _keyword_folder(self, owner: str) -> Path:
        raise NotImplementedError

    @property
    def _keywords_lock(self) -> threading.Lock:
        lock: threading.Lock = self.__dict__.setdefault("_keyword_lock", threading.Lock())
        return lock

    def _keyword_index(self) -> KeywordIndex:
        with self._keywords_lock:
            index: KeywordIndex | None = self.__dict__.get("_keywords")
            if index is None:
                owner = self.get_meta(OWNER_KEY)
                if owner is None or self.get_meta(DOCUMENTS_EPOCH) is None:  # a new collection, or an earlier version's
                    with self._write() as cur:
                        insert = self.dialect.insert_ignore("meta(key, value)", "VALUES (?, ?)")
                        cur.executemany(insert, [(OWNER_KEY, uuid.uuid4().hex), (DOCUMENTS_EPOCH, uuid.uuid4().hex)])
                    owner = self.get_meta(OWNER_KEY) or ""
                index = self.__dict__["_keywords"] = KeywordIndex(self._keyword_folder(owner), owner)
            return index

    def keyword_search(self, query: str, k: int, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """BM25 over chunk text and headings of fully indexed documents (`store/keywords/engine.py`)."""
        if k < 1:
            return []
        current, ready = self.catch_up_keywords()
        hits = self._keyword_index().search(query, k if current else 2 * k, doc_ids)
        if current:
            return hits
        return [(chunk, score) for chunk, score in hits if chunk_doc_page(chunk)[0] in ready][:k]

    def catch_up_keywords(self, wait: float | None = None, trust_epoch: bool = True) -> tuple[bool, set[str]]:
        """Bring the index to the database's ready documents: (whether it is up to date, the ready
        documents when they were read, else an empty set). `trust_epoch=False` compares the documents
        even when the epoch says nothing changed (the integrity check: an edit by hand changes no epoch)."""
        wait = engine.WRITER_WAIT if wait is None else wait
        index = self._keyword_index()
        epoch = self.documents_version()
        if trust_epoch and index.manifest().epoch == epoch:
            return True, set()
        versions = {doc: version_of(at) for doc, at in self._query(READY_VERSIONS, (STAGE_READY,))}
        held = index.manifest().docs
        gone = [doc for doc, (version, _, _) in held.items() if versions.get(doc) != version]
        new = [doc for doc, version in versions.items() if doc not in held or held[doc][0] != version]
        if not gone and not new:
            return index.apply(epoch, [], wait), set(versions)
        if len(new) > BATCH_DOCUMENTS:
            log.warning("indexing the words of %d documents for keyword search", len(new))
        changes: list[tuple[str, str | None, list[KeywordRow]]] = [(d, None, []) for d in gone if d not in versions]
        for start in range(0, max(len(new), 1), BATCH_DOCUMENTS):
            batch = new[start : start + BATCH_DOCUMENTS]
            last = start + BATCH_DOCUMENTS >= len(new)
            rows = changes + [(doc, versions[doc], list(self._keyword_rows(doc))) for doc in batch]
            if not index.apply(epoch if last else "", rows, wait):
                return False, set(versions)
            changes = []
        return True, set(versions)

    def _keyword_rows(self, doc_id: str) -> Iterator[KeywordRow]:
        for chunk_id, doc, text, path in self._query(KEYWORD_ROWS, (doc_id,)):
            yield KeywordRow(chunk_id, doc, text, " / ".join(self.dialect.from_strings(path)))

    def _keywords_changed(self) -> None:
        """After a commit that changed what is searchable: index it now (or leave it to the next search)."""
        try:
            self.catch_up_keywords(wait=1.0)
        except Exception as exc:  # the index is derived: the next search or `check --repair` makes it again
            log.warning("keyword index not brought up to date: %s", exc)

    def _rebuild_keywords(self) -> int:
        """Make the keyword index again from the chunks; how many chunks it holds."""
        index = self._keyword_index()
        with self._keywords_lock:
            self.__dict__.pop("_keywords", None)
        shutil.rmtree(index.folder, ignore_errors=True)
        self.catch_up_keywords()
        return self._keyword_index().manifest().chunks

    def keyword_findings(self) -> list[Finding]:
        """What the integrity check says of the keyword index, once it is brought up to date: chunks of
        ready documents it lacks, entries of no ready chunk, and documents whose manifest entry is not what
        the index holds (each counted in chunks, per document, by the index itself)."""
        current, _ = self.catch_up_keywords(trust_epoch=False)
        if not current:  # another process is writing it: nothing to say now
            return []
        index = self._keyword_index()
        manifest = index.manifest()
        ready = dict(
            self._query(
                "SELECT c.doc_id, COUNT(*) FROM chunks c JOIN doc_status s ON s.doc_id = c.doc_id"
                " JOIN documents d ON d.doc_id = c.doc_id WHERE s.stage = ? GROUP BY c.doc_id",
                (STAGE_READY,),
            )
        )
        found: dict[str, list[tuple[str, int]]] = {"keyword_missing": [], "keyword_extra": [], "keyword_stats": []}
        for doc in sorted(set(ready) | set(manifest.docs)):
            held, wanted = index.count(doc), int(ready.get(doc, 0))
            listed = manifest.docs[doc][1] if doc in manifest.docs else 0
            if held < wanted:
                found["keyword_missing"].append((doc, wanted - held))
            if held > wanted:
                found["keyword_extra"].append((doc, held - wanted))
            if held != listed:
                found["keyword_stats"].append((doc, abs(held - listed)))
        return [
            finding(kind, sum(n for _, n in docs), [f"{doc} ({n} chunks)" for doc, n in docs[:EXAMPLES]])
            for kind, docs in found.items()
            if docs
        ]
