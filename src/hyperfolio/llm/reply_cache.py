"""The response cache as a client uses it: off the event loop, hits counted, stale replies dropped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from hyperfolio.llm.cache import ResponseCache
from hyperfolio.llm.json_repair import JSONRepairError
from hyperfolio.llm.reply_checks import RejectedReply
from hyperfolio.llm.transport import Completion
from hyperfolio.llm.usage import UsageMeter


class ReplyCache:
    """One model's cached replies (nothing at all without a cache), counted in the usage meter."""

    def __init__(self, model: str, cache: ResponseCache | None, usage: UsageMeter | None) -> None:
        self.model = model
        self.cache = cache
        self.usage = usage

    async def get(self, key: str, stage: str, validate: Callable[[str], Any] | None = None) -> Any:
        """The cached reply (validated by `validate` when given), counted as a hit; None on a miss.

        A cached reply that no longer validates is dropped, so the call goes to the server.
        """
        if self.cache is None:
            return None
        cached = await asyncio.to_thread(self.cache.get, key)
        if cached is None:
            return None
        value: Any = cached.response
        if validate is not None:
            try:
                value = validate(cached.response)
            except (JSONRepairError, ValidationError, RejectedReply):
                await asyncio.to_thread(self.cache.discard, key)
                return None
        if self.usage is not None:
            await asyncio.to_thread(self.usage.record_hit, stage)
        return value

    async def put(self, key: str, reply: Completion) -> None:
        if self.cache is not None:
            await asyncio.to_thread(
                self.cache.put, key, self.model, reply.text, reply.prompt_tokens, reply.completion_tokens
            )
