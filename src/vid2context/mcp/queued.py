"""MCP long runs on the Worker's queue: a run is a row in D1 and a message on ``JOBS``.

A Worker keeps a task alive only as long as ``waitUntil`` lets it, shortly after the response,
so a long tool call that answered ``processing`` could die there. On a Worker with a ``JOBS``
producer, ``QueuedRuns`` takes the long runs of ``runs.Runs`` instead: the call becomes a row of
``mcp_runs`` (``storage/cloudflare_runs.py``) holding the tool's name, the arguments the client
sent (they passed the tool's checks), the digest of its owner (``owner.py``) and, in hosted mode,
the account and address its quotas count against, and a message ``{"run": id}``. Whichever
isolate the queue hands the message to calls the same tool again with those arguments, as that
owner, with ``runs.INLINE`` set so the tool does its work at once; it writes each progress step
and, at the end, the reply (the ``CallToolResult`` as JSON) to the row. The isolate that got the
call polls the row until ``wait_s``; ``get_job``, or the same call made again on any isolate,
reads it the same way. A finished run answers for ``keep_s``; the cron forgets runs a day after.
A stored reply is sent as it was made, fence ids included (unlike a reply kept in memory, which
gets fresh ones each time): they were drawn after the video's text was read, so that text still
cannot close its fence.

Retries: an unexpected failure, or a call that fails transiently (``job_units.TRANSIENT``: rate
limits, timeouts, upstream errors), is retried with the job queue's backoff (a rate limit's
``retry_after`` at least), the last transient error kept with the run; after the queue's
``max_retries`` the dead-letter consumer ends the run with that error, or with ``internal``. A
redelivered message of a run that ended is acked and skipped. A message that is not a run is not
claimed here (``jobs_queued.consume`` takes it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..ctx import METER
from ..errors import ErrorCode, VidError, on_surface
from ..job_units import TRANSIENT
from ..jobs import KV_TTL_S, is_job_id
from ..jobs_queued import ACK, Decision, QueueSender, backoff
from .owner import RUN_OWNER, digest
from .results import ErrorReply, JsonReply, Processing, Reply
from .runs import INLINE, Notify, Run, Step

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from ..runtime import Runtime

__all__ = ["QueuedRuns", "RunLedger", "StoredReply", "run_of"]

log = logging.getLogger("vid2context.mcp")

_ENDED = ("done", "failed")


class RunLedger(Protocol):
    """Where queued runs keep their state (``storage/cloudflare_runs.D1RunLedger``)."""

    async def create(self, row: dict[str, Any]) -> bool: ...
    async def get(self, run_id: str) -> dict[str, Any] | None: ...
    async def latest(self, key: str) -> dict[str, Any] | None: ...
    async def set_status(
        self, run_id: str, before: tuple[str, ...], status: str, now: float, **values: str | None
    ) -> bool: ...
    async def set_fields(self, run_id: str, now: float, **values: str | None) -> None: ...
    async def prune(self, before: float) -> None: ...


@dataclass
class StoredReply(Reply):
    """A reply the queue's consumer made and wrote down, sent as it was made."""

    result: CallToolResult

    def to_result(self) -> CallToolResult:
        return self.result


def run_of(body: Any) -> str | None:
    """The run id of a message body (JSON text or an object) ``{"run": id}``, or ``None``."""
    if isinstance(body, str | bytes):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, Mapping) or set(body) != {"run"}:
        return None
    run_id = body["run"]
    return run_id if is_job_id(run_id) else None


def _body(run_id: str) -> str:
    return json.dumps({"run": run_id})


def _encode(result: CallToolResult) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def _step(text: str | None) -> Step | None:
    if not text:
        return None
    data = json.loads(text)
    return Step(
        data["stage"], data.get("fraction"), data.get("message") or "", data.get("done"), data.get("total")
    )


class QueuedRuns:
    """``runs.Durable`` over ``ledger`` and the ``JOBS`` producer ``sender``, and their consumer."""

    def __init__(
        self,
        ledger: RunLedger,
        sender: QueueSender,
        *,
        poll_s: float = 1.0,
        retry_s: int = 10,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._ledger = ledger
        self._sender = sender
        self.poll_s = poll_s
        self.retry_s = retry_s
        self.clock = clock
        self._server: Any = None
        """The MCP server the consumer runs calls on (``create_mcp``), built on its first message."""

    # --- where the call came in -----------------------------------------------------------------

    async def call(
        self, tool: str, key_args: dict[str, Any], caller: str, notify: Notify | None, *, reuse: bool,
        wait_s: float, keep_s: float, call: tuple[str, dict[str, Any]],
    ) -> Reply:  # fmt: skip
        """Attach to this call's run (going, or ended well within ``keep_s`` when ``reuse``), or
        queue a new one; then its reply, or ``processing`` after ``wait_s``."""
        key = digest(json.dumps([caller, tool, key_args], sort_keys=True, default=str))
        row = await self._ledger.latest(key)
        if row is None or (
            row["status"] in _ENDED and (row["status"] == "failed" or not reuse or self._expired(row, keep_s))
        ):
            row = await self._start(key, caller, call)
        return await self._wait(row, notify, wait_s)

    async def job(
        self, job_id: str, caller: str, notify: Notify | None, *, wait_s: float, keep_s: float
    ) -> Reply | None:
        row = await self._ledger.get(job_id) if is_job_id(job_id) else None
        if row is None or row["caller"] != caller or self._expired(row, keep_s):
            return None
        return await self._wait(row, notify, wait_s)

    async def _start(self, key: str, caller: str, call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        name, arguments = call
        meter = METER.get()
        now = self.clock()
        row = {
            "id": "job_" + secrets.token_urlsafe(12),
            "key": key,
            "caller": caller,
            "tool": name,
            "arguments": json.dumps(arguments),
            "meter": None
            if meter is None
            else json.dumps([meter.account.removeprefix("acct:"), meter.address.removeprefix("addr:")]),
            "created_at": now,
        }
        if not await self._ledger.create(row):  # the same call, started a moment ago elsewhere
            going = await self._ledger.latest(key)
            if going is not None:
                return going
            raise VidError.internal()
        try:
            await self._sender.send(_body(row["id"]))
        except BaseException:  # never left queued with no message: the next call starts afresh
            await self._ledger.set_status(row["id"], ("queued",), "failed", self.clock())
            raise
        return {**row, "status": "queued", "step": None, "reply": None, "updated_at": now}

    async def _wait(self, row: dict[str, Any], notify: Notify | None, wait_s: float) -> Reply:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        told: str | None = None
        while row["status"] not in _ENDED:
            if notify is not None and row["step"] and row["step"] != told:
                told = row["step"]
                step = _step(told)
                assert step is not None
                try:
                    await notify(step.stage, step.fraction, step.message, step.done, step.total)
                except Exception:  # a client that cannot take a notification must not break the call
                    log.debug("progress notification failed", exc_info=True)
            remaining = deadline - loop.time()
            if remaining <= 0:
                return JsonReply(self._processing(row), structured=True)
            await asyncio.sleep(min(self.poll_s, remaining))
            row = await self._ledger.get(row["id"]) or row
        return self._reply(row)

    def _processing(self, row: dict[str, Any]) -> Processing:
        elapsed = self.clock() - float(row["created_at"])
        step = _step(row["step"]) or Step("queued", None, "Waiting for the queue.")
        return Processing(
            job_id=row["id"],
            retry_after_seconds=int(max(5, min(30, elapsed / 3))),
            stage=step.stage,
            fraction=step.fraction,
            message=step.message or "Working.",
        )

    @staticmethod
    def _reply(row: dict[str, Any]) -> Reply:
        if not row["reply"]:
            return ErrorReply(VidError.internal())
        from mcp_types import CallToolResult

        return StoredReply(CallToolResult.model_validate(json.loads(row["reply"])))

    def _expired(self, row: dict[str, Any], keep_s: float) -> bool:
        return row["status"] in _ENDED and self.clock() - float(row["updated_at"]) > keep_s

    # --- the consumer -----------------------------------------------------------------------------

    def claims(self, body: Any) -> bool:
        return run_of(body) is not None

    async def handle(self, runtime: Runtime, body: Any, attempts: int = 1) -> Decision:
        """Run the call of one message; never raises (see the module docstring for what is acked)."""
        run_id = run_of(body)
        if run_id is None:
            return ACK
        try:
            row = await self._ledger.get(run_id)
            if row is None:
                log.warning("queue: a message for unknown MCP run %s was dropped", run_id)
                return ACK
            if row["status"] in _ENDED:
                return ACK  # a redelivery after the run ended
            await self._ledger.set_status(run_id, ("queued",), "running", self.clock())
            result, failed, retry_after = await self._execute(runtime, row)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("queue: MCP run %s failed (attempt %d)", run_id, attempts)
            return Decision(ack=False, delay_s=backoff(attempts, self.retry_s))
        if retry_after is not None:  # kept, so the dead letter can answer with the real cause
            await self._ledger.set_fields(run_id, self.clock(), reply=result)
            return Decision(ack=False, delay_s=backoff(attempts, self.retry_s, retry_after))
        status = "failed" if failed else "done"
        await self._ledger.set_status(run_id, ("queued", "running"), status, self.clock(), reply=result)
        return ACK

    async def _execute(self, runtime: Runtime, row: dict[str, Any]) -> tuple[str, bool, int | None]:
        """The call again, here: ``(reply JSON, whether it is an error, retry_after when the
        error is transient)``; an unexpected failure is raised."""
        server = self._mcp(runtime)
        tool = server._tool_manager.get_tool(row["tool"])
        if tool is None:  # a deploy between the call and its message took the tool away
            error = VidError(
                ErrorCode.NOT_FOUND,
                f"There is no tool {row['tool'][:64]!r} any more.",
                hint="Tell the user the server changed while the call waited; do not retry.",
            )
            return _encode(ErrorReply(error).to_result()), True, None
        run = Run(
            id=row["id"],
            key=row["key"],
            caller=row["caller"],
            started=time.monotonic(),
            timeout=runtime.settings.request_timeout_ms / 1000,
        )
        steps: asyncio.Queue[Step] = asyncio.Queue()
        run.waiters.add(steps)
        writer = asyncio.create_task(self._write_steps(run.id, steps))
        tokens = (INLINE.set(run), RUN_OWNER.set(row["caller"]), METER.set(self._meter(runtime, row)))
        retry_after = None
        try:
            from mcp.server.mcpserver import Context

            with on_surface("mcp"):
                context = Context(mcp_server=server, subscriptions=server._subscriptions)
                try:
                    reply = await tool.reply(json.loads(row["arguments"]), context)
                except VidError as error:
                    reply = ErrorReply(error)
                    if error.code in TRANSIENT:
                        retry_after = int(error.retry_after or 0)
                result = tool.result(reply)
        finally:
            METER.reset(tokens[2])
            RUN_OWNER.reset(tokens[1])
            INLINE.reset(tokens[0])
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
        return _encode(result), bool(result.is_error), retry_after

    async def _write_steps(self, run_id: str, steps: asyncio.Queue[Step]) -> None:
        """Each progress step to the row, the newest only when several came during a write."""
        while True:
            step = await steps.get()
            while not steps.empty():
                step = steps.get_nowait()
            data = {"stage": step.stage, "fraction": step.fraction, "message": step.message,
                    "done": step.done, "total": step.total}  # fmt: skip
            try:
                await self._ledger.set_fields(run_id, self.clock(), step=json.dumps(data))
            except Exception:  # progress is a courtesy: the reply is what counts
                log.warning("queue: the progress of MCP run %s was not written", run_id, exc_info=True)

    @staticmethod
    def _meter(runtime: Runtime, row: dict[str, Any]) -> Any:
        """Hosted mode's quota meter of the call's account and address, as its request had it."""
        if not row["meter"] or not runtime.settings.hosted:
            return None
        from ..auth.quotas import Quotas

        account, address = json.loads(row["meter"])
        return Quotas(runtime.kv, runtime.settings).meter(account, address)

    def _mcp(self, runtime: Runtime) -> Any:
        if self._server is None:
            from .server import create_mcp

            self._server = create_mcp(runtime)
        return self._server

    async def dead_letter(self, runtime: Runtime, body: Any) -> None:
        """A run the queue gave up on ends with its last transient error, or ``internal``."""
        run_id = run_of(body)
        if run_id is None:
            return
        try:
            row = await self._ledger.get(run_id)
            if row is None or row["status"] in _ENDED:
                log.warning("dead letter for MCP run %s (unknown or ended) dropped", run_id)
                return
            reply = row["reply"] or _encode(
                ErrorReply(
                    VidError(
                        ErrorCode.INTERNAL,
                        "This call failed on every retry.",
                        hint="Repeat the call once; if it fails again, tell the user it needs a look, and do not retry.",
                    )
                ).to_result()
            )
            await self._ledger.set_status(run_id, ("queued", "running"), "failed", self.clock(), reply=reply)
        except Exception:
            log.exception("dead letter for MCP run %s could not be recorded", run_id)

    async def prune(self) -> None:
        """Forget runs that ended more than a day ago (the Worker's cron handler calls it)."""
        await self._ledger.prune(self.clock() - KV_TTL_S)
