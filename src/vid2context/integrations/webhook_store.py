"""Where webhooks are kept: the ``webhooks`` table (``migrations/0010_webhooks.sql``), or memory.

The same statements run on SQLite locally and on D1 on the edge through the ``Sql`` executor
(``auth.store_sql.Sql``), as the accounts do; a runtime on memory storage keeps its hooks in
``MemoryWebhooks``. Rows are plain dicts with the table's column names (``events`` as a list).
A delivery's outcome is written by one conditional ``UPDATE`` (``record``), so two attempts
ending at once cannot both reset or both miss the count that disables a hook.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Protocol

__all__ = ["MemoryWebhooks", "Outcome", "SqlWebhooks", "WebhookStore"]


class Outcome(NamedTuple):
    """How one delivery attempt went: ``status`` is the receiver's (``None`` when none answered),
    ``error`` why it failed, in words."""

    ok: bool
    at: str
    status: int | None
    error: str | None


_COLUMNS = (
    "id, owner, url, events, secret, state, failures, last_delivery_at, last_status, last_error, created_at"
)


class WebhookStore(Protocol):
    async def create(self, row: dict[str, Any]) -> None: ...
    async def count(self, owner: str) -> int: ...
    async def list(self, owner: str) -> list[dict[str, Any]]:
        """The owner's hooks, oldest first."""
        ...

    async def get(self, hook_id: str) -> dict[str, Any] | None:
        """The hook, or ``None`` when there is none (deleted)."""
        ...

    async def delete(self, hook_id: str, owner: str) -> bool:
        """Whether the owner had the hook (and now has not)."""
        ...

    async def active(self) -> list[dict[str, Any]]:
        """Every hook that is ``active``, of every owner."""
        ...

    async def record(self, hook_id: str, outcome: Outcome, *, limit: int, revive: bool) -> None:
        """An attempt's outcome: a success resets ``failures`` (and with ``revive`` makes a
        disabled hook active again); a failure adds one, and disables the hook at ``limit``."""
        ...


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "events": json.loads(row["events"]), "failures": int(row["failures"])}


class SqlWebhooks:
    def __init__(self, sql: Any) -> None:
        self.sql = sql

    async def create(self, row: dict[str, Any]) -> None:
        await self.sql.run(
            "INSERT INTO webhooks (id, owner, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                *(row[k] for k in ("id", "owner", "url")),
                json.dumps(row["events"]),
                row["secret"],
                row["created_at"],
            ),
        )

    async def count(self, owner: str) -> int:
        rows = await self.sql.rows("SELECT COUNT(*) AS n FROM webhooks WHERE owner = ?", (owner,))
        return int(rows[0]["n"]) if rows else 0

    async def list(self, owner: str) -> list[dict[str, Any]]:
        rows = await self.sql.rows(
            f"SELECT {_COLUMNS} FROM webhooks WHERE owner = ? ORDER BY created_at, id", (owner,)
        )
        return [_row(r) for r in rows]

    async def get(self, hook_id: str) -> dict[str, Any] | None:
        rows = await self.sql.rows(f"SELECT {_COLUMNS} FROM webhooks WHERE id = ?", (hook_id,))
        return _row(rows[0]) if rows else None

    async def delete(self, hook_id: str, owner: str) -> bool:
        return await self.sql.run("DELETE FROM webhooks WHERE id = ? AND owner = ?", (hook_id, owner)) > 0

    async def active(self) -> list[dict[str, Any]]:
        rows = await self.sql.rows(f"SELECT {_COLUMNS} FROM webhooks WHERE state = 'active' ORDER BY id")
        return [_row(r) for r in rows]

    async def record(self, hook_id: str, outcome: Outcome, *, limit: int, revive: bool) -> None:
        ok, at, status, error = outcome
        if ok:
            await self.sql.run(
                "UPDATE webhooks SET failures = 0, last_delivery_at = ?, last_status = ?, last_error = NULL, "
                "state = CASE WHEN ? THEN 'active' ELSE state END WHERE id = ?",
                (at, status, 1 if revive else 0, hook_id),
            )
        else:
            await self.sql.run(
                "UPDATE webhooks SET failures = failures + 1, last_delivery_at = ?, last_status = ?, "
                "last_error = ?, state = CASE WHEN failures + 1 >= ? THEN 'disabled' ELSE state END "
                "WHERE id = ?",
                (at, status, error, limit, hook_id),
            )


class MemoryWebhooks:
    """The store of a runtime on memory storage: lost when the process ends."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[str, Any]] = {}

    async def create(self, row: dict[str, Any]) -> None:
        self._rows[row["id"]] = {
            **row, "state": "active", "failures": 0,
            "last_delivery_at": None, "last_status": None, "last_error": None,
        }  # fmt: skip

    async def count(self, owner: str) -> int:
        return sum(1 for r in self._rows.values() if r["owner"] == owner)

    async def list(self, owner: str) -> list[dict[str, Any]]:
        rows = [dict(r) for r in self._rows.values() if r["owner"] == owner]
        return sorted(rows, key=lambda r: (r["created_at"], r["id"]))

    async def get(self, hook_id: str) -> dict[str, Any] | None:
        row = self._rows.get(hook_id)
        return None if row is None else dict(row)

    async def delete(self, hook_id: str, owner: str) -> bool:
        row = self._rows.get(hook_id)
        if row is None or row["owner"] != owner:
            return False
        del self._rows[hook_id]
        return True

    async def active(self) -> list[dict[str, Any]]:
        return [dict(r) for _, r in sorted(self._rows.items()) if r["state"] == "active"]

    async def record(self, hook_id: str, outcome: Outcome, *, limit: int, revive: bool) -> None:
        row = self._rows.get(hook_id)
        if row is None:
            return
        ok, at, status, error = outcome
        row.update(last_delivery_at=at, last_status=status)
        if ok:
            row.update(failures=0, last_error=None)
            if revive:
                row["state"] = "active"
        else:
            row.update(failures=row["failures"] + 1, last_error=error)
            if row["failures"] >= limit:
                row["state"] = "disabled"
