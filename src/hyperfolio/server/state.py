"""What every route shares: the open collections, the ingestion queue, the service's settings and its gate
(keys, rate limits, the access rule, the audit log: `access`).

Routes ask for it as a FastAPI dependency (`State`), so each router is a plain module, not a closure
inside the app factory.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from hyperfolio.server.access import Gate
from hyperfolio.server.config import ServerConfig
from hyperfolio.server.jobs import JobQueue
from hyperfolio.server.library import Library
from hyperfolio.server.memory import MemoryTrimmer


@dataclass
class ServiceState:
    library: Library
    jobs: JobQueue
    config: ServerConfig
    gate: Gate
    warm: threading.Event = field(default_factory=threading.Event)  # set once start-up is over
    trimmer: MemoryTrimmer = field(default_factory=MemoryTrimmer)  # freed memory returned while it runs


async def state_of(request: Request) -> ServiceState:
    """The app's shared state (async, so FastAPI reads it on the loop rather than a worker thread)."""
    state: ServiceState = request.app.state.service
    return state


State = Annotated[ServiceState, Depends(state_of)]
