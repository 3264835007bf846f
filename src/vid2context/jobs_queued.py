"""Durable jobs for the Worker: Cloudflare Queues carry the work, D1 holds the state.

On the Worker a background task lives only as long as ``waitUntil`` lets it, shortly after the
response, so a 100-video ingest could not finish there. ``QueuedJobs`` answers the same calls as
the in-process ``jobs.JobQueue`` (``submit``, ``get``, ``wait``, ``cancel``, ``events``), but a
submitted job is a row in the ledger and a message on the queue. Each message is one unit
(``job_units.py``): ``plan`` (expand the lists, write one unit per video and send their
messages), ``u:NNNN`` (one video; for ``context``, one piece of a long upload: ``job_pieces.py``),
``finish`` (put the results together), or ``all`` for kinds that run whole (a plan may also find
nothing to cut and run the kind whole itself: ``context`` of anything but a long upload).
Whichever isolate the queue hands a message to runs it; the job's state, its progress and its
numbered events are rows, so any isolate answers ``GET /jobs/:id`` and replays its events.

Redelivery is expected (an isolate can die after doing the work and before the ack): a unit is
settled by a conditional update, so one done already is skipped, and ``finish`` is sent again by
whoever sees no unit left. ``handle`` says what to do with the message: ack it, or retry it with
a backoff (an unexpected failure, or a video that failed transiently: ``job_units.TRANSIENT``,
within a rate limit's ``retry_after``). After the
queue's ``max_retries`` the message goes to the dead-letter queue, whose consumer calls
``dead_letter``: the unit becomes a failed item, or the job fails. A message that is not ours (a
malformed body, an unknown or finished job) is acked and logged, never retried.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from .ctx import Ctx
from .errors import ErrorCode, VidError
from .job_pieces import CONTEXT_SPLIT
from .job_units import SPLITS as VIDEO_SPLITS
from .job_units import Planned, Split
from .jobs import (
    FINAL_STATUSES,
    KV_TTL_S,
    Job,
    JobError,
    JobEvent,
    JobKind,
    JobProgress,
    _not_found,
    _now,
    check_request,
    is_job_id,
)

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["Decision", "JobLedger", "QueueSender", "QueuedJobs", "backoff", "consume", "message_of"]

log = logging.getLogger("vid2context.jobs")

RETRY_MAX_S = 900
"""Where a message of a Worker without a job queue waits (it cannot be run there)."""
RETRY_CAP = 90
"""A retry waits at most this many times the base delay (``VID2CONTEXT_JOB_RETRY_S``)."""
_UNIT_WIDTH = 4

SPLITS: dict[str, Split] = {**VIDEO_SPLITS, "context": CONTEXT_SPLIT}
"""The kinds planned into units: a video each (``job_units``), a piece of a long upload each
(``job_pieces``)."""


def backoff(attempts: int, base_s: int = 10, retry_after: int = 0) -> int:
    """The delay before attempt ``attempts + 1`` (``attempts`` as the queue counts them, from 1):
    ``base_s``, doubling each time, at least a rate limit's ``retry_after``, at most
    ``RETRY_CAP * base_s`` (10 s, 20 s, 40 s ... 15 minutes by default)."""
    base_s = max(0, base_s)
    delay = max(base_s * 2 ** max(0, min(attempts, 20) - 1), retry_after)
    return min(RETRY_CAP * base_s, delay)


class _RetryLater(Exception):
    """A unit whose video failed transiently: the message is retried after ``retry_after``."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


class JobLedger(Protocol):
    """Where queued jobs keep their state (``storage/cloudflare_queue.D1JobLedger``)."""

    async def create(self, row: dict[str, Any]) -> None: ...
    async def get(self, job_id: str) -> dict[str, Any] | None: ...
    async def set_status(
        self, job_id: str, before: tuple[str, ...], status: str, now: str, **values: str | None
    ) -> bool: ...
    async def set_fields(self, job_id: str, now: str, **values: str | None) -> None: ...
    async def add_units(self, job_id: str, units: list[tuple[str, str]]) -> None: ...
    async def units(self, job_id: str) -> list[dict[str, Any]]: ...
    async def unit(self, job_id: str, unit: str) -> dict[str, Any] | None: ...
    async def settle_unit(
        self, job_id: str, unit: str, state: str, result: str, item: str | None
    ) -> bool: ...
    async def note_unit(self, job_id: str, unit: str, result: str) -> None: ...
    async def counts(self, job_id: str) -> tuple[int, int]: ...
    async def add_event(self, job_id: str, event: str, data: str) -> None: ...
    async def prune(self, before: str) -> None: ...
    async def events(self, job_id: str, after: int = 0) -> list[dict[str, Any]]: ...


class QueueSender(Protocol):
    """A queue producer (``storage/cloudflare_queue.QueueProducer``); bodies are JSON text."""

    async def send(self, body: str, *, delay_s: int = 0) -> None: ...
    async def send_batch(self, bodies: list[str]) -> None: ...


@dataclass(frozen=True, slots=True)
class Decision:
    """What the consumer does with a message: ack it, or retry it after ``delay_s``."""

    ack: bool
    delay_s: int = 0


ACK = Decision(ack=True)


def _body(job_id: str, unit: str) -> str:
    return json.dumps({"job": job_id, "unit": unit})


def message_of(body: Any) -> tuple[str, str] | None:
    """``(job id, unit)`` from a message body (JSON text or an object), or ``None`` when it is
    not one of ours."""
    if isinstance(body, str | bytes):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, Mapping):
        return None
    job_id, unit = body.get("job"), body.get("unit")
    if not is_job_id(job_id) or not isinstance(unit, str):
        return None
    if unit in ("plan", "finish", "all") or (unit.startswith("u:") and unit[2:].isdigit() and len(unit) < 12):
        return job_id, unit
    return None


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class _Run:
    """What a kind's ``run`` sees (``jobs.JobRun``'s attributes) when it runs whole as one unit:
    items and progress go to the ledger."""

    def __init__(self, jobs: QueuedJobs, runtime: Runtime, row: dict[str, Any]) -> None:
        self._jobs = jobs
        self.id = row["id"]
        self.kind = row["kind"]
        self.input = _loads(row["input"])
        self.options = _loads(row["options"])
        self.runtime = runtime
        self.ctx = Ctx()

    async def item(self, event: Mapping[str, Any]) -> None:
        await self._jobs._event(self.id, "item", dict(event))

    async def progress(self, done: int, total: int | None = None, message: str | None = None) -> None:
        progress = JobProgress(done=done, total=total, message=message)
        await self._jobs._ledger.set_fields(self.id, _now(), progress=msgspec.json.encode(progress).decode())
        await self._jobs._event(self.id, "progress", msgspec.to_builtins(progress))

    async def progress_event(self, event: Mapping[str, Any]) -> None:
        await self.progress(int(event.get("done", 0)), event.get("total"), event.get("message"))


class QueuedJobs:
    """The ``jobs`` of a Worker with a ``JOBS`` queue: state in ``ledger``, work sent by ``sender``."""

    def __init__(
        self,
        ledger: JobLedger,
        sender: QueueSender,
        *,
        kinds: Mapping[str, JobKind] | None = None,
        poll_s: float = 1.0,
        heartbeat_s: float = 15.0,
        retry_s: int = 10,
        on_end: Callable[[Job], Awaitable[None]] | None = None,
    ) -> None:
        if kinds is None:
            from .job_kinds import BUILTIN_KINDS

            kinds = BUILTIN_KINDS
        self.kinds: dict[str, JobKind] = dict(kinds)
        self._ledger = ledger
        self._sender = sender
        self.poll_s = poll_s
        self.heartbeat_s = heartbeat_s
        self.retry_s = retry_s
        self.on_end = on_end
        """Told of every job this ledger ends (the runtime's webhooks); never raises."""

    # --- the calls jobs.JobQueue answers ------------------------------------------------------

    async def submit(
        self, runtime: Runtime, kind: str, input: Any, options: Mapping[str, Any] | None = None
    ) -> Job:
        """Check, record and queue a job (its first message: ``plan``, or ``all``)."""
        check_request(self.kinds, kind, options)
        checked_input, checked_options = await self.kinds[kind].check(runtime, input, dict(options or {}))
        job_id = "job_" + secrets.token_urlsafe(12)
        now = _now()
        await self._ledger.create(
            {"id": job_id, "kind": kind, "input": json.dumps(checked_input),
             "options": json.dumps(checked_options), "created_at": now}
        )  # fmt: skip
        await self._sender.send(_body(job_id, "plan" if kind in SPLITS else "all"))
        return Job(id=job_id, kind=kind, status="queued", created_at=now, updated_at=now)

    async def get(self, runtime: Runtime, job_id: str) -> Job:
        row = await self._ledger.get(job_id) if is_job_id(job_id) else None
        if row is None:
            raise _not_found(str(job_id))
        return await self._job(row)

    async def wait(self, runtime: Runtime, job_id: str) -> Job:
        """The job once it has finished, whichever isolate runs it (polled)."""
        while True:
            job = await self.get(runtime, job_id)
            if job.status in FINAL_STATUSES:
                return job
            await asyncio.sleep(self.poll_s)

    async def cancel(self, runtime: Runtime, job_id: str) -> Job:
        """Mark the job canceled: its messages still in the queue are acked and skipped."""
        job = await self.get(runtime, job_id)
        error = JobError(
            code=ErrorCode.CANCELED.value,
            message="The job was canceled.",
            hint="Submit it again (POST /api/v1/jobs) if its result is still needed.",
        )
        if await self._end(job_id, "canceled", error=error):
            return await self.get(runtime, job_id)
        return job

    async def events(
        self, runtime: Runtime, job_id: str, *, last_event_id: int | None = None
    ) -> AsyncIterator[JobEvent | None]:
        await self.get(runtime, job_id)  # not-found here, before anything is streamed
        return self._follow(job_id, last_event_id)

    async def aclose(self) -> None:
        """Nothing runs in this isolate's memory: the queue keeps the work."""

    async def prune(self, *, now: datetime | None = None) -> None:
        """Forget jobs that ended more than a day ago (``jobs.KV_TTL_S``, as the in-process queue's
        KV copies expire); the Worker's cron handler calls it."""
        moment = (now or datetime.now(UTC)) - timedelta(seconds=KV_TTL_S)
        await self._ledger.prune(moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")

    # --- reading ------------------------------------------------------------------------------

    async def _job(self, row: dict[str, Any]) -> Job:
        progress = None
        total, open_ = (0, 0)
        if row["kind"] in SPLITS and row["status"] != "queued":
            total, open_ = await self._ledger.counts(row["id"])
        if total:
            progress = JobProgress(
                done=total - open_,
                total=total,
                message=f"{total - open_} of {total} {SPLITS[row['kind']].done}",
            )
        elif row.get("progress"):  # a job run whole (a split kind whose plan found no units, too)
            progress = msgspec.json.decode(row["progress"], type=JobProgress)
        error = row.get("error")
        return Job(
            id=row["id"],
            kind=row["kind"],
            status="running" if row["status"] == "finishing" else row["status"],
            progress=progress,
            result=_loads(row.get("result")),
            error=None if error is None else msgspec.json.decode(error, type=JobError),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    async def _follow(self, job_id: str, last_event_id: int | None) -> AsyncIterator[JobEvent | None]:
        rows = await self._ledger.events(job_id, max(0, last_event_id or 0))
        seen = [JobEvent(int(r["seq"]), r["event"], json.loads(r["data"])) for r in rows]
        if last_event_id is None:
            latest = next((e for e in reversed(seen) if e.event != "item"), None)
            seen = [e for e in seen if e.event == "item" or e is latest]
        cursor = max([int(r["seq"]) for r in rows], default=max(0, last_event_id or 0))
        quiet = 0.0
        while True:
            for event in seen:
                yield event
                if event.event in ("done", "error"):
                    return
            if seen:
                quiet = 0.0
            row = await self._ledger.get(job_id)
            rows = await self._ledger.events(job_id, cursor)
            if not rows and (row is None or row["status"] in FINAL_STATUSES):
                job = None if row is None else await self._job(row)  # ended, its last event lost
                if job is not None and job.status == "succeeded":
                    yield JobEvent(cursor + 1, "done", {"result": job.result})
                else:
                    error = (
                        job.error
                        if job is not None and job.error
                        else JobError(code="internal", message="The job ended.")
                    )
                    yield JobEvent(cursor + 1, "error", msgspec.to_builtins(error))
                return
            seen = [JobEvent(int(r["seq"]), r["event"], json.loads(r["data"])) for r in rows]
            cursor = max([int(r["seq"]) for r in rows], default=cursor)
            if not seen:
                await asyncio.sleep(self.poll_s)
                quiet += self.poll_s
                if quiet >= self.heartbeat_s:
                    quiet = 0.0
                    yield None

    # --- writing ------------------------------------------------------------------------------

    async def _event(self, job_id: str, name: str, data: dict[str, Any]) -> None:
        await self._ledger.add_event(job_id, name, json.dumps(data))

    async def _end(
        self,
        job_id: str,
        status: str,
        *,
        result: Any = None,
        error: JobError | None = None,
        item: dict[str, Any] | None = None,
    ) -> bool:
        """The job's final state, once: True when this call set it (and wrote its last event,
        after ``item`` when one is given: only the call that ends the job writes them)."""
        values = (
            {"result": json.dumps(result)}
            if status == "succeeded"
            else {"error": msgspec.json.encode(error).decode()}
        )
        if not await self._ledger.set_status(
            job_id, ("queued", "running", "finishing"), status, _now(), **values
        ):
            return False
        if item is not None:
            await self._event(job_id, "item", item)
        if status == "succeeded":
            await self._event(job_id, "done", {"result": result})
        else:
            await self._event(job_id, "error", msgspec.to_builtins(error))
        if self.on_end is not None:
            row = await self._ledger.get(job_id)
            if row is not None:
                await self.on_end(await self._job(row))
        return True

    # --- the consumer -------------------------------------------------------------------------

    async def handle(self, runtime: Runtime, body: Any, attempts: int = 1) -> Decision:
        """Run one message; never raises. See the module docstring for what is acked."""
        parsed = message_of(body)
        if parsed is None:
            log.warning("queue: a message that is not a job unit was dropped")
            return ACK
        job_id, unit = parsed
        try:
            row = await self._ledger.get(job_id)
            if row is None:
                log.warning("queue: a message for unknown job %s was dropped", job_id)
                return ACK
            if row["status"] in FINAL_STATUSES:
                return ACK  # canceled, or a redelivery after the job ended
            await self._ledger.set_status(job_id, ("queued",), "running", _now())
            await self._step(runtime, row, unit, redelivered=attempts > 1)
        except asyncio.CancelledError:
            raise
        except _RetryLater as later:
            return Decision(ack=False, delay_s=backoff(attempts, self.retry_s, later.retry_after))
        except VidError as error:
            if error.code is ErrorCode.RATE_LIMITED and error.retry_after:
                return Decision(ack=False, delay_s=backoff(attempts, self.retry_s, int(error.retry_after)))
            await self._end(
                job_id,
                "failed",
                error=JobError(code=error.code.value, message=error.message, hint=error.hint),
            )
        except Exception:
            log.exception("queue: job %s unit %s failed (attempt %d)", job_id, unit, attempts)
            return Decision(ack=False, delay_s=backoff(attempts, self.retry_s))
        return ACK

    async def _step(self, runtime: Runtime, row: dict[str, Any], unit: str, *, redelivered: bool) -> None:
        job_id = row["id"]
        if unit == "plan":
            await self._plan(runtime, row)
        elif unit == "finish":
            await self._finish(runtime, row)
        elif unit == "all":
            await self._whole(runtime, row)
        else:
            found = await self._ledger.unit(job_id, unit)
            if found is None:
                log.warning("queue: job %s has no unit %s; dropped", job_id, unit)
                return
            if found["state"] == "todo":
                result = await SPLITS[row["kind"]].run(runtime, json.loads(found["payload"]), Ctx())
                if result.pop("retry", False):  # kept, so the dead letter can say what failed
                    retry_after = int(result.pop("retryAfter", 0))
                    await self._ledger.note_unit(job_id, unit, json.dumps(result))
                    raise _RetryLater(retry_after)
                await self._settle(job_id, unit, "done", result, SPLITS[row["kind"]].done)
            await self._finish_when_done(job_id, redelivered=redelivered)

    async def _whole(self, runtime: Runtime, row: dict[str, Any]) -> None:
        result = await self.kinds[row["kind"]].run(_Run(self, runtime, row))  # type: ignore[arg-type]
        await self._end(row["id"], "succeeded", result=msgspec.to_builtins(result))

    async def _plan(self, runtime: Runtime, row: dict[str, Any]) -> None:
        job_id = row["id"]
        total, _ = await self._ledger.counts(job_id)
        if total:  # a redelivered plan: send what is still to do again
            todo = [u["unit"] for u in await self._ledger.units(job_id) if u["state"] == "todo"]
            await self._sender.send_batch([_body(job_id, u) for u in todo])
            await self._finish_when_done(job_id, redelivered=True)
            return

        async def on_item(event: Mapping[str, Any]) -> None:
            await self._event(job_id, "item", dict(event))

        split = SPLITS[row["kind"]]
        planned: Planned = await split.plan(
            runtime, _loads(row["input"]), _loads(row["options"]), Ctx(), on_item
        )
        if planned.whole:
            await self._whole(runtime, row)
            return
        units = [(f"u:{index:0{_UNIT_WIDTH}d}", json.dumps(p)) for index, p in enumerate(planned.units)]
        await self._ledger.set_fields(job_id, _now(), plan=json.dumps(planned.extra))
        await self._ledger.add_units(job_id, units)
        await self._event(
            job_id, "progress", {"done": 0, "total": len(units), "message": f"{len(units)} {split.todo}"}
        )
        if units:
            await self._sender.send_batch([_body(job_id, unit) for unit, _ in units])
        else:
            await self._sender.send(_body(job_id, "finish"))

    async def _settle(self, job_id: str, unit: str, state: str, result: dict[str, Any], words: str) -> None:
        item = result.get("item")
        if await self._ledger.settle_unit(
            job_id, unit, state, json.dumps(result), None if item is None else json.dumps(item)
        ):
            total, open_ = await self._ledger.counts(job_id)
            done = total - open_
            await self._event(
                job_id,
                "progress",
                {"done": done, "total": total, "message": f"{done} of {total} {words}"},
            )

    async def _finish_when_done(self, job_id: str, *, redelivered: bool) -> None:
        """Send ``finish`` once no unit is left: by the caller that moves the job to
        ``finishing`` (one of several units ending at once), or by any redelivered message, in
        case the one that did died before sending it."""
        _, open_ = await self._ledger.counts(job_id)
        if open_:
            return
        if await self._ledger.set_status(job_id, ("running",), "finishing", _now()) or redelivered:
            await self._sender.send(_body(job_id, "finish"))

    async def _finish(self, runtime: Runtime, row: dict[str, Any]) -> None:
        _, open_ = await self._ledger.counts(row["id"])
        if open_:
            return  # early (a plan's redelivery); the last unit sends finish again
        units = [
            {"unit": u["unit"], "payload": json.loads(u["payload"]), "result": json.loads(u["result"])}
            for u in await self._ledger.units(row["id"])
        ]
        split = SPLITS[row["kind"]]
        result = await split.finish(
            runtime, _loads(row["input"]), _loads(row["options"]), _loads(row.get("plan")) or {}, units
        )
        item = None if split.item is None else split.item(result)
        await self._end(row["id"], "succeeded", result=msgspec.to_builtins(result), item=item)

    async def dead_letter(self, runtime: Runtime, body: Any) -> None:
        """A message the queue gave up on: its unit becomes a failed item (the job goes on), or,
        for a plan, a finish or a whole-job unit, the job fails. Never raises."""
        parsed = message_of(body)
        if parsed is None:
            log.warning("dead letter: a message that is not a job unit was dropped")
            return
        job_id, unit = parsed
        error = VidError(
            ErrorCode.INTERNAL,
            "This part of the job failed on every retry.",
            hint="Submit the job again (POST /api/v1/jobs); if it fails again, tell the user it needs a look.",
        )
        try:
            row = await self._ledger.get(job_id)
            if row is None or row["status"] in FINAL_STATUSES:
                log.warning("dead letter for job %s (unknown or finished) dropped", job_id)
                return
            found = await self._ledger.unit(job_id, unit) if unit.startswith("u:") else None
            if found is None:
                await self._end(
                    job_id,
                    "failed",
                    error=JobError(code=error.code.value, message=error.message, hint=error.hint),
                )
                return
            last = _loads(found.get("result"))  # the last transient failure, when there was one
            if SPLITS[row["kind"]].whole_or_nothing:  # a piece missing: the job fails, with its cause
                cause = last.get("error") if isinstance(last, dict) else None
                failed = (
                    msgspec.convert(cause, JobError)
                    if isinstance(cause, dict)
                    else JobError(code=error.code.value, message=error.message, hint=error.hint)
                )
                await self._end(job_id, "failed", error=failed)
                return
            if not (isinstance(last, dict) and "item" in last and "failed" in last):
                payload = json.loads(found["payload"])
                failed = {
                    "input": payload["input"],
                    "code": error.code.value,
                    "message": error.message,
                    "hint": error.hint,
                }
                item = {
                    "id": payload["id"],
                    "outcome": "error",
                    "error": {"code": error.code.value, "message": error.message},
                }
                last = {"item": item, "failed": failed}
            await self._settle(job_id, unit, "failed", last, SPLITS[row["kind"]].done)
            await self._finish_when_done(job_id, redelivered=True)
        except Exception:
            log.exception("dead letter for job %s unit %s could not be recorded", job_id, unit)


DEAD_LETTER_SUFFIX = "-dlq"
"""A batch from a queue whose name ends so is the dead-letter queue's (wrangler.toml)."""


async def consume(runtime: Runtime, batch: Any) -> None:
    """A Queues batch (``batch.queue``, ``batch.messages``; each message ``body``, ``attempts``,
    ``ack()``, ``retry(delaySeconds=...)``): every message acked or retried, none left open."""
    jobs = runtime.jobs
    if not isinstance(jobs, QueuedJobs):
        log.warning("queue: a batch arrived but this Worker has no JOBS producer; retried later")
        for message in batch.messages:
            message.retry(delaySeconds=RETRY_MAX_S)
        return
    dead = str(getattr(batch, "queue", "")).endswith(DEAD_LETTER_SUFFIX)
    runs = runtime.mcp_runs  # MCP long runs share the queue (mcp/queued.py)

    async def one(message: Any) -> None:
        hooks = runtime.webhooks
        if not dead and hooks is not None and await hooks.handle(message.body):
            message.ack()  # a webhook delivery attempt: its retry is a new message, sent by handle
            return
        handler = runs if runs is not None and runs.claims(message.body) else jobs
        if dead:
            await handler.dead_letter(runtime, message.body)
            message.ack()
            return
        decision = await handler.handle(runtime, message.body, int(getattr(message, "attempts", 1) or 1))
        if decision.ack:
            message.ack()
        else:
            message.retry(delaySeconds=decision.delay_s)

    await asyncio.gather(*(one(message) for message in batch.messages))
