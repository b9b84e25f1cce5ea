"""Commands that draw: `viz` (part of the hypergraph, for people) and `probe-layouts` (which dual view the
vision model reads best)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hyperfolio.cli.options import CollectionOpt, ModeOpt, open_existing
from hyperfolio.cli.printers import console, fail
from hyperfolio.errors import HyperfolioError


def viz(
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write: .png, .svg or .html (interactive).")],
    collection: CollectionOpt = None,
    doc: Annotated[str | None, typer.Option("--doc", "-d", help="Draw a document's hypergraph.")] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", help="Draw the evidence behind a question.")] = None,
    entity: Annotated[str | None, typer.Option("--entity", "-e", help="Draw an entity's neighbourhood.")] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout", "-l", help="set-hier, set-radial, set-force, bi-inc, ra-cen, cli-exp; two for a dual view"
        ),
    ] = None,
    mode: ModeOpt = "dual",
) -> None:
    """Draw part of the hypergraph with ids that match the exported mapping (<out>.json)."""
    col = open_existing(collection)
    try:
        picture = col.visualize(out, doc=doc, query=query, entity=entity, layout=layout, mode=mode or "dual")
    except HyperfolioError as exc:
        fail(str(exc))
    console.print(
        f"wrote {picture.path} ({picture.entities} entities, {picture.hyperedges} hyperedges; "
        f"{picture.pruned} entities pruned to fit) and the id mapping {picture.mapping}"
    )


def probe_layouts(
    collection: CollectionOpt = None,
    k: Annotated[int, typer.Option("--k", "-k", help="Probes per layout pair.")] = 15,
    doc: Annotated[str | None, typer.Option("--doc", "-d", help="Make the probes from this document.")] = None,
) -> None:
    """Pick the dual view the configured vision model reads best, and keep it as the default."""
    try:
        choice = open_existing(collection).probe_layouts(k, doc)
    except HyperfolioError as exc:
        fail(str(exc))
    for result in choice.results:
        console.print(f"  {result.pair[0]} + {result.pair[1]}: {result.correct}/{result.asked}")
    console.print(f"dual view: {choice.pair[0]} + {choice.pair[1]} ({choice.reason}; {choice.probes} probes)")
