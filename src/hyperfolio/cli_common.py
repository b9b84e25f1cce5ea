"""What every command of the CLI shares: the consoles, one-line errors, counted nouns, and where the
collection is (a command other than `add` never creates one by opening a mistyped path)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from hyperfolio.config import default_collection

if TYPE_CHECKING:
    from hyperfolio.collection import Collection

console = Console()
errors = Console(stderr=True)

# Options several commands take (cli.py and cli_check.py).
CollectionOpt = Annotated[
    str | None,
    typer.Option(
        "--collection",
        "-c",
        envvar="HYPERFOLIO_COLLECTION",
        help="Collection directory, or a PostgreSQL URL (postgresql://user@host/db). "
        "Default: ~/.local/share/hyperfolio/default.",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr naming what is wrong, then exit `code`."""
    errors.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def location(collection: str | None) -> str:
    """The collection a command works on: --collection / HYPERFOLIO_COLLECTION, else the default."""
    return collection or str(default_collection())


def collection_flag(collection: str | None) -> str:
    """The `-c ...` to repeat in a suggested command (nothing for the default collection)."""
    where = location(collection)
    return "" if where == str(default_collection()) else f" -c {where}"


def open_existing(collection: str | None) -> Collection:
    """The collection at --collection, which must exist: only `add` (and `import`) create one."""
    from hyperfolio.collection import Collection
    from hyperfolio.store import store_exists

    where = location(collection)
    if not store_exists(where):
        fail(f"no collection at {where}; create it by adding documents: hyperfolio add FILES{collection_flag(where)}")
    return Collection(where)


def counted(count: int, noun: str, many: str | None = None) -> str:
    """'1 page', '3 pages', '0 documents'."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"
