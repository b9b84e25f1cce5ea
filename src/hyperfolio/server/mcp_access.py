"""Who may call which MCP tool on which collection, decided by the service's one rule (`access.decide`).

Every tool call passes `ToolGate.call` (from `mcp.HyperfolioMCP.call_tool`): the principal is the one the
service's gate put on the HTTP request that carried the call (`principal_of`); over stdio, the local user
who started the server. `add_document` needs `write` on its collection, every other tool `read`; a tool's
collection is its `collection` argument (or the default). A key limited to some collections is told of
no other: a collection of its own that does not exist is refused here with only its own names listed.
After `add_document`, the audit log gets the upload (and the collection, when it made it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult

from hyperfolio.errors import HyperfolioError
from hyperfolio.server.access import (
    ADMIN,
    ALL,
    LOCAL,
    NO_KEY,
    READ,
    WRITE,
    Gate,
    Principal,
    decide,
    principal_in,
    visible,
)
from hyperfolio.server.keys import CREATE_COLLECTION, UPLOAD
from hyperfolio.server.library import Library

TOOL_SCOPES = {"add_document": WRITE}  # every other tool only reads
CREATING_TOOLS = frozenset({"add_document"})  # makes its collection when there is none
SERVER_PATH_TOOLS = frozenset({"add_document"})  # read a path on the service's machine: admin keys only

ToolResult = CallToolResult | InputRequiredResult
CallNext = Callable[[str, dict[str, Any], "Context[Any, Any] | None"], Awaitable[ToolResult]]


def principal_of(context: Context[Any, Any] | None, over_http: bool = True) -> Principal:
    """The principal of the HTTP request that carried the call; the local user over stdio (`over_http`
    False: whoever started the server). A call inside the service without a request is refused, never
    taken for the local user."""
    request = None
    if context is not None:
        try:
            request = context.request_context.request
        except ValueError:  # no request context: called in-process
            request = None
    if request is None:
        if over_http:
            raise ToolError(NO_KEY)
        return LOCAL
    principal = principal_in(request)
    if principal is None:
        raise ToolError(NO_KEY)
    return principal


@dataclass
class ToolGate:
    """The access check around every tool call, and the audit of what `add_document` changed."""

    library: Library
    gate: Gate | None  # None over stdio: nothing is audited
    default_collection: str
    scoped: frozenset[str] = field(default_factory=frozenset)  # the tools that take a `collection`

    async def call(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None, call_next: CallNext
    ) -> ToolResult:
        principal = principal_of(context, over_http=self.gate is not None)
        collection = self.collection_of(name, arguments)
        refused = decide(principal, TOOL_SCOPES.get(name, READ), collection)
        if refused is None and name in SERVER_PATH_TOOLS and self.gate is not None:
            # a path on the service's machine: any file its user can read, whatever collection it goes to
            refused = decide(principal, ADMIN, ALL)
        if refused is not None:
            raise ToolError(refused.detail)
        existed = await anyio.to_thread.run_sync(self._exists, collection)
        if collection is not None and principal.collections is not None and not existed and name not in CREATING_TOOLS:
            names = visible(principal, await anyio.to_thread.run_sync(self.library.names))
            known = ", ".join(names) if names else "none yet"
            raise ToolError(f"no collection named {collection!r} (collections: {known}); add_document creates one")
        result = await call_next(name, arguments, context)
        if name == "add_document" and collection is not None and self.gate is not None:
            await anyio.to_thread.run_sync(self._audit_add, principal, collection, existed, arguments, result)
        return result

    def collection_of(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """The collection a call acts on ("" for a value that is not a name: refused to a limited key,
        left to the tool's validation otherwise); None for a tool that takes none."""
        if name not in self.scoped:
            return None
        value = arguments.get("collection", self.default_collection)
        return value if isinstance(value, str) else ""

    def _exists(self, collection: str | None) -> bool:
        if not collection:
            return False
        try:
            return self.library.exists(collection)
        except HyperfolioError:  # not a collection name: the tool says so
            return True

    def _audit_add(
        self, principal: Principal, collection: str, existed: bool, arguments: Mapping[str, Any], result: ToolResult
    ) -> None:
        assert self.gate is not None
        if not existed and self._exists(collection):
            self.gate.record(principal, CREATE_COLLECTION, collection)
        data = result.structured_content if isinstance(result, CallToolResult) else None
        files = (data or {}).get("files") or []
        outcome = ", ".join(f"{row.get('file')}: {row.get('status')}" for row in files if isinstance(row, dict))
        detail = f"mcp add_document {arguments.get('path', '')}" + (f" ({outcome})" if outcome else "")
        self.gate.record(principal, UPLOAD, collection, None, detail)
