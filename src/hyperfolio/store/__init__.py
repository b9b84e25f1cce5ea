"""The store port: `open_store(location)` picks the backend for a collection's location.

A directory is an embedded SQLite collection. Backends are imported only when chosen, so the
default install needs no database driver.
"""

from __future__ import annotations

from pathlib import Path

from hyperfolio.errors import StoreError
from hyperfolio.store.base import Store

SERVER_SCHEMES = ("postgresql://", "postgres://")


def is_server_location(location: str | Path) -> bool:
    return str(location).startswith(SERVER_SCHEMES)


def open_store(location: str | Path) -> Store:
    """The store at `location` (created when missing)."""
    if is_server_location(location):
        raise StoreError(f"{location}: the PostgreSQL backend is not available yet; use a directory")
    from hyperfolio.store.sqlite import SQLiteStore

    return SQLiteStore(Path(location).expanduser())


def store_exists(location: str | Path) -> bool:
    """Whether a store is there already (opening one that is not would create it)."""
    if is_server_location(location):
        return False
    from hyperfolio.store.sqlite import DB_NAME

    return (Path(location).expanduser() / DB_NAME).is_file()


def remove_store(location: str | Path) -> None:
    """Delete the store at `location` (a collection variant being rebuilt); closed stores only."""
    if is_server_location(location):
        raise StoreError(f"{location}: dropping a server database is not done from here")
    from hyperfolio.store.sqlite import DB_NAME

    for suffix in ("", "-wal", "-shm"):
        (Path(location).expanduser() / f"{DB_NAME}{suffix}").unlink(missing_ok=True)


__all__ = ["Store", "is_server_location", "open_store", "remove_store", "store_exists"]
