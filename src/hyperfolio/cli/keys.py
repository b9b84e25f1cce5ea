"""`hyperfolio keys`: the service's API keys (create, list, revoke) and its audit log, in the key store under
the served root (`<root>/.service/keys.sqlite`, see `server.keys`). Works on the same `--root` as `serve`,
whether or not the service runs: it reads each key on every request, so a revocation holds at once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from hyperfolio.cli.printers import console, counted, print_json
from hyperfolio.cli.serving import RootOpt
from hyperfolio.config import data_home
from hyperfolio.server.keys import SCOPES, KeyStore

app = typer.Typer(
    help="The service's API keys (scopes read < write < admin, collections, rate limits) and its audit log.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
CLI_USER = ("", "local (hyperfolio keys)")  # who the audit log says made or revoked a key from here


def _store(root: Path | None) -> KeyStore:
    return KeyStore(root or data_home())


@app.command("create")
def create(
    name: Annotated[str, typer.Option("--name", "-n", help="Whose key, or what for (in lists and the audit log).")],
    scope: Annotated[
        str, typer.Option("--scope", "-s", help=f"One of {', '.join(SCOPES)}; each implies the ones before it.")
    ] = "read",
    collection: Annotated[
        list[str] | None,
        typer.Option("--collection", "-c", help="A collection the key may use (repeatable). Default: every one."),
    ] = None,
    rate: Annotated[
        int | None,
        typer.Option("--rate", help="Requests per minute for this key. Default: the service's --rate-limit."),
    ] = None,
    root: RootOpt = None,
) -> None:
    """Create a key and print its secret, once: it is stored only as a hash."""
    store = _store(root)
    try:
        key, token = store.create(name, scope, collection or None, rate, by=CLI_USER)
    finally:
        store.close()
    seen = ", ".join(key.collections) if key.collections is not None else "every collection"
    console.print(f"created key {key.key_id} ({escape(key.name)}): {key.scope} on {escape(seen)}", highlight=False)
    console.print("its secret, shown this once (send it as 'Authorization: Bearer <secret>'):", highlight=False)
    print(token)


@app.command("list")
def list_keys(root: RootOpt = None, as_json: JsonOpt = False) -> None:
    """List the keys (never their secrets), revoked ones included."""
    store = _store(root)
    try:
        keys = store.list_keys()
    finally:
        store.close()
    if as_json:
        print_json([key.to_dict() for key in keys])
        return
    table = Table(title=f"{counted(len(keys), 'key')} in {store.path}")
    for column in ("id", "name", "scope", "collections", "rate/min", "created", "revoked"):
        table.add_column(column, overflow="fold")
    for key in keys:
        seen = ", ".join(key.collections) if key.collections is not None else "*"
        rate = str(key.rate) if key.rate is not None else "default"
        table.add_row(key.key_id, escape(key.name), key.scope, escape(seen), rate, key.created, key.revoked or "")
    console.print(table)


@app.command("revoke")
def revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (hyperfolio keys list).")],
    root: RootOpt = None,
) -> None:
    """Revoke a key: the service refuses it from its next request on."""
    store = _store(root)
    try:
        key = store.revoke(key_id, by=CLI_USER)
    finally:
        store.close()
    console.print(f"revoked key {key.key_id} ({escape(key.name)}) at {key.revoked}", highlight=False)


@app.command("audit")
def audit(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many rows, newest first.")] = 50,
    root: RootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the audit log: uploads, document removals, new collections, key changes; who, what, when."""
    store = _store(root)
    try:
        entries = store.audit(limit)
    finally:
        store.close()
    if as_json:
        print_json([entry.to_dict() for entry in entries])
        return
    table = Table(title=f"audit log, the latest {counted(len(entries), 'row')}")
    for column in ("when", "who", "action", "collection", "document", "detail"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        who = f"{entry.key_id} ({entry.key_name})" if entry.key_id else entry.key_name
        shown = (entry.collection or "", entry.document or "", entry.detail)
        table.add_row(entry.at, escape(who), entry.action, *(escape(text) for text in shown))
    console.print(table)
