"""The options several commands take, and where the collection is (a command other than `add` never creates
one by opening a mistyped path)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hyperfolio.cli.printers import fail
from hyperfolio.config import Settings, data_home, default_collection
from hyperfolio.errors import HyperfolioError
from hyperfolio.retrieve import STRATEGIES
from hyperfolio.store import display_name, resolve_location, store_exists

if TYPE_CHECKING:
    from hyperfolio.collection import Collection

CollectionOpt = Annotated[
    str | None,
    typer.Option(
        "--collection",
        "-c",
        envvar="HYPERFOLIO_COLLECTION",
        help="Collection: a name (the collection under ~/.local/share/hyperfolio that the service, the web "
        "app and MCP call by that name), a folder path (./reports, /data/reports) or a PostgreSQL URL "
        "(postgresql://user@host/db). Default: default.",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode",
        "-m",
        help=f"Retrieval mode: {', '.join(STRATEGIES)}. Default: {Settings().default_mode}, or the collection's "
        "default_mode setting.",
        show_default=False,
    ),
]


def location(collection: str | None) -> str:
    """The collection a command works on (--collection / HYPERFOLIO_COLLECTION, else the default), read
    as every face reads a collection reference (`store.resolve_location`)."""
    try:
        return resolve_location(collection or str(default_collection()))
    except HyperfolioError as exc:
        fail(str(exc), code=2)


def collection_flag(collection: str | None) -> str:
    """The `-c ...` to repeat in a suggested command (nothing for the default collection)."""
    where = location(collection)
    return "" if where == str(default_collection()) else f" -c {display_name(where)}"


def open_existing(collection: str | None) -> Collection:
    """The collection at --collection, which must exist: only `add` (and `import`) create one."""
    from hyperfolio.collection import Collection

    where = location(collection)
    if not store_exists(where):
        fail(_missing(collection, where))
    return Collection(where)


def _missing(collection: str | None, where: str) -> str:
    """What is not there and what to do: for a name, where names live and, when a folder of that name here is
    a collection (before names meant the data root, `-c reports` meant ./reports), how to reach it."""
    name = display_name(where)
    create = f"create it by adding documents: hyperfolio add FILES{collection_flag(where)}"
    if name == where:
        return f"no collection at {where}; {create}"
    said = f"no collection named {name!r} in {data_home()}"
    if collection and store_exists(Path(collection).absolute()):
        return f"{said}, but the folder ./{collection} here is one: use -c ./{collection}"
    return f"{said} (hyperfolio collections lists them); {create}"
