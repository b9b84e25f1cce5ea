"""The tables both backends share, written once; each backend's column words fill the blanks.

`$real`, `$flag`, `$json`, `$list`, `$numbers` and `$serial` are column types as each backend stores
them; `$seq` is PostgreSQL's insertion-order column (SQLite's rowid needs none; `$row_key` puts it in an
index, where SQLite's rowid always is) and `$keyword_counts`
the per-document counts its BM25 reads. Each backend adds its own tables (vectors, keyword index).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from string import Template

log = logging.getLogger(__name__)

SQLITE_WORDS = {
    "real": "REAL",
    "flag": "INTEGER NOT NULL DEFAULT 0",
    "json": "TEXT",
    "list": "TEXT NOT NULL DEFAULT '[]'",
    "numbers": "TEXT",
    "serial": "INTEGER PRIMARY KEY",
    "seq": "",
    "last_seq": "",
    "row_key": "",
    "keyword_counts": "",
}

TABLES = Template(
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- Who is indexing a document (by content hash) until when: workers sharing a collection take turns.
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at $real NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_hash TEXT NOT NULL UNIQUE,
    num_pages INTEGER NOT NULL,
    meta $json NOT NULL DEFAULT '{}',
    added_at $real NOT NULL$keyword_counts
);
CREATE INDEX IF NOT EXISTS documents_source ON documents(source);
CREATE TABLE IF NOT EXISTS doc_status (
    doc_id TEXT PRIMARY KEY REFERENCES documents(doc_id) ON DELETE CASCADE,
    stage TEXT NOT NULL,
    updated_at $real NOT NULL
);
CREATE TABLE IF NOT EXISTS pages (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    width $real, height $real,
    ocr $flag,
    vision_dominant $flag,
    PRIMARY KEY (doc_id, number)
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    page INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    modality TEXT NOT NULL,
    text TEXT NOT NULL,
    bbox $numbers,
    section_path $list,
    table_cells $json,
    table_header_rows INTEGER NOT NULL DEFAULT 0,
    caption TEXT,
    ocr_text TEXT,
    image_path TEXT,
    placeholder $flag,
    meta $json NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, page, ord);

-- Hypergraph layers, filled by the build stage.
CREATE TABLE IF NOT EXISTS entities (
    entity_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    norm_name TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    modality TEXT NOT NULL DEFAULT 'text',
    aliases $list,
    meta $json NOT NULL DEFAULT '{}'$last_seq
);
CREATE INDEX IF NOT EXISTS entities_norm ON entities(norm_name);
CREATE TABLE IF NOT EXISTS hyperedges (
    edge_id TEXT PRIMARY KEY,
    level TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    keywords $list,
    strength $real NOT NULL DEFAULT 1.0,
    meta $json NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS incidence (
    edge_id TEXT NOT NULL REFERENCES hyperedges(edge_id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(entity_id) ON DELETE CASCADE,
    role TEXT NOT NULL DEFAULT '',$seq
    PRIMARY KEY (edge_id, entity_id, role)
);
-- An entity's edges, with their levels and strengths, from two compact indexes rather than three reads of
-- table rows each: on a collection larger than memory, uncached rows cost a disk read apiece.
DROP INDEX IF EXISTS incidence_entity;
CREATE INDEX IF NOT EXISTS incidence_entity_edge ON incidence(entity_id, edge_id$row_key);
DROP INDEX IF EXISTS hyperedges_level;
CREATE INDEX IF NOT EXISTS hyperedges_level_strength ON hyperedges(edge_id, level, strength);
CREATE TABLE IF NOT EXISTS provenance (
    item_kind TEXT NOT NULL CHECK (item_kind IN ('entity', 'hyperedge')),
    item_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    page INTEGER NOT NULL,$seq
    PRIMARY KEY (item_kind, item_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS provenance_doc ON provenance(doc_id);
CREATE INDEX IF NOT EXISTS provenance_chunk ON provenance(chunk_id);
-- An item's evidence from the index alone (the same reasoning).
DROP INDEX IF EXISTS provenance_item;
CREATE INDEX IF NOT EXISTS provenance_item_rows ON provenance(item_kind, item_id, chunk_id, doc_id, page$row_key);
CREATE TABLE IF NOT EXISTS refine_state (
    anchor_id TEXT PRIMARY KEY,
    signature TEXT NOT NULL,
    edge_ids $list,
    updated_at $real NOT NULL
);
CREATE TABLE IF NOT EXISTS model_builds (
    doc_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    item TEXT NOT NULL,
    how TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (doc_id, stage, item)
);
CREATE TABLE IF NOT EXISTS stage_times (
    doc_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    seconds $real NOT NULL,
    PRIMARY KEY (doc_id, stage)
);

-- The holistic view and the concept layer (sql/layers.py).
CREATE TABLE IF NOT EXISTS facts (
    edge_id TEXT PRIMARY KEY REFERENCES hyperedges(edge_id) ON DELETE CASCADE,
    head_id TEXT NOT NULL,
    relation TEXT NOT NULL,
    tail_id TEXT NOT NULL$last_seq
);
CREATE INDEX IF NOT EXISTS facts_head ON facts(head_id);
CREATE INDEX IF NOT EXISTS facts_tail ON facts(tail_id);
CREATE TABLE IF NOT EXISTS concepts (concept_id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entity_concepts (
    entity_id TEXT PRIMARY KEY REFERENCES entities(entity_id) ON DELETE CASCADE,
    concept_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_concepts_concept ON entity_concepts(concept_id);
CREATE TABLE IF NOT EXISTS concept_edges (
    head_id TEXT NOT NULL,
    relation TEXT NOT NULL,
    tail_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    support INTEGER NOT NULL,$seq
    PRIMARY KEY (head_id, relation, tail_id, doc_id)
);
CREATE INDEX IF NOT EXISTS concept_edges_tail ON concept_edges(tail_id);
CREATE INDEX IF NOT EXISTS concept_edges_doc ON concept_edges(doc_id);
CREATE TABLE IF NOT EXISTS concept_evidence (
    concept_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    entities INTEGER NOT NULL,$seq
    PRIMARY KEY (concept_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS concept_evidence_doc ON concept_evidence(doc_id, concept_id);
CREATE TABLE IF NOT EXISTS conflict_log (
    id $serial,
    doc_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    decision TEXT NOT NULL,
    fact TEXT NOT NULL,
    other TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL,
    evidence $list,
    decided_by TEXT NOT NULL DEFAULT 'offline',
    created_at $real NOT NULL
);
CREATE INDEX IF NOT EXISTS conflict_log_doc ON conflict_log(doc_id);
CREATE TABLE IF NOT EXISTS reconcile_stats (doc_id TEXT PRIMARY KEY, counts $json NOT NULL);

-- Conversations with the collection (sql/conversations.py): a thread, and its turns in order.
CREATE TABLE IF NOT EXISTS conversations (
    conversation_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    created_at $real NOT NULL,
    updated_at $real NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_owner ON conversations(owner, updated_at);
CREATE TABLE IF NOT EXISTS conversation_turns (
    conversation_id TEXT NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    turn $json NOT NULL,
    PRIMARY KEY (conversation_id, n)
);
"""
)


def shared_tables(words: dict[str, str]) -> str:
    """The shared tables in one backend's column words."""
    return TABLES.substitute(words)


def announce_new_indexes(schema: str, existing: Iterable[str], where: str) -> None:
    """Say so before making the indexes a release added to a collection that has data: at a million chunks
    that takes a minute or more, once, and would otherwise look like a hang."""
    missing = sorted(set(re.findall(r"CREATE INDEX IF NOT EXISTS (\w+)", schema)) - set(existing))
    if missing:
        log.warning(
            "%s: making %d new index(es) (%s), once; a minute or more per million chunks",
            where,
            len(missing),
            ", ".join(missing),
        )
