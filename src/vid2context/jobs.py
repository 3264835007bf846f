"""Jobs: long work (a playlist, a collection ingest, a bundle) run in the background of this
process and watched as a numbered stream of events.

A job is submitted with a ``kind``, an ``input`` and ``options``. Its kind checks both at once, so
a bad request is refused before anything is queued; then the job waits for one of
``max_running`` slots and runs as an asyncio task the queue holds until it ends, so a running job
is never dropped or collected. Its life::

    queued ──a slot frees──▶ running ──▶ succeeded   (done {result})
       │                        ├─────▶ failed      (error {code, message, hint?})
       └──────── cancel ────────┴─────▶ canceled    (error {code: canceled, ...})

Events are numbered from 1 per job: ``progress`` ``{done, total?, message?}``, ``item``
``{id, outcome: ok|error|skipped, title?, error?}``, then one ``done`` ``{result}`` or ``error``.
``events()`` replays and follows them: after ``Last-Event-ID: n`` only those numbered above n; on
a fresh connection the ``item`` events so far, then the latest ``progress`` (or the final
``done``/``error``), all in number order; then live events, with ``None`` (a heartbeat) after
``heartbeat_s`` of silence; it ends after ``done`` or ``error``.

A job outlives the request that submitted it: its task is handed to ``runtime.hand_off``, which on
the Worker passes it to ``waitUntil`` (nothing else would keep it running once the response is
sent) and locally does nothing.

Every change of state is also written to ``runtime.kv`` under ``jobs:<id>`` (for a day), so another
process or isolate can read a job (``get``) and follow its progress (``events`` polls the KV).
Progress is written at most once a second; status changes always.

The built-in kinds (``context``, ``items``, ``bundle``, ``ingest``, ``refresh``) are in
``job_kinds.py``; a queue made without ``kinds`` gets them.

Portable: asyncio only, no threads; ``runtime.jobs`` holds the queue.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from .ctx import Ctx
from .errors import ErrorCode, VidError
from .models import Base

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = [
    "FINAL_STATUSES",
    "Job",
    "JobError",
    "JobEvent",
    "JobKind",
    "JobProgress",
    "JobQueue",
    "JobRun",
    "JobStatus",
    "check_request",
    "is_job_id",
]

log = logging.getLogger("vid2context.jobs")

JobStatus = Literal["queued", "running", "succeeded", "failed", "canceled"]
FINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "canceled"})
KV_PREFIX = "jobs:"
KV_TTL_S = 24 * 60 * 60
SAVE_EVERY_S = 1.0
"""Progress reaches the KV at most this often; status changes are written at once."""
MAX_WAITING = 1000
"""Queued jobs beyond this are refused (``rate-limited``) rather than piling up in memory."""
_JOB_ID = re.compile(r"job_[A-Za-z0-9_-]{8,64}")


class JobProgress(Base, omit_defaults=True):
    done: int
    total: int | None = None
    message: str | None = None


class JobError(Base, omit_defaults=True):
    code: str
    message: str
    hint: str | None = None


class Job(Base, kw_only=True, omit_defaults=True):
    """The contract's ``Job``: optional fields are left out until they have a value."""

    id: str
    kind: str
    status: JobStatus
    progress: JobProgress | None = None
    result: Any = None
    error: JobError | None = None
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class JobEvent:
    id: int
    """The per-job sequence number, from 1: the SSE ``id``."""
    event: Literal["progress", "item", "done", "error"]
    data: dict[str, Any]


_ENCODE = msgspec.json.Encoder().encode
_DECODE_JOB = msgspec.json.Decoder(Job).decode


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _error_of(error: VidError) -> JobError:
    return JobError(code=error.code.value, message=error.message, hint=error.hint)


def check_request(kinds: Mapping[str, JobKind], kind: object, options: object) -> None:
    """``bad-request`` for a kind that is not one of ``kinds`` or options that are not an object
    (both queues check a submission so, before the kind's own check)."""
    if not isinstance(kind, str) or kind not in kinds:
        shown = str(kind)[:40]
        raise _bad(f"Unknown job kind {shown!r}.", "Give kind as one of: " + ", ".join(kinds) + ".")
    if options is not None and not isinstance(options, Mapping):
        raise _bad("options must be an object.", "Give options as a JSON object, or leave it out.")


def is_job_id(value: object) -> bool:
    """Whether ``value`` has the shape of an id this queue makes (``job_`` and URL-safe text)."""
    return isinstance(value, str) and _JOB_ID.fullmatch(value) is not None


def _not_found(job_id: str) -> VidError:
    shown = job_id if len(job_id) <= 60 else job_id[:60] + "..."
    return VidError(
        ErrorCode.NOT_FOUND,
        f"There is no job {shown!r}.",
        hint="Job ids come from POST /api/v1/jobs; finished jobs are kept for a day.",
    )


# --- what a running job sees --------------------------------------------------------------------


class JobRun:
    """Handed to a kind's ``run``: the checked input and options, the runtime, a ``Ctx`` that
    cancellation aborts, and the two ways to report (``item`` and ``progress``)."""

    def __init__(self, queue: JobQueue, record: _Record) -> None:
        self._queue = queue
        self._record = record
        self.id = record.job.id
        self.kind = record.job.kind
        self.input = record.input
        self.options = record.options
        self.runtime = record.runtime
        self.ctx = record.ctx

    async def item(self, event: Mapping[str, Any]) -> None:
        """One video's outcome: ``{id, outcome: ok|error|skipped, title?, error?}``."""
        await self._queue._item(self._record, dict(event))

    async def progress(self, done: int, total: int | None = None, message: str | None = None) -> None:
        await self._queue._progress(self._record, JobProgress(done=done, total=total, message=message))

    async def progress_event(self, event: Mapping[str, Any]) -> None:
        """``progress`` from a library callback's ``{done, total, message}``."""
        await self.progress(int(event.get("done", 0)), event.get("total"), event.get("message"))


Check = Callable[["Runtime", Any, dict[str, Any]], Awaitable[tuple[Any, dict[str, Any]]]]
Run = Callable[[JobRun], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class JobKind:
    """A kind of job: ``check`` validates the input and options before anything is queued (and
    returns them normalised), ``run`` does the work and returns the result (msgspec-encodable)."""

    check: Check
    run: Run
    description: str


@dataclass(eq=False)
class _Record:
    job: Job
    runtime: Runtime
    input: Any
    options: dict[str, Any]
    ctx: Ctx
    events: list[JobEvent] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    cancel_message: str | None = None
    saved_at: float = 0.0
    finished_at: float | None = None
    save_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


# --- the queue ----------------------------------------------------------------------------------


class JobQueue:
    """An in-process queue: at most ``max_running`` jobs run at once, the rest wait in order.

    ``kinds`` replaces the built-in kinds (pass ``{**job_kinds.BUILTIN_KINDS, ...}`` to add some);
    ``heartbeat_s`` is the silence after which ``events`` yields a heartbeat; ``keep_finished``
    bounds how many finished jobs stay in memory (the KV keeps them for a day).
    """

    def __init__(
        self,
        *,
        kinds: Mapping[str, JobKind] | None = None,
        max_running: int = 4,
        heartbeat_s: float = 15.0,
        poll_s: float = 1.0,
        keep_finished: int = 500,
        cancel_wait_s: float = 2.0,
    ) -> None:
        if kinds is None:
            from .job_kinds import BUILTIN_KINDS  # the kinds build on this module's JobRun

            kinds = BUILTIN_KINDS
        self.kinds: dict[str, JobKind] = dict(kinds)
        self.max_running = max_running
        self.heartbeat_s = heartbeat_s
        self.poll_s = poll_s
        self.keep_finished = keep_finished
        self.cancel_wait_s = cancel_wait_s
        self._slots: asyncio.Semaphore | None = None
        self._records: dict[str, _Record] = {}
        self._closed = False

    # --- submitting and reading -------------------------------------------------------------

    async def submit(
        self, runtime: Runtime, kind: str, input: Any, options: Mapping[str, Any] | None = None
    ) -> Job:
        """Check ``input`` and ``options`` for ``kind`` and queue the job; ``bad-request`` (or the
        check's own error, such as ``not-found`` for an unknown collection) when they are wrong."""
        if self._closed:
            raise VidError(  # 503: the server is stopping
                ErrorCode.NO_PROVIDER,
                "The job queue is shut down.",
                hint="Tell the user the server is stopping; submit the job again (POST /api/v1/jobs) once it has "
                "restarted.",
            )
        check_request(self.kinds, kind, options)
        waiting = sum(1 for r in self._records.values() if r.job.status == "queued")
        if waiting >= MAX_WAITING:
            raise VidError(
                ErrorCode.RATE_LIMITED,
                f"{waiting} jobs are already waiting.",
                hint="Wait for some to finish (GET /api/v1/jobs/{id}), then submit it again (POST /api/v1/jobs).",
                retry_after=30,
            )
        checked_input, checked_options = await self.kinds[kind].check(runtime, input, dict(options or {}))
        self._prune()
        now = _now()
        job = Job(
            id="job_" + secrets.token_urlsafe(12), kind=kind, status="queued", created_at=now, updated_at=now
        )
        record = _Record(job=job, runtime=runtime, input=checked_input, options=checked_options, ctx=Ctx())
        self._records[job.id] = record
        await self._save(record, force=True)
        record.task = asyncio.get_running_loop().create_task(self._run(record), name=f"vid2context {job.id}")
        runtime.hand_off(record.task)  # on the Worker: waitUntil, or the job dies with the request
        return record.job

    async def get(self, runtime: Runtime, job_id: str) -> Job:
        """The job as this process knows it, else as the KV has it; ``not-found`` when neither does."""
        record = self._records.get(job_id) if isinstance(job_id, str) else None
        if record is not None:
            return record.job
        return await self._from_kv(runtime, job_id)

    async def wait(self, runtime: Runtime, job_id: str) -> Job:
        """The job once it has finished (its task has ended, in this process)."""
        record = self._records.get(job_id)
        if record is None:
            return await self._from_kv(runtime, job_id)
        if record.task is not None:
            await asyncio.wait({record.task})
        return record.job

    async def cancel(self, runtime: Runtime, job_id: str) -> Job:
        """Ask the job to stop; returns its state once it has (or after ``cancel_wait_s``).

        A finished job is returned unchanged. A job another process runs cannot be stopped from
        here: ``bad-request``.
        """
        record = self._records.get(job_id) if isinstance(job_id, str) else None
        if record is None:
            job = await self._from_kv(runtime, job_id)
            if job.status in FINAL_STATUSES:
                return job
            raise _bad(
                f"Job {job.id} runs in another server process.",
                "Send the DELETE to the server that accepted the job.",
            )
        await self._stop(record, "The job was canceled.")
        return record.job

    async def aclose(self) -> None:
        """Stop every unfinished job (they end ``canceled``) and refuse new ones."""
        self._closed = True
        records = [r for r in self._records.values() if r.job.status not in FINAL_STATUSES]
        for record in records:
            await self._stop(record, "The server stopped before the job finished.", wait=False)
        tasks = {r.task for r in records if r.task is not None}
        if tasks:
            await asyncio.wait(tasks, timeout=self.cancel_wait_s)
        for record in records:
            await self._settle(record)

    async def _stop(self, record: _Record, message: str, *, wait: bool = True) -> None:
        if record.job.status in FINAL_STATUSES:
            return
        if record.cancel_message is None:
            record.cancel_message = message
        record.ctx.abort("canceled")
        task = record.task
        if task is not None and not task.done():
            task.cancel()
            if not wait:
                return
            await asyncio.wait({task}, timeout=self.cancel_wait_s)
        await self._settle(record)

    async def _settle(self, record: _Record) -> None:
        """A task canceled before it ever ran cannot report it: end its job here."""
        if record.task is not None and record.task.done() and record.job.status not in FINAL_STATUSES:
            await self._end(record, "canceled", error=self._canceled_error(record))

    # --- events ---------------------------------------------------------------------------

    async def events(
        self, runtime: Runtime, job_id: str, *, last_event_id: int | None = None
    ) -> AsyncIterator[JobEvent | None]:
        """The job's event stream (``not-found`` is raised here, before anything is streamed).

        Yields ``JobEvent`` values and ``None`` for a heartbeat; ends after ``done`` or ``error``.
        """
        record = self._records.get(job_id) if isinstance(job_id, str) else None
        if record is None:
            job = await self._from_kv(runtime, job_id)
            return self._follow_kv(runtime, job)
        return self._follow(record, last_event_id)

    async def _follow(self, record: _Record, last_event_id: int | None) -> AsyncIterator[JobEvent | None]:
        snapshot = list(record.events)
        if last_event_id is None:
            latest = next((e for e in reversed(snapshot) if e.event != "item"), None)
            replay = [e for e in snapshot if e.event == "item" or e is latest]
            cursor = len(snapshot)
        else:
            cursor = max(0, min(last_event_id, len(snapshot)))
            replay = snapshot[cursor:]
            cursor = len(snapshot)
        for event in replay:
            yield event
            if event.event in ("done", "error"):
                return
        while True:
            fresh = record.events[cursor:]
            if fresh:
                cursor += len(fresh)
                for event in fresh:
                    yield event
                    if event.event in ("done", "error"):
                        return
                continue
            if record.job.status in FINAL_STATUSES:
                return  # finished, and the caller has had every event
            changed = record.changed
            try:
                await asyncio.wait_for(changed.wait(), self.heartbeat_s)
            except TimeoutError:
                yield None

    async def _follow_kv(self, runtime: Runtime, job: Job) -> AsyncIterator[JobEvent | None]:
        """A job another process runs: its state as events, polled from the KV (no replay of
        items, which only the running process has)."""
        seq = 0
        last_progress: JobProgress | None = None
        quiet = 0.0
        while True:
            if job.status in FINAL_STATUSES:
                seq += 1
                if job.status == "succeeded":
                    yield JobEvent(seq, "done", {"result": job.result})
                else:
                    yield JobEvent(seq, "error", msgspec.to_builtins(job.error or _lost_error()))
                return
            if job.progress is not None and job.progress != last_progress:
                last_progress = job.progress
                seq += 1
                quiet = 0.0
                yield JobEvent(seq, "progress", msgspec.to_builtins(job.progress))
            await asyncio.sleep(self.poll_s)
            quiet += self.poll_s
            if quiet >= self.heartbeat_s:
                quiet = 0.0
                yield None
            try:
                job = await self._from_kv(runtime, job.id)
            except VidError:
                job = msgspec.structs.replace(job, status="failed", error=_lost_error())

    # --- running ---------------------------------------------------------------------------

    async def _run(self, record: _Record) -> None:
        kind = self.kinds[record.job.kind]
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_running)
        try:
            async with self._slots:
                await self._set(record, status="running")
                result = await kind.run(JobRun(self, record))
        except asyncio.CancelledError:
            await self._end(record, "canceled", error=self._canceled_error(record))
        except VidError as error:
            if error.code is ErrorCode.CANCELED and record.cancel_message is not None:
                await self._end(record, "canceled", error=self._canceled_error(record))
            else:
                await self._end(record, "failed", error=_error_of(error))
        except Exception:
            log.exception("job %s (%s) failed", record.job.id, record.job.kind)
            await self._end(record, "failed", error=_error_of(VidError.internal()))
        else:
            try:
                encoded = msgspec.to_builtins(result)
            except (TypeError, msgspec.EncodeError):
                log.exception(
                    "job %s (%s) returned a result that cannot be encoded", record.job.id, record.job.kind
                )
                await self._end(record, "failed", error=_error_of(VidError.internal()))
            else:
                await self._end(record, "succeeded", result=encoded)

    @staticmethod
    def _canceled_error(record: _Record) -> JobError:
        return JobError(
            code=ErrorCode.CANCELED.value,
            message=record.cancel_message or "The job was canceled.",
            hint="Submit it again (POST /api/v1/jobs) if its result is still needed.",
        )

    async def _end(
        self, record: _Record, status: JobStatus, *, result: Any = None, error: JobError | None = None
    ) -> None:
        if record.job.status in FINAL_STATUSES:
            return
        record.finished_at = time.monotonic()
        changes: dict[str, Any] = {"status": status, "updated_at": _now()}
        if status == "succeeded":
            changes["result"] = result
        else:
            changes["error"] = error
        record.job = msgspec.structs.replace(record.job, **changes)
        if status == "succeeded":
            self._emit(record, "done", {"result": result})
        else:
            self._emit(record, "error", msgspec.to_builtins(error))
        await self._save(record, force=True)
        if record.runtime.webhooks is not None:  # job.succeeded, job.failed, collection.refreshed
            await record.runtime.webhooks.job_ended(record.job)

    async def _set(self, record: _Record, **changes: Any) -> None:
        record.job = msgspec.structs.replace(record.job, updated_at=_now(), **changes)
        await self._save(record, force=True)

    async def _item(self, record: _Record, event: dict[str, Any]) -> None:
        if record.job.status in FINAL_STATUSES:
            return
        self._emit(record, "item", event)

    async def _progress(self, record: _Record, progress: JobProgress) -> None:
        if record.job.status in FINAL_STATUSES:
            return
        record.job = msgspec.structs.replace(record.job, progress=progress, updated_at=_now())
        self._emit(record, "progress", msgspec.to_builtins(progress))
        await self._save(record)

    def _emit(self, record: _Record, name: Any, data: dict[str, Any]) -> None:
        record.events.append(JobEvent(len(record.events) + 1, name, data))
        changed, record.changed = record.changed, asyncio.Event()
        changed.set()

    async def _save(self, record: _Record, *, force: bool = False) -> None:
        """Write the job's *current* state to the KV; a failing KV never fails the job."""
        now = time.monotonic()
        if not force and now - record.saved_at < SAVE_EVERY_S:
            return
        record.saved_at = now
        async with record.save_lock:
            try:
                await record.runtime.kv.put(
                    KV_PREFIX + record.job.id, _ENCODE(record.job).decode(), ttl=KV_TTL_S
                )
            except Exception:
                log.warning("could not save job %s to the KV", record.job.id, exc_info=True)

    async def _from_kv(self, runtime: Runtime, job_id: str) -> Job:
        if not is_job_id(job_id):
            raise _not_found(str(job_id))
        try:
            raw = await runtime.kv.get(KV_PREFIX + job_id)
        except Exception:
            log.warning("could not read job %s from the KV", job_id, exc_info=True)
            raw = None
        if raw is None:
            raise _not_found(job_id)
        try:
            return _DECODE_JOB(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.warning("job %s in the KV cannot be read", job_id)
            raise _not_found(job_id) from None

    def _prune(self) -> None:
        """Forget the oldest finished jobs beyond ``keep_finished``, and any finished a day ago."""
        finished = sorted(
            (r for r in self._records.values() if r.finished_at is not None),
            key=lambda r: r.finished_at or 0.0,
        )
        cutoff = time.monotonic() - KV_TTL_S
        excess = len(finished) - self.keep_finished
        for index, record in enumerate(finished):
            if index < excess or (record.finished_at or 0.0) < cutoff:
                self._records.pop(record.job.id, None)


def _lost_error() -> JobError:
    return JobError(
        code=ErrorCode.NOT_FOUND.value,
        message="The job's state is gone.",
        hint="It finished more than a day ago, or its server stopped; submit it again (POST /api/v1/jobs).",
    )
