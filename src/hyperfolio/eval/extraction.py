"""The answer-extraction step before exact match and F1 (HVM-GraphRAG appendix B.3).

A free-form response is reduced to its concise answer by a language model when one is
configured; inclusion accuracy is computed on the full response, so it needs no model.
"""

from __future__ import annotations

from pydantic import BaseModel

from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.fence import Fence, with_evidence_rule
from hyperfolio.llm.protocols import StructuredChatModel

STAGE = "answer_extraction"
_INSTRUCTION = with_evidence_rule(
    "You are given a question and a response that answers it. Return only the answer itself, as short "
    "as possible: a name, a number with its unit, a date, yes or no, or a short phrase copied from the "
    "response. If the response says it cannot answer, return an empty string."
)


class ExtractedAnswer(BaseModel):
    answer: str = ""


def extract_answer(chat: StructuredChatModel | None, question: str, response: str) -> str:
    """The concise answer inside `response`; without a model the response is used as it is."""
    if chat is None or not response.strip():
        return response
    messages = [
        {"role": "system", "content": _INSTRUCTION},
        {"role": "user", "content": f"Question: {question}\n\nResponse:\n{Fence.over([response]).quote(response)}"},
    ]
    try:
        return chat.complete_json(messages, ExtractedAnswer, stage=STAGE).answer
    except ModelCallError:
        return response
