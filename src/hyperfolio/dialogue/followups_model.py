"""A follow-up rewritten by a language model: it reads the conversation as people wrote it, which rules
cannot; its reply is checked, and the offline rewrite stands in when the model fails or drops what the
follow-up added (a follow-up is never answered as the question before it)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from hyperfolio.dialogue.followups import CITED_SCOPE, Rewrite, rewrite_offline
from hyperfolio.dialogue.turns import Turn
from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.fence import Fence, with_evidence_rule
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.phrases import content_words, one_line

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"\b[A-Za-z]?\d[\d.,]*\b")
STAGE = "keywords"  # a question-time call, served by the keywords role's model like decomposition
TURNS_SHOWN = 3  # earlier turns put in the prompt
ANSWER_CHARS = 300  # of each earlier answer
MAX_CHARS = 600  # a longer "question" is not one

SYSTEM_PROMPT = with_evidence_rule("""\
You turn the last message of a conversation about documents (the question) into one question that can be \
understood without the conversation: put in the names, periods, figures and subjects that its pronouns and \
omissions refer to. Keep everything the last message asks; do not answer it, and do not ask the earlier \
questions again. If it already stands alone, return it unchanged.""")


class RewriteReply(BaseModel):
    question: str = Field(description="the last message as a question that stands alone")


def conversation_prompt(question: str, history: Sequence[Turn]) -> str:
    """The earlier turns as one evidence block (answers are read off documents: data, never
    instructions; and a rewrite may copy them) and the last message as the question."""
    lines = []
    for turn in history[-TURNS_SHOWN:]:
        lines.append(f"Q: {turn.asked}")
        answer = turn.short or turn.answer
        if answer:
            lines.append(f"A: {one_line(answer)[:ANSWER_CHARS]}")
    earlier = "\n".join(lines)
    fence = Fence.over([earlier])
    return f"The conversation so far:\n{fence.quote(earlier, 'conversation')}\n\nQuestion: {question}"


def _terms(text: str) -> set[str]:
    """Content words and numbers ("2022", "Q3"), lower-cased."""
    return set(content_words(text)) | {n.lower() for n in _NUMBER.findall(text)}


def keeps_what_is_new(question: str, standalone: str, history: Sequence[Turn]) -> bool:
    """Whether the rewrite still holds the words the follow-up added to the conversation ("2022" in "and
    in 2022?"): a rewrite that lost them answers the question before it."""
    before = {w for turn in history for w in _terms(turn.asked)}
    return (_terms(question) - before) <= _terms(standalone)


class LLMRewriter:
    """The keywords model as the follow-up rewriter, checked; offline rules when it fails."""

    def __init__(self, chat: StructuredChatModel) -> None:
        self.chat = chat

    def rewrite(self, question: str, history: Sequence[Turn]) -> Rewrite:
        offline = rewrite_offline(question, history)
        if not history:
            return offline
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": conversation_prompt(question, history)},
        ]
        try:
            reply = self.chat.complete_json(messages, RewriteReply, stage=STAGE)
        except ModelCallError as exc:
            log.warning("the follow-up was rewritten offline, the model failed: %s", exc)
            return offline
        standalone = one_line(reply.question).strip()
        if not standalone or len(standalone) > MAX_CHARS or not keeps_what_is_new(question, standalone, history):
            log.warning("the model's rewrite of %r dropped what it asked; rewritten offline", question)
            return offline
        # asked where the last answer was found when the rules read the follow-up as leaning on it
        how = "model-cited" if offline.how in CITED_SCOPE else "model" if standalone != question else ""
        return Rewrite(" ".join(question.split()), standalone, how)
