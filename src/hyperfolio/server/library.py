"""The collections one service serves: directories under a root, each opened once and kept open.

Every collection has two handles sharing the loaded models: a reader for questions, pages and
pictures, and a writer that only the ingestion queue uses. With SQLite in WAL mode, questions
keep being answered while a document is written.
"""

from __future__ import annotations

import threading
from pathlib import Path

from hyperfolio.collection import Collection, is_collection
from hyperfolio.errors import HyperfolioError
from hyperfolio.store import COLLECTION_NAME as NAME

WRITER_EMBED_THREADS = 1


class CollectionNotFound(HyperfolioError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no collection named {name!r}; create it first (POST /api/collections)")
        self.name = name


class Library:
    """Named collections under `root`; names are checked, never taken as paths."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        self.root.mkdir(parents=True, exist_ok=True)
        self._readers: dict[str, Collection] = {}
        self._writers: dict[str, Collection] = {}
        self._lock = threading.Lock()

    def path(self, name: str) -> Path:
        if not NAME.fullmatch(name):
            raise HyperfolioError(
                f"{name!r} is not a collection name: use 1-64 letters, digits, '-' or '_' "
                "(starting with a letter or digit)"
            )
        return self.root / name

    def names(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if NAME.fullmatch(p.name) and is_collection(p))

    def exists(self, name: str) -> bool:
        return is_collection(self.path(name))

    def create(self, name: str) -> tuple[Collection, bool]:
        """The collection, and whether it was made now."""
        with self._lock:
            made = not self.exists(name)
            return self._reader(name, create=True), made

    def reader(self, name: str) -> Collection:
        with self._lock:
            return self._reader(name)

    def writer(self, name: str) -> Collection:
        """The handle ingestion writes through (one per collection). It embeds chunks with its own
        model on one core, so questions keep the others while a document is indexed."""
        with self._lock:
            if name not in self._writers:
                self._writers[name] = self._reader(name).sibling(embed_threads=WRITER_EMBED_THREADS)
            return self._writers[name]

    def _reader(self, name: str, create: bool = False) -> Collection:
        if name not in self._readers:
            path = self.path(name)
            if not create and not is_collection(path):
                raise CollectionNotFound(name)
            self._readers[name] = Collection(path)
        return self._readers[name]

    def close(self) -> None:
        with self._lock:
            for col in [*self._writers.values(), *self._readers.values()]:
                col.close()
            self._writers.clear()
            self._readers.clear()
