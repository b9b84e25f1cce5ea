"""Commands that show or move a collection as a whole: `list`, `collections`, `stats`, `conflicts`,
`export`, `import` and `config`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from hyperfolio.cards.card import stored_card
from hyperfolio.cli.options import CollectionOpt, JsonOpt, location, open_existing
from hyperfolio.cli.printers import console, counted, fail, print_json
from hyperfolio.collection import Collection
from hyperfolio.config import SECRET_KEYS, Settings, data_home, user_settings_file
from hyperfolio.errors import HyperfolioError
from hyperfolio.store import display_name, is_server_location, local_folder
from hyperfolio.timing import StageTimes


def list_documents(collection: CollectionOpt = None, as_json: JsonOpt = False) -> None:
    """List the indexed documents."""
    col = open_existing(collection)
    docs = col.documents()
    if as_json:
        from dataclasses import asdict

        print_json([asdict(d) for d in docs])
        return
    table = Table(title=counted(len(docs), "document"))
    table.add_column("id", no_wrap=True)
    table.add_column("file", overflow="fold")
    table.add_column("title", overflow="fold")
    table.add_column("kind", overflow="fold")
    for name in ("pages", "chunks", "status"):
        table.add_column(name, justify="right" if name != "status" else "left")
    for d in docs:
        card = stored_card(d.meta, d.doc_id)
        kind = card.label() if card is not None else ""
        table.add_row(d.doc_id, Path(d.source).name, d.title, kind, str(d.num_pages), str(d.num_chunks), d.status)
    console.print(table)


def list_collections(
    root: Annotated[
        Path | None, typer.Option("--root", "-r", help="Folder to look in. Default: the data root.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the collections under the data root: the names -c, the service, the web app and MCP take."""
    from hyperfolio.store import COLLECTION_NAME, open_store, store_exists
    from hyperfolio.store.base import STAGE_READY

    folder = (root or data_home()).expanduser()
    rows: list[dict[str, Any]] = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not (COLLECTION_NAME.fullmatch(path.name) and store_exists(path)):
            continue
        store = open_store(path)
        try:
            docs = store.list_documents()
        finally:
            store.close()
        rows.append(
            {
                "name": path.name,
                "documents": len(docs),
                "pages": sum(d.num_pages for d in docs),
                "unfinished": sum(d.status != STAGE_READY for d in docs),
                "path": str(path),
            }
        )
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"{counted(len(rows), 'collection')} in {folder}")
    for name in ("name", "documents", "pages", "path"):
        table.add_column(name, justify="right" if name in ("documents", "pages") else "left", overflow="fold")
    for row in rows:
        unfinished = f" ({row['unfinished']} unfinished)" if row["unfinished"] else ""
        table.add_row(row["name"], f"{row['documents']:,}{unfinished}", f"{row['pages']:,}", row["path"])
    console.print(table)
    if not rows:
        console.print("none yet: hyperfolio add FILES -c NAME makes one (or hyperfolio demo)", highlight=False)


def stats(collection: CollectionOpt = None, as_json: JsonOpt = False) -> None:
    """Counts of documents, pages, chunks and index sizes."""
    col = open_existing(collection)
    data = col.stats()
    if as_json:
        print_json(data)
        return
    table = Table(title=f"collection {col.label}")
    table.add_column("what")
    table.add_column("value")
    times = StageTimes(dict(data.pop("stage_seconds", {})))
    for key, value in data.items():
        table.add_row(key, json.dumps(value) if isinstance(value, dict) else str(value))
    console.print(table)
    if times.seconds:
        pages = max(int(data.get("pages", 0)), 1)
        stages = Table(title="indexing time by stage (summed over documents and workers)")
        for name in ("stage", "seconds", "share", "ms per page"):
            stages.add_column(name, justify="left" if name == "stage" else "right")
        for stage, seconds in times.ordered():
            share = seconds / max(times.total, 1e-9)
            stages.add_row(stage, f"{seconds:.1f}", f"{share:.0%}", f"{1000 * seconds / pages:.0f}")
        stages.add_row("all", f"{times.total:.1f}", "100%", f"{1000 * times.total / pages:.0f}")
        console.print(stages)


def conflicts(
    collection: CollectionOpt = None,
    doc: Annotated[str | None, typer.Option("--doc", "-d", help="Only this document's decisions.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Conflicting facts found while indexing, and what was decided (kept, revised, dropped) and why."""
    col = open_existing(collection)
    try:
        decisions = col.conflicts(doc)
    except HyperfolioError as exc:
        fail(str(exc))
    if as_json:
        from dataclasses import asdict

        print_json([asdict(d) for d in decisions], ensure_ascii=False)
        return
    if not decisions:
        console.print("no conflicts recorded")
        return
    titles = col.titles()
    table = Table(title=counted(len(decisions), "decision"))
    for name in ("document", "kind", "decision", "fact", "weighed against", "why", "evidence"):
        table.add_column(name, overflow="fold")
    for d in decisions:
        pages = ", ".join(f"p.{c.rsplit(':', 2)[1]}" for c in d.evidence)
        table.add_row(titles.get(d.doc_id, d.doc_id), d.kind, d.decision, d.fact, d.other, d.reason, pages)
    console.print(table)


def export(
    out_dir: Annotated[Path, typer.Argument(help="New directory for the bundle (JSON Lines, HIF, GraphML).")],
    collection: CollectionOpt = None,
) -> None:
    """Write a collection as a bundle another backend can import."""
    col = open_existing(collection)
    _move_bundle(col, col.export_bundle, out_dir, f"exported to {out_dir}")


def import_(
    bundle_dir: Annotated[Path, typer.Argument(help="A bundle written by `hyperfolio export`.")],
    collection: CollectionOpt = None,
) -> None:
    """Load a bundle into a new, empty collection (vectors as exported; re-embedded if the bundle has none)."""
    from hyperfolio.store.bundle import read_manifest

    if not bundle_dir.is_dir():
        fail(f"{bundle_dir}: no such directory")
    read_manifest(bundle_dir)  # before opening the target, which would create it
    where = location(collection)
    col = Collection(where)
    _move_bundle(col, col.import_bundle, bundle_dir, f"imported into {where}")


def _move_bundle(col: Collection, move: Callable[[Path], Any], folder: Path, done: str) -> None:
    """Export or import the bundle at `folder`, close the collection, then say `done` and, table by table,
    how many rows moved, with the bundle's notes."""
    try:
        report = move(folder)
    finally:
        col.close()
    console.print(done)
    for name, count in report.counts.items():
        console.print(f"{name}: {count}")
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {note}")


def config_show(
    action: Annotated[str, typer.Argument(help="show: the effective settings and where each came from.")] = "show",
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the effective settings of a collection: each value and the layer that set it (defaults, the
    user settings file, the collection's settings.toml, HYPERFOLIO_* variables)."""
    if action != "show":
        fail(f"unknown config action {action!r}; use: hyperfolio config show")
    where = location(collection)
    folder = local_folder(where) if is_server_location(where) else Path(where)
    settings, sources = Settings.resolve(folder / "settings.toml")
    rows = []
    for key, value in _flat(settings.to_dict()):
        shown = "***" if key.rsplit(".", 1)[-1] in SECRET_KEYS and value else value
        rows.append({"key": key, "value": shown, "source": sources.get(key, "default")})
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"settings of {display_name(where)}")
    for name in ("key", "value", "source"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(
            row["key"], json.dumps(row["value"]), row["source"], style=None if row["source"] == "default" else "bold"
        )
    console.print(table)
    console.print(
        f"files read (later wins): {user_settings_file()}, {folder / 'settings.toml'}; then HYPERFOLIO_* variables",
        highlight=False,
        soft_wrap=True,
    )


def _flat(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in values.items():
        if isinstance(value, dict):
            out.extend(_flat(value, f"{prefix}{key}."))
        else:
            out.append((f"{prefix}{key}", value))
    return out
