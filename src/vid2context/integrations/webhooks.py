"""Webhooks: events sent, signed, to the URLs callers register, retried, and given up on.

Events: ``collection.refreshed`` (what a refresh of a collection added: its job's
``summary.added``, as ``watch.py`` promised), ``job.succeeded`` and ``job.failed`` (every job
that ends so, on either queue: ``jobs.py`` in process, ``jobs_queued.py`` on the Worker), and
``webhook.test`` (``POST /webhooks/{id}/test`` only). A delivery is one JSON body
``{id, event, createdAt, data}``, POSTed with ``X-Vid2context-Event``, ``X-Vid2context-Delivery``
(its id) and ``X-Vid2context-Signature`` (``webhook_secrets.signature_header``, made afresh at
each attempt). Its life::

    attempt 1 ──2xx──▶ delivered (failures = 0)
       │ anything else: a status outside 2xx, a redirect (never followed), no answer in
       │ 10 s, no connection, a target refused now (``webhook_targets``)
       ▼
    attempts 2..5 after RETRY_STEPS × VID2CONTEXT_WEBHOOK_RETRY_S ──▶ given up

Every failed attempt adds one to the hook's ``failures`` and a success sets it to 0; at
``MAX_FAILURES`` failures in a row the hook is ``disabled`` and gets nothing more until a test
delivery succeeds (``POST /webhooks/{id}/test``), which makes it ``active`` again. Locally the
retries wait in this process (lost if it stops); on the Worker with a ``JOBS`` queue each attempt
is one queue message, the next one sent with ``delaySeconds``, so any isolate runs it.

A hook belongs to the key that made it (``owner``): each key sees, tests and deletes its own, at
most ``MAX_HOOKS`` of them. Events are the server's (the library and its jobs are shared), so
every active hook subscribed to an event gets it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import httpx
import msgspec

from .. import __version__
from ..errors import ErrorCode, VidError
from ..models import Base
from .webhook_secrets import new_secret, open_secret, seal_secret, signature_header
from .webhook_senders import DELIVERY_TIMEOUT_S, Sender
from .webhook_store import Outcome, WebhookStore

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = [
    "ATTEMPTS",
    "EVENTS",
    "MAX_FAILURES",
    "MAX_HOOKS",
    "RETRY_STEPS",
    "TEST_EVENT",
    "Webhook",
    "WebhookRequest",
    "Webhooks",
    "delivery_message",
]

log = logging.getLogger("vid2context.webhooks")

EVENTS = ("collection.refreshed", "job.succeeded", "job.failed")
TEST_EVENT = "webhook.test"
MAX_HOOKS = 20
"""Hooks one owner (one API key, or everyone on an open server) may have."""
MAX_FAILURES = 10
"""Failed attempts in a row after which a hook is disabled (two deliveries' worth of retries)."""
RETRY_STEPS = (0, 1, 4, 16, 64)
"""The wait before each attempt, in units of ``VID2CONTEXT_WEBHOOK_RETRY_S`` (default 30 s:
at once, 30 s, 2 min, 8 min, 32 min)."""
ATTEMPTS = len(RETRY_STEPS)
MAX_ITEMS = 100
"""``collection.refreshed`` lists at most this many added videos (``addedCount`` says all)."""
MAX_BODY_BYTES = 64 * 1024
"""A delivery's body stays under this (a queue message carries it, and Queues take 128 KB)."""
MAX_DELAY_S = 12 * 60 * 60
"""The longest ``delaySeconds`` Cloudflare Queues accept."""
_HOOK_ID = re.compile(r"wh_[A-Za-z0-9_-]{8,64}")
_MESSAGE_KEY = "webhookDelivery"

Hand = Callable[[Awaitable[Any]], Any]


class Webhook(Base, omit_defaults=True):
    """A hook as the API shows it: ``secret`` only in the answer that created it."""

    id: str
    url: str
    events: list[str]
    state: Literal["active", "disabled"]
    failures: int
    """Failed attempts in a row; at ``MAX_FAILURES`` the hook is disabled."""
    created_at: str
    last_delivery_at: str | None = None
    last_status: int | None = None
    """The receiver's HTTP status at the last attempt; absent when nothing answered."""
    last_error: str | None = None
    """Why the last attempt failed; absent after a success."""
    secret: str | None = None


class WebhookRequest(Base, forbid_unknown_fields=True):
    url: str
    """Where deliveries are POSTed: an absolute http(s) URL."""
    events: list[str]
    """The events to send: any of collection.refreshed, job.succeeded, job.failed."""


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _webhook(row: Mapping[str, Any], secret: str | None = None) -> Webhook:
    return Webhook(
        id=row["id"],
        url=row["url"],
        events=list(row["events"]),
        state=row["state"],
        failures=int(row["failures"]),
        created_at=row["created_at"],
        last_delivery_at=row.get("last_delivery_at"),
        last_status=None if row.get("last_status") is None else int(row["last_status"]),
        last_error=row.get("last_error"),
        secret=secret,
    )


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _not_found(hook_id: object) -> VidError:
    shown = str(hook_id)[:60]
    return VidError(
        ErrorCode.NOT_FOUND,
        f"There is no webhook {shown!r}.",
        hint="List yours with GET /api/v1/webhooks; a hook is seen only by the key that made it.",
    )


def check_events(events: object) -> list[str]:
    """The event names, each once, in the given order; ``bad-request`` for anything else."""
    hint = "Give events as a list of one or more of: " + ", ".join(EVENTS) + "."
    if not isinstance(events, list) or not events:
        raise _bad("events must be a list of event names, at least one.", hint)
    names: list[str] = []
    for name in events:
        if not isinstance(name, str) or name not in EVENTS:
            raise _bad(f"Unknown event {str(name)[:40]!r}.", hint)
        if name not in names:
            names.append(name)
    return names


def delivery_message(body: Any) -> tuple[dict[str, str], int] | None:
    """``(delivery, attempt)`` from a queue message body (JSON text or an object), or ``None``
    when it is not a webhook delivery (a job's unit, say)."""
    if isinstance(body, str | bytes):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, Mapping) or not isinstance(body.get(_MESSAGE_KEY), Mapping):
        return None
    delivery, attempt = body[_MESSAGE_KEY], body.get("attempt")
    fields = ("hook", "id", "event", "body")
    if not all(isinstance(delivery.get(f), str) for f in fields):
        return None
    if not isinstance(attempt, int) or isinstance(attempt, bool) or not 1 <= attempt <= ATTEMPTS:
        return None
    return {f: delivery[f] for f in fields}, attempt


def _trimmed(data: dict[str, Any], lists: tuple[str, ...]) -> dict[str, Any]:
    """``data`` with its ``lists`` halved until its JSON fits ``MAX_BODY_BYTES`` (with room for
    the envelope)."""
    while len(json.dumps(data)) > MAX_BODY_BYTES - 512 and any(data.get(k) for k in lists):
        for key in lists:
            data[key] = data[key][: len(data[key]) // 2]
    return data


class Webhooks:
    """The runtime's webhooks (``runtime.webhooks``): the store, the sender, and the queue that
    carries attempts on the Worker (``queue``; ``None`` runs them in this process, each wait on
    ``sleep``, the task given to ``hand_off``)."""

    def __init__(
        self,
        store: WebhookStore,
        sender: Sender,
        *,
        key: str | None = None,
        retry_s: int = 30,
        queue: Any = None,
        hand_off: Hand | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.store = store
        self.sender = sender
        self.queue = queue
        self._key = key
        self._retry_s = max(0, retry_s)
        self._hand_off = hand_off
        self._clock = clock
        self._sleep = sleep
        self._tasks: set[asyncio.Task[None]] = set()
        self._sending: set[asyncio.Task[None]] = set()
        self._closing = False

    # --- the routes' calls ------------------------------------------------------------------

    async def create(self, owner: str, url: object, events: object) -> Webhook:
        """A new hook, with its secret (the only time it is shown)."""
        names = check_events(events)
        if await self.store.count(owner) >= MAX_HOOKS:
            raise _bad(
                f"This key has {MAX_HOOKS} webhooks, the most one key may have.",
                "Delete one you no longer need (DELETE /api/v1/webhooks/{hook_id}), then create this one.",
            )
        await self.sender.check(url)  # type: ignore[arg-type]  # parse_target refuses what is not text
        hook_id = "wh_" + secrets.token_urlsafe(12)
        secret = new_secret()
        row = {
            "id": hook_id, "owner": owner, "url": url, "events": names,
            "secret": seal_secret(secret, hook_id, self._key), "created_at": _stamp(self._clock()),
        }  # fmt: skip
        await self.store.create(row)
        return _webhook({**row, "state": "active", "failures": 0}, secret=secret)

    async def list(self, owner: str) -> list[Webhook]:
        return [_webhook(row) for row in await self.store.list(owner)]

    async def _own(self, owner: str, hook_id: str) -> dict[str, Any]:
        row = await self.store.get(hook_id) if _HOOK_ID.fullmatch(hook_id) else None
        if row is None or row["owner"] != owner:
            raise _not_found(hook_id)
        return row

    async def delete(self, owner: str, hook_id: str) -> None:
        await self._own(owner, hook_id)
        if not await self.store.delete(hook_id, owner):
            raise _not_found(hook_id)

    async def test(self, owner: str, hook_id: str) -> Webhook:
        """One ``webhook.test`` delivery now, without retries; a success makes a disabled hook
        active again. The hook as it is afterwards."""
        row = await self._own(owner, hook_id)
        data = {"webhookId": hook_id, "message": "A test delivery from vid2context."}
        await self.attempt(self._delivery(row, TEST_EVENT, data), revive=True)
        return _webhook(await self._own(owner, hook_id))

    # --- events -----------------------------------------------------------------------------

    async def job_ended(self, job: Job) -> None:
        """The events of a job that ended: ``job.succeeded`` or ``job.failed``, and for a
        successful refresh ``collection.refreshed``. Never raises: a job's end stands."""
        try:
            shown = msgspec.to_builtins(job)
            shown.pop("result", None)
            shown.pop("progress", None)
            if job.status == "succeeded":
                await self.emit("job.succeeded", {"job": shown})
                summary = job.result.get("summary") if isinstance(job.result, Mapping) else None
                if job.kind == "refresh" and isinstance(summary, Mapping):
                    await self.emit("collection.refreshed", self._refreshed(job.id, summary))
            elif job.status == "failed":
                await self.emit("job.failed", {"job": shown})
        except Exception:
            log.exception("webhooks: the events of job %s were not sent", job.id)

    @staticmethod
    def _refreshed(job_id: str, summary: Mapping[str, Any]) -> dict[str, Any]:
        added = list(summary.get("added") or [])
        failed = list(summary.get("failed") or [])
        data = {
            "jobId": job_id, "collectionId": summary.get("collectionId"),
            "added": added[:MAX_ITEMS], "addedCount": len(added), "skipped": summary.get("skipped", 0),
            "failed": failed[:MAX_ITEMS], "failedCount": len(failed),
            "remaining": summary.get("remaining", 0), "checkedAt": summary.get("checkedAt"),
        }  # fmt: skip
        return _trimmed(data, ("added", "failed"))

    async def emit(self, event: str, data: dict[str, Any]) -> int:
        """Send ``event`` to every active hook subscribed to it; how many deliveries started."""
        hooks = [row for row in await self.store.active() if event in row["events"]]
        for row in hooks:
            delivery = self._delivery(row, event, data)
            if self.queue is not None:
                await self.queue.send(self._message(delivery, 1))
            else:
                task = asyncio.get_running_loop().create_task(self._retried(delivery))
                self._tasks.add(task)
                self._sending.add(task)
                task.add_done_callback(self._tasks.discard)
                if self._hand_off is not None:
                    self._hand_off(task)
        return len(hooks)

    def _delivery(self, row: Mapping[str, Any], event: str, data: dict[str, Any]) -> dict[str, str]:
        delivery_id = "dlv_" + secrets.token_urlsafe(12)
        envelope = {"id": delivery_id, "event": event, "createdAt": _stamp(self._clock()), "data": data}
        return {"hook": row["id"], "id": delivery_id, "event": event, "body": json.dumps(envelope)}

    def _delay(self, attempt: int) -> int:
        """The wait before attempt ``attempt`` (from 1)."""
        return min(MAX_DELAY_S, RETRY_STEPS[attempt - 1] * self._retry_s)

    @staticmethod
    def _message(delivery: dict[str, str], attempt: int) -> str:
        return json.dumps({_MESSAGE_KEY: delivery, "attempt": attempt})

    async def _retried(self, delivery: dict[str, str]) -> None:
        """Every attempt of one delivery in this process, until one succeeds or the hook stops.
        While it waits for a retry it is not ``_sending``: closing stops it then."""
        task = asyncio.current_task()
        try:
            for attempt in range(1, ATTEMPTS + 1):
                delay = self._delay(attempt)
                if delay:
                    if self._closing:
                        return
                    self._sending.discard(task)  # type: ignore[arg-type]
                    await self._sleep(delay)
                    self._sending.add(task)  # type: ignore[arg-type]
                if await self.attempt(delivery) != "failed":
                    return
        except Exception:
            log.exception("webhooks: delivery %s stopped", delivery["id"])
        finally:
            self._sending.discard(task)  # type: ignore[arg-type]

    async def handle(self, body: Any) -> bool:
        """A queue message: if it is a delivery, run its attempt and queue the next one when it
        failed and attempts remain; whether it was one. Never raises."""
        parsed = delivery_message(body)
        if parsed is None:
            return False
        delivery, attempt = parsed
        try:
            if await self.attempt(delivery) == "failed" and attempt < ATTEMPTS and self.queue is not None:
                await self.queue.send(self._message(delivery, attempt + 1), delay_s=self._delay(attempt + 1))
        except Exception:
            log.exception("webhooks: delivery %s attempt %d stopped", delivery["id"], attempt)
        return True

    # --- one attempt ------------------------------------------------------------------------

    async def attempt(self, delivery: Mapping[str, str], *, revive: bool = False) -> str:
        """POST the delivery once and record how it went: ``ok``, ``failed``, or ``stopped``
        when the hook is gone or disabled (nothing sent)."""
        row = await self.store.get(delivery["hook"])
        if row is None or (row["state"] != "active" and not revive):
            return "stopped"
        status: int | None = None
        error: str | None = None
        secret = open_secret(row["secret"], row["id"], self._key)
        if secret is None:
            error = "The signing secret cannot be opened: VID2CONTEXT_WEBHOOK_KEY changed or is missing."
        else:
            body = delivery["body"].encode("utf-8")
            headers = {
                "Content-Type": "application/json",
                "User-Agent": f"vid2context-webhooks/{__version__}",
                "X-Vid2context-Event": delivery["event"],
                "X-Vid2context-Delivery": delivery["id"],
                "X-Vid2context-Signature": signature_header(secret, int(self._clock()), body),
            }
            try:
                status = await self.sender.post(row["url"], body, headers)
            except VidError as refused:
                error = "Refused: " + refused.message
            except httpx.TimeoutException:
                error = f"No answer within {DELIVERY_TIMEOUT_S:g} s."
            except httpx.HTTPError as exc:
                error = f"No connection ({type(exc).__name__})."
            except Exception:
                log.exception("webhooks: an attempt of delivery %s failed", delivery["id"])
                error = "Internal error."
        ok = status is not None and 200 <= status < 300
        if status is not None and not ok:
            error = f"HTTP {status}" + (" (redirects are not followed)." if 300 <= status < 400 else ".")
        outcome = Outcome(ok=ok, at=_stamp(self._clock()), status=status, error=error)
        await self.store.record(row["id"], outcome, limit=MAX_FAILURES, revive=revive)
        return "ok" if ok else "failed"

    async def aclose(self) -> None:
        """Let the attempts under way (or about to start) finish, within one delivery's timeout,
        so a job that ended just before the server (or ``vid2context refresh --due``) stops is
        still announced; stop the retries waiting; close the sender."""
        self._closing = True
        sending = set(self._sending)
        if sending:
            await asyncio.wait(sending, timeout=DELIVERY_TIMEOUT_S + 1)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.sender.aclose()


def build_webhooks(runtime: Any, *, sender: Sender | None = None, queue: Any = None) -> Webhooks:
    """The runtime's webhooks: kept in its database when it has one (``runtime.sql``), else in
    memory; sent by ``sender`` (the portable ``HttpSender`` over the runtime's client unless the
    platform gives its own); attempts on ``queue`` when given."""
    from .webhook_senders import HttpSender
    from .webhook_store import MemoryWebhooks, SqlWebhooks

    settings = runtime.settings
    return Webhooks(
        SqlWebhooks(runtime.sql) if runtime.sql is not None else MemoryWebhooks(),
        sender or HttpSender(runtime.http, public=settings.public),
        key=settings.webhook_key,
        retry_s=settings.webhook_retry_s,
        queue=queue,
        hand_off=runtime.hand_off,
    )
