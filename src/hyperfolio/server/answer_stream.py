"""An answer as server-sent events: the evidence first, then the text as a language model writes it,
then the cited answer — what `ask/stream` and a conversation's `ask/stream` both send."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from fastapi.sse import ServerSentEvent

from hyperfolio.errors import HyperfolioError
from hyperfolio.model import Answer, EvidencePackage
from hyperfolio.render import answer_dict, evidence_dict

Answering = Callable[[Callable[[str], None]], Answer]  # answers, passing the text so far to its argument


async def answer_events(evidence: EvidencePackage, answering: Answering) -> AsyncIterator[ServerSentEvent]:
    """`evidence`, then `delta` events while `answering` runs on a worker thread, then `answer` (or, as
    the stream has started, an `error` event for a refusal)."""
    yield ServerSentEvent(data=evidence_dict(evidence), event="evidence")
    loop = asyncio.get_running_loop()
    written: asyncio.Queue[str] = asyncio.Queue()

    def on_text(text: str) -> None:  # called on the model client's thread
        loop.call_soon_threadsafe(written.put_nowait, text)

    running = asyncio.ensure_future(asyncio.to_thread(answering, on_text))
    while not running.done() or not written.empty():
        waiting = asyncio.ensure_future(written.get())
        await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            yield ServerSentEvent(data={"text": waiting.result()}, event="delta")
        else:
            waiting.cancel()
    try:
        answer = running.result()
    except HyperfolioError as exc:
        yield ServerSentEvent(data={"status": 400, "detail": str(exc)}, event="error")
        return
    yield ServerSentEvent(data=answer_dict(answer), event="answer")
