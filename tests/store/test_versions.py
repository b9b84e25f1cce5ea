"""Store schema versions: an older collection is upgraded in place; a newer one is refused in one line
naming both versions, and left as it was."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from hyperfolio.errors import StoreError
from hyperfolio.store import open_store
from hyperfolio.store.sqlite import DB_NAME, KEYWORD_FOLDER, SCHEMA_VERSION


def _set_version(location, version: str) -> None:
    store = open_store(location)
    store.set_meta("schema_version", version)
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_collection_from_a_newer_release_is_refused_and_left_alone(backend, tmp_path, request):
    location = request.getfixturevalue("pg_url") if backend == "postgres" else tmp_path / "col"
    _set_version(location, "99")
    with pytest.raises(StoreError) as caught:
        open_store(location)
    message = str(caught.value)
    assert "\n" not in message and "store schema 99" in message and "reads schema" in message, message
    assert "password" not in message.lower()
    if backend == "sqlite":
        with sqlite3.connect(tmp_path / "col" / DB_NAME) as db:
            assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("99",)


@pytest.mark.parametrize("version", ["1", "2"])
def test_an_older_collection_drops_its_fts_table_and_searches_its_chunks(tmp_path, version):
    """Versions 1 and 2 kept keywords in FTS5 (chunks_fts); 3 makes the keyword index from the chunks."""
    from tests.store.test_contract import north

    folder = tmp_path / "col"
    store = open_store(folder)
    store.write_document(north())
    store.set_stage("north", "ready")
    store.close()
    shutil.rmtree(folder / KEYWORD_FOLDER)  # as an earlier release left it: no keyword index beside the database
    with sqlite3.connect(folder / DB_NAME) as db:
        db.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(chunk_id UNINDEXED, doc_id, text, heading)")
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
        db.execute("DELETE FROM meta WHERE key IN ('keywords_owner', 'documents_epoch')")
    store = open_store(folder)
    try:
        assert store.get_meta("schema_version") == SCHEMA_VERSION
        assert store.keyword_search("offshore turbines", 3)[0][0] == "north:1:0"
    finally:
        store.close()
    with sqlite3.connect(folder / DB_NAME) as db:
        assert not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()


def test_a_postgres_collection_of_version_1_drops_its_keyword_tables_and_searches_its_chunks(pg_url):
    import psycopg
    from tests.store.test_contract import north

    store = open_store(pg_url)
    store.write_document(north())
    store.set_stage("north", "ready")
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as db:  # what version 1 kept beside the chunks
        db.execute("CREATE TABLE chunk_fts (chunk_id TEXT PRIMARY KEY, fts TSVECTOR)")
        db.execute("CREATE TABLE fts_terms (lexeme TEXT PRIMARY KEY, chunks INTEGER)")
        db.execute("ALTER TABLE documents ADD COLUMN fts_rows INTEGER NOT NULL DEFAULT 0")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    store = open_store(pg_url)
    try:
        assert store.get_meta("schema_version") == "2"
        assert store.keyword_search("offshore turbines", 3)[0][0] == "north:1:0"
    finally:
        store.close()
    with psycopg.connect(pg_url, autocommit=True) as db:
        assert db.execute("SELECT to_regclass('chunk_fts'), to_regclass('fts_terms')").fetchone() == (None, None)
        columns = {
            r[0]
            for r in db.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'documents'")
        }
        assert "fts_rows" not in columns
