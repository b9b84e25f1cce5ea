"""An answer as server-sent events: the evidence first, then the text as a language model writes it,
then the cited answer — what `ask/stream` and a conversation's `ask/stream` both send."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing

from fastapi.sse import ServerSentEvent

from hyperfolio.errors import HyperfolioError
from hyperfolio.model import Answer, EvidencePackage
from hyperfolio.render import answer_dict, evidence_dict

Answering = Callable[[Callable[[str], None]], Answer]  # answers, passing the text so far to its argument


async def written_while_answering(answering: Answering) -> AsyncGenerator[str | Answer, None]:
    """Runs `answering` on a worker thread: the text so far each time it passes some on (from that
    thread), in order, then the answer. Its error, if it fails, is raised after the text it passed on."""
    loop = asyncio.get_running_loop()
    written: asyncio.Queue[str] = asyncio.Queue()

    def on_text(text: str) -> None:  # called on the answering thread
        loop.call_soon_threadsafe(written.put_nowait, text)

    running = asyncio.ensure_future(asyncio.to_thread(answering, on_text))
    while not running.done() or not written.empty():
        waiting = asyncio.ensure_future(written.get())
        await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            yield waiting.result()
        else:
            waiting.cancel()
    yield running.result()


async def answer_events(evidence: EvidencePackage, answering: Answering) -> AsyncIterator[ServerSentEvent]:
    """`evidence`, then `delta` events while `answering` runs on a worker thread, then `answer` (or, as
    the stream has started, an `error` event for a refusal)."""
    yield ServerSentEvent(data=evidence_dict(evidence), event="evidence")
    answer: Answer | None = None
    try:
        async with aclosing(written_while_answering(answering)) as written:
            async for text in written:
                if isinstance(text, Answer):
                    answer = text
                else:
                    yield ServerSentEvent(data={"text": text}, event="delta")
    except HyperfolioError as exc:
        yield ServerSentEvent(data={"status": 400, "detail": str(exc)}, event="error")
        return
    assert answer is not None, "the answer is the last thing written"
    yield ServerSentEvent(data=answer_dict(answer), event="answer")
