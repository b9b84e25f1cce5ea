"""Query decomposition by a language model: entity keywords (K_low) and theme keywords (K_high)."""

from __future__ import annotations

import logging

from pydantic import BaseModel, Field

from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.phrases import one_line
from hyperfolio.retrieve.keywords import Keywords, decompose

log = logging.getLogger(__name__)

STAGE = "keywords"

SYSTEM_PROMPT = """\
You prepare a question for search in a knowledge hypergraph built from documents.

Return two lists:
- low: the concrete things the question names or needs - people, organisations, places, \
products, technical terms, table or figure labels, numbers, years - each written the way a \
document would write it.
- high: the themes behind the question - the relation, trend or topic that an answer has to \
address - as short phrases.

Use the question's own words where you can, and do not answer the question."""


class KeywordReply(BaseModel):
    low: list[str] = Field(default_factory=list, description="entity keywords")
    high: list[str] = Field(default_factory=list, description="theme keywords")


def _clean(items: list[str], limit: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        text = one_line(str(item)).strip(" .,;:\"'")
        if text and text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out[:limit]


def llm_decompose(chat: StructuredChatModel, question: str, max_keywords: int = 8) -> Keywords:
    """K_low and K_high for `question` from the model; the offline `decompose` when the model fails."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Question: {question}\n\nAt most {max_keywords} keywords per list."},
    ]
    try:
        reply = chat.complete_json(messages, KeywordReply, stage=STAGE)
    except ModelCallError as exc:
        log.warning("keyword extraction failed; decomposing offline: %s", exc)
        return decompose(question, max_keywords)
    low, high = _clean(reply.low, max_keywords), _clean(reply.high, max_keywords)
    if not low and not high:
        return decompose(question, max_keywords)
    return Keywords(low, high)


class LLMDecomposer:
    """The keywords model as the context's `Decomposer` (offline rules when it fails)."""

    def __init__(self, chat: StructuredChatModel) -> None:
        self.chat = chat

    def decompose(self, question: str, max_keywords: int) -> Keywords:
        return llm_decompose(self.chat, question, max_keywords)
