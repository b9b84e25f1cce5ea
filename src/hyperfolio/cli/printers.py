"""What the commands print: the two consoles, one-line errors, counted nouns, `--json` output, and the answer
and its evidence (from `render`'s dicts, the shapes the service sends too)."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()
errors = Console(stderr=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr naming what is wrong, then exit `code`."""
    errors.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def counted(count: int, noun: str, many: str | None = None) -> str:
    """'1 page', '3 pages', '0 documents'."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def print_json(data: Any, ensure_ascii: bool = True) -> None:
    """`--json` output: indented, on stdout as plain text (no markup, no wrapping) for a script to parse."""
    print(json.dumps(data, indent=2, ensure_ascii=ensure_ascii))


def print_evidence(evidence: dict[str, Any]) -> None:
    """The evidence table, from `render.evidence_dict` (the service sends the same shape)."""
    table = Table(title=f"evidence ({evidence['strategy']})", show_lines=False)
    for name in ("#", "score", "modality", "citation", "text"):
        table.add_column(name, overflow="fold")
    for item in evidence["items"]:
        text = " ".join(item["text"].split())
        table.add_row(
            str(item["rank"]),
            f"{item['score']:.3f}",
            item["modality"],
            item["citation"]["label"],
            text[:160] + ("…" if len(text) > 160 else ""),
        )
    console.print(table)
    if evidence["hyperedges"]:
        graph = Table(title="hypergraph evidence", show_lines=False)
        for name in ("level", "members", "description", "pages"):
            graph.add_column(name, overflow="fold")
        for hit in evidence["hyperedges"][:8]:
            pages = ", ".join(f"p.{p['page']}" for p in hit["pages"][:6])
            graph.add_row(hit["level"], "; ".join(hit["members"][:6]), hit["description"][:140], pages)
        console.print(graph)
    _print_concepts(evidence["meta"])


def _print_concepts(meta: dict[str, Any]) -> None:
    """The concept strategy's anchors and the relations it followed, when it ran."""
    if "concepts" not in meta:
        return
    anchors = ", ".join(f"{name} ({score:.2f})" for name, score in meta["concepts"]) or "none"
    console.print(f"concept anchors: {anchors}")
    if meta.get("relations"):
        shown = "; ".join(f"{h} -{r}-> {t}" for h, r, t in meta["relations"][:8])
        console.print(f"relations: {shown}")
    if meta.get("expanded_concepts"):
        console.print(f"reached through relations: {', '.join(meta['expanded_concepts'][:10])}")


def print_answer(answer: dict[str, Any]) -> None:
    """The answer and its numbered citations, from `render.answer_dict`."""
    style = "bold green" if answer["sufficient"] else "bold yellow"
    console.print(f"[{style}]Answer:[/{style}] {answer['answer']}")
    for number, citation in enumerate(answer["citations"], start=1):
        section = " > ".join(citation["section_path"])
        console.print(f"  [{number}] {citation['label']}" + (f" — {section}" if section else ""))
    meta = answer.get("meta") or {}
    for conflict in meta.get("conflicts") or []:  # the offline answer says them in its text; a model may not
        if conflict.get("line") and conflict["line"] not in answer["answer"]:
            console.print(f"  [yellow]{conflict['line']}[/yellow]", soft_wrap=True, highlight=False)
    console.print(f"[dim]{answered_by(answer.get('answerer') or 'extractive')}[/dim]", soft_wrap=True, highlight=False)
    if meta.get("citation_support") == "unsupported":
        errors.print(
            "[yellow]no cited evidence holds this answer's numbers or names: the model may have made it up; "
            "check the citations (or ask again with --evidence)[/yellow]",
            soft_wrap=True,
        )


def answered_by(answerer: str) -> str:
    """Which answerer answered, in words: the model, or the extractive one and why it stood in."""
    if answerer == "llm":
        return "answered by the language model (the answer role)"
    if answerer.startswith("extractive (") and answerer.endswith(")"):
        return f"answered extractively, because the {answerer[len('extractive (') : -1]}"
    if answerer == "extractive":
        return "answered extractively (no language model is configured for answers)"
    return f"answered by {answerer}"
