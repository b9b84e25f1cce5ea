"""A model's answer as a chat reply streams it (server/chat_replies.Draft): what is sent while the model
writes, then the rest of the finished answer, is that answer once, never the answer and then it again."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from tests.conftest import text_evidence

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")

from hyperfolio.answer.extractive import ExtractiveAnswerer  # noqa: E402
from hyperfolio.answer.model import LLMAnswerer  # noqa: E402
from hyperfolio.errors import HyperfolioError  # noqa: E402
from hyperfolio.model import Answer, EvidencePackage  # noqa: E402
from hyperfolio.server.answer_stream import written_while_answering  # noqa: E402
from hyperfolio.server.chat_replies import Draft  # noqa: E402

QUESTION = "How did revenue, profit and costs change in 2024?"
PAGES = [
    "Revenue grew by 8 percent to 412 million euros in 2024, and profit fell to 61 million euros.",
    "Costs rose by 5 percent in 2024, mostly for maintenance of the older wind farms.",
]
CITED_ONLY = re.compile(r"( \[\d+\])?(\[\d+\])*")  # what may follow the draft: the renumbered markers


class ScriptedModel:
    """A chat model whose JSON reply is written a character at a time, as a streamed reply grows."""

    def __init__(self, answer: str, citations: Sequence[int]) -> None:
        self.reply = json.dumps({"answer": answer, "citations": list(citations), "sufficient": True})

    def complete_json(
        self,
        messages: Sequence[dict[str, Any]],
        model_type: type[Any],
        stage: str | None = None,
        on_text: Callable[[str], None] | None = None,
        **params: Any,
    ) -> Any:
        for end in range(1, len(self.reply) + 1):
            if on_text is not None:
                on_text(self.reply[:end])
        return model_type.model_validate_json(self.reply)


def evidence() -> EvidencePackage:
    return text_evidence(QUESTION, PAGES, title="Annual report")


def drafted(answer: str, citations: Sequence[int] = (1, 2)) -> tuple[list[str], str, Answer]:
    """The pieces a chat reply sends while the model writes `answer`, the rest it sends when the answer is
    finished, and that answer."""
    draft, pieces = Draft(), []
    model = ScriptedModel(answer, citations)
    answerer = LLMAnswerer(model, ExtractiveAnswerer())  # type: ignore[arg-type]  # a scripted model

    def on_text(text: str) -> None:
        if piece := draft.feed(text):
            pieces.append(piece)

    finished = answerer.answer(QUESTION, evidence(), on_text)
    return pieces, draft.finish(finished.text), finished


@pytest.mark.parametrize(
    "written",
    [
        "Revenue grew [1] and profit fell.\n\nCosts rose [2].",
        "Revenue grew by 8 percent [1], profit fell [1];\ncosts rose by 5 percent [2].",
        "[1] Revenue grew by 8 percent and profit fell.\n\n[2] Costs rose by 5 percent.",
        "<ev-abc 1>Revenue grew by 8 percent [1].</ev-abc>\n\n<ev-abc 2>Costs rose [1, 2].</ev-abc>",
        "- Revenue: up 8 percent [1]\n- Profit: down [1]\n- Costs: up 5 percent [2]",
        "Costs rose by under 10 percent (< 10) [2]; revenue grew by 8 percent [1\u20132].",
    ],
)
def test_a_model_answer_is_sent_once_as_it_is_written(written):
    pieces, rest, answer = drafted(written)
    assert answer.answerer == "llm" and answer.citations
    assert "".join(pieces) + rest == answer.text  # the answer once: no repeat after a blank line
    assert CITED_ONLY.fullmatch(rest), rest  # all the model's text was sent as it was written
    assert len(pieces) > 5, pieces


def test_an_answer_that_reads_otherwise_follows_the_draft_after_a_blank_line():
    pieces, rest, answer = drafted("Revenue grew by 8 percent [7].", citations=[7])  # cites nothing shown
    assert answer.answerer.startswith("extractive (model failed")
    assert "".join(pieces) == "Revenue grew by 8 percent."  # the model's draft, as it was shown
    assert rest == "\n\n" + answer.text


def test_a_marker_or_tag_being_written_waits_for_its_end():
    draft = Draft()
    assert draft.feed("Revenue grew [") == "Revenue grew"
    assert draft.feed("Revenue grew [1,") == ""
    assert draft.feed("Revenue grew [1, 2].") == "."
    assert draft.feed("Revenue grew [1, 2]. <ev-a") == ""  # an echoed evidence tag, dropped once whole
    assert draft.feed("Revenue grew [1, 2]. <ev-abc 2>Costs") == " Costs"
    assert draft.feed("Revenue grew [1, 2]. <ev-abc 2>Costs are <") == " are"
    assert draft.feed("Revenue grew [1, 2]. <ev-abc 2>Costs are < 5") == " < 5"  # not a tag: sent
    assert draft.finish("Revenue grew. Costs are < 5 percent. [1][2]") == " percent. [1][2]"


def test_what_is_written_while_answering_comes_in_order_then_the_answer():
    answer = Answer(QUESTION, "Revenue grew. [1]", [], evidence(), sufficient=True)

    def answering(on_text: Callable[[str], None]) -> Answer:
        for end in range(1, 6):
            on_text("Revenue grew"[:end])
        return answer

    def refusing(on_text: Callable[[str], None]) -> Answer:
        on_text("Rev")
        raise HyperfolioError("refused")

    async def collected(run: Callable[[Callable[[str], None]], Answer]) -> list[str | Answer]:
        return [written async for written in written_while_answering(run)]

    assert asyncio.run(collected(answering)) == ["R", "Re", "Rev", "Reve", "Reven", answer]
    seen: list[str | Answer] = []

    async def until_refused() -> None:
        async for written in written_while_answering(refusing):
            seen.append(written)

    with pytest.raises(HyperfolioError, match="refused"):
        asyncio.run(until_refused())
    assert seen == ["Rev"]
