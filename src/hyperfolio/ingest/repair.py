"""`check`: rows of the store pointing at rows no longer there, and, asked to, their repair (what dangles
deleted, the keyword index rebuilt, chunks of ready documents embedded again, documents' cards made or
given their themes, and such documents retitled as ingest would have)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from hyperfolio.cards.card import Carder
from hyperfolio.embed.protocols import Embedder
from hyperfolio.ingest.cards import fill_cards, without_card
from hyperfolio.ingest.embedding import TextOf, embed_chunks
from hyperfolio.store.base import CHUNK_SPACE, STAGE_READY, Store
from hyperfolio.store.claims import describe, died_here
from hyperfolio.store.integrity import REPAIR_ROUNDS, WITHOUT_CARD, Finding, IntegrityReport, Unfinished, finding


def check_store(
    store: Store,
    lock: threading.RLock,
    embedder: Callable[[], Embedder],
    repair: bool,
    chunk_batch: int,
    text_of: TextOf,
    carder: Carder | None = None,
) -> IntegrityReport:
    """`Collection.check`. Documents not fully indexed are named apart (`unfinished`, told from one a
    running `add` holds now), never indexed here: `add` finishes them. The embedder is made (and its model
    loaded) only when chunks need vectors; missing cards are made by `carder` (the offline one when None)."""
    documents = store.unfinished_documents()
    holders = store.claim_holders([d.content_hash for d in documents])
    live = {key: describe(owner) for key, owner in holders.items() if not died_here(owner)}
    unfinished = [Unfinished(d.doc_id, d.source, d.status, live.get(d.content_hash, "")) for d in documents]
    report = IntegrityReport(store.integrity() + _card_findings(store), unfinished=unfinished)
    if not repair:
        return report
    with lock:
        for _ in range(REPAIR_ROUNDS):  # a repair can leave rows dangling that another kind covers
            fixable = report.repairable
            if not fixable:
                break
            changed = store.repair([f for f in fixable if f.kind != WITHOUT_CARD])
            if any(f.kind == WITHOUT_CARD for f in fixable):
                changed[WITHOUT_CARD] = fill_cards(store, carder)
            if any(f.kind == "chunks_without_vector" for f in fixable):
                changed["chunks_without_vector"] = _embed_missing(store, embedder, chunk_batch, text_of)
            for kind, rows in changed.items():
                report.repaired[kind] = report.repaired.get(kind, 0) + rows
            report.findings = store.integrity() + _card_findings(store)
            if not any(changed.values()):
                break
    return report


def _card_findings(store: Store) -> list[Finding]:
    """Ready documents indexed before documents had cards, or before cards had themes (the store's own
    checks cannot see a card)."""
    missing = without_card(store)
    return [finding(WITHOUT_CARD, len(missing), [d.source for d in missing[:5]])] if missing else []


def _embed_missing(store: Store, embedder: Callable[[], Embedder], chunk_batch: int, text_of: TextOf) -> int:
    embedded = 0
    for doc_id in [d.doc_id for d in store.list_documents() if d.status == STAGE_READY]:
        missing = store.missing_vectors(CHUNK_SPACE, doc_id)
        if missing:
            embedded += embed_chunks(store, embedder(), missing, batch=chunk_batch, text_of=text_of)
    return embedded
