"""The store port: `open_store(location)` opens the collection at a location in its backend.

A directory is an embedded SQLite collection; a `postgresql://` URL is a PostgreSQL database with
pgvector (one database per collection). Which backend a location names is decided once, in
`store/backends.py`; backends are imported only when chosen, so the default install needs no driver.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from hyperfolio.config import data_home
from hyperfolio.errors import StoreError
from hyperfolio.store.backends import backend_of, is_url
from hyperfolio.store.base import ModelRecordStore, Store

# A collection's name: what every face (CLI, service, web app, MCP, demo, the Python API) accepts for a
# collection under the data root.
COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def is_server_location(location: str | Path) -> bool:
    """Whether a collection lives on a server (its location a URL) rather than in a folder."""
    return is_url(location)


def resolve_location(ref: str | Path) -> str:
    """Where a collection reference points, read the same way by every face: a `postgresql://` URL as it
    is; a bare name ("reports": no slash, not starting with "." or "~") the collection of that name under
    the data root; anything else (a `Path`, "./reports", "~/x", "/abs/x", "a/b") the folder it names."""
    if is_server_location(ref):
        return str(ref)
    if isinstance(ref, str) and "/" not in ref and not ref.startswith((".", "~")) and ref:
        if not COLLECTION_NAME.fullmatch(ref):
            raise StoreError(
                f"{ref!r} is not a collection name: use 1-64 letters, digits, '-' or '_' (starting with a letter "
                f"or digit), or write ./{ref} for a folder"
            )
        return str(data_home() / ref)
    return str(Path(ref).expanduser().absolute())  # absolute: "loc" read again must not become a name


def display_name(location: str | Path) -> str:
    """How messages name a collection: its name when it lives under the data root, a server URL without its
    password, else the folder's path."""
    text = str(location)
    if is_server_location(text):
        parts = urlsplit(text)
        netloc = parts.netloc
        if parts.password is not None:
            netloc = (f"{parts.username}@" if parts.username else "") + netloc.rsplit("@", 1)[1]
        query = "&".join(q for q in parts.query.split("&") if q and not q.lower().startswith("password="))
        return parts._replace(netloc=netloc, query=query).geturl()
    path = Path(text).expanduser()
    return path.name if path.parent == data_home() and COLLECTION_NAME.fullmatch(path.name) else text


def local_folder(location: str) -> Path:
    """Where a server-backed collection keeps its local files: one folder per host, port and database
    under the user's data directory (never the password)."""
    parts = urlsplit(location)
    name = "_".join(p for p in (parts.hostname or "local", str(parts.port or ""), parts.path.strip("/")) if p)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name)[:120] or "server"
    return data_home() / "servers" / safe


def open_store(location: str | Path) -> Store:
    """The store at `location` (created when missing)."""
    store: Store = backend_of(location).load(location).open_store(_native(location))
    return store


def open_model_records(location: str | Path) -> ModelRecordStore:
    """The model-call records (reply cache, usage, server profiles) of the collection at `location`."""
    records: ModelRecordStore = backend_of(location).load(location).open_model_records(_native(location))
    return records


def _native(location: str | Path) -> str | Path:
    """The location as its backend takes it: a URL as text, a folder as a path."""
    return str(location) if is_url(location) else Path(location).expanduser()


def model_records_from(source: ModelRecordStore | str | Path) -> tuple[ModelRecordStore, bool]:
    """Records as given, or opened at a collection's location; True when they were opened here
    (the caller then closes them)."""
    if isinstance(source, str | Path):
        return open_model_records(source), True
    return source, False


def copy_store(source: Store, location: str | Path) -> Store:
    """A copy of `source` at `location`, in whichever backend the location names: the backend's own
    copy when both are of one kind, else through a bundle (every row and vector, exactly)."""
    if is_server_location(source.location) == is_server_location(location):
        return source.copy_to(location)
    import tempfile

    from hyperfolio.store.bundle import export_bundle, import_bundle

    target = open_store(location)
    try:
        with tempfile.TemporaryDirectory(prefix="hyperfolio-copy-") as scratch:
            export_bundle(source, Path(scratch) / "bundle")
            import_bundle(target, Path(scratch) / "bundle")
    except BaseException:
        target.close()
        raise
    return target


def store_exists(location: str | Path) -> bool:
    """Whether a store is there already (opening one that is not would create it)."""
    return bool(backend_of(location).load(location).store_exists(_native(location)))


def remove_store(location: str | Path) -> None:
    """Delete the store at `location` (a collection variant being rebuilt); closed stores only."""
    backend_of(location).load(location).remove_store(_native(location))


__all__ = [
    "COLLECTION_NAME",
    "ModelRecordStore",
    "Store",
    "copy_store",
    "display_name",
    "is_server_location",
    "local_folder",
    "model_records_from",
    "open_model_records",
    "open_store",
    "remove_store",
    "resolve_location",
    "store_exists",
]
