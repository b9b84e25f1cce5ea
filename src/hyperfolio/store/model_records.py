"""What a collection keeps about its model calls: cached replies, usage per stage, server profiles.

Three small tables beside the collection's own, in the same database, so every process and worker
sharing a collection also shares its cache and its accounting. The SQL is written once for both
backends (SQLite and PostgreSQL accept the same statements here; only the placeholder differs);
`sqlite.open_model_records` and `postgres.open_model_records` supply the connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from hyperfolio.model import CachedReply

# Usage counters accumulated per stage, in this order.
USAGE_COLUMNS = (
    "calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "estimated_calls",
    "retries",
    "rejected",
)
# Counters added after collections were first made: a table without one gets it when the records open.
ADDED_USAGE_COLUMNS = {"rejected": "BIGINT NOT NULL DEFAULT 0"}

MODEL_TABLES = ("model_cache", "model_usage", "model_servers")
MODEL_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS model_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    prompt_tokens BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    created_at DOUBLE PRECISION NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS model_usage (
    stage TEXT PRIMARY KEY,
    calls BIGINT NOT NULL DEFAULT 0,
    cache_hits BIGINT NOT NULL DEFAULT 0,
    prompt_tokens BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
    estimated_calls BIGINT NOT NULL DEFAULT 0,
    retries BIGINT NOT NULL DEFAULT 0,
    rejected BIGINT NOT NULL DEFAULT 0
)""",
    """CREATE TABLE IF NOT EXISTS model_servers (
    key TEXT PRIMARY KEY,
    profile TEXT NOT NULL,
    probed_at DOUBLE PRECISION NOT NULL
)""",
)


class ModelRecords:
    """The three tables over one autocommit connection, safe to share between threads.

    `connect` opens the connection (again, when `reconnect_on` says the old one was dropped);
    statements are written with `?` and sent with `placeholder` in its place.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        placeholder: str = "?",
        reconnect_on: tuple[type[BaseException], ...] = (),
        where: str = "",
    ) -> None:
        self._connect = connect
        self._placeholder = placeholder
        self._reconnect_on = reconnect_on
        self.where = where  # for messages: the database these tables are in
        self._lock = threading.Lock()
        self._db: Any = self._open()

    def _open(self) -> Any:
        db = self._connect()
        add_missing_usage_columns(db)
        return db

    def _run(self, statement: str, params: tuple = ()) -> Any:
        """Execute one statement; rows for a query, the affected row count otherwise."""
        if self._placeholder != "?":
            statement = statement.replace("?", self._placeholder)
        with self._lock:
            if self._db is None:
                raise RuntimeError(f"the model records in {self.where or 'this collection'} are closed")
            try:
                return _outcome(self._db.execute(statement, params))
            except self._reconnect_on:
                self._db = self._open()
            return _outcome(self._db.execute(statement, params))

    # ------------------------------------------------------------------ replies
    def reply(self, key: str) -> CachedReply | None:
        rows = self._run(
            "SELECT response, model, prompt_tokens, completion_tokens, created_at FROM model_cache WHERE key = ?",
            (key,),
        )
        return CachedReply(*rows[0]) if rows else None

    def put_reply(self, key: str, model: str, response: str, prompt_tokens: int, completion_tokens: int) -> None:
        self._run(
            "INSERT INTO model_cache (key, model, response, prompt_tokens, completion_tokens, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET model = excluded.model,"
            " response = excluded.response, prompt_tokens = excluded.prompt_tokens,"
            " completion_tokens = excluded.completion_tokens, created_at = excluded.created_at",
            (key, model, response, int(prompt_tokens), int(completion_tokens), time.time()),
        )

    def discard_reply(self, key: str) -> None:
        self._run("DELETE FROM model_cache WHERE key = ?", (key,))

    def clear_replies(self, model: str | None = None) -> int:
        if model is None:
            return self._run("DELETE FROM model_cache")
        return self._run("DELETE FROM model_cache WHERE model = ?", (model,))

    def replies(self) -> list[tuple[str, CachedReply]]:
        """Every cached reply with its key, oldest first."""
        rows = self._run(
            "SELECT key, response, model, prompt_tokens, completion_tokens, created_at FROM model_cache"
            " ORDER BY created_at, key"
        )
        return [(row[0], CachedReply(*row[1:])) for row in rows]

    def count_replies(self) -> int:
        return int(self._run("SELECT COUNT(*) FROM model_cache")[0][0])

    # ------------------------------------------------------------------ usage
    def add_usage(self, stage: str, delta: Mapping[str, float]) -> None:
        """Add `delta` (counts by USAGE_COLUMNS name) to a stage's totals."""
        columns = ", ".join(USAGE_COLUMNS)
        self._run(
            f"INSERT INTO model_usage (stage, {columns}) VALUES (?{', ?' * len(USAGE_COLUMNS)}) ON CONFLICT (stage)"
            f" DO UPDATE SET {', '.join(f'{c} = model_usage.{c} + excluded.{c}' for c in USAGE_COLUMNS)}",
            (stage, *(delta.get(c, 0) for c in USAGE_COLUMNS)),
        )

    def usage(self) -> dict[str, dict[str, Any]]:
        """Totals by stage, each a mapping of USAGE_COLUMNS."""
        rows = self._run(f"SELECT stage, {', '.join(USAGE_COLUMNS)} FROM model_usage ORDER BY stage")
        return {row[0]: dict(zip(USAGE_COLUMNS, row[1:], strict=True)) for row in rows}

    def reset_usage(self) -> None:
        self._run("DELETE FROM model_usage")

    # ------------------------------------------------------------------ server profiles
    def profile(self, key: str) -> tuple[str, float] | None:
        """A server's profile (its JSON) and when it was probed."""
        rows = self._run("SELECT profile, probed_at FROM model_servers WHERE key = ?", (key,))
        return (rows[0][0], float(rows[0][1])) if rows else None

    def put_profile(self, key: str, profile: str, probed_at: float) -> None:
        self._run(
            "INSERT INTO model_servers (key, profile, probed_at) VALUES (?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET profile = excluded.profile, probed_at = excluded.probed_at",
            (key, profile, probed_at),
        )

    def forget_profiles(self) -> None:
        self._run("DELETE FROM model_servers")

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _usage_columns(db: Any) -> set[str]:
    return {str(column[0]).lower() for column in db.execute("SELECT * FROM model_usage WHERE 1 = 0").description}


def add_missing_usage_columns(db: Any) -> None:
    """Give a `model_usage` table made before a counter existed that counter (`ADDED_USAGE_COLUMNS`).

    Looked up first, so an up-to-date table is not locked by ALTER TABLE; the statement is the same
    for SQLite and PostgreSQL. `db` is an autocommit connection whose tables exist.
    """
    for column, kind in ADDED_USAGE_COLUMNS.items():
        if column in _usage_columns(db):
            continue
        try:
            db.execute(f"ALTER TABLE model_usage ADD COLUMN {column} {kind}")
        except Exception:  # either driver's error: fine when another process added it first
            if column not in _usage_columns(db):
                raise


def _outcome(cursor: Any) -> Any:
    return cursor.fetchall() if cursor.description is not None else cursor.rowcount
