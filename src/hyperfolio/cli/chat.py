"""`hyperfolio chat`: a conversation with a collection at the terminal, follow-ups read against the
questions before them ("and in 2022?", "why?", "show me the table")."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Annotated, Any

import typer

from hyperfolio.cli.options import CollectionOpt, ModeOpt
from hyperfolio.cli.printers import console, print_answer, print_evidence
from hyperfolio.cli.questions import DocOpt, searchable
from hyperfolio.collection import Collection, Conversation
from hyperfolio.errors import HyperfolioError
from hyperfolio.model import Answer, Scope
from hyperfolio.render import answer_dict, evidence_dict

HELP = (
    "Ask a question; a follow-up leans on the one before it ('and in 2022?', 'why?', 'show me the table').\n"
    "  /sources   the evidence behind the last answer\n"
    "  /page N    the text of page N of the document the last answer cited first\n"
    "  /new       start a new conversation\n"
    "  /help      this list;  /quit (or Ctrl-D) leaves"
)
PAGE_TEXT_LIMIT = 4000  # characters of a page printed by /page


class _Session:
    """The conversation and the last answer, which /sources and /page read."""

    def __init__(self, col: Collection, scope: Scope) -> None:
        self.col = col
        self.scope = scope
        self.conversation = Conversation(col)
        self.last: Answer | None = None

    def ask(self, question: str) -> None:
        try:
            self.last = self.conversation.ask(question, **self.scope)
        except (HyperfolioError, ValueError) as exc:
            console.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False)
            return
        followup = self.last.meta.get("followup") or {}
        if followup.get("standalone") and followup["standalone"] != question:
            console.print(f"[dim]read as: {followup['standalone']}[/dim]", soft_wrap=True, highlight=False)
        print_answer(answer_dict(self.last))

    def sources(self, _: str) -> None:
        if self.last is None:
            console.print("nothing asked yet")
            return
        print_evidence(evidence_dict(self.last.evidence))

    def page(self, argument: str) -> None:
        if self.last is None or not self.last.citations:
            console.print("no cited document yet: ask a question first")
            return
        if not argument.strip().isdigit():
            console.print("usage: /page N (a page number)")
            return
        cited = self.last.citations[0]
        number = int(argument)
        page = next((p for p in self.col.pages(cited.doc_id) if p["number"] == number), None)
        if page is None or not page["chunks"]:
            console.print(f"{cited.title} has no page {number}", highlight=False)
            return
        text = "\n".join(chunk["text"] for chunk in page["chunks"])
        console.print(f"[bold]{cited.title}, page {number}[/bold]", highlight=False, soft_wrap=True)
        console.print(text[:PAGE_TEXT_LIMIT], soft_wrap=True, highlight=False, markup=False)

    def new(self, _: str) -> None:
        self.conversation.new()
        self.last = None
        console.print("new conversation")


def _commands(session: _Session) -> dict[str, Callable[[str], Any]]:
    return {
        "/sources": session.sources,
        "/page": session.page,
        "/new": session.new,
        "/help": lambda _: console.print(HELP, highlight=False),
    }


def chat(
    collection: CollectionOpt = None,
    mode: ModeOpt = None,
    doc: DocOpt = None,
    prompt: Annotated[str, typer.Option("--prompt", help="The prompt before each question.")] = "you> ",
) -> None:
    """Talk with a collection: follow-up questions read the ones before them (/help lists commands)."""
    with contextlib.suppress(ImportError):  # line editing and history where there is readline (not Windows)
        import readline  # noqa: F401
    session = _Session(searchable(collection), Scope(mode=mode, doc=doc))
    commands = _commands(session)
    console.print(f"chatting with {session.col.label} — /help for commands, /quit to leave", highlight=False)
    while True:
        try:
            line = input(prompt).strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        if not line:
            continue
        word, _, rest = line.partition(" ")
        if word in ("/quit", "/exit"):
            return
        if word.startswith("/"):
            handler = commands.get(word)
            if handler is None:
                console.print(f"unknown command {word}; /help lists them", highlight=False)
            else:
                handler(rest)
            continue
        session.ask(line)
