"""A persistent cache of model replies, kept in the collection's SQLite database.

The key is a hash of the model name, the messages (image payloads replaced by their hashes),
the requested JSON schema and the sampling parameters. The server's address is not part of it,
so the same model behind another URL reuses the replies. A re-run with the same inputs therefore
makes no HTTP call.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DB_FILE = "hyperfolio.db"  # the collection database's file name (see store/sqlite.py)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS model_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class CachedReply:
    response: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    created_at: float


def database_path(location: str | Path) -> Path:
    """A collection directory or a database file -> the database file."""
    path = Path(location)
    return path / DB_FILE if path.is_dir() else path


def connect(location: str | Path) -> sqlite3.Connection:
    """An autocommit connection in WAL mode that waits for other writers instead of failing."""
    path = database_path(location)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def _hash_images(value: Any) -> Any:
    """A copy of a message structure with every data URL replaced by the hash of its bytes."""
    if isinstance(value, Mapping):
        return {k: _hash_images(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_hash_images(v) for v in value]
    if isinstance(value, bytes):
        return "bytes:sha256:" + hashlib.sha256(value).hexdigest()
    if isinstance(value, str) and value.startswith("data:") and len(value) > 256:
        return "data:sha256:" + hashlib.sha256(value.encode()).hexdigest()
    return value


def cache_key(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    schema: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
) -> str:
    """A stable hex digest of everything that determines a reply (but not where the server is)."""
    payload = {
        "model": model,
        "messages": _hash_images(list(messages)),
        "schema": schema,
        "params": {k: v for k, v in sorted((params or {}).items()) if v is not None},
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Model replies by key, in table `model_cache` of a SQLite file; safe to share between threads."""

    def __init__(self, location: str | Path) -> None:
        self.path = database_path(location)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = connect(self.path)
        self._db.execute(_SCHEMA)
        self.hits = 0
        self.misses = 0

    key = staticmethod(cache_key)

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError(f"the model cache at {self.path} is closed")
        return self._db

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            row = (
                self._conn()
                .execute(
                    "SELECT response, model, prompt_tokens, completion_tokens, created_at"
                    " FROM model_cache WHERE key = ?",
                    (key,),
                )
                .fetchone()
            )
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
            return CachedReply(*row)

    def put(self, key: str, model: str, response: str, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        with self._lock:
            self._conn().execute(
                "INSERT OR REPLACE INTO model_cache"
                " (key, model, response, prompt_tokens, completion_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (key, model, response, int(prompt_tokens), int(completion_tokens), time.time()),
            )

    def discard(self, key: str) -> None:
        with self._lock:
            self._conn().execute("DELETE FROM model_cache WHERE key = ?", (key,))

    def clear(self, model: str | None = None) -> int:
        """Forget every reply (or every reply of one model); returns how many were removed."""
        with self._lock:
            if model is None:
                cur = self._conn().execute("DELETE FROM model_cache")
            else:
                cur = self._conn().execute("DELETE FROM model_cache WHERE model = ?", (model,))
            return cur.rowcount

    def __len__(self) -> int:
        with self._lock:
            return self._conn().execute("SELECT COUNT(*) FROM model_cache").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
