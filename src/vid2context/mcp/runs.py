"""Long work: answer ``processing`` after a wait, keep working, and let the caller come back.

A tool that reads videos hands its work to ``Runs.call(tool, args, caller, work, notify)``. The
work starts as a task of its own, detached from the request, so a client that goes away or a
request that times out does not stop it; the call then waits up to ``wait_s`` (45 s by default)
and answers with the tool's own reply when the work is done, or with::

    {"status": "processing", "job_id": "job_...", "retry_after_seconds": 5..30,
     "stage": "captions", "fraction": null, "message": "downloading en captions"}

which is not an error. Calling the same tool again with the same arguments (same caller) attaches
to the run already going instead of starting another; ``get_job(job_id)`` waits up to 45 s again.
A run that finished is answered again for ``keep_s`` (15 minutes) without running again, the way
the Scribiz peer does (tools that change something run again); a failed run is not reused by a
new call (it starts afresh), but its ``job_id`` still answers with the error. While a caller
waits, every progress step of the run is sent to it as a progress notification.

The registry lives in the process, like the SDK's stateless transport itself: a job id is known to
the process that started it. The work saves what it reads to the library, so repeating a call on
another process after the work finished is quick anyway. (``runtime.jobs``, the REST job queue,
persists REST jobs; these MCP runs are shorter-lived and carry a finished tool reply.)

Each run's task is given to ``keep_alive`` (``Runtime.hand_off``): on the Worker that is
``waitUntil``, without which the run would die with the request that answered ``processing``. A run
the platform holds is also left running by ``aclose``, because the Worker ends the app's lifespan
after every request, not when the isolate goes away.

On a Worker with a ``JOBS`` queue, ``durable`` (``queued.QueuedRuns``) takes the calls instead: a
run is a row in D1 and a queue message, re-run by the queue's consumer from the tool's name and
arguments (``CALL``, set by ``toolkit.ContractTool``), where ``INLINE`` makes ``call`` run the work
at once, in the consumer, rather than start another run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..ctx import Ctx
from ..errors import VidError
from .results import ErrorReply, JsonReply, Processing, Reply

__all__ = ["CALL", "INLINE", "KEEP_S", "WAIT_S", "Durable", "Run", "Runs", "replaying"]

log = logging.getLogger("vid2context.mcp")

WAIT_S = 45.0
"""How long a call (or ``get_job``) waits before answering ``processing``."""
KEEP_S = 900.0
"""How long a finished run is kept: its ``job_id`` answers, and the same call gets its reply."""
MAX_RUNS = 256

Notify = Callable[[str, float | None, str, int | None, int | None], Awaitable[None]]
Work = Callable[["Run"], Awaitable[Reply]]
HandOff = Callable[[Awaitable[Any]], bool]
"""``Runtime.hand_off``: gives a task to the platform; True when the platform now holds it."""

CALL: ContextVar[tuple[str, dict[str, Any]] | None] = ContextVar("vid2context_mcp_call", default=None)
"""The tool call being answered: its tool's name and its arguments as the client sent them."""
INLINE: ContextVar[Run | None] = ContextVar("vid2context_mcp_inline", default=None)
"""Set by the queue's consumer: the run it is doing, which ``Runs.call`` works on at once."""


def replaying() -> bool:
    """Whether this call is the queue's consumer making a call again (``queued.py``). The whole
    call runs again there, so what a tool changes before its long run must not be done twice."""
    return INLINE.get() is not None


class Durable(Protocol):
    """Long runs kept outside this process (``queued.QueuedRuns``): a tool call that goes on in
    whichever isolate the queue hands it to, and whose reply any isolate reads."""

    async def call(
        self, tool: str, key_args: dict[str, Any], caller: str, notify: Notify | None, *, reuse: bool,
        wait_s: float, keep_s: float, call: tuple[str, dict[str, Any]],
    ) -> Reply: ...  # fmt: skip

    async def job(
        self, job_id: str, caller: str, notify: Notify | None, *, wait_s: float, keep_s: float
    ) -> Reply | None: ...


@dataclass(frozen=True, slots=True)
class Step:
    stage: str
    fraction: float | None
    message: str
    done: int | None = None
    total: int | None = None


@dataclass(eq=False)
class Run:
    id: str
    key: str
    caller: str
    started: float
    timeout: float
    step: Step = field(default_factory=lambda: Step("start", None, "Starting."))
    finished: float | None = None
    failed: bool = False
    task: asyncio.Task[Reply] | None = None
    waiters: set[asyncio.Queue[Step]] = field(default_factory=set)
    kept_alive: bool = False
    """The platform holds the task (``waitUntil``): it outlives the app's lifespan."""

    def report(
        self,
        stage: str,
        fraction: float | None = None,
        message: str = "",
        *,
        done: int | None = None,
        total: int | None = None,
    ) -> None:
        """Record a step and pass it to every waiting caller (callable from sync code)."""
        if fraction is not None:
            fraction = min(1.0, max(0.0, float(fraction)))
        self.step = Step(stage, fraction, message or stage, done, total)
        for queue in self.waiters:
            queue.put_nowait(self.step)

    def progress_event(self, event: Mapping[str, Any]) -> None:
        """``report`` from a batch's ``{done, total, message}``: ``expand`` while ``total`` is unknown."""
        done, total, message = event.get("done"), event.get("total"), str(event.get("message") or "")
        if total is None:
            self.report("expand", None, message)
        else:
            self.report("read", (done or 0) / max(1, total), message, done=done, total=total)

    def ctx(self) -> Ctx:
        """A per-run context: the runtime's deadline, progress into this run, no request to die with."""
        return Ctx(
            timeout=self.timeout,
            progress=lambda stage, fraction, message: self.report(stage, fraction, message),
        )


class Runs:
    def __init__(
        self,
        *,
        timeout: float,
        wait_s: float = WAIT_S,
        job_wait_s: float | None = None,
        keep_s: float = KEEP_S,
        clock: Callable[[], float] = time.monotonic,
        keep_alive: HandOff | None = None,
        durable: Durable | None = None,
    ) -> None:
        self.timeout = timeout
        self.keep_alive = keep_alive
        self.durable = durable
        self.wait_s = wait_s
        self.job_wait_s = wait_s if job_wait_s is None else job_wait_s
        self.keep_s = keep_s
        self.clock = clock
        self._by_id: dict[str, Run] = {}
        self._by_key: dict[str, Run] = {}

    # -- the two ways in ---------------------------------------------------------------------------

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        caller: str,
        work: Work,
        notify: Notify | None,
        *,
        reuse: bool = True,
    ) -> Reply:
        """Run ``work`` (or attach to the same call's run) and answer within ``wait_s``.

        ``reuse=False`` (for tools that change something) attaches only to a run still going: the
        same call made after it finished runs again, so its answer says what it did this time.
        """
        inline = INLINE.get()
        if inline is not None:  # the queue's consumer doing this very call (queued.py)
            return await work(inline)
        call = CALL.get()
        if self.durable is not None and call is not None:
            return await self.durable.call(
                tool, args, caller, notify, reuse=reuse, wait_s=self.wait_s, keep_s=self.keep_s, call=call
            )
        key = json.dumps([caller, tool, args], sort_keys=True, default=str)
        run = self._by_key.get(key)
        if run is None or (run.finished is not None and (run.failed or not reuse or self._expired(run))):
            run = self._start(key, caller, work)
        return await self.wait(run, notify, self.wait_s)

    async def job(self, job_id: str, caller: str, notify: Notify | None) -> Reply | None:
        """``get_job``: the run's reply, or ``processing`` after ``job_wait_s``; ``None`` when this
        caller has no such run (unknown, expired, or someone else's)."""
        if self.durable is not None:
            return await self.durable.job(job_id, caller, notify, wait_s=self.job_wait_s, keep_s=self.keep_s)
        run = self.get(job_id, caller)
        return None if run is None else await self.wait(run, notify, self.job_wait_s)

    def get(self, job_id: str, caller: str) -> Run | None:
        """The run ``job_id`` of this caller, or ``None`` (unknown, expired, or someone else's)."""
        self._prune()
        run = self._by_id.get(job_id)
        if run is None or run.caller != caller:
            return None
        return run

    # -- waiting ---------------------------------------------------------------------------------

    async def wait(self, run: Run, notify: Notify | None, wait_s: float) -> Reply:
        """The run's reply once done, or ``processing`` after ``wait_s``; progress goes to ``notify``."""
        assert run.task is not None
        queue: asyncio.Queue[Step] = asyncio.Queue()
        run.waiters.add(queue)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        getter: asyncio.Future[Step] | None = None
        try:
            if notify is not None and not run.task.done() and run.step.stage != "start":
                await self._tell(notify, run.step)
            while not run.task.done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait(
                    {run.task, getter}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                if getter in done:
                    step = getter.result()
                    getter = None
                    if notify is not None and step.stage != "done":
                        await self._tell(notify, step)
            if notify is not None:  # the steps that came in with the end of the run
                while not queue.empty():
                    if (step := queue.get_nowait()).stage != "done":  # the reply itself says it is done
                        await self._tell(notify, step)
        finally:
            if getter is not None:
                getter.cancel()
            run.waiters.discard(queue)
        if run.task.done():
            return run.task.result()
        return JsonReply(self._processing(run), structured=True)

    @staticmethod
    async def _tell(notify: Notify, step: Step) -> None:
        try:
            await notify(step.stage, step.fraction, step.message, step.done, step.total)
        except Exception:  # a client that cannot take a notification must not break the call
            log.debug("progress notification failed", exc_info=True)

    def _processing(self, run: Run) -> Processing:
        elapsed = self.clock() - run.started
        retry = int(max(5, min(30, elapsed / 3)))
        return Processing(
            job_id=run.id,
            retry_after_seconds=retry,
            stage=run.step.stage,
            fraction=run.step.fraction,
            message=run.step.message or "Working.",
        )

    # -- bookkeeping -------------------------------------------------------------------------------

    def _start(self, key: str, caller: str, work: Work) -> Run:
        self._prune()
        run = Run(
            id="job_" + secrets.token_urlsafe(12),
            key=key,
            caller=caller,
            started=self.clock(),
            timeout=self.timeout,
        )
        run.task = asyncio.get_running_loop().create_task(
            self._guard(run, work), name=f"vid2context-mcp-{run.id}"
        )
        run.kept_alive = self.keep_alive is not None and self.keep_alive(run.task)
        self._by_id[run.id] = run
        self._by_key[key] = run
        return run

    async def _guard(self, run: Run, work: Work) -> Reply:
        try:
            reply = await work(run)
        except VidError as error:
            reply = ErrorReply(error)
        except asyncio.CancelledError:
            run.failed = True
            run.finished = self.clock()
            raise
        except Exception:
            log.exception("long run %s failed", run.id)
            reply = ErrorReply(VidError.internal())
        run.failed = isinstance(reply, ErrorReply)
        run.finished = self.clock()
        run.report("done", 1.0, "Finished." if not run.failed else "Failed.")
        return reply

    def _expired(self, run: Run) -> bool:
        return run.finished is not None and self.clock() - run.finished > self.keep_s

    def _prune(self) -> None:
        for run in [r for r in self._by_id.values() if self._expired(r)]:
            self._forget(run)
        finished = sorted(
            (r for r in self._by_id.values() if r.finished is not None), key=lambda r: r.finished or 0
        )
        while len(self._by_id) >= MAX_RUNS and finished:
            self._forget(finished.pop(0))

    def _forget(self, run: Run) -> None:
        self._by_id.pop(run.id, None)
        if self._by_key.get(run.key) is run:
            del self._by_key[run.key]

    @property
    def active(self) -> int:
        return sum(1 for run in self._by_id.values() if run.task is not None and not run.task.done())

    async def aclose(self) -> None:
        """Stop the runs still going (at shutdown); what they read so far stays in the library.

        Runs the platform keeps alive are left to it (see the module docstring).
        """
        tasks = [
            run.task
            for run in self._by_id.values()
            if run.task is not None and not run.task.done() and not run.kept_alive
        ]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
