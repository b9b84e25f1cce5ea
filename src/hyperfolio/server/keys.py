"""The service's API keys and its audit log: one small SQLite file beside the collections.

It lives at `<root>/.service/keys.sqlite`. A folder whose name starts with "." is never a collection
name (`store.COLLECTION_NAME`), so the libraries and the CLI never list it as one.

A key is shown once, when it is made: `hfk_<id>_<secret>`, the id eight hex digits (what `keys list`,
the audit log and revocation name), the secret 32 random bytes. Only the SHA-256 of the whole token is
kept (see `token_hash`). A key has a scope (`read` < `write` < `admin`, each implying the ones before),
the collections it may use (a list of names, or all) and, optionally, its own rate limit.

Nothing here caches a key: the service reads the row on every request, so a revocation by the CLI (another
process) holds from the next request on. Stdlib only, so `hyperfolio keys` runs without the service's extra.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hyperfolio.errors import HyperfolioError
from hyperfolio.store import COLLECTION_NAME

READ, WRITE, ADMIN = "read", "write", "admin"
SCOPES = (READ, WRITE, ADMIN)  # in order: each implies the ones before it
SERVICE_DIR = ".service"
KEYS_FILE = "keys.sqlite"
TOKEN = re.compile(r"hfk_([0-9a-f]{8})_[A-Za-z0-9_-]{43}")
MAX_NAME = 64
MAX_RATE = 100_000  # requests per minute
MAX_DETAIL = 2000  # characters of an audit row's detail (an upload's file names)

# The audit log's actions.
UPLOAD, REMOVE_DOCUMENT, CREATE_COLLECTION = "upload", "remove_document", "create_collection"
CREATE_KEY, REVOKE_KEY = "create_key", "revoke_key"

SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    scope TEXT NOT NULL,
    collections TEXT,           -- a JSON list of names; NULL: every collection
    rate INTEGER,               -- requests per minute; NULL: the service's default
    hash TEXT NOT NULL,         -- SHA-256 of the whole token, hex
    created TEXT NOT NULL,
    revoked TEXT                -- when it was revoked; NULL: in force
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    key_id TEXT NOT NULL,       -- "" for the local user or the service's --api-key (key_name says which)
    key_name TEXT NOT NULL,
    action TEXT NOT NULL,
    collection TEXT,
    document TEXT,
    detail TEXT NOT NULL DEFAULT ''
);
"""


class KeyNotFound(HyperfolioError):
    def __init__(self, key_id: str) -> None:
        super().__init__(f"no key with id {key_id!r} (hyperfolio keys list shows them)")
        self.key_id = key_id


@dataclass(frozen=True)
class ApiKey:
    """A key as stored, without its secret."""

    key_id: str
    name: str
    scope: str
    collections: tuple[str, ...] | None  # None: every collection
    rate: int | None  # requests per minute; None: the service's default
    created: str
    revoked: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.key_id,
            "name": self.name,
            "scope": self.scope,
            "collections": list(self.collections) if self.collections is not None else None,
            "rate": self.rate,
            "created": self.created,
            "revoked": self.revoked,
        }


@dataclass(frozen=True)
class AuditEntry:
    seq: int
    at: str
    key_id: str
    key_name: str
    action: str
    collection: str | None
    document: str | None
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {
            "seq": self.seq,
            "at": self.at,
            "key_id": self.key_id,
            "key_name": self.key_name,
            "action": self.action,
            "collection": self.collection,
            "document": self.document,
            "detail": self.detail,
        }


def token_hash(token: str) -> str:
    """What is stored of a key: the SHA-256 of its token.

    A plain hash, not scrypt or PBKDF2 with a salt: those slow an attacker guessing a password a person
    chose, but a key's secret is 256 random bits, which no amount of guessing finds, and a salt guards
    against precomputed tables that cannot exist for such secrets. A slow hash would only cost every
    request (each one is checked against the row, uncached, so a revocation holds at once).
    """
    return hashlib.sha256(token.encode()).hexdigest()


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def check_key_fields(name: str, scope: str, collections: Sequence[str] | None, rate: int | None) -> None:
    """A new key's fields, each refused with a line naming what is wrong."""
    if not name.strip() or len(name) > MAX_NAME or not name.isprintable():
        raise HyperfolioError(f"a key's name is 1-{MAX_NAME} printable characters")
    if scope not in SCOPES:
        raise HyperfolioError(f"scope {scope!r}: use one of {', '.join(SCOPES)}")
    for collection in collections or ():
        if not COLLECTION_NAME.fullmatch(collection):
            raise HyperfolioError(f"{collection!r} is not a collection name")
    if rate is not None and not 1 <= rate <= MAX_RATE:
        raise HyperfolioError(f"a rate is 1-{MAX_RATE} requests per minute")


class KeyStore:
    """The key and audit tables of one service root. Thread-safe (one connection, one lock); the file
    is made only when something is written to it, and read by whoever opens it after."""

    def __init__(self, root: str | Path) -> None:
        self.path = Path(root).expanduser() / SERVICE_DIR / KEYS_FILE
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the connection
    @contextmanager
    def _connection(self, create: bool = False) -> Iterator[sqlite3.Connection | None]:
        """The open connection under the lock; None when there is no file yet and `create` is false."""
        with self._lock:
            if self._db is None and (create or self.path.exists()):
                self._db = self._open()
            yield self._db

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fresh = not self.path.exists()
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
        if fresh:
            os.chmod(self.path, 0o600)  # the hashes are not secrets, but the audit log is nobody else's
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
        return db

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction, taken before its reads (IMMEDIATE): a check and the write it allows are one."""
        with self._connection(create=True) as db:
            assert db is not None
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # ------------------------------------------------------------------ keys
    def has_keys(self) -> bool:
        """Whether any key was ever made here, revoked ones included: revoking the last key must not open
        the service again."""
        with self._connection() as db:
            return db is not None and db.execute("SELECT EXISTS (SELECT 1 FROM keys)").fetchone()[0] == 1

    def create(
        self,
        name: str,
        scope: str,
        collections: Sequence[str] | None = None,
        rate: int | None = None,
        by: tuple[str, str] = ("", "local"),
    ) -> tuple[ApiKey, str]:
        """A new key and its token (shown once, never stored); `by` (key id, name) goes in the audit log."""
        check_key_fields(name, scope, collections, rate)
        kept = tuple(dict.fromkeys(collections)) if collections else None
        with self._transaction() as db:  # the id checked free and taken in one transaction
            while True:
                key_id = secrets.token_hex(4)
                if db.execute("SELECT 1 FROM keys WHERE id = ?", (key_id,)).fetchone() is None:
                    break
            token = f"hfk_{key_id}_{secrets.token_urlsafe(32)}"
            key = ApiKey(key_id, name, scope, kept, rate, now())
            listed = json.dumps(list(kept)) if kept is not None else None
            row = (key.key_id, name, scope, listed, rate, key.created, None, token_hash(token))
            db.execute(f"INSERT INTO keys ({_KEY_COLUMNS}, hash) VALUES (?,?,?,?,?,?,?,?)", row)
            self._record(db, by, CREATE_KEY, None, key_id, _key_detail(key))
        return key, token

    def list_keys(self) -> list[ApiKey]:
        with self._connection() as db:
            if db is None:
                return []
            rows = db.execute(f"SELECT {_KEY_COLUMNS} FROM keys ORDER BY created, id").fetchall()
        return [_key(row) for row in rows]

    def get(self, key_id: str) -> ApiKey:
        with self._connection() as db:
            if db is None:
                raise KeyNotFound(key_id)
            return self._get_in(db, key_id)

    @staticmethod
    def _get_in(db: sqlite3.Connection, key_id: str) -> ApiKey:
        row = db.execute(f"SELECT {_KEY_COLUMNS} FROM keys WHERE id = ?", (key_id,)).fetchone()
        if row is None:
            raise KeyNotFound(key_id)
        return _key(row)

    def revoke(self, key_id: str, by: tuple[str, str] = ("", "local")) -> ApiKey:
        """Revoke a key (at once: the service reads the row on every request). Revoking it again changes
        nothing and logs nothing."""
        key = self.get(key_id)
        if key.revoked is not None:
            return key
        when = now()
        with self._transaction() as db:
            changed = db.execute("UPDATE keys SET revoked = ? WHERE id = ? AND revoked IS NULL", (when, key_id))
            if changed.rowcount == 0:  # another process revoked it since: theirs is the revocation logged
                return self._get_in(db, key_id)
            self._record(db, by, REVOKE_KEY, None, key_id, f"name={key.name}")
        return ApiKey(key.key_id, key.name, key.scope, key.collections, key.rate, key.created, when)

    def verify(self, token: str) -> ApiKey | None:
        """The key in force whose token this is; None for anything else (malformed, unknown, revoked)."""
        found = TOKEN.fullmatch(token)
        if found is None:
            return None
        with self._connection() as db:
            if db is None:
                return None
            row = db.execute(f"SELECT {_KEY_COLUMNS}, hash FROM keys WHERE id = ?", (found.group(1),)).fetchone()
        if row is None or not hmac.compare_digest(row[-1], token_hash(token)):
            return None
        key = _key(row[:-1])
        return key if key.revoked is None else None

    # ------------------------------------------------------------------ the audit log
    def record(
        self,
        by: tuple[str, str],
        action: str,
        collection: str | None = None,
        document: str | None = None,
        detail: str = "",
    ) -> None:
        """Append one row: who (key id, name), what, on which collection and document."""
        with self._connection(create=True) as db:
            assert db is not None
            self._record(db, by, action, collection, document, detail)

    @staticmethod
    def _record(
        db: sqlite3.Connection,
        by: tuple[str, str],
        action: str,
        collection: str | None,
        document: str | None,
        detail: str,
    ) -> None:
        row = (now(), by[0], by[1], action, collection, document, detail[:MAX_DETAIL])
        db.execute(
            "INSERT INTO audit (at, key_id, key_name, action, collection, document, detail) VALUES (?,?,?,?,?,?,?)", row
        )

    def audit(self, limit: int = 100) -> list[AuditEntry]:
        """The latest `limit` rows, newest first."""
        query = "SELECT seq, at, key_id, key_name, action, collection, document, detail FROM audit"
        with self._connection() as db:
            if db is None:
                return []
            rows = db.execute(query + " ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
        return [AuditEntry(*row) for row in rows]


_KEY_COLUMNS = "id, name, scope, collections, rate, created, revoked"


def _key(row: Sequence[object]) -> ApiKey:
    key_id, name, scope, listed, rate, created, revoked = row
    collections = tuple(json.loads(str(listed))) if listed is not None else None
    return ApiKey(
        str(key_id),
        str(name),
        str(scope),
        collections,
        int(str(rate)) if rate is not None else None,
        str(created),
        str(revoked) if revoked is not None else None,
    )


def _key_detail(key: ApiKey) -> str:
    seen = ",".join(key.collections) if key.collections is not None else "*"
    rate = f" rate={key.rate}" if key.rate is not None else ""
    return f"name={key.name} scope={key.scope} collections={seen}{rate}"
