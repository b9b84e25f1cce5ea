"""Who is calling, and what they may do: the service's one access rule.

Every guarded request (the API but its health probe, `/v1`, `/mcp`) passes the `Gate` once, in the app's
middleware (`app.require_key`):

1. **who** (`Gate.authenticate`): the key sent as `Authorization: Bearer <key>` (or `?key=`, for event
   streams and images, which cannot send headers) becomes a `Principal`, put on `request.state.principal`.
   On loopback with no `--api-key` and no key in the key store, everyone is the local user (`LOCAL`: admin
   over every collection), as for one person on a laptop. The service's own `--api-key` is an admin key
   over every collection (`SERVICE_KEY`). Once any key exists in the key store (`keys.KeyStore`), every
   request needs a key, on loopback too: no key, an unknown one or a revoked one is a 401.
2. **how often** (`RateLimiter`): a key from the store gets its requests per minute (its own `rate`, else
   the service's `--rate-limit`); past it, 429 with `Retry-After`. The local user and `--api-key` are not
   limited.
3. **what** (`decide`): the operation the method and path ask for (`operation`: a scope, and the
   collection the path names) against the key's scope and collections; a refusal is a 403.

Routes whose collection is not in their path check with the same `decide`: creating a collection (the
body's name), a job (its collection), the chat endpoints (the model's collection: refused as the unknown
model it is to this key, 404, so a collection's existence does not leak), the listings (only what the key
may read, `visible`), and every MCP tool (`mcp_access.ToolGate.call`; `add_document`, which reads a path on
the service's machine, only for admin keys over every collection).
"""

from __future__ import annotations

import hmac
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from hyperfolio.server.config import LOOPBACK, ServerConfig
from hyperfolio.server.keys import ADMIN, READ, SCOPES, WRITE, ApiKey, KeyStore
from hyperfolio.server.problems import Problem

ALL = "*"  # an operation over every collection: managing keys, reading the audit log
# Paths under /api/collections/{name}/ that need only `read`: questions, and the caller's own conversations
# (their POST and DELETE write the caller's threads, never the documents; a thread belongs to the key that
# started it, and the local user and the service's --api-key are one owner, "").
READING_PATHS = frozenset({"ask", "retrieve", "conversations"})
NO_KEY = "this service needs an API key: send 'Authorization: Bearer <key>'"
BAD_KEY = "this API key is unknown or revoked: send a valid one as 'Authorization: Bearer <key>'"


@dataclass(frozen=True)
class Principal:
    """Who a request comes from."""

    key_id: str  # "" for the local user and the service's --api-key
    name: str
    scope: str  # read, write or admin
    collections: frozenset[str] | None  # None: every collection
    rate: int | None = None  # requests per minute; None: not limited

    @property
    def by(self) -> tuple[str, str]:
        """The audit log's who: (key id, name)."""
        return self.key_id, self.name

    @property
    def label(self) -> str:
        return f"key {self.key_id} ({self.name})" if self.key_id else self.name

    @classmethod
    def of(cls, key: ApiKey, default_rate: int) -> Principal:
        seen = frozenset(key.collections) if key.collections is not None else None
        return cls(key.key_id, key.name, key.scope, seen, key.rate or default_rate)


LOCAL = Principal("", "local", ADMIN, None)
SERVICE_KEY = Principal("", "--api-key", ADMIN, None)


@dataclass(frozen=True)
class Refusal:
    """A request turned away: its status, the line saying why, OpenAI's error code for it."""

    status: int
    detail: str
    code: str
    retry_after: int = 0  # seconds, for a 429


@dataclass(frozen=True)
class Operation:
    scope: str  # the least scope it needs
    collection: str | None  # the collection its path names; ALL: every one; None: none (the route checks)


def route_path(request: Request) -> str:
    """The path the routes match, without the prefix the app is served under (`--root-path`, a mount):
    the rule reads this, never the URL's full path (under a prefix that would guard nothing)."""
    path, root = request.scope.get("path", ""), request.scope.get("root_path", "")
    return path[len(root) :] or "/" if root and path.startswith(root) else path


def operation(method: str, path: str) -> Operation | None:
    """What a request asks to do, read off its method and path; None: an unguarded path (the web app and
    its assets, the schema, the health probe).

    Under `/api/collections/{name}/`: reading (GET) and asking (`READING_PATHS`) need `read`; uploading,
    removing and any other change `write`. Creating a collection needs `write` (its name is in the body).
    Keys and the audit log need `admin` over every collection. The rest (listings, jobs, the chat and MCP
    endpoints) needs `read`; what they touch is checked where it is known.
    """
    if path == "/api/health" or not path.startswith(("/api/", "/mcp", "/v1")):
        return None
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", "collections"] and len(parts) > 2:
        reading = method in ("GET", "HEAD") or (len(parts) > 3 and parts[3] in READING_PATHS)
        return Operation(READ if reading else WRITE, parts[2])
    if parts[:2] in (["api", "keys"], ["api", "audit"]):
        return Operation(ADMIN, ALL)
    if parts == ["api", "collections"] and method == "POST":
        return Operation(WRITE, None)
    return Operation(READ, None)


def decide(principal: Principal, scope: str, collection: str | None) -> Refusal | None:
    """The one rule: may `principal` do what needs `scope` on `collection` (ALL: on every collection; None:
    on none in particular)? None if so, else the 403 saying why."""
    who = principal.label
    if SCOPES.index(principal.scope) < SCOPES.index(scope):
        return Refusal(403, f"{who} has scope {principal.scope!r}; this needs {scope!r}", "insufficient_scope")
    if principal.collections is not None and collection is not None:
        if collection == ALL:
            return Refusal(403, f"{who} is limited to some collections; this needs all", "insufficient_scope")
        if collection not in principal.collections:
            return Refusal(403, f"{who} may not use collection {collection!r}", "collection_not_allowed")
    return None


def allowed(principal: Principal, scope: str, collection: str | None) -> bool:
    return decide(principal, scope, collection) is None


def visible(principal: Principal, names: Iterable[str]) -> list[str]:
    """The collections among `names` the principal may read (what its listings show)."""
    return [name for name in names if allowed(principal, READ, name)]


def authorize(principal: Principal, scope: str, collection: str | None) -> None:
    """`decide` for a route: a refusal is raised as its problem document."""
    refused = decide(principal, scope, collection)
    if refused is not None:
        raise Problem(refused.status, refused.detail)


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """A token bucket per key: `per_minute` requests at once, refilled at `per_minute` a minute."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key_id: str, per_minute: int) -> int:
        """0 when a request may go now (it takes a token); else the seconds until one may."""
        refill = per_minute / 60.0
        with self._lock:
            stamp = self._clock()
            bucket = self._buckets.setdefault(key_id, _Bucket(float(per_minute), stamp))
            bucket.tokens = min(float(per_minute), bucket.tokens + (stamp - bucket.stamp) * refill)
            bucket.stamp = stamp
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0
            return max(1, math.ceil((1.0 - bucket.tokens) / refill))


class Gate:
    """Authentication, rate limits and the access rule for one service; it holds the key store (whose
    audit log the routes append to) and the buckets, on the service's state."""

    def __init__(self, store: KeyStore, config: ServerConfig, limiter: RateLimiter | None = None) -> None:
        self.store, self.config = store, config
        self.limiter = limiter or RateLimiter()

    def is_open(self) -> bool:
        """Everyone is the local user: loopback, no --api-key, no key ever made (read on every request)."""
        return not self.config.api_key and self.config.host in LOOPBACK and not self.store.has_keys()

    def authenticate(self, token: str) -> Principal | Refusal:
        if self.is_open():
            return LOCAL
        api_key = self.config.api_key
        if api_key and token and hmac.compare_digest(token.encode(), api_key.encode()):
            return SERVICE_KEY
        key = self.store.verify(token) if token else None
        if key is None:
            return Refusal(401, BAD_KEY if token else NO_KEY, "invalid_api_key")
        return Principal.of(key, self.config.rate_limit)

    def admit(self, method: str, path: str, token: str) -> Principal | Refusal | None:
        """The request's principal, or why it is refused; None for an unguarded path."""
        wanted = operation(method, path)
        if wanted is None:
            return None
        who = self.authenticate(token)
        if isinstance(who, Refusal):
            return who
        if who.rate is not None:
            wait = self.limiter.take(who.key_id, who.rate)
            if wait:
                detail = f"{who.label} is limited to {who.rate} requests a minute; try again in {wait} s"
                return Refusal(429, detail, "rate_limit_exceeded", wait)
        return decide(who, wanted.scope, wanted.collection) or who

    def record(
        self,
        principal: Principal,
        action: str,
        collection: str | None = None,
        document: str | None = None,
        detail: str = "",
    ) -> None:
        """Append to the audit log: who, what, where."""
        self.store.record(principal.by, action, collection, document, detail)


def token_of(request: Request) -> str:
    """The key a request sends: `Authorization: Bearer <key>`, else `?key=<key>`."""
    sent = request.headers.get("authorization", "")
    return sent[7:].strip() if sent.lower().startswith("bearer ") else request.query_params.get("key", "")


def principal_in(request: object) -> Principal | None:
    """Who the gate admitted the request as (it sets `request.state.principal` on every guarded path);
    None where it did not look. Every reader of the principal reads it here."""
    principal = getattr(getattr(request, "state", None), "principal", None)
    return principal if isinstance(principal, Principal) else None


async def caller_of(request: Request) -> Principal:
    """The request's principal, as an endpoint's dependency (`Caller`)."""
    principal = principal_in(request)
    if principal is None:
        raise Problem(401, NO_KEY)
    return principal


Caller = Annotated[Principal, Depends(caller_of)]

__all__ = ["ADMIN", "ALL", "LOCAL", "READ", "SERVICE_KEY", "WRITE", "Caller", "Gate", "Principal", "Refusal"]
