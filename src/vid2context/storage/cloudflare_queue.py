"""The Worker's durable jobs and watch claims on D1, and the ``JOBS`` queue producer.

``D1JobLedger`` is the ``jobs_queued.JobLedger`` of the Worker: every state change is one
statement, and the ones that must happen once (a unit from ``todo`` to ``done``, a job from
``running`` to ``succeeded``) are conditional updates whose ``changes`` say who won, so two
isolates that get the same message (a redelivery) never both count it. ``D1WatchClaims`` claims
a watched collection's due time the same way (``watch.WatchClaims``). ``QueueProducer`` wraps
the ``JOBS`` binding (``send`` and ``sendBatch``; bodies are JSON text, which needs no
conversion to cross into JavaScript). Tables: ``migrations/0006_job_queue.sql``.
"""

from __future__ import annotations

import json
from typing import Any

from .cloudflare import _D1, _py, _to_js

__all__ = ["D1JobLedger", "D1WatchClaims", "QueueProducer"]

_BATCH = 100
"""Messages per ``sendBatch`` call (Cloudflare's limit)."""


async def _changes(d1: _D1, sql: str, params: tuple[Any, ...]) -> int:
    meta = (_py(await d1.statement(sql, params).run()) or {}).get("meta") or {}
    return int(meta.get("changes") or 0)


class D1JobLedger:
    """Jobs, their units and events as rows of ``queued_jobs``, ``job_units`` and ``job_events``."""

    def __init__(self, db: Any) -> None:
        self._d1 = _D1(db)

    async def create(self, row: dict[str, Any]) -> None:
        await self._d1.statement(
            "INSERT INTO queued_jobs (id, kind, input, options, status, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 'queued', ?, ?)",
            (row["id"], row["kind"], row["input"], row["options"], row["created_at"], row["created_at"]),
        ).run()

    async def get(self, job_id: str) -> dict[str, Any] | None:
        return await self._d1.first("SELECT * FROM queued_jobs WHERE id = ?", (job_id,))

    async def set_status(
        self, job_id: str, before: tuple[str, ...], status: str, now: str, **values: str | None
    ) -> bool:
        """Move the job to ``status`` if it is in one of ``before``; ``values`` sets ``result``,
        ``error`` or ``progress`` with it. True when this call made the change."""
        sets = ", ".join(f"{name} = ?" for name in values)
        marks = ", ".join("?" for _ in before)
        sql = (
            f"UPDATE queued_jobs SET status = ?, updated_at = ?{', ' + sets if sets else ''} "
            f"WHERE id = ? AND status IN ({marks})"
        )
        return await _changes(self._d1, sql, (status, now, *values.values(), job_id, *before)) == 1

    async def set_fields(self, job_id: str, now: str, **values: str | None) -> None:
        """``progress`` or ``plan``, whatever the status."""
        sets = ", ".join(f"{name} = ?" for name in values)
        await self._d1.statement(
            f"UPDATE queued_jobs SET {sets}, updated_at = ? WHERE id = ?", (*values.values(), now, job_id)
        ).run()

    async def add_units(self, job_id: str, units: list[tuple[str, str]]) -> None:
        """``(unit, payload JSON)`` pairs; a unit that exists already is left as it is."""
        if units:
            await self._d1.statement(
                "INSERT OR IGNORE INTO job_units (job_id, unit, payload) SELECT ?, "
                "json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?) ORDER BY key",
                (job_id, json.dumps([list(pair) for pair in units])),
            ).run()

    async def units(self, job_id: str) -> list[dict[str, Any]]:
        return await self._d1.all(
            "SELECT unit, payload, state, result FROM job_units WHERE job_id = ? ORDER BY unit", (job_id,)
        )

    async def unit(self, job_id: str, unit: str) -> dict[str, Any] | None:
        return await self._d1.first(
            "SELECT unit, payload, state, result FROM job_units WHERE job_id = ? AND unit = ?", (job_id, unit)
        )

    async def settle_unit(self, job_id: str, unit: str, state: str, result: str, item: str | None) -> bool:
        """``todo`` to ``state`` with ``result``, and the ``item`` event with it in one batch (a
        transaction: an isolate dying between the two cannot lose the event); False when the
        unit was settled already. A unit without an ``item`` (a piece) is settled alone."""
        sql = "UPDATE job_units SET state = ?, result = ? WHERE job_id = ? AND unit = ? AND state = 'todo'"
        params = (state, result, job_id, unit)
        if item is None:
            return await _changes(self._d1, sql, params) == 1
        event = self._d1.statement(  # first, while the unit is still todo: both or neither
            "INSERT INTO job_events (job_id, seq, event, data) SELECT ?, next, 'item', ? FROM "
            "(SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM job_events WHERE job_id = ?) WHERE EXISTS "
            "(SELECT 1 FROM job_units WHERE job_id = ? AND unit = ? AND state = 'todo')",
            (job_id, item, job_id, job_id, unit),
        )
        _, settled = await self._d1.batch([event, self._d1.statement(sql, params)])
        return int((settled.get("meta") or {}).get("changes") or 0) == 1

    async def note_unit(self, job_id: str, unit: str, result: str) -> None:
        """Keep ``result`` (a failure to retry) with a unit still ``todo``."""
        await self._d1.statement(
            "UPDATE job_units SET result = ? WHERE job_id = ? AND unit = ? AND state = 'todo'",
            (result, job_id, unit),
        ).run()

    async def counts(self, job_id: str) -> tuple[int, int]:
        """``(units, units still todo)``."""
        row = await self._d1.first(
            "SELECT COUNT(*) AS total, COALESCE(SUM(state = 'todo'), 0) AS open FROM job_units WHERE job_id = ?",
            (job_id,),
        )
        return (int(row["total"]), int(row["open"])) if row else (0, 0)

    async def add_event(self, job_id: str, event: str, data: str) -> None:
        """The next numbered event (one statement, so two writers never take the same number)."""
        await self._d1.statement(
            "INSERT INTO job_events (job_id, seq, event, data) "
            "SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ? FROM job_events WHERE job_id = ?",
            (job_id, event, data, job_id),
        ).run()

    async def events(self, job_id: str, after: int = 0) -> list[dict[str, Any]]:
        return await self._d1.all(
            "SELECT seq, event, data FROM job_events WHERE job_id = ? AND seq > ? ORDER BY seq",
            (job_id, after),
        )

    async def prune(self, before: str) -> None:
        """Forget the jobs that ended before ``before``, with their units and events."""
        ended = "SELECT id FROM queued_jobs WHERE status IN ('succeeded', 'failed', 'canceled') AND updated_at < ?"
        await self._d1.batch(
            [
                self._d1.statement(f"DELETE FROM job_events WHERE job_id IN ({ended})", (before,)),
                self._d1.statement(f"DELETE FROM job_units WHERE job_id IN ({ended})", (before,)),
                self._d1.statement(f"DELETE FROM queued_jobs WHERE id IN ({ended})", (before,)),
            ]
        )


class D1WatchClaims:
    """``watch.WatchClaims`` on ``watch_claims``: one winner per collection and due time."""

    def __init__(self, db: Any) -> None:
        self._d1 = _D1(db)

    async def claim(self, collection_id: str, due_at: str, now: str, stale_before: str) -> bool:
        sql = (
            "INSERT INTO watch_claims (collection_id, due_at, claimed_at) VALUES (?, ?, ?) "
            "ON CONFLICT (collection_id) DO UPDATE SET due_at = excluded.due_at, claimed_at = excluded.claimed_at "
            "WHERE watch_claims.due_at < excluded.due_at OR watch_claims.claimed_at < ?"
        )
        return await _changes(self._d1, sql, (collection_id, due_at, now, stale_before)) == 1


class QueueProducer:
    """``jobs_queued.QueueSender`` over a Queue producer binding (``env.JOBS``)."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue

    async def send(self, body: str, *, delay_s: int = 0) -> None:
        if delay_s > 0:
            await self._queue.send(body, delaySeconds=int(delay_s))
        else:
            await self._queue.send(body)

    async def send_batch(self, bodies: list[str]) -> None:
        for start in range(0, len(bodies), _BATCH):
            await self._queue.sendBatch(_to_js([{"body": body} for body in bodies[start : start + _BATCH]]))
