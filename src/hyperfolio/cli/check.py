"""`hyperfolio check`: the collection's integrity check (store/integrity.py) and, with --repair, its repair.

Exit code 0 when nothing dangles, 1 when problems remain, so a script or a cron job can act on it. Documents
not fully indexed are no problem (another `add` may be at work on them; `add` resumes one that was cut off):
they are named after the problem table, with the command that finishes them, and counted in the summary.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from hyperfolio.cli.options import CollectionOpt, JsonOpt, collection_flag, open_existing
from hyperfolio.cli.printers import console, counted, errors, print_json
from hyperfolio.store.integrity import EXAMPLES, KINDS, IntegrityReport, Unfinished

RepairOpt = Annotated[
    bool,
    typer.Option(
        "--repair",
        help="Delete rows that point at nothing, rebuild the keyword index, embed chunks without a vector; "
        "then check again. Run it while no `add` writes to the collection.",
    ),
]


def check_command(collection: CollectionOpt = None, repair: RepairOpt = False, as_json: JsonOpt = False) -> None:
    """Check the collection's integrity: rows pointing at rows no longer there, and unfinished documents."""
    col = open_existing(collection)
    try:
        report = col.check(repair=repair)
    finally:
        col.close()
    if as_json:
        print_json(report.to_dict(), ensure_ascii=False)
    else:
        _print_report(report, collection)
    if not report.ok:
        raise typer.Exit(1)


def _print_report(report: IntegrityReport, collection: str | None) -> None:
    for kind, rows in report.repaired.items():
        if rows:
            console.print(
                f"[green]repaired:[/green] {KINDS[kind].title} ({counted(rows, 'row')})",
                soft_wrap=True,
                highlight=False,
            )
    if report.findings:
        table = Table(title="integrity check")
        for name in ("kind", "count", "examples", "what --repair does"):
            table.add_column(name, justify="right" if name == "count" else "left")
        for f in report.findings:
            examples = ", ".join(f.examples) + (", …" if f.count > len(f.examples) else "")
            how = f.how if f.repairable else f"not repaired: {f.how}"
            table.add_row(escape(f.title), f"{f.count:,}", escape(examples), escape(how))
        console.print(table)
    _print_unfinished(report.unfinished, collection)
    style = "green" if report.ok else "red"
    console.print(f"[{style}]{escape(report.summary())}[/{style}]", soft_wrap=True, highlight=False)


def _print_unfinished(unfinished: list[Unfinished], collection: str | None) -> None:
    """A note, not a problem: documents an `add` is indexing now (by its live claim), and those a cut-off
    one left, with the command that finishes them."""
    for doc in [d for d in unfinished if d.indexing_by][:EXAMPLES]:
        errors.print(
            f"[yellow]being indexed now[/yellow] by {escape(doc.indexing_by)}: {escape(doc.source)}",
            soft_wrap=True,
            highlight=False,
        )
    unfinished = [d for d in unfinished if not d.indexing_by]
    if not unfinished:
        return
    them = "it" if len(unfinished) == 1 else "them"
    errors.print(
        f"[yellow]{counted(len(unfinished), 'document')} not fully indexed:[/yellow] an interrupted `add` left "
        f"{them}; finish {them} with:",
        soft_wrap=True,
        highlight=False,
    )
    flag = escape(collection_flag(collection))
    for doc in unfinished[:EXAMPLES]:
        errors.print(f"  hyperfolio add {escape(doc.source)}{flag}", soft_wrap=True, highlight=False)
    if len(unfinished) > EXAMPLES:
        errors.print(
            f"  and {counted(len(unfinished) - EXAMPLES, 'more document')}: hyperfolio list{flag} shows them",
            soft_wrap=True,
            highlight=False,
        )
