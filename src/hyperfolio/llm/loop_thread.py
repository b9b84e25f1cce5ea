"""One private event loop in a background thread, so model calls work from any caller.

All HTTP of the clients of one ModelSet runs on this loop: the synchronous methods block the
calling thread (plain code, worker threads) and the async ones can be awaited from any other loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """One private event loop in a daemon thread, started on first use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    @property
    def started(self) -> bool:
        return self._loop is not None

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.in_loop_thread():
            raise RuntimeError("a synchronous model call was made from the client's own event loop")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop())
        return future.result()

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop())
        return await asyncio.wrap_future(future)

    def stop(self, final: Callable[[], Awaitable[Any]] | None = None) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        if final is not None and thread is not threading.current_thread():
            with contextlib.suppress(Exception):  # closing must not fail
                asyncio.run_coroutine_threadsafe(final(), loop).result(timeout=5)  # type: ignore[arg-type]
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
            loop.close()
