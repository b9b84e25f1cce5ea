"""Ingestion jobs: a collection's jobs, one job's state, and its progress as server-sent events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent

from hyperfolio.server.access import READ, Caller, allowed
from hyperfolio.server.jobs import Job
from hyperfolio.server.problems import Problem
from hyperfolio.server.state import State

router = APIRouter(tags=["ingestion"])


def job_of(state: State, job_id: str, caller: Caller) -> Job:
    """The job, or 404 (also when the caller's key may not read its collection: as if there were none).
    A dependency, so a streamed route has checked it before its first event: after that a 4xx can no
    longer be sent."""
    job = state.jobs.get(job_id)
    if job is None or not allowed(caller, READ, job.collection):
        kept = f"the service keeps the jobs running or queued and the latest {state.jobs.keep_finished} finished"
        raise Problem(404, f"no ingestion job {job_id!r} ({kept})")
    return job


JobOf = Annotated[Job, Depends(job_of)]


@router.get("/api/collections/{name}/jobs", summary="This collection's ingestion jobs.")
def list_jobs(state: State, name: str) -> list[dict[str, Any]]:
    state.library.reader(name)
    return [job.summary() for job in state.jobs.jobs(name)]


@router.get("/api/jobs/{job_id}", summary="An ingestion job: status, results, failures.")
def get_job(job: JobOf) -> dict[str, Any]:
    return job.summary()


@router.get(
    "/api/jobs/{job_id}/events",
    response_class=EventSourceResponse,
    summary="Live progress as server-sent events (stage, pages, pages/s, each file's result).",
)
async def job_events(job: JobOf, request: Request) -> AsyncIterable[ServerSentEvent]:
    sent = _last_event_id(request)
    while True:
        for event in job.events_after(sent):
            sent = event["seq"]
            yield ServerSentEvent(data=event, event=event["type"], id=str(sent))
        if job.over and sent >= len(job.events):
            return
        if await request.is_disconnected():
            return
        await asyncio.sleep(0.2)


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id", "")
    return int(raw) if raw.isdigit() else 0
