"""Server store: one PostgreSQL database per collection, with pgvector for the vector spaces.

The same tables, methods and semantics as the SQLite store (`sqlite.py` and `concept_tables.py`),
so the stages run unchanged on either. Where SQLite leaves an order to its query plan (rowid order,
sorted IN lists), the queries here say it outright, so both backends return lists in the same order.

- Location: a URL `postgresql://user@host:port/database`; the collection is that whole database,
  its tables in the connection's schema (`public` unless the URL's options set a search_path).
- Writes: one transaction per document step, like SQLite's; every write transaction first takes a
  per-database advisory lock, so writers queue as they do on SQLite's single write lock (the graph
  upserts read, merge and write, which two interleaved writers would get wrong) while readers never
  wait for them (MVCC).
- Keywords: PostgreSQL full-text search with a Porter stemmer: per chunk the lexemes of its text and
  heading (a tsvector with a GIN index) and their frequencies, per word the number of chunks holding
  it, ranked by BM25 computed in SQL the way FTS5 computes it (`keyword_search` says where they differ).
- Vectors: one `vector` column for every space (dimensions learned per space on the first insert);
  exact search up to `EXACT_SEARCH_MAX` vectors, above that an HNSW index per space (see `put_vectors`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from hyperfolio.errors import DuplicateDocument, StoreError
from hyperfolio.lexicon import STOPWORDS
from hyperfolio.model import Chunk, Decision, Document, DocumentInfo, Entity, FactRow, Hyperedge, Page
from hyperfolio.phrases import normalize_name
from hyperfolio.store.base import RECONCILE_COUNTS, STAGE_PARSED, STAGE_READY, chunk_doc_page
from hyperfolio.store.common_sql import (
    CLAIM,
    CLAIM_TABLE,
    CONCEPT_INSERT,
    DOC_SELECT,
    DOCUMENTS_IN_ORDER,
    ENTITY_CONCEPT_INSERT,
    INTEGRITY_CHECKS,
    LIVE_CLAIMS,
    PAGE_SELECT,
    TITLES,
    UNFINISHED_SELECT,
    counts_of,
    decision_row,
    info_of,
    keyword_checks,
    page_of,
    pg,
)
from hyperfolio.store.concept_tables import LAYER_TABLES, concept_id
from hyperfolio.store.integrity import Dangling, Finding, SqlCheck, keyword_repairs, repair_rows, run_checks
from hyperfolio.store.model_records import MODEL_SCHEMA, MODEL_TABLES, ModelRecords, add_missing_usage_columns
from hyperfolio.store.versions import newer_than_this

SCHEMA_VERSION = "1"

# A space's vectors are searched exactly (a scan, as SQLite does) up to this many; a larger space gets an
# HNSW index. HNSW indexes at most 2,000 dimensions of `vector`; a wider space stays exact.
EXACT_SEARCH_MAX = 20_000
HNSW_MAX_DIM = 2_000
HNSW_MAX_EF = 1_000  # pgvector's ceiling for hnsw.ef_search; a larger k is searched exactly
RARE_TERM_CHUNKS = 20_000  # a keyword search first scores only the chunks of its rarest terms, about this many
RARE_TERM_STEPS = 3  # ... adding the next rarest term at most this often before scoring every match
INDEX_BUILD_MEMORY = "2GB"  # for the session building an HNSW index, not the server

# Advisory lock keys (per database, so per collection): the writer queue, and creating the schema.
WRITER_LOCK = 0x6879_7065_7266_6F6C  # "hyperfol"
SCHEMA_LOCK = WRITER_LOCK + 1

FTS_CONFIG = "hyperfolio_fts"
GRAPH_SPACES = ("entity", "hyperedge", "concept", "relation", "theme")

# Every text column sorts bytewise, as SQLite's BINARY collation does, whatever the database's locale:
# ORDER BY then gives the same order on both backends.
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
    + CLAIM_TABLE.format(time="DOUBLE PRECISION")
    + """CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_hash TEXT NOT NULL UNIQUE,
    num_pages INTEGER NOT NULL,
    meta JSONB NOT NULL DEFAULT '{}',
    added_at DOUBLE PRECISION NOT NULL,
    fts_rows INTEGER NOT NULL DEFAULT 0,
    fts_tokens BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS documents_source ON documents(source);
CREATE TABLE IF NOT EXISTS doc_status (
    doc_id TEXT PRIMARY KEY REFERENCES documents(doc_id) ON DELETE CASCADE,
    stage TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS pages (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    width DOUBLE PRECISION, height DOUBLE PRECISION,
    ocr BOOLEAN NOT NULL DEFAULT FALSE,
    vision_dominant BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (doc_id, number)
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    page INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    modality TEXT NOT NULL,
    text TEXT NOT NULL,
    bbox DOUBLE PRECISION[],
    section_path TEXT[] NOT NULL DEFAULT '{}',
    table_cells JSONB,
    table_header_rows INTEGER NOT NULL DEFAULT 0,
    caption TEXT,
    ocr_text TEXT,
    image_path TEXT,
    placeholder BOOLEAN NOT NULL DEFAULT FALSE,
    meta JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, page, ord);
-- Beside the chunks, as SQLite's chunks_fts is: a narrow table keeps GIN matches and counts cheap.
CREATE TABLE IF NOT EXISTS chunk_fts (
    chunk_id TEXT PRIMARY KEY REFERENCES chunks(chunk_id) ON DELETE CASCADE,
    doc_id TEXT NOT NULL,
    fts TSVECTOR NOT NULL,
    tf JSONB NOT NULL,
    fts_len INTEGER NOT NULL,
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY
);
CREATE INDEX IF NOT EXISTS chunk_fts_gin ON chunk_fts USING gin (fts);
CREATE INDEX IF NOT EXISTS chunk_fts_doc ON chunk_fts(doc_id);
-- Per word: how many chunks hold it (BM25's n) and the most it weighs in one (a bound for keyword_search).
CREATE TABLE IF NOT EXISTS fts_terms (
    lexeme TEXT PRIMARY KEY, chunks INTEGER NOT NULL, max_tf DOUBLE PRECISION NOT NULL DEFAULT 'Infinity'
);
CREATE TABLE IF NOT EXISTS vectors (
    space TEXT NOT NULL,
    item_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    vec VECTOR NOT NULL,
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY,
    PRIMARY KEY (space, item_id)
);
CREATE INDEX IF NOT EXISTS vectors_space_doc ON vectors(space, doc_id);
CREATE INDEX IF NOT EXISTS vectors_doc ON vectors(doc_id);
CREATE TABLE IF NOT EXISTS vector_spaces (
    space TEXT PRIMARY KEY,
    dim INTEGER NOT NULL,
    indexed BOOLEAN NOT NULL DEFAULT FALSE
);

CREATE TABLE IF NOT EXISTS entities (
    entity_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    norm_name TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    modality TEXT NOT NULL DEFAULT 'text',
    aliases TEXT[] NOT NULL DEFAULT '{}',
    meta JSONB NOT NULL DEFAULT '{}',
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY
);
CREATE INDEX IF NOT EXISTS entities_norm ON entities(norm_name);
CREATE TABLE IF NOT EXISTS hyperedges (
    edge_id TEXT PRIMARY KEY,
    level TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    keywords TEXT[] NOT NULL DEFAULT '{}',
    strength DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    meta JSONB NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS incidence (
    edge_id TEXT NOT NULL REFERENCES hyperedges(edge_id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(entity_id) ON DELETE CASCADE,
    role TEXT NOT NULL DEFAULT '',
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY,
    PRIMARY KEY (edge_id, entity_id, role)
);
CREATE INDEX IF NOT EXISTS incidence_entity ON incidence(entity_id);
CREATE TABLE IF NOT EXISTS provenance (
    item_kind TEXT NOT NULL CHECK (item_kind IN ('entity', 'hyperedge')),
    item_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    page INTEGER NOT NULL,
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY,
    PRIMARY KEY (item_kind, item_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS provenance_doc ON provenance(doc_id);
CREATE INDEX IF NOT EXISTS provenance_chunk ON provenance(chunk_id);
CREATE TABLE IF NOT EXISTS refine_state (
    anchor_id TEXT PRIMARY KEY,
    signature TEXT NOT NULL,
    edge_ids TEXT[] NOT NULL DEFAULT '{}',
    updated_at DOUBLE PRECISION NOT NULL
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
    seconds DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (doc_id, stage)
);

CREATE TABLE IF NOT EXISTS facts (
    edge_id TEXT PRIMARY KEY REFERENCES hyperedges(edge_id) ON DELETE CASCADE,
    head_id TEXT NOT NULL,
    relation TEXT NOT NULL,
    tail_id TEXT NOT NULL,
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY
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
    support INTEGER NOT NULL,
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY,
    PRIMARY KEY (head_id, relation, tail_id, doc_id)
);
CREATE INDEX IF NOT EXISTS concept_edges_tail ON concept_edges(tail_id);
CREATE INDEX IF NOT EXISTS concept_edges_doc ON concept_edges(doc_id);
CREATE TABLE IF NOT EXISTS concept_evidence (
    concept_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    entities INTEGER NOT NULL,
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY,
    PRIMARY KEY (concept_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS concept_evidence_doc ON concept_evidence(doc_id, concept_id);
CREATE TABLE IF NOT EXISTS conflict_log (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    doc_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    decision TEXT NOT NULL,
    fact TEXT NOT NULL,
    other TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL,
    evidence TEXT[] NOT NULL DEFAULT '{}',
    decided_by TEXT NOT NULL DEFAULT 'offline',
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS conflict_log_doc ON conflict_log(doc_id);
CREATE TABLE IF NOT EXISTS reconcile_stats (doc_id TEXT PRIMARY KEY, counts JSONB NOT NULL);
"""
)
SCHEMA = re.sub(r"\bTEXT\b(\[\])?", lambda m: m.group(0) + ' COLLATE "C"', _SCHEMA)

# Tables in an order that satisfies the foreign keys (copy_to fills them in it).
TABLES = (
    "meta",
    "documents",
    "doc_status",
    "pages",
    "chunks",
    "chunk_fts",
    "fts_terms",
    "vector_spaces",
    "vectors",
    "entities",
    "hyperedges",
    "incidence",
    "provenance",
    "refine_state",
    "model_builds",
    "stage_times",
    "facts",
    "concepts",
    "entity_concepts",
    "concept_edges",
    "concept_evidence",
    "conflict_log",
    "reconcile_stats",
    *MODEL_TABLES,
)
IDENTITY_COLUMNS = (
    ("chunk_fts", "seq"),
    ("vectors", "seq"),
    ("entities", "seq"),
    ("incidence", "seq"),
    ("provenance", "seq"),
    ("facts", "seq"),
    ("concept_edges", "seq"),
    ("concept_evidence", "seq"),
    ("conflict_log", "id"),
)

# --------------------------------------------------------------------------- tokens, as FTS5's unicode61 makes them
_WORD = re.compile(r"\w+", re.UNICODE)  # how sqlite.fts_query splits a question
_TOKEN = re.compile(r"[^\W_]+")  # unicode61: runs of letters and digits; '_' separates
_LATIN_MARKS = re.compile("[\u0300-\u036f]+")


def fts_tokens(text: str) -> list[str]:
    """Lower-cased runs of letters and digits, Latin diacritics removed (unicode61's remove_diacritics).

    Documents and questions are both tokenised here, not by the server's parser, whose words depend on
    its locale and which keeps '168.4' or 'north-sea' whole where unicode61 splits them.
    """
    decomposed = unicodedata.normalize("NFD", text.lower())
    return _TOKEN.findall(unicodedata.normalize("NFC", _LATIN_MARKS.sub("", decomposed)))


def query_terms(question: str) -> list[str]:
    """The question's search terms as `sqlite.fts_query` picks them (stop words dropped unless nothing
    else is left, each word once), each split into tokens as the documents were."""
    words = _WORD.findall(question.lower())
    kept = [w for w in words if w not in STOPWORDS] or words
    return [token for word in dict.fromkeys(kept) for token in fts_tokens(word)]


def _fts_row(c: Chunk) -> tuple[str, str, int, str, str]:
    """A chunk's keyword row (_FTS_INSERT's parameters): its text and heading tokens and its length in tokens."""
    heading = " / ".join(c.section_path)
    text_tokens, heading_tokens = fts_tokens(c.text), fts_tokens(heading)
    # FTS5 counts the doc_id column's tokens in a row's length too.
    length = len(text_tokens) + len(heading_tokens) + len(fts_tokens(c.doc_id))
    return (c.chunk_id, c.doc_id, length, " ".join(text_tokens), " ".join(heading_tokens))


def _clean(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL, which a broken PDF's text layer may contain."""
    return text.replace("\x00", "\ufffd") if text else text


_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")  # an escaped NUL, not an escaped backslash before "u0000"


def _dumps(value: Any) -> str:
    """JSON as SQLite's store writes it (unknown types as text); jsonb refuses NUL too."""
    return _JSON_NUL.sub(r"\1\\ufffd", json.dumps(value, default=str))


def _json(value: Any) -> Jsonb:
    return Jsonb(value, dumps=_dumps)


def redact(url: str) -> str:
    """The URL without its password, for messages and stats."""
    return re.sub(r"(//[^:/@]+):[^@/]*@", r"\1@", url)


# A chunk's words: the lexemes GIN matches (a stripped tsvector: positions are not needed once counted) and
# each word's frequency f as FTS5 weighs it (1 per occurrence in the text, 0.5 in the heading).
_FTS_INSERT = """
INSERT INTO chunk_fts(chunk_id, doc_id, fts_len, fts, tf)
SELECT %s, %s, %s, strip(v.fts), COALESCE((
    SELECT jsonb_object_agg(u.lexeme, (SELECT SUM(CASE w WHEN 'A' THEN 1.0 ELSE 0.5 END) FROM unnest(u.weights) AS w))
    FROM unnest(v.fts) AS u
), '{}')
FROM (
    SELECT setweight(to_tsvector('hyperfolio_fts', %s), 'A') || setweight(to_tsvector('hyperfolio_fts', %s), 'B') AS fts
) AS v
"""

# Each question term's lexeme and how many chunks hold it, and the collection's chunk count: enough to
# know, before scoring, which terms are rare (see `keyword_search`).
_TERM_STATS_SQL = """
SELECT s.lexeme, COALESCE(df.chunks, 0), COALESCE(df.max_tf, 0), (SELECT COALESCE(SUM(fts_rows), 0) FROM documents)
FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(term, ord)
CROSS JOIN LATERAL unnest(to_tsvector('hyperfolio_fts', t.term)) AS s
LEFT JOIN fts_terms df ON df.lexeme = s.lexeme
ORDER BY t.ord
"""

# How many chunks hold each word (BM25's n), kept per word as FTS5's index keeps it, so the IDF is a look-up.
_TERMS_ADD = """
INSERT INTO fts_terms(lexeme, chunks, max_tf)
SELECT key, count(*), max(value::float8) FROM chunk_fts CROSS JOIN LATERAL jsonb_each_text(tf) AS t(key, value)
WHERE doc_id = %s GROUP BY key
ON CONFLICT (lexeme) DO UPDATE
SET chunks = fts_terms.chunks + excluded.chunks, max_tf = GREATEST(fts_terms.max_tf, excluded.max_tf)
"""
_TERMS_REMOVE = """
UPDATE fts_terms t SET chunks = t.chunks - gone.n FROM (
    SELECT key, count(*) AS n FROM chunk_fts CROSS JOIN LATERAL jsonb_object_keys(tf) AS key
    WHERE doc_id = %s GROUP BY key
) AS gone WHERE t.lexeme = gone.key
"""

# BM25 over the chunk_fts rows, as FTS5's bm25(chunks_fts, 0, 0, 1.0, 0.5) computes it: k1 = 1.2, b = 0.75,
# IDF = max(ln((N - n + 0.5) / (n + 0.5)), 1e-6) with N and n over all chunks of every stage, f as above,
# |D| and avgdl in tokens of text, heading and doc id. Each question word counts once per occurrence in the
# question's term list, as each FTS5 phrase does, even when two words share a stem.
_KEYWORD_SQL = """
WITH terms AS MATERIALIZED (
    SELECT t.ord, s.lexeme
    FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(term, ord)
    CROSS JOIN LATERAL unnest(to_tsvector('hyperfolio_fts', t.term)) AS s
),
question AS MATERIALIZED (
    SELECT string_agg(DISTINCT quote_literal(lexeme), ' | ')::tsquery AS q FROM terms
    WHERE %(match)s::text[] IS NULL OR lexeme = ANY(%(match)s::text[])
),
totals AS MATERIALIZED (
    SELECT COALESCE(SUM(fts_rows), 0)::float8 AS n,
           GREATEST(COALESCE(SUM(fts_tokens), 0)::float8 / GREATEST(COALESCE(SUM(fts_rows), 0), 1), 1e-9) AS avgdl
    FROM documents
),
idf AS MATERIALIZED (
    SELECT terms.lexeme, totals.avgdl,
           GREATEST(ln((totals.n - COALESCE(df.chunks, 0) + 0.5) / (COALESCE(df.chunks, 0) + 0.5)), 1e-6) AS idf
    FROM terms CROSS JOIN totals LEFT JOIN fts_terms df ON df.lexeme = terms.lexeme
),
scored AS (
    SELECT f.chunk_id, f.seq, (
        SELECT SUM(i.idf * (x.f * 2.2) / (x.f + 1.2 * (0.25 + 0.75 * f.fts_len / i.avgdl)))
        FROM idf i CROSS JOIN LATERAL (SELECT (f.tf ->> i.lexeme)::float8 AS f) AS x
        WHERE x.f IS NOT NULL
    ) AS score
    FROM chunk_fts f, question
    WHERE f.fts @@ question.q AND f.doc_id IN (SELECT doc_id FROM doc_status WHERE stage = %(ready)s) {scope}
)
SELECT chunk_id, score FROM scored ORDER BY score DESC, seq LIMIT %(k)s
"""

# The integrity checks of this backend's own tables (store/integrity.py): the keyword index, found by its
# primary key; its counts (rows and tokens per document, chunks per word), which BM25 reads instead of
# counting; and the spaces vector search looks up before it searches.
KEYWORD_CHECKS = keyword_checks("chunk_fts", "NOT EXISTS (SELECT 1 FROM chunk_fts f WHERE f.chunk_id = k.chunk_id)")
_WORD_COUNTS = (
    '(SELECT COALESCE(t.lexeme, a.lexeme) AS lexeme FROM fts_terms t FULL JOIN (SELECT key COLLATE "C" AS lexeme,'
    " COUNT(*) AS n FROM chunk_fts CROSS JOIN LATERAL jsonb_object_keys(tf) AS key GROUP BY 1) a"
    " ON a.lexeme = t.lexeme WHERE COALESCE(t.chunks, 0) <> COALESCE(a.n, 0)) AS w"
)
KEYWORD_STATS_CHECK = SqlCheck(
    "keyword_stats",
    (
        Dangling(
            "documents AS d",
            "'document ' || d.doc_id",
            "d.fts_rows <> (SELECT COUNT(*) FROM chunk_fts f WHERE f.doc_id = d.doc_id)"
            " OR d.fts_tokens <> (SELECT COALESCE(SUM(f.fts_len), 0) FROM chunk_fts f WHERE f.doc_id = d.doc_id)",
        ),
        Dangling(_WORD_COUNTS, "'word ' || w.lexeme", "TRUE"),
    ),
    repair=(),
)
_UNREGISTERED = "NOT EXISTS (SELECT 1 FROM vector_spaces vs WHERE vs.space = {}.space)"
VECTOR_SPACE_CHECK = SqlCheck(
    "unregistered_vector_spaces",
    (Dangling("(SELECT DISTINCT space FROM vectors) AS s", "s.space", _UNREGISTERED.format("s")),),
    repair=(
        "INSERT INTO vector_spaces(space, dim) SELECT v.space, MAX(vector_dims(v.vec)) FROM vectors v"
        f" WHERE {_UNREGISTERED.format('v')} GROUP BY v.space",
    ),
)
CHECKS = (*INTEGRITY_CHECKS, VECTOR_SPACE_CHECK, *KEYWORD_CHECKS, KEYWORD_STATS_CHECK)


class PostgresStore:
    """A collection's store in a PostgreSQL database (with the pgvector extension).

    One connection per store object, used under a lock as SQLite's is; other processes (or other
    store objects) on the same database are safe: writers queue on an advisory lock, readers see
    committed state.
    """

    def __init__(self, url: str) -> None:
        self.url = self.location = url
        self._lock = threading.RLock()
        self._closed = False
        self._deferred = 0  # inside bulk(): vector indexes wait for its end
        self._db = self._connect()
        self._create_schema()

    # ------------------------------------------------------------------ plumbing
    def _connect(self) -> psycopg.Connection:
        try:
            db = psycopg.connect(self.url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {redact(self.url)}: {exc}") from exc
        try:
            if db.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
                register_vector(db)
        except psycopg.Error as exc:
            db.close()
            raise StoreError(f"{redact(self.url)}: {exc}") from exc
        return db

    def _existing_schema_version(self) -> str | None:
        (exists,) = self._db.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone() or (False,)
        if not exists:
            return None
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return row[0] if row else None

    def _create_schema(self) -> None:
        """Tables, the text search configuration and the vector extension, created once by whoever comes first."""
        try:
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                newer_than_this(self._existing_schema_version(), SCHEMA_VERSION, redact(self.url))
                self._db.execute("CREATE EXTENSION IF NOT EXISTS vector")
                exists = "SELECT 1 FROM {} WHERE {} = %s AND {} = current_schema()::regnamespace"
                if not self._db.execute(
                    exists.format("pg_ts_dict", "dictname", "dictnamespace"), ("hyperfolio_porter",)
                ).fetchone():
                    # Snowball's "porter" is Porter's original algorithm, the one FTS5's porter tokenizer implements.
                    self._db.execute(
                        "CREATE TEXT SEARCH DICTIONARY hyperfolio_porter (TEMPLATE = snowball, LANGUAGE = porter)"
                    )
                if not self._db.execute(
                    exists.format("pg_ts_config", "cfgname", "cfgnamespace"), (FTS_CONFIG,)
                ).fetchone():
                    # Words are stemmed, numbers kept as they are, no stop words (FTS5 has none either).
                    self._db.execute(f"CREATE TEXT SEARCH CONFIGURATION {FTS_CONFIG} (COPY = simple)")
                    self._db.execute(
                        f"ALTER TEXT SEARCH CONFIGURATION {FTS_CONFIG} ALTER MAPPING FOR asciiword, word, numword,"
                        " asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart"
                        " WITH hyperfolio_porter"
                    )
                self._db.execute(SCHEMA)
                # Collections made before fts_terms kept each word's highest weight: unknown, so unbounded.
                # (Looked up first: ALTER TABLE would lock the table even when there is nothing to add.)
                if not self._db.execute(
                    "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
                    " AND table_name = 'fts_terms' AND column_name = 'max_tf'"
                ).fetchone():
                    self._db.execute(
                        "ALTER TABLE fts_terms ADD COLUMN max_tf DOUBLE PRECISION NOT NULL DEFAULT 'Infinity'"
                    )
                for statement in MODEL_SCHEMA:
                    self._db.execute(statement)
                add_missing_usage_columns(self._db)  # counters newer than the collection (copies need them)
                self._db.execute(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', %s) ON CONFLICT (key) DO NOTHING",
                    (SCHEMA_VERSION,),
                )
            register_vector(self._db)
            found = self._db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        except StoreError:  # written by a newer release: refused, nothing changed
            self._db.close()
            raise
        except psycopg.Error as exc:
            self._db.close()
            raise StoreError(f"cannot create the collection's tables in {redact(self.url)}: {exc}") from exc
        # pgvector 0.8 scans an HNSW index on until k rows pass the filters; older ones stop at ef_search rows.
        version = tuple(int(p) for p in re.findall(r"\d+", found[0] if found else "")[:2])
        self._iterative_scan = version >= (0, 8)

    def _conn(self) -> psycopg.Connection:
        """The connection, opened again if the server dropped it (a restart, an idle timeout)."""
        if self._closed:
            raise StoreError("the store is closed")
        if self._db.broken or self._db.closed:
            self._db = self._connect()
        return self._db

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Cursor]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        with self._lock:
            db = self._conn()
            with db.transaction(), db.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
                yield cur

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Store calls inside join this transaction (psycopg nests theirs as savepoints)."""
        with self.transaction():
            yield

    def _query(self, query: Any, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple]:
        """Rows of one read; run again on a new connection if the server had dropped this one."""
        with self._lock:
            try:
                return self._conn().execute(query, params).fetchall()
            except psycopg.OperationalError:
                if not self._db.broken:
                    raise
            return self._conn().execute(query, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._db.close()

    def claim(self, key: str, owner: str, seconds: float, dead: str = "") -> str | None:
        """As SQLite's, timed by the server's clock (workers on several machines need not agree on the time)."""
        with self.transaction() as cur:
            (now,) = cur.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone() or (0.0,)
            cur.execute(pg(CLAIM), (key, owner, now + seconds, now, dead))
            (holder,) = cur.execute("SELECT owner FROM claims WHERE key = %s", (key,)).fetchone() or (owner,)
        return None if holder == owner else holder

    def release(self, key: str, owner: str) -> None:
        with self.transaction() as cur:
            cur.execute("DELETE FROM claims WHERE key = %s AND owner = %s", (key, owner))

    def claim_holders(self, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        keys = list(dict.fromkeys(keys))
        (now,) = self._query("SELECT extract(epoch FROM clock_timestamp())::float8")[0]
        return dict(self._query(pg(LIVE_CLAIMS.format(marks=",".join("?" * len(keys)))), (now, *keys)))

    def meta_items(self) -> dict[str, str]:
        return dict(self._query("SELECT key, value FROM meta ORDER BY key"))

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = %s", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # ------------------------------------------------------------------ documents
    def write_document(self, doc: Document) -> None:
        try:
            self._write_document(doc)
        except psycopg.errors.UniqueViolation as exc:
            raise DuplicateDocument(f"{doc.source}: its content is in the collection already ({exc})") from exc

    def _write_document(self, doc: Document) -> None:
        now = time.time()
        chunks = doc.chunks
        fts = [_fts_row(c) for c in chunks]
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO documents(doc_id, source, title, kind, content_hash, num_pages, meta, added_at,"
                " fts_rows, fts_tokens) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    doc.doc_id,
                    doc.source,
                    _clean(doc.title),
                    doc.kind,
                    doc.content_hash,
                    len(doc.pages),
                    _json(doc.meta),
                    doc.added_at or now,
                    len(fts),
                    sum(row[2] for row in fts),
                ),
            )
            cur.executemany(
                "INSERT INTO pages(doc_id, number, width, height, ocr, vision_dominant)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                [(doc.doc_id, p.number, p.width, p.height, bool(p.ocr), bool(p.vision_dominant)) for p in doc.pages],
            )
            cur.executemany(
                "INSERT INTO chunks(chunk_id, doc_id, page, ord, modality, text, bbox, section_path, table_cells,"
                " table_header_rows, caption, ocr_text, image_path, placeholder, meta)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [_chunk_row(c) for c in chunks],
            )
            cur.executemany(_FTS_INSERT, fts)
            cur.execute(_TERMS_ADD, (doc.doc_id,))
            cur.execute(
                "INSERT INTO doc_status(doc_id, stage, updated_at) VALUES (%s, %s, %s)", (doc.doc_id, STAGE_PARSED, now)
            )

    def set_stage(self, doc_id: str, stage: str) -> None:
        with self.transaction() as cur:
            cur.execute(
                "UPDATE doc_status SET stage = %s, updated_at = %s WHERE doc_id = %s", (stage, time.time(), doc_id)
            )
            if not cur.rowcount:
                raise StoreError(f"document {doc_id} is no longer in the collection")

    def list_documents(self) -> list[DocumentInfo]:
        return [_info(r) for r in self._query(DOCUMENTS_IN_ORDER)]

    def unfinished_documents(self) -> list[DocumentInfo]:
        return [_info(r) for r in self._query(UNFINISHED_SELECT)]

    def titles(self) -> dict[str, str]:
        return dict(self._query(TITLES))

    def get_document(self, doc_id: str) -> DocumentInfo | None:
        rows = self._query(DOC_SELECT + " WHERE d.doc_id = %s", (doc_id,))
        return _info(rows[0]) if rows else None

    def document_by_hash(self, content_hash: str) -> DocumentInfo | None:
        rows = self._query(DOC_SELECT + " WHERE d.content_hash = %s", (content_hash,))
        return _info(rows[0]) if rows else None

    def documents_by_source(self, source: str) -> list[DocumentInfo]:
        rows = self._query(DOC_SELECT + " WHERE d.source = %s ORDER BY d.added_at, d.doc_id", (source,))
        return [_info(r) for r in rows]

    def remove_document(self, doc_id: str) -> None:
        """Delete a document, its chunks and vectors, and hypergraph items only it supported."""
        with self.transaction() as cur:
            cur.execute(_TERMS_REMOVE, (doc_id,))
            cur.execute("DELETE FROM fts_terms WHERE chunks <= 0")
            for table in ("stage_times", "vectors", "chunks", "pages", "doc_status", "documents"):
                cur.execute(f"DELETE FROM {table} WHERE doc_id = %s", (doc_id,))  # chunk_fts goes with chunks
            self._drop_graph_of(cur, doc_id)

    def clear_document_graph(self, doc_id: str) -> None:
        """Forget what one document contributed to the hypergraph (its chunks and their vectors stay),
        so that rebuilding it adds nothing twice and keeps nothing of the old build."""
        with self.transaction() as cur:
            cur.execute(
                "DELETE FROM vectors WHERE doc_id = %s AND space = ANY(%s::text[])", (doc_id, list(GRAPH_SPACES))
            )
            self._drop_graph_of(cur, doc_id)

    @staticmethod
    def _drop_graph_of(cur: psycopg.Cursor, doc_id: str) -> None:
        # Anchors of this document are refined again: edges they spread into other documents lose members.
        cur.execute(
            "UPDATE refine_state SET signature = '' WHERE anchor_id IN"
            " (SELECT item_id FROM provenance WHERE item_kind = 'entity' AND doc_id = %s)",
            (doc_id,),
        )
        cur.execute("DELETE FROM provenance WHERE doc_id = %s", (doc_id,))
        for table in ("concept_edges", "concept_evidence", "conflict_log", "reconcile_stats", "model_builds"):
            cur.execute(f"DELETE FROM {table} WHERE doc_id = %s", (doc_id,))
        # Hypergraph items left without any provenance were supported only by this document.
        cur.execute(
            "DELETE FROM hyperedges h WHERE NOT EXISTS"
            " (SELECT 1 FROM provenance p WHERE p.item_kind = 'hyperedge' AND p.item_id = h.edge_id)"
        )
        cur.execute(
            "DELETE FROM entities e WHERE NOT EXISTS"
            " (SELECT 1 FROM provenance p WHERE p.item_kind = 'entity' AND p.item_id = e.entity_id)"
        )
        # Incidence and entity_concepts rows go with their entities and hyperedges (ON DELETE CASCADE).
        cur.execute(
            "DELETE FROM refine_state r WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.entity_id = r.anchor_id)"
        )
        cur.execute(
            "DELETE FROM concepts c WHERE NOT EXISTS"
            " (SELECT 1 FROM entity_concepts ec WHERE ec.concept_id = c.concept_id)"
        )

    # ------------------------------------------------------------------ chunks
    _CHUNK_SELECT = (
        "SELECT chunk_id, doc_id, page, ord, modality, text, bbox, section_path, table_cells,"
        " table_header_rows, caption, ocr_text, image_path, placeholder, meta FROM chunks"
    )

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        rows = self._query(self._CHUNK_SELECT + " WHERE chunk_id = ANY(%s::text[])", (list(dict.fromkeys(chunk_ids)),))
        found = {r[0]: _row_chunk(r) for r in rows}
        return [found[i] for i in chunk_ids if i in found]

    def annotate_chunk(self, chunk_id: str, key: str, value: Any) -> None:
        """Set one key of a chunk's metadata (e.g. a vision model's description of a figure)."""
        with self.transaction() as cur:
            cur.execute(
                "UPDATE chunks SET meta = jsonb_set(meta, ARRAY[%s::text], %s) WHERE chunk_id = %s",
                (key, _json(value), chunk_id),
            )

    def iter_chunks(self, doc_id: str | None = None) -> Iterable[Chunk]:
        if doc_id is None:
            rows = self._query(self._CHUNK_SELECT + " ORDER BY doc_id, page, ord")
        else:
            rows = self._query(self._CHUNK_SELECT + " WHERE doc_id = %s ORDER BY page, ord", (doc_id,))
        return [_row_chunk(r) for r in rows]

    def page_chunk_texts(self, pages: Sequence[tuple[str, int]]) -> dict[tuple[str, int], list[tuple[str, str]]]:
        """The (chunk_id, text) of every chunk on each (doc_id, page), in reading order."""
        by_doc: dict[str, set[int]] = {}
        for doc, page in pages:
            by_doc.setdefault(doc, set()).add(page)
        out: dict[tuple[str, int], list[tuple[str, str]]] = {}
        for doc, numbers in by_doc.items():
            rows = self._query(
                "SELECT page, chunk_id, text FROM chunks WHERE doc_id = %s AND page = ANY(%s::int[])"
                " ORDER BY page, ord",
                (doc, sorted(numbers)),
            )
            for page, chunk_id, text in rows:
                out.setdefault((doc, int(page)), []).append((chunk_id, text))
        return out

    def get_pages(self, doc_id: str) -> list[Page]:
        return [page_of(r) for r in self._query(pg(PAGE_SELECT), (doc_id,))]

    def count_chunks(self, doc_id: str | None = None) -> int:
        if doc_id is None:
            return int(self._query("SELECT COUNT(*) FROM chunks")[0][0])
        return int(self._query("SELECT COUNT(*) FROM chunks WHERE doc_id = %s", (doc_id,))[0][0])

    # ------------------------------------------------------------------ keyword search
    def keyword_search(self, query: str, k: int, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """BM25 over chunk text and headings of fully indexed documents, as SQLite's FTS5 ranks them.

        The formula, its constants, the column weights, N, avgdl and the IDF floor are FTS5's, and the
        question is split into the same OR of terms (`query_terms`), so scores agree with SQLite's to
        rounding when tokens and stems agree. They can differ because: words are stemmed by Snowball's
        Porter, which stems words of one or two letters ('us' -> 'u') that FTS5 leaves alone; tokens come
        from `fts_tokens` (Unicode letters and digits, Latin diacritics removed), close to but not exactly
        unicode61's categories, and the server's parser may still drop a token it does not see as a word
        ('²'); a tsvector keeps at most 256 positions per word and none past 16,383, so a term's
        frequency in a very long chunk is capped; a question word that splits into several tokens
        ('foo_bar') is searched as separate terms where FTS5 searches the phrase.
        """
        terms = query_terms(query)
        if not terms or k < 1:
            return []
        params: dict[str, Any] = {"terms": terms, "ready": STAGE_READY, "k": k, "match": None}
        scope = ""
        if doc_ids:
            scope, params["docs"] = "AND f.doc_id = ANY(%(docs)s::text[])", list(doc_ids)
        statement = _KEYWORD_SQL.replace("{scope}", scope)
        try:
            # Score first only the chunks holding the rarest terms; exact once k of them score above what a
            # chunk holding none of those terms could (MaxScore's argument); else take the next rarest term.
            for rare, bound in self._rare_term_steps(terms):
                params["match"] = rare
                rows = self._query(statement, params)
                if len(rows) == k and float(rows[-1][1]) > bound * (1 + 1e-9) + 1e-12:
                    return [(r[0], float(r[1])) for r in rows]
            params["match"] = None
            rows = self._query(statement, params)
        except psycopg.Error as exc:
            raise StoreError(f"keyword search failed for {query!r}: {exc}") from exc
        return [(r[0], float(r[1])) for r in rows]

    def _rare_term_steps(self, terms: list[str]) -> list[tuple[list[str], float]]:
        """Growing sets of the question's rarest lexemes (at most RARE_TERM_STEPS, each scoring at most
        RARE_TERM_CHUNKS chunks more than the last), each with the most a chunk holding none of them can
        score: per other term, its IDF times BM25's term factor at the term's highest weight in any chunk
        and the shortest possible chunk. [] when scoring every match costs about as much.
        """
        stats = self._query(_TERM_STATS_SQL, {"terms": terms})
        if len(stats) < 2:
            return []
        total = float(stats[0][3])
        frequency = {lexeme: int(df) for lexeme, df, _, _ in stats}
        ceiling: dict[str, float] = {}
        for lexeme, df, max_tf, _ in stats:
            idf = max(math.log((max(total - df, 0.0) + 0.5) / (df + 0.5)), 1e-6)
            f = float(max_tf)
            factor = 2.2 if math.isinf(f) else f * 2.2 / (f + 1.2 * 0.25)  # k1 + 1 over f + k1 (1 - b)
            ceiling[lexeme] = ceiling.get(lexeme, 0.0) + idf * factor  # a word twice in the question counts twice
        order = sorted(frequency, key=lambda x: (frequency[x], x))
        steps: list[tuple[list[str], float]] = []
        covered = 0
        for end in range(1, len(order)):
            covered += frequency[order[end - 1]]
            if len(steps) == RARE_TERM_STEPS or (steps and covered > RARE_TERM_CHUNKS * (len(steps) + 1)):
                break
            steps.append((order[:end], sum(ceiling[x] for x in order[end:])))
        return steps

    # ------------------------------------------------------------------ vectors
    def put_vectors(self, space: str, items: Sequence[tuple[str, str]], vectors: np.ndarray) -> None:
        """Store vectors for (item_id, doc_id) pairs in one transaction.

        The first vectors of a space fix its dimension. Once a space holds more than `EXACT_SEARCH_MAX`
        vectors it gets an HNSW index of its own: a partial index over `vec::vector(dim)` for that space,
        with inner-product ops (the score SQLite computes; for the L2-normalised embeddings it is the cosine
        and ranks exactly as cosine ops would). One untyped column and an index per space, rather than a
        `vector(n)` table per space, keeps one schema whatever spaces and models a collection uses, and
        small spaces never pay for an index they do not need.
        """
        if len(items) != len(vectors):
            raise ValueError("items and vectors differ in length")
        if not len(items):
            return
        data = np.asarray(vectors, dtype=np.float32)
        dim = int(data.shape[1])
        with self.transaction() as cur:
            self._claim_space(cur, space, dim)
            cur.executemany(
                "INSERT INTO vectors(space, item_id, doc_id, vec) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (space, item_id) DO UPDATE SET doc_id = excluded.doc_id, vec = excluded.vec,"
                " seq = excluded.seq",  # a replaced vector counts as new, as SQLite's INSERT OR REPLACE does
                [(space, item_id, doc_id, data[i]) for i, (item_id, doc_id) in enumerate(items)],
            )
            self._index_if_large(cur, space, dim)

    def _claim_space(self, cur: psycopg.Cursor, space: str, dim: int) -> None:
        row = cur.execute("SELECT dim FROM vector_spaces WHERE space = %s", (space,)).fetchone()
        if row is not None and row[0] == dim:
            return
        if row is not None:
            if cur.execute("SELECT 1 FROM vectors WHERE space = %s LIMIT 1", (space,)).fetchone():
                raise StoreError(f"vector space {space!r} holds {row[0]}-dimensional vectors, not {dim}-dimensional")
            cur.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(_index_name(space))))
        cur.execute(
            "INSERT INTO vector_spaces(space, dim, indexed) VALUES (%s, %s, FALSE)"
            " ON CONFLICT (space) DO UPDATE SET dim = excluded.dim, indexed = FALSE",
            (space, dim),
        )

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A large load: a space that outgrows exact search during the block gets its HNSW index once, at
        the end, rather than being kept up insert by insert (an index built over the loaded rows takes a
        fraction of the time); readers meanwhile search it exactly. An index that exists stays up to date."""
        with self._lock:
            self._deferred += 1
        try:
            yield
        except BaseException:  # interrupted: the next bulk load's end (or build_indexes) builds them
            with self._lock:
                self._deferred -= 1
            raise
        with self._lock:
            self._deferred -= 1
            if not self._deferred:
                self.build_indexes()

    def build_indexes(self) -> None:
        """Give every space past the exact-search limit its index (the ones a bulk load deferred)."""
        with self.transaction() as cur:
            spaces = cur.execute("SELECT space, dim FROM vector_spaces WHERE NOT indexed ORDER BY space").fetchall()
            for space, dim in spaces:
                self._index_if_large(cur, space, dim)

    def _index_if_large(self, cur: psycopg.Cursor, space: str, dim: int) -> None:
        if self._deferred:
            return
        row = cur.execute("SELECT indexed FROM vector_spaces WHERE space = %s", (space,)).fetchone()
        if row is None or row[0] or dim > HNSW_MAX_DIM or self._count_upto(cur, space, None) <= EXACT_SEARCH_MAX:
            return
        # pgvector builds fastest when the graph fits in maintenance memory (a million 384-d vectors: about 2 GB).
        cur.execute(f"SET LOCAL maintenance_work_mem = '{INDEX_BUILD_MEMORY}'")
        cur.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON vectors USING hnsw ((vec::vector({})) vector_ip_ops) WHERE space = {}"
            ).format(sql.Identifier(_index_name(space)), sql.Literal(dim), sql.Literal(space))
        )
        cur.execute("UPDATE vector_spaces SET indexed = TRUE WHERE space = %s", (space,))
        cur.execute("ANALYZE vectors")  # so the planner knows the space is large now and takes the index

    @staticmethod
    def _count_upto(cur: psycopg.Cursor, space: str, doc_ids: Sequence[str] | None) -> int:
        """How many vectors the space (within the documents) holds, counted no further than one past the limit."""
        scope, params = "", list[Any]([space])
        if doc_ids:
            scope, params = " AND doc_id = ANY(%s::text[])", [space, list(doc_ids)]
        row = cur.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM vectors WHERE space = %s{scope} LIMIT %s) AS upto",
            [*params, EXACT_SEARCH_MAX + 1],
        ).fetchone()
        return int(row[0]) if row else 0

    def missing_vectors(self, space: str, doc_id: str) -> list[Chunk]:
        rows = self._query(
            self._CHUNK_SELECT + " c WHERE c.doc_id = %s AND NOT EXISTS (SELECT 1 FROM vectors v"
            " WHERE v.space = %s AND v.doc_id = %s AND v.item_id = c.chunk_id) ORDER BY c.page, c.ord",
            (doc_id, space, doc_id),
        )
        return [_row_chunk(r) for r in rows]

    def iter_vectors(self, space: str) -> Iterable[tuple[str, str, np.ndarray]]:
        rows = self._query("SELECT item_id, doc_id, vec FROM vectors WHERE space = %s ORDER BY seq", (space,))
        return [(item, doc, np.asarray(vec.to_numpy(), dtype=np.float32)) for item, doc, vec in rows]

    def prune_vectors(self, space: str, doc_id: str, keep: Sequence[str]) -> int:
        with self.transaction() as cur:
            cur.execute(
                "DELETE FROM vectors WHERE space = %s AND doc_id = %s AND NOT (item_id = ANY(%s::text[]))",
                (space, doc_id, list(keep)),
            )
            return cur.rowcount

    def clear_vectors(self, space: str) -> None:
        with self.transaction() as cur:
            cur.execute("DELETE FROM vectors WHERE space = %s", (space,))
            cur.execute("DELETE FROM vector_spaces WHERE space = %s", (space,))
            cur.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(_index_name(space))))

    def vector_search(
        self, space: str, vector: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k items of a space most similar to `vector` (inner product, as SQLite scores), best first.

        Only documents whose stage is `ready` are searched, optionally only `doc_ids`. Exact (every
        vector scored) unless the space has an HNSW index and the search covers more than
        `EXACT_SEARCH_MAX` vectors; then approximate, with pgvector's iterative scan in strict order
        so the ready and scope filters still fill k.
        """
        if k < 1:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        docs = list(doc_ids) if doc_ids else None
        try:
            with self._lock:
                db = self._conn()
                found = db.execute("SELECT dim, indexed FROM vector_spaces WHERE space = %s", (space,)).fetchone()
                if found is None:
                    return []
                dim, indexed = found
                with db.transaction(), db.cursor() as cur:
                    # An indexed space holds more than the limit; a scope may hold fewer (then exact is exact and fast).
                    approximate = (
                        indexed
                        and k <= HNSW_MAX_EF
                        and (docs is None or self._count_upto(cur, space, docs) > EXACT_SEARCH_MAX)
                    )
                    statement, params = self._nearest(cur, space, dim if approximate else None, query, k, docs)
                    rows = cur.execute(statement, params).fetchall()
        except psycopg.DataError as exc:
            raise StoreError(f"vector search in {space!r} failed: {exc}") from exc
        return [(r[0], float(r[1])) for r in rows]

    def vector_search_many(
        self, space: str, vectors: np.ndarray, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """One nearest-neighbour statement per vector: the server reads each from its index or table."""
        return [self.vector_search(space, vector, k, doc_ids) for vector in vectors]

    def _nearest(
        self, cur: psycopg.Cursor, space: str, hnsw_dim: int | None, query: np.ndarray, k: int, docs: list[str] | None
    ) -> tuple[sql.Composed, list[Any]]:
        """The nearest-neighbour statement: an exact scan, or (given the index's dimension) the HNSW index.

        The index is a partial expression index, so the statement names the space and the cast literally
        (a parameter would hide them from the planner), and this transaction is told to take it: right
        after a bulk load the planner may still cost a scan and sort as cheaper.
        """
        ready = sql.SQL("v.doc_id IN (SELECT doc_id FROM doc_status WHERE stage = %s)")
        scope = sql.SQL(" AND v.doc_id = ANY(%s::text[])" if docs else "")
        tail: list[Any] = [STAGE_READY, *([docs] if docs else [])]
        if hnsw_dim is None:
            statement = sql.SQL(
                "SELECT v.item_id, -(v.vec <#> %s) FROM vectors v WHERE v.space = %s AND {ready}{scope}"
                " ORDER BY v.vec <#> %s, v.seq LIMIT %s"
            ).format(ready=ready, scope=scope)
            return statement, [query, space, *tail, query, k]
        settings = [("enable_seqscan", "off"), ("enable_sort", "off")]
        if self._iterative_scan:
            settings += [("hnsw.ef_search", str(max(40, k))), ("hnsw.iterative_scan", "strict_order")]
        else:  # without iterative scans, a wider beam leaves room for the rows the filters drop
            settings += [("hnsw.ef_search", str(min(HNSW_MAX_EF, max(40, 4 * k))))]
        for name, value in settings:
            cur.execute("SELECT set_config(%s, %s, true)", (name, value))
        distance = sql.SQL("(v.vec::vector({dim})) <#> %s::vector({dim})").format(dim=sql.Literal(hnsw_dim))
        statement = sql.SQL(
            "SELECT v.item_id, -({distance}) FROM vectors v WHERE v.space = {space} AND {ready}{scope}"
            " ORDER BY {distance} LIMIT %s"
        ).format(distance=distance, space=sql.Literal(space), ready=ready, scope=scope)
        return statement, [query, *tail, query, k]

    def vector_scores(self, space: str, vector: np.ndarray, item_ids: Sequence[str]) -> dict[str, float]:
        """Similarity of `vector` to the stored vectors of these items (items without one are left out)."""
        if not item_ids:
            return {}
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        try:
            rows = self._query(
                "SELECT v.item_id, -(v.vec <#> %s) FROM vectors v WHERE v.space = %s AND v.item_id = ANY(%s::text[])"
                " AND v.doc_id IN (SELECT doc_id FROM doc_status WHERE stage = %s)",
                (query, space, list(dict.fromkeys(item_ids)), STAGE_READY),
            )
        except psycopg.DataError as exc:
            raise StoreError(f"vector scores in {space!r} failed: {exc}") from exc
        found = {r[0]: float(r[1]) for r in rows}
        return {item: found[item] for item in dict.fromkeys(item_ids) if item in found}

    # ------------------------------------------------------------------ hypergraph
    def write_graph(
        self,
        entities: Sequence[tuple[Entity, Sequence[str]]],
        edges: Sequence[tuple[Hyperedge, Sequence[str]]],
        max_description_chars: int = 600,
    ) -> None:
        """Upsert entities (descriptions and aliases pooled), add hyperedges, incidence and provenance.

        Idempotent: writing the same graph twice changes nothing, so a resumed build is safe.
        """
        with self.transaction() as cur:
            ids = list(dict.fromkeys(e.entity_id for e, _ in entities))
            existing = {
                r[0]: r
                for r in cur.execute(
                    "SELECT entity_id, description, aliases, modality FROM entities WHERE entity_id = ANY(%s::text[])",
                    (ids,),
                ).fetchall()
            }
            rows = []
            for entity, _ in entities:
                description, aliases, modality = entity.description, list(entity.aliases), entity.modality
                old = existing.get(entity.entity_id)
                if old is not None:
                    if description and description not in old[1] and len(old[1]) < max_description_chars:
                        description = (old[1] + " | " + description)[:max_description_chars] if old[1] else description
                    else:
                        description = old[1]
                    aliases = list(dict.fromkeys(list(old[2]) + aliases))
                    modality = old[3] if old[3] != "text" else modality
                norm = entity.norm_name or normalize_name(entity.name)
                rows.append((entity.entity_id, entity.name, norm, entity.type, description, modality, aliases))
            cur.executemany(
                "INSERT INTO entities(entity_id, name, norm_name, type, description, modality, aliases)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s::text[]) ON CONFLICT (entity_id) DO UPDATE SET"
                " description = excluded.description, aliases = excluded.aliases, modality = excluded.modality",
                rows,
            )
            cur.executemany(
                "INSERT INTO hyperedges(edge_id, level, description, keywords, strength)"
                " VALUES (%s, %s, %s, %s::text[], %s) ON CONFLICT (edge_id) DO NOTHING",
                [(h.edge_id, h.level, h.description, list(h.keywords), h.strength) for h, _ in edges],
            )
            cur.executemany(
                "INSERT INTO incidence(edge_id, entity_id, role) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(h.edge_id, eid, role) for h, _ in edges for eid, role in h.members],
            )
            named = [(e.entity_id, concept_id(e.concept), e.concept) for e, _ in entities if e.concept]
            cur.executemany(pg(ENTITY_CONCEPT_INSERT), [(e, c) for e, c, _ in named])
            cur.executemany(pg(CONCEPT_INSERT), [(n, e, c) for e, c, n in named])
            cur.executemany(
                "INSERT INTO facts(edge_id, head_id, relation, tail_id) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [(h.edge_id, h.members[0][0], h.relation, h.members[1][0]) for h, _ in edges if h.relation],
            )
            prov = [("entity", e.entity_id, c) for e, chunks in entities for c in chunks]
            prov += [("hyperedge", h.edge_id, c) for h, chunks in edges for c in chunks]
            cur.executemany(
                "INSERT INTO provenance(item_kind, item_id, chunk_id, doc_id, page) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                [(kind, item, c, *chunk_doc_page(c)) for kind, item, c in prov],
            )

    def delete_hyperedges(self, edge_ids: Sequence[str]) -> None:
        if not edge_ids:
            return
        ids = list(dict.fromkeys(edge_ids))
        with self.transaction() as cur:
            cur.execute("DELETE FROM provenance WHERE item_kind = 'hyperedge' AND item_id = ANY(%s::text[])", (ids,))
            cur.execute("DELETE FROM hyperedges WHERE edge_id = ANY(%s::text[])", (ids,))  # incidence, facts cascade
            cur.execute(
                "DELETE FROM vectors WHERE space IN ('hyperedge', 'theme') AND position('|' in item_id) > 0"
                " AND split_part(item_id, '|', 1) = ANY(%s::text[])",
                (ids,),
            )

    def get_entities(self, entity_ids: Sequence[str]) -> list[Entity]:
        rows = self._query(
            "SELECT e.entity_id, e.name, e.type, e.description, e.modality, e.aliases, e.norm_name, c.name"
            " FROM entities e LEFT JOIN entity_concepts ec ON ec.entity_id = e.entity_id"
            " LEFT JOIN concepts c ON c.concept_id = ec.concept_id WHERE e.entity_id = ANY(%s::text[])",
            (list(dict.fromkeys(entity_ids)),),
        )
        found = {r[0]: Entity(r[0], r[1], r[2], r[3], r[4], list(r[5]), r[6], r[7] or "") for r in rows}
        return [found[i] for i in entity_ids if i in found]

    def get_hyperedges(self, edge_ids: Sequence[str]) -> list[Hyperedge]:
        ids = list(dict.fromkeys(edge_ids))
        rows = self._query(
            "SELECT h.edge_id, h.level, h.description, h.keywords, h.strength, f.relation FROM hyperedges h"
            " LEFT JOIN facts f ON f.edge_id = h.edge_id WHERE h.edge_id = ANY(%s::text[])",
            (ids,),
        )
        members: dict[str, list[tuple[str, str]]] = {}
        for edge, entity, role in self._query(
            "SELECT edge_id, entity_id, role FROM incidence WHERE edge_id = ANY(%s::text[]) ORDER BY seq", (ids,)
        ):
            members.setdefault(edge, []).append((entity, role))
        found = {r[0]: Hyperedge(r[0], r[1], r[2], list(r[3]), r[4], members.get(r[0], []), r[5] or "") for r in rows}
        return [found[i] for i in edge_ids if i in found]

    def hyperedge_strengths(self, edge_ids: Sequence[str]) -> dict[str, float]:
        return dict(
            self._query(
                "SELECT edge_id, strength FROM hyperedges WHERE edge_id = ANY(%s::text[]) ORDER BY edge_id",
                (list(edge_ids),),
            )
        )

    def incident_edges(self, entity_ids: Sequence[str], levels: Sequence[str] | None = None) -> dict[str, list[str]]:
        query = "SELECT i.entity_id, i.edge_id FROM incidence i"
        params: list[Any] = []
        if levels:
            query += " JOIN hyperedges h ON h.edge_id = i.edge_id AND h.level = ANY(%s::text[])"
            params.append(list(levels))
        query += " WHERE i.entity_id = ANY(%s::text[]) ORDER BY i.entity_id, i.seq"
        out: dict[str, list[str]] = {}
        for entity, edge in self._query(query, [*params, list(entity_ids)]):
            out.setdefault(entity, []).append(edge)
        return out

    def provenance(self, kind: str, item_ids: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        """item -> [(chunk_id, doc_id, page)] for entities or hyperedges."""
        out: dict[str, list[tuple[str, str, int]]] = {}
        rows = self._query(
            "SELECT item_id, chunk_id, doc_id, page FROM provenance WHERE item_kind = %s"
            " AND item_id = ANY(%s::text[]) ORDER BY item_id, seq",
            (kind, list(item_ids)),
        )
        for item, chunk, doc, page in rows:
            out.setdefault(item, []).append((chunk, doc, page))
        return out

    def entities_by_norm_name(self, norm_names: Sequence[str]) -> dict[str, str]:
        rows = self._query(
            "SELECT norm_name, entity_id FROM entities WHERE norm_name = ANY(%s::text[]) ORDER BY norm_name, seq",
            (list(norm_names),),
        )
        return dict(rows)

    def chunk_entities(self, doc_id: str) -> dict[str, list[tuple[str, str]]]:
        """chunk -> [(entity id, name)] for a document's chunks."""
        out: dict[str, list[tuple[str, str]]] = {}
        for chunk, entity, name in self._query(
            "SELECT p.chunk_id, e.entity_id, e.name FROM provenance p JOIN entities e ON e.entity_id = p.item_id"
            " WHERE p.item_kind = 'entity' AND p.doc_id = %s ORDER BY p.chunk_id, e.name, p.seq",
            (doc_id,),
        ):
            out.setdefault(chunk, []).append((entity, name))
        return out

    def chunk_hyperedge_members(
        self, doc_id: str, levels: Sequence[str] = ("low", "high")
    ) -> dict[str, list[list[str]]]:
        """chunk -> member lists of the hyperedges evidenced in it."""
        members: dict[tuple[str, str], list[str]] = {}
        for chunk, edge, entity in self._query(
            "SELECT p.chunk_id, i.edge_id, i.entity_id FROM provenance p JOIN hyperedges h ON h.edge_id = p.item_id"
            " JOIN incidence i ON i.edge_id = h.edge_id WHERE p.item_kind = 'hyperedge' AND p.doc_id = %s"
            " AND h.level = ANY(%s::text[]) ORDER BY p.item_id, p.seq, i.entity_id, i.role",
            (doc_id, list(levels)),
        ):
            members.setdefault((chunk, edge), []).append(entity)
        out: dict[str, list[list[str]]] = {}
        for (chunk, _), ids in members.items():
            out.setdefault(chunk, []).append(ids)
        return out

    def chunk_hyperedges(self, chunk_id: str) -> list[str]:
        """Hyperedges evidenced in one chunk."""
        rows = self._query(
            "SELECT item_id FROM provenance WHERE item_kind = 'hyperedge' AND chunk_id = %s ORDER BY item_id",
            (chunk_id,),
        )
        return [r[0] for r in rows]

    def hyperedges_of_level(self, doc_id: str, level: str) -> list[str]:
        rows = self._query(
            "SELECT DISTINCT h.edge_id FROM hyperedges h JOIN provenance p ON p.item_kind = 'hyperedge'"
            " AND p.item_id = h.edge_id WHERE p.doc_id = %s AND h.level = %s ORDER BY h.edge_id",
            (doc_id, level),
        )
        return [r[0] for r in rows]

    def entities_matching(self, name: str) -> list[str]:
        """Entities whose canonical name is this name's, or (failing that) contains it."""
        norm = normalize_name(name)
        exact = [r[0] for r in self._query("SELECT entity_id FROM entities WHERE norm_name = %s ORDER BY seq", (norm,))]
        if exact or not norm:
            return exact
        # SQLite's LIKE ignores ASCII case and has no escape character; ILIKE with ESCAPE '' does the same here.
        like = "%" + norm.replace("%", "").replace("_", "") + "%"
        rows = self._query(
            "SELECT entity_id FROM entities WHERE norm_name ILIKE %s ESCAPE '' ORDER BY seq LIMIT 20", (like,)
        )
        return [r[0] for r in rows]

    def document_entities(self, doc_id: str) -> list[str]:
        rows = self._query(
            "SELECT DISTINCT item_id FROM provenance WHERE item_kind = 'entity' AND doc_id = %s ORDER BY item_id",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def document_hyperedges(self, doc_id: str) -> list[str]:
        rows = self._query(
            "SELECT DISTINCT item_id FROM provenance WHERE item_kind = 'hyperedge' AND doc_id = %s ORDER BY item_id",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def entity_pages(self, entity_ids: Sequence[str]) -> dict[str, set[tuple[str, int]]]:
        """The distinct (doc_id, page) pairs each entity's provenance spans, over all documents."""
        out: dict[str, set[tuple[str, int]]] = {}
        rows = self._query(
            "SELECT DISTINCT item_id, doc_id, page FROM provenance WHERE item_kind = 'entity'"
            " AND item_id = ANY(%s::text[]) ORDER BY item_id",
            (list(entity_ids),),
        )
        for item, doc, page in rows:
            out.setdefault(item, set()).add((doc, page))
        return out

    def refine_signatures(self, anchor_ids: Sequence[str]) -> dict[str, tuple[str, list[str]]]:
        rows = self._query(
            "SELECT anchor_id, signature, edge_ids FROM refine_state WHERE anchor_id = ANY(%s::text[])"
            " ORDER BY anchor_id",
            (list(anchor_ids),),
        )
        return {r[0]: (r[1], list(r[2])) for r in rows}

    def set_refine_signature(self, anchor_id: str, signature: str, edge_ids: Sequence[str]) -> None:
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO refine_state(anchor_id, signature, edge_ids, updated_at) VALUES (%s, %s, %s::text[], %s)"
                " ON CONFLICT (anchor_id) DO UPDATE SET signature = excluded.signature, edge_ids = excluded.edge_ids,"
                " updated_at = excluded.updated_at",
                (anchor_id, signature, list(edge_ids), time.time()),
            )

    def copy_to(self, location: str | Path) -> PostgresStore:
        """A consistent copy of this collection in another, empty database (`postgresql://...`).

        Rows stream table by table with binary COPY from one snapshot. Copying to a directory (an
        SQLite collection) is not supported.
        """
        target_url = str(location)
        if not target_url.startswith(("postgresql://", "postgres://")):
            raise StoreError(f"{location}: a PostgreSQL collection is copied only to another PostgreSQL database")
        target = PostgresStore(target_url)
        try:
            if target.count_chunks() or target.list_documents():
                raise StoreError(f"{redact(target_url)}: the copy's database is not empty")
            with self._lock, target._lock:
                source, sink = self._conn(), target._conn()
                with source.transaction(), sink.transaction():
                    source.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    sink.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
                    for table in reversed(TABLES):
                        sink.execute(f"DELETE FROM {table}")
                    for table in TABLES:
                        with (
                            source.cursor() as out,
                            sink.cursor() as into,
                            out.copy(f"COPY {table} TO STDOUT (FORMAT BINARY)") as reader,
                            into.copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as writer,
                        ):
                            for block in reader:
                                writer.write(block)
                    for table, column in IDENTITY_COLUMNS:
                        sink.execute(
                            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                            f" COALESCE((SELECT max({column}) FROM {table}), 0) + 1, false)"
                        )
                    with sink.cursor() as cur:
                        for space, dim in cur.execute("SELECT space, dim FROM vector_spaces WHERE indexed").fetchall():
                            cur.execute("UPDATE vector_spaces SET indexed = FALSE WHERE space = %s", (space,))
                            target._index_if_large(cur, space, dim)
        except BaseException:
            target.close()
            raise
        return target

    def clear_graph(self) -> None:
        """Forget the hypergraph (entities, hyperedges, refinement state and their vectors); chunks stay."""
        with self.transaction() as cur:
            for table in ("provenance", *LAYER_TABLES, "incidence", "hyperedges", "entities", "refine_state"):
                cur.execute(f"DELETE FROM {table}")
            cur.execute("DELETE FROM vectors WHERE space = ANY(%s::text[])", (list(GRAPH_SPACES),))

    def graph_stats(self) -> dict[str, Any]:
        return {
            "entities_by_modality": self._counts("SELECT modality, COUNT(*) FROM entities GROUP BY 1 ORDER BY 1"),
            "hyperedges_by_level": self._counts("SELECT level, COUNT(*) FROM hyperedges GROUP BY 1 ORDER BY 1"),
            "anchors_refined": self._count("SELECT COUNT(*) FROM refine_state"),
            **self.layer_stats(),
        }

    def _count(self, query: str) -> int:
        return int(self._query(query)[0][0])

    def _counts(self, query: str) -> dict[str, int]:
        return {key: int(n) for key, n in self._query(query)}

    # ------------------------------------------------------------------ who built what (hypergraph/ledger.py)
    def record_builds(self, doc_id: str, rows: list[tuple[str, str, str, str]]) -> None:
        """Replace a document's record of which parts the model or the offline path built.

        `rows` are (stage, item, how, reason); a rebuild writes the whole record anew.
        """
        with self.transaction() as cur:
            cur.execute("DELETE FROM model_builds WHERE doc_id = %s", (doc_id,))
            cur.executemany(
                "INSERT INTO model_builds (doc_id, stage, item, how, reason) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (doc_id, stage, item) DO UPDATE SET how = excluded.how, reason = excluded.reason",
                [(doc_id, *row) for row in rows],
            )

    def builds(self, doc_id: str | None = None, how: str | None = None) -> list[tuple[str, str, str, str, str]]:
        """(doc_id, stage, item, how, reason) rows, optionally of one document and one kind."""
        query, params = "SELECT doc_id, stage, item, how, reason FROM model_builds WHERE TRUE", list[str]()
        if doc_id is not None:
            query, params = query + " AND doc_id = %s", [*params, doc_id]
        if how is not None:
            query, params = query + " AND how = %s", [*params, how]
        return [tuple(r) for r in self._query(query + " ORDER BY doc_id, stage, item", params)]

    def build_counts(self) -> dict[str, dict[str, int]]:
        """{stage: {how: count}} over the collection."""
        out: dict[str, dict[str, int]] = {}
        for stage, how, n in self._query("SELECT stage, how, COUNT(*) FROM model_builds GROUP BY 1, 2 ORDER BY 1, 2"):
            out.setdefault(stage, {})[how] = int(n)
        return out

    # ------------------------------------------------------------------ integrity (store/integrity.py)
    def integrity(self) -> list[Finding]:
        return run_checks(CHECKS, self._query)

    def repair(self, findings: Sequence[Finding]) -> dict[str, int]:
        changed = repair_rows(CHECKS, findings, self.transaction)
        stale = keyword_repairs(findings, changed)
        if stale is not None:
            changed.update(dict.fromkeys(stale, self._rebuild_keyword_index()))
        return changed

    def _rebuild_keyword_index(self) -> int:
        """Every chunk's keyword row made again from the chunks table, document by document in the order
        they were added (ties rank as before), and the counts BM25 reads; how many rows it made."""
        made = 0
        with self.transaction() as cur:
            cur.execute("DELETE FROM chunk_fts")
            cur.execute("DELETE FROM fts_terms")
            docs = [r[0] for r in cur.execute("SELECT doc_id FROM documents ORDER BY added_at, doc_id").fetchall()]
            for doc_id in docs:
                rows = cur.execute(self._CHUNK_SELECT + " WHERE doc_id = %s ORDER BY page, ord", (doc_id,)).fetchall()
                fts = [_fts_row(_row_chunk(r)) for r in rows]
                cur.executemany(_FTS_INSERT, fts)
                cur.execute(_TERMS_ADD, (doc_id,))
                cur.execute(
                    "UPDATE documents SET fts_rows = %s, fts_tokens = %s WHERE doc_id = %s",
                    (len(fts), sum(row[2] for row in fts), doc_id),
                )
                made += len(fts)
        return made

    # ------------------------------------------------------------------ stats
    def add_stage_times(self, doc_id: str, seconds: dict[str, float]) -> None:
        """Add to a document's seconds per indexing stage (a resumed run adds what it spent)."""
        try:
            with self.transaction() as cur:
                cur.executemany(
                    "INSERT INTO stage_times (doc_id, stage, seconds) VALUES (%s, %s, %s)"
                    " ON CONFLICT (doc_id, stage) DO UPDATE SET seconds = stage_times.seconds + excluded.seconds",
                    [(doc_id, stage, float(s)) for stage, s in seconds.items()],
                )
        except psycopg.Error as exc:  # a caller reports it, the document's own result stands
            raise StoreError(f"stage times of {doc_id} not recorded: {exc}") from exc

    def stage_times(self, doc_id: str | None = None) -> dict[str, float]:
        """Seconds per stage of one document, or summed over the collection."""
        query, params = "SELECT stage, SUM(seconds) FROM stage_times", []
        if doc_id is not None:
            query, params = query + " WHERE doc_id = %s", [doc_id]
        return {stage: float(total) for stage, total in self._query(query + " GROUP BY stage ORDER BY stage", params)}

    def stats(self) -> dict[str, Any]:
        return {
            "path": redact(self.url),
            "documents": self._count("SELECT COUNT(*) FROM documents"),
            "pages": self._count("SELECT COUNT(*) FROM pages"),
            "chunks": self._count("SELECT COUNT(*) FROM chunks"),
            "chunks_by_modality": self._counts("SELECT modality, COUNT(*) FROM chunks GROUP BY 1 ORDER BY 1"),
            "documents_by_stage": self._counts("SELECT stage, COUNT(*) FROM doc_status GROUP BY 1 ORDER BY 1"),
            "vectors": self._count("SELECT COUNT(*) FROM vectors"),
            "entities": self._count("SELECT COUNT(*) FROM entities"),
            "hyperedges": self._count("SELECT COUNT(*) FROM hyperedges"),
            **self.graph_stats(),
            "built_by": self.build_counts(),
            "stage_seconds": self.stage_times(),
            "database_bytes": self._count("SELECT pg_database_size(current_database())"),
        }

    # ------------------------------------------------------------------ facts and decisions (concept_tables.py)
    def facts_about(self, entity_ids: Sequence[str]) -> list[FactRow]:
        """Accepted facts whose head is one of `entity_ids`, with their evidence chunks."""
        rows = self._query(
            "SELECT f.edge_id, f.head_id, f.relation, f.tail_id, h.description FROM facts f"
            " JOIN hyperedges h ON h.edge_id = f.edge_id WHERE f.head_id = ANY(%s::text[]) ORDER BY f.head_id, f.seq",
            (list(entity_ids),),
        )
        facts = {r[0]: FactRow(*r) for r in rows}
        for edge, chunk in self._query(
            "SELECT item_id, chunk_id FROM provenance WHERE item_kind = 'hyperedge' AND item_id = ANY(%s::text[])"
            " ORDER BY item_id, chunk_id",
            (list(facts),),
        ):
            facts[edge].chunks.append(chunk)
        return list(facts.values())

    def document_facts(self, doc_id: str) -> list[FactRow]:
        rows = self._query(
            "SELECT f.edge_id, f.head_id, f.relation, f.tail_id, h.description FROM facts f"
            " JOIN hyperedges h ON h.edge_id = f.edge_id WHERE EXISTS (SELECT 1 FROM provenance p"
            " WHERE p.item_kind = 'hyperedge' AND p.item_id = f.edge_id AND p.doc_id = %s) ORDER BY f.edge_id",
            (doc_id,),
        )
        return [FactRow(*r) for r in rows]

    def relabel_fact(self, edge_id: str, relation: str) -> None:
        with self.transaction() as cur:
            cur.execute("UPDATE facts SET relation = %s WHERE edge_id = %s", (relation, edge_id))

    def remove_evidence_links(self, links: Sequence[tuple[str, str]]) -> None:
        """Forget that entity e is evidenced in chunk b, for (e, b) pairs only dropped facts supported."""
        with self.transaction() as cur:
            cur.executemany(
                "DELETE FROM provenance WHERE item_kind = 'entity' AND item_id = %s AND chunk_id = %s", list(links)
            )

    def log_decisions(self, decisions: Sequence[Decision]) -> None:
        now = time.time()
        with self.transaction() as cur:
            cur.executemany(
                "INSERT INTO conflict_log(doc_id, kind, decision, fact, other, reason, evidence, decided_by,"
                " created_at) VALUES (%s, %s, %s, %s, %s, %s, %s::text[], %s, %s)",
                [decision_row(d, list(d.evidence), now) for d in decisions],
            )

    def save_reconcile_counts(self, doc_id: str, counts: dict[str, int]) -> None:
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO reconcile_stats(doc_id, counts) VALUES (%s, %s)"
                " ON CONFLICT (doc_id) DO UPDATE SET counts = excluded.counts",
                (doc_id, _json(counts)),
            )

    def reconcile_counts(self, doc_id: str) -> dict[str, int]:
        rows = self._query("SELECT counts FROM reconcile_stats WHERE doc_id = %s", (doc_id,))
        return counts_of(dict(rows[0][0])) if rows else {}

    def reconcile_totals(self) -> dict[str, int]:
        totals = dict.fromkeys(RECONCILE_COUNTS, 0)
        for (counts,) in self._query("SELECT counts FROM reconcile_stats ORDER BY doc_id"):
            for key, value in counts.items():
                totals[key] = totals.get(key, 0) + int(value)
        return totals

    _DECISION_SELECT = (
        "SELECT doc_id, kind, decision, fact, other, reason, evidence, decided_by, created_at FROM conflict_log"
    )

    def dropped_in(self, chunk_ids: Sequence[str]) -> list[Decision]:
        """Dropped facts that were stated in any of these chunks."""
        wanted = set(chunk_ids)
        docs = sorted({c.rsplit(":", 2)[0] for c in wanted})
        rows = self._query(
            self._DECISION_SELECT + " WHERE decision = 'dropped' AND doc_id = ANY(%s::text[]) ORDER BY doc_id, id",
            (docs,),
        )
        found = [_row_decision(r) for r in rows]
        return [d for d in found if wanted & set(d.evidence)]

    def decisions(self, doc_id: str | None = None) -> list[Decision]:
        if doc_id:
            rows = self._query(self._DECISION_SELECT + " WHERE doc_id = %s ORDER BY id", (doc_id,))
        else:
            rows = self._query(self._DECISION_SELECT + " ORDER BY id")
        return [_row_decision(r) for r in rows]

    # ------------------------------------------------------------------ the concept layer
    def concepts_of(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """entity id -> concept id."""
        return dict(
            self._query(
                "SELECT entity_id, concept_id FROM entity_concepts WHERE entity_id = ANY(%s::text[])"
                " ORDER BY entity_id",
                (list(entity_ids),),
            )
        )

    def document_concepts(self, doc_id: str) -> list[str]:
        rows = self._query(
            "SELECT ec.concept_id FROM provenance p JOIN entity_concepts ec ON ec.entity_id = p.item_id"
            " WHERE p.item_kind = 'entity' AND p.doc_id = %s GROUP BY ec.concept_id ORDER BY min(p.item_id)",
            (doc_id,),
        )
        return [r[0] for r in rows]

    def rebuild_concepts(self, concept_ids: Sequence[str], doc_id: str | None = None) -> None:
        """Recompute the concept edges and the concept -> chunk index of these concepts; with `doc_id`, only
        their rows of that document (what adding it changes: no other document's rows)."""
        ids = list(dict.fromkeys(concept_ids))
        scope, mine, by_doc = (" AND p.doc_id = %s", " AND doc_id = %s", (doc_id,)) if doc_id else ("", "", ())
        with self.transaction() as cur:
            if ids:
                cur.execute(f"DELETE FROM concept_evidence WHERE concept_id = ANY(%s::text[]){mine}", (ids, *by_doc))
                cur.execute(
                    "INSERT INTO concept_evidence(concept_id, chunk_id, doc_id, page, entities)"
                    " SELECT ec.concept_id, p.chunk_id, p.doc_id, p.page, COUNT(*) FROM entity_concepts ec"
                    " JOIN provenance p ON p.item_kind = 'entity' AND p.item_id = ec.entity_id"
                    f" WHERE ec.concept_id = ANY(%s::text[]){scope}"
                    " GROUP BY ec.concept_id, p.chunk_id, p.doc_id, p.page ORDER BY ec.concept_id, p.chunk_id",
                    (ids, *by_doc),
                )
                cur.execute(
                    f"DELETE FROM concept_edges WHERE (head_id = ANY(%s::text[]) OR tail_id = ANY(%s::text[])){mine}",
                    (ids, ids, *by_doc),
                )
                cur.execute(
                    "INSERT INTO concept_edges(head_id, relation, tail_id, doc_id, support)"
                    " SELECT hc.concept_id, f.relation, tc.concept_id, p.doc_id, COUNT(DISTINCT f.edge_id) FROM facts f"
                    " JOIN entity_concepts hc ON hc.entity_id = f.head_id"
                    " JOIN entity_concepts tc ON tc.entity_id = f.tail_id"
                    " JOIN provenance p ON p.item_kind = 'hyperedge' AND p.item_id = f.edge_id"
                    f" WHERE (hc.concept_id = ANY(%s::text[]) OR tc.concept_id = ANY(%s::text[])){scope}"
                    " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
                    (ids, ids, *by_doc),
                )
            # Only these concepts: a sweep of the whole tables per document would grow with the collection.
            cur.execute(
                "DELETE FROM entity_concepts ec WHERE ec.concept_id = ANY(%s::text[]) AND NOT EXISTS"
                " (SELECT 1 FROM entities e WHERE e.entity_id = ec.entity_id)",
                (ids,),
            )
            cur.execute(
                "DELETE FROM concepts c WHERE c.concept_id = ANY(%s::text[]) AND NOT EXISTS"
                " (SELECT 1 FROM entity_concepts ec WHERE ec.concept_id = c.concept_id)"
                " AND NOT EXISTS (SELECT 1 FROM concept_evidence ce WHERE ce.concept_id = c.concept_id)",
                (ids,),
            )

    def concept_names(self, concept_ids: Sequence[str]) -> dict[str, str]:
        return dict(
            self._query(
                "SELECT concept_id, name FROM concepts WHERE concept_id = ANY(%s::text[]) ORDER BY concept_id",
                (list(concept_ids),),
            )
        )

    def concepts_in(self, doc_id: str) -> list[tuple[str, str]]:
        """(concept id, name) of the concepts with evidence in a document."""
        return self._query(
            "SELECT c.concept_id, c.name FROM concepts c WHERE c.concept_id IN"
            " (SELECT concept_id FROM concept_evidence WHERE doc_id = %s) ORDER BY c.concept_id",
            (doc_id,),
        )

    def concept_members_in(self, doc_id: str, concept_ids: Sequence[str], limit: int) -> dict[str, list[str]]:
        """Names of each concept's entities in a document, the best evidenced first."""
        rows = self._query(
            "SELECT ec.concept_id, e.name, COUNT(*) AS n FROM entity_concepts ec JOIN entities e"
            " ON e.entity_id = ec.entity_id JOIN provenance p ON p.item_kind = 'entity' AND p.item_id = e.entity_id"
            " AND p.doc_id = %s WHERE ec.concept_id = ANY(%s::text[]) GROUP BY ec.concept_id, e.entity_id, e.name"
            " ORDER BY ec.concept_id, n DESC, e.name, e.entity_id",
            (doc_id, list(concept_ids)),
        )
        out: dict[str, list[str]] = {}
        for concept, name, _ in rows:
            names = out.setdefault(concept, [])
            if len(names) < limit:
                names.append(name)
        return out

    def relations_in(self, doc_id: str) -> list[str]:
        rows = self._query(
            "SELECT relation FROM concept_edges WHERE doc_id = %s GROUP BY relation ORDER BY min(seq)", (doc_id,)
        )
        return [r[0] for r in rows]

    def concept_edges_for(
        self, relations: Sequence[str], doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str, str, int]]:
        """(head concept, relation, tail concept, support) for these relations, within the documents."""
        scope, params = "", [list(relations)]
        if doc_ids is not None:
            scope, params = " AND doc_id = ANY(%s::text[])", [list(relations), list(doc_ids)]
        rows = self._query(
            "SELECT head_id, relation, tail_id, SUM(support) FROM concept_edges WHERE relation = ANY(%s::text[])"
            + scope
            + " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
            params,
        )
        return [(h, r, t, int(n)) for h, r, t, n in rows]

    def concept_chunk_pairs(
        self, concept_ids: Sequence[str], doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        """(concept, chunk) rows of the concept -> chunk index for these concepts, within the documents."""
        if doc_ids is None:
            return self._query(
                "SELECT concept_id, chunk_id FROM concept_evidence WHERE concept_id = ANY(%s::text[])"
                " ORDER BY concept_id, chunk_id",
                (list(concept_ids),),
            )
        return self._query(
            "SELECT concept_id, chunk_id FROM concept_evidence WHERE concept_id = ANY(%s::text[])"
            " AND doc_id = ANY(%s::text[]) ORDER BY doc_id, concept_id, seq",
            (list(concept_ids), list(doc_ids)),
        )

    def layer_stats(self) -> dict[str, Any]:
        return {
            "facts": self._count("SELECT COUNT(*) FROM facts"),
            "concepts": self._count("SELECT COUNT(*) FROM concepts"),
            "concept_edges": self._count("SELECT COUNT(DISTINCT head_id || relation || tail_id) FROM concept_edges"),
            "conflict_decisions": self._counts("SELECT decision, COUNT(*) FROM conflict_log GROUP BY 1 ORDER BY 1"),
            "reconciliation": self.reconcile_totals(),
        }


def store_exists(url: str) -> bool:
    """Whether the database at `url` holds a collection already (opening a `PostgresStore` would create one)."""
    try:
        with psycopg.connect(url, autocommit=True) as db:
            row = db.execute(
                "SELECT to_regclass('meta') IS NOT NULL AND to_regclass('documents') IS NOT NULL"
            ).fetchone()
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {redact(url)}: {exc}") from exc
    return bool(row and row[0])


def remove_store(url: str) -> None:
    """Drop the collection's tables and text search configuration; the database itself stays (whoever
    created it drops it). Closed stores only: an open one would find its tables gone."""
    try:
        with psycopg.connect(url, autocommit=True) as db, db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            for table in ("claims", *reversed(TABLES)):
                db.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
            db.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {FTS_CONFIG}")
            db.execute("DROP TEXT SEARCH DICTIONARY IF EXISTS hyperfolio_porter")
    except psycopg.Error as exc:
        raise StoreError(f"cannot remove the collection in {redact(url)}: {exc}") from exc


def open_model_records(url: str) -> ModelRecords:
    """The model-call records in the collection's database (their tables created when missing)."""

    def connect() -> psycopg.Connection:
        try:
            db = psycopg.connect(url, autocommit=True)
            with db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                for statement in MODEL_SCHEMA:
                    db.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the model records in {redact(url)}: {exc}") from exc
        return db

    return ModelRecords(connect, placeholder="%s", reconnect_on=(psycopg.OperationalError,), where=redact(url))


def _index_name(space: str) -> str:
    """A space's HNSW index: readable, and unique even for spaces whose names differ only in punctuation."""
    readable = re.sub(r"\W", "_", space.lower())[:32]
    return f"vectors_hnsw_{readable}_{hashlib.sha1(space.encode()).hexdigest()[:8]}"


def _chunk_row(c: Chunk) -> tuple:
    return (
        c.chunk_id,
        c.doc_id,
        c.page,
        c.order,
        c.modality,
        _clean(c.text),
        [float(x) for x in c.bbox] if c.bbox else None,
        [_clean(s) for s in c.section_path],
        _json(c.table) if c.table is not None else None,
        c.table_header_rows,
        _clean(c.caption),
        _clean(c.ocr_text),
        c.image_path,
        bool(c.placeholder),
        _json(c.meta),
    )


def _row_chunk(r: tuple) -> Chunk:
    return Chunk(
        chunk_id=r[0],
        doc_id=r[1],
        page=r[2],
        order=r[3],
        modality=r[4],
        text=r[5],
        bbox=tuple(r[6]) if r[6] else None,
        section_path=list(r[7]),
        table=r[8],
        table_header_rows=r[9],
        caption=r[10],
        ocr_text=r[11],
        image_path=r[12],
        placeholder=bool(r[13]),
        meta=r[14],
    )


def _row_decision(r: tuple) -> Decision:
    return Decision(r[0], r[1], r[2], r[3], r[4], r[5], list(r[6]), r[7], r[8])


__all__ = ["EXACT_SEARCH_MAX", "PostgresStore", "fts_tokens", "query_terms", "redact", "remove_store", "store_exists"]


def _info(row: Sequence[Any]) -> DocumentInfo:
    return info_of(row, dict(row[9] or {}))


def open_store(url: str) -> PostgresStore:
    """The collection in the database at `url` (its tables created when missing)."""
    return PostgresStore(url)
