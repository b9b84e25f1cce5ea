"""Statements both backends run as they are (written with `?`; PostgreSQL's take `%s` in its place)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperfolio.model import Decision, DocumentInfo, Page
from hyperfolio.store.base import RECONCILE_COUNTS, STAGE_READY

# Take a free or lapsed claim (or one whose holder is known dead), renew one's own; a live claim of
# another owner stays. Parameters: key, owner, expiry, now, the dead holder ('' for none).
CLAIM = (
    "INSERT INTO claims (key, owner, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE"
    " SET owner = excluded.owner, expires_at = excluded.expires_at"
    " WHERE claims.owner = excluded.owner OR claims.expires_at < ? OR claims.owner = ?"
)
CLAIM_TABLE = (
    "-- Who is indexing a document (by content hash) until when: workers sharing a collection take turns.\n"
    "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at {time} NOT NULL);\n"
)

# A document's row as `DocumentInfo` takes it (meta last, as each backend stores JSON).
DOC_SELECT = (
    "SELECT d.doc_id, d.source, d.title, d.kind, d.content_hash, d.num_pages,"
    " (SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id), COALESCE(s.stage, ''), d.added_at, d.meta"
    " FROM documents d LEFT JOIN doc_status s ON s.doc_id = d.doc_id"
)

# Documents whose indexing has not finished: the chunk counts are taken for these rows only, so a
# question can name them without counting every chunk of the collection.
UNFINISHED_SELECT = DOC_SELECT + f" WHERE COALESCE(s.stage, '') <> '{STAGE_READY}' ORDER BY d.added_at, d.doc_id"

PAGE_SELECT = "SELECT number, width, height, ocr, vision_dominant FROM pages WHERE doc_id = ? ORDER BY number"


def page_of(row: Sequence[Any]) -> Page:
    """A page row (PAGE_SELECT's columns), without its chunks."""
    number, width, height, ocr, vision = row
    return Page(
        int(number), width=float(width or 0.0), height=float(height or 0.0), ocr=bool(ocr), vision_dominant=bool(vision)
    )


def info_of(row: Sequence[Any], meta: dict[str, Any]) -> DocumentInfo:
    """A DOC_SELECT row as `DocumentInfo`, its meta decoded by the backend (keys sorted: JSONB keeps no order)."""
    doc_id, source, title, kind, content_hash, pages, chunks, status, added_at = row[:9]
    ordered = dict(sorted(meta.items()))
    return DocumentInfo(doc_id, source, title, kind, content_hash, int(pages), int(chunks), status, added_at, ordered)


def counts_of(counts: dict[str, Any]) -> dict[str, int]:
    """Reconciliation counts in RECONCILE_COUNTS order, any others after them by name."""
    known = [key for key in RECONCILE_COUNTS if key in counts]
    return {key: int(counts[key]) for key in [*known, *sorted(set(counts) - set(known))]}


def decision_row(d: Decision, evidence: Any, now: float) -> tuple:
    """A decision as conflict_log's row (evidence as the backend stores a list; a given time kept)."""
    return (d.doc_id, d.kind, d.decision, d.fact, d.other, d.reason, evidence, d.decided_by, d.created_at or now)


def pg(statement: str) -> str:
    """A statement with PostgreSQL's placeholders."""
    return statement.replace("?", "%s")
