"""Commands that question a collection: `ask` (a cited answer), `retrieve` (the ranked evidence) and
`demo` (a sample report indexed and asked, offline); `--server` puts the question to a running service."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_type_hints

import typer
from rich.markup import escape

from hyperfolio.cli.options import CollectionOpt, JsonOpt, ModeOpt, collection_flag, location, open_existing
from hyperfolio.cli.printers import console, counted, errors, fail, print_answer, print_evidence, print_json
from hyperfolio.collection import Collection
from hyperfolio.errors import HyperfolioError
from hyperfolio.model import Scope
from hyperfolio.render import answer_dict, evidence_dict
from hyperfolio.store import display_name, is_server_location

QuestionArg = Annotated[str, typer.Argument(help="The question.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="A retrieval knob for this call, KEY=VALUE (e.g. scoring=keyword, concepts=15)."),
]
DocOpt = Annotated[str | None, typer.Option("--doc", "-d", help="Scope to one document (id, file name or title).")]
KOpt = Annotated[int | None, typer.Option("--k", "-k", help="How many evidence chunks to retrieve.")]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="HYPERFOLIO_SERVER",
        help="Ask a running `hyperfolio serve` at this URL (its collection named like --collection's folder); "
        "HYPERFOLIO_API_KEY is sent as its key.",
    ),
]


def _parse_knobs(pairs: list[str] | None) -> dict[str, Any] | None:
    """KEY=VALUE pairs; the collection types them against the mode it runs (unknown keys are an error)."""
    if not pairs:
        return None
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            fail(f"--set expects KEY=VALUE, not {pair!r}")
        values[key.strip()] = value.strip()
    return values


@dataclass(frozen=True)
class _Question:
    """What `ask` and `retrieve` share: the question, where it goes (a running service or the collection)
    and its scope (mode, k, document, knobs)."""

    text: str
    collection: str | None
    scope: Scope
    server: str | None

    def put(self, kind: Literal["ask", "retrieve"]) -> dict[str, Any]:
        """The answer or the evidence, as `render` shapes it; documents left out because their indexing is
        unfinished are named on stderr."""
        result = self._to_service(self.server, kind) if self.server else self._to_collection(kind)
        _say_unfinished((result["evidence"] if kind == "ask" else result)["meta"], self.collection)
        return result

    def _to_collection(self, kind: Literal["ask", "retrieve"]) -> dict[str, Any]:
        """Run `Collection.ask` or `.retrieve`, turning user mistakes into a clear error and exit code 1."""
        col = searchable(self.collection)
        try:
            if kind == "ask":
                return answer_dict(col.ask(self.text, **self.scope))
            return evidence_dict(col.retrieve(self.text, **self.scope))
        except (HyperfolioError, ValueError) as exc:
            fail(str(exc))

    def _to_service(self, url: str, kind: Literal["ask", "retrieve"]) -> dict[str, Any]:
        """Ask a running service (its collection of the same name as --collection's last part)."""
        from hyperfolio.server.client import ServiceClient

        client = ServiceClient(url, os.environ.get("HYPERFOLIO_API_KEY", ""))
        try:
            method = client.ask if kind == "ask" else client.retrieve
            return method(Path(location(self.collection)).name, self.text, **self.scope)
        except HyperfolioError as exc:
            fail(str(exc))
        finally:
            client.close()


def _question_arguments(
    question: QuestionArg,
    collection: CollectionOpt = None,
    mode: ModeOpt = None,
    doc: DocOpt = None,
    k: KOpt = None,
    as_json: JsonOpt = False,
    knobs: SetOpt = None,
    server: ServerOpt = None,
) -> None:
    """The arguments of every command that puts a question (declared once; see `question_command`)."""


def question_command(command: Callable[..., None]) -> Callable[..., None]:
    """A Typer command taking `_question_arguments` and then the command's own options; `command` gets the
    `_Question` and `as_json` first. Typer reads the signature and hints set here (as the MCP tools do)."""
    shared = list(inspect.signature(_question_arguments).parameters.values())
    own = list(inspect.signature(command).parameters.values())[2:]
    own_hints = get_type_hints(command, include_extras=True)
    hints = get_type_hints(_question_arguments, include_extras=True) | {p.name: own_hints[p.name] for p in own}
    params = [p.replace(annotation=hints[p.name]) for p in shared + own]

    def run(**given: Any) -> None:
        scope = Scope(mode=given.pop("mode"), k=given.pop("k"), doc=given.pop("doc"))
        scope["options"] = _parse_knobs(given.pop("knobs"))
        asked = _Question(given.pop("question"), given.pop("collection"), scope, given.pop("server"))
        command(asked, given.pop("as_json"), **given)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    run.__name__, run.__qualname__, run.__doc__ = command.__name__, command.__qualname__, command.__doc__
    return run


def searchable(collection: str | None) -> Collection:
    """The collection to question: it must exist and hold documents, else asking it is a mistake to report."""
    col = open_existing(collection)
    if not col.titles():  # cheap: no chunk counts
        where = location(collection)
        flag = collection_flag(where)
        fail(f"the collection {display_name(where)} has no documents yet; add some: hyperfolio add FILES{flag}")
    return col


def _say_unfinished(meta: dict[str, Any], collection: str | None) -> None:
    """Names the documents not searched because their indexing was cut off or is still running."""
    for doc in meta.get("not_fully_indexed", []):
        errors.print(
            f"[yellow]not searched, not fully indexed ({doc['status']}):[/yellow] {doc['title']} ({doc['source']}); "
            f"finish it with: hyperfolio add {doc['source']}{collection_flag(collection)}",
            soft_wrap=True,
            highlight=False,
        )


@question_command
def ask(
    asked: _Question,
    as_json: bool,
    show_evidence: Annotated[bool, typer.Option("--evidence", help="Also print the evidence table.")] = False,
) -> None:
    """Answer a question with citations (document, page, region)."""
    answer = asked.put("ask")
    if as_json:
        print_json(answer, ensure_ascii=False)
        return
    if show_evidence:
        print_evidence(answer["evidence"])
    print_answer(answer)


@question_command
def retrieve(asked: _Question, as_json: bool) -> None:
    """Show the ranked evidence for a question, without answering."""
    evidence = asked.put("retrieve")
    if as_json:
        print_json(evidence, ensure_ascii=False)
    else:
        print_evidence(evidence)


def demo(
    collection: Annotated[
        str,
        typer.Option(
            "--collection",
            "-c",
            help="The demo collection: a name (under ~/.local/share/hyperfolio) or a folder path. Default: demo.",
        ),
    ] = "demo",
    question: Annotated[str | None, typer.Option("--question", "-q", help="Ask this instead.")] = None,
) -> None:
    """Generate a sample report, index it and answer a question about it, offline."""
    from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report

    if is_server_location(collection):
        fail("the demo builds a collection folder: give -c a name or a folder path", code=2)
    where = Path(location(collection))
    where.mkdir(parents=True, exist_ok=True)
    pdf = write_sample_report(where / "sample-report.pdf")
    console.print(f"sample document: {pdf}", highlight=False, soft_wrap=True)
    col = Collection(where)
    report = col.add([pdf])
    for result in report.results:
        if not result.ok:
            fail(f"{result.path}: {result.reason}")
        console.print(
            f"{result.status}: {Path(result.path).name} ({counted(result.pages, 'page')}, "
            f"{counted(result.chunks, 'chunk')}) into the collection {col.label}",
            highlight=False,
            soft_wrap=True,
        )
    q = question or SAMPLE_QUESTION
    console.print(f"[bold]Question:[/bold] {q}")
    print_answer(answer_dict(col.ask(q)))
    flag = collection_flag(str(where))
    console.print(
        f"\n[bold]Next[/bold] (this collection, {col.label}: {where}):\n"
        f'  hyperfolio ask "Which region had the lowest revenue?"{flag}\n'
        f"  hyperfolio list{flag}\n"
        f'  hyperfolio viz -q "{escape(q)}" -o demo.png{flag}\n'
        "[bold]Your own documents[/bold] (the default collection, ~/.local/share/hyperfolio/default):\n"
        "  hyperfolio add ~/Documents/reports/\n"
        '  hyperfolio ask "your question"',
        highlight=False,
        soft_wrap=True,
    )
