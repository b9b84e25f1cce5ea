"""Store schema versions: an older collection is upgraded in place with a copy kept until the upgrade has
committed; a newer one is refused in one line naming both versions, and left as it was."""

from __future__ import annotations

import sqlite3

import pytest

from hyperfolio.errors import StoreError
from hyperfolio.store import open_store
from hyperfolio.store.sqlite import DB_NAME, SCHEMA_VERSION, SQLiteStore


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


def test_an_older_collection_is_upgraded_with_a_copy_kept_until_the_upgrade_commits(tmp_path, monkeypatch):
    folder = tmp_path / "col"
    _set_version(folder, "1")
    backup = folder / f"{DB_NAME}.before-upgrade"

    def failing(self: SQLiteStore) -> None:
        assert backup.is_file()  # the copy exists while the migration runs
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(SQLiteStore, "_migrate_from_1", failing)
        with pytest.raises(StoreError) as caught:
            open_store(folder)
    assert str(backup) in str(caught.value) and backup.is_file()
    with sqlite3.connect(backup) as copy:
        assert copy.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    backup.unlink()
    store = open_store(folder)  # the real migration
    assert store.get_meta("schema_version") == SCHEMA_VERSION and not backup.exists()
    store.close()
