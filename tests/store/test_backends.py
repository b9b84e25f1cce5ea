"""Which backend a location names is decided in one place; an unknown scheme says which are known."""

from __future__ import annotations

import pytest

from hyperfolio.collection import Collection
from hyperfolio.errors import StoreError
from hyperfolio.store import is_server_location, open_store, store_exists
from hyperfolio.store.backends import backend_of


def test_a_folder_is_sqlite_and_a_postgres_url_is_postgresql(tmp_path):
    assert backend_of(tmp_path / "col").name == "SQLite" and not is_server_location(tmp_path / "col")
    for url in ("postgresql://u@h/db", "postgres://h/db", "POSTGRESQL://h/db"):
        assert backend_of(url).name == "PostgreSQL" and is_server_location(url)
    assert not store_exists(tmp_path / "col")
    open_store(tmp_path / "col").close()
    assert store_exists(tmp_path / "col")


@pytest.mark.parametrize("location", ["mysql://u:secret@h/db", "redis://h:6379/0"])
def test_an_unknown_scheme_is_one_line_naming_the_known_ones(location, tmp_path):
    with pytest.raises(StoreError) as caught:
        Collection(location, folder=tmp_path / "local")
    message = str(caught.value)
    assert "\n" not in message and "postgresql://" in message and "folder for SQLite" in message, message
    assert location.split("://")[0] + "://" in message and "secret" not in message
    assert not (tmp_path / "local").exists() or not any((tmp_path / "local").iterdir())
