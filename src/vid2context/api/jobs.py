"""Jobs over HTTP: ``POST /jobs``, ``GET /jobs/{id}``, ``GET /jobs/{id}/events`` (SSE) and
``DELETE /jobs/{id}``, on the runtime's queue (``vid2context.jobs``).

The event stream is ``text/event-stream``: each event has an ``id:`` (the job's sequence number,
from 1), an ``event:`` name (``progress``, ``item``, ``done``, ``error``) and one line of JSON
``data:``. A client reconnecting with ``Last-Event-ID: n`` gets only the events after n; a fresh
one first gets the state (the ``item`` events so far, then the latest ``progress``, or the final
``done``/``error``), then live events. ``: heartbeat`` comment lines keep idle connections open
(every 15 s, ``JobQueue.heartbeat_s``); the stream closes after ``done`` or ``error``. An unknown
job is answered ``404`` with the error body before anything is streamed.

Job ids that this server cannot have made (not ``job_`` and URL-safe text) are ``not-found``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, delete, get, post
from litestar.params import HeaderParameter, JSONBody, Parameter
from litestar.response import Stream

from ..errors import ErrorCode, VidError
from ..jobs import Job, JobEvent
from ..models import Base
from .params import BODY_ERRORS, decode_body, runtime_of

__all__ = ["JOB_ROUTES", "JobRequest", "cancel_job", "get_job", "job_events", "submit_job"]

_LAST_EVENT_ID = re.compile(r"[0-9]{1,12}")
_ENCODE = msgspec.json.Encoder().encode
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

JobIdPath = Annotated[str, Parameter(description="The job's id (job_...), as POST /api/v1/jobs returned it.")]


class JobRequest(Base, forbid_unknown_fields=True):
    kind: str
    """A job kind: context, items, bundle, ingest or refresh."""
    input: Any
    """What the kind works on: a URL, a list of URLs, or an object (see the kind)."""
    options: dict[str, Any] | None = None


def sse_bytes(event: JobEvent | None) -> bytes:
    """One event in the SSE wire format; ``None`` is the heartbeat comment."""
    if event is None:
        return b": heartbeat\n\n"
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (event.id, event.event.encode(), _ENCODE(event.data))


async def _stream(events: AsyncIterator[JobEvent | None]) -> AsyncIterator[bytes]:
    async for event in events:
        yield sse_bytes(event)


def _last_event_id(value: str | None) -> int | None:
    if value is None or not value.strip():
        return None
    if not _LAST_EVENT_ID.fullmatch(value.strip()):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "Last-Event-ID must be an event id (a whole number).",
            hint="Send back the id of the last event received, or no Last-Event-ID for the whole state.",
        )
    return int(value.strip())


@post("/api/v1/jobs", status_code=202, exception_handlers=BODY_ERRORS)
async def submit_job(request: Request, data: JSONBody[JobRequest]) -> Response[Job]:
    """Queue a job; follow it with ``GET /jobs/{id}/events`` or poll ``GET /jobs/{id}``."""
    data = await decode_body(request, JobRequest)  # strict: Litestar's decode was lenient
    runtime = runtime_of(request)
    job = await runtime.jobs.submit(runtime, data.kind, data.input, data.options)
    return Response(job, status_code=202)


@get("/api/v1/jobs/{job_id:str}")
async def get_job(request: Request, job_id: JobIdPath) -> Job:
    """The job's status, progress, and its result or error once it has finished."""
    runtime = runtime_of(request)
    return await runtime.jobs.get(runtime, job_id)


@get(
    "/api/v1/jobs/{job_id:str}/events",
    media_type="text/event-stream",
    response_description="Server-sent events: progress, item, then done or error; : heartbeat comments.",
)
async def job_events(
    request: Request,
    job_id: JobIdPath,
    last_event_id: Annotated[
        str | None,
        HeaderParameter(
            name="Last-Event-ID", description="Only the events after this id (when reconnecting)."
        ),
    ] = None,
) -> Stream:
    """The job's events as a stream that closes after ``done`` or ``error``."""
    after = _last_event_id(last_event_id)
    runtime = runtime_of(request)
    events = await runtime.jobs.events(runtime, job_id, last_event_id=after)
    return Stream(_stream(events), media_type="text/event-stream", headers=_SSE_HEADERS)


@delete("/api/v1/jobs/{job_id:str}", status_code=202)
async def cancel_job(request: Request, job_id: JobIdPath) -> Job:
    """Ask the job to stop; it ends ``canceled`` with ``error.code`` ``canceled``."""
    runtime = runtime_of(request)
    return await runtime.jobs.cancel(runtime, job_id)


JOB_ROUTES = [submit_job, get_job, job_events, cancel_job]
"""Every handler of this module, for ``create_app``."""
