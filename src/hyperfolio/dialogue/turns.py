"""A conversation's turns: what was asked, what retrieval ran, what was answered and where it came from.

A follow-up is read against the turns before it, so a turn keeps what the next one may refer to: the
question as it stood alone, the short answer (the "it" of "why is it so high?"), and the documents and
pages the answer cited (what "show me the table" means).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hyperfolio.errors import ConversationNotFound, HyperfolioError
from hyperfolio.llm.messages import message_text
from hyperfolio.model import Answer, ConversationRecord
from hyperfolio.store.base import ConversationStore


@dataclass
class Turn:
    """One question and its answer."""

    question: str  # as asked
    standalone: str = ""  # what retrieval ran: the follow-up rewritten ("" when it was asked as is)
    answer: str = ""
    short: str = ""  # the answer itself when one was read off the evidence
    doc_ids: list[str] = field(default_factory=list)  # the documents the answer cited, first cited first
    pages: list[tuple[str, int]] = field(default_factory=list)  # (doc_id, page) cited
    scope: list[str] = field(default_factory=list)  # the documents the question was asked of ([]: all)
    how: str = ""  # how a follow-up was read ("period", "why", ...; followups.Rewrite.how), "" as asked
    asked_at: float = 0.0

    @property
    def asked(self) -> str:
        """The question as retrieval read it."""
        return self.standalone or self.question

    @classmethod
    def of(cls, answer: Answer, question: str, scope: Sequence[str] = (), asked_at: float = 0.0) -> Turn:
        """The turn an answer makes (`question` as the person wrote it; the answer's own is what ran)."""
        pages = list(dict.fromkeys((c.doc_id, c.page) for c in answer.citations))
        followup = answer.meta.get("followup") or {}
        return cls(
            question=question,
            standalone=answer.question if answer.question != question else "",
            answer=answer.text,
            short=answer.short,
            doc_ids=list(dict.fromkeys(doc for doc, _ in pages)),
            pages=pages,
            scope=list(scope),
            how=str(followup.get("how", "")),
            asked_at=asked_at,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "standalone": self.standalone,
            "answer": self.answer,
            "short": self.short,
            "doc_ids": self.doc_ids,
            "pages": [list(p) for p in self.pages],
            "scope": self.scope,
            "how": self.how,
            "asked_at": self.asked_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
        return cls(
            question=str(data.get("question", "")),
            standalone=str(data.get("standalone", "")),
            answer=str(data.get("answer", "")),
            short=str(data.get("short", "")),
            doc_ids=[str(d) for d in data.get("doc_ids", [])],
            pages=[(str(d), int(p)) for d, p in data.get("pages", [])],
            scope=[str(d) for d in data.get("scope", [])],
            how=str(data.get("how", "")),
            asked_at=float(data.get("asked_at", 0.0)),
        )


def turns_from_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[list[Turn], str]:
    """Chat messages (role, content: OpenAI's and Ollama's shape) as the turns before the last user
    message, and that message: the question. System messages are instructions for a model and are not
    turns; an assistant message answers the user message before it."""
    turns: list[Turn] = []
    pending: str | None = None
    for message in messages:
        role, text = str(message.get("role", "")), message_text(message.get("content"))
        if role == "user":
            if pending is not None:  # two user messages in a row: the first went unanswered
                turns.append(Turn(question=pending))
            pending = text
        elif role == "assistant" and pending is not None:
            turns.append(Turn(question=pending, answer=text))
            pending = None
    if pending is None or not pending.strip():
        raise HyperfolioError("messages: the last message must be the user's question")
    return turns, pending.strip()


def owned(store: ConversationStore, conversation_id: str, owner: str) -> ConversationRecord:
    """A stored conversation of `owner`'s; another owner's is as absent as one that never was."""
    record = store.get_conversation(conversation_id)
    if record is None or record.owner != owner:
        raise ConversationNotFound(conversation_id)
    return record
