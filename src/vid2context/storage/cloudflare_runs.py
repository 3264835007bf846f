"""The MCP long runs of a Worker with a ``JOBS`` queue, as rows of ``mcp_runs`` in D1.

``D1RunLedger`` is the ``mcp.queued.RunLedger``: any isolate reads a run here, and the ones that
must happen once are conditional statements whose ``changes`` say who won. A run is inserted only
while no run of the same call is going (the partial unique index ``mcp_runs_going``), so two
identical calls racing on two isolates share one run; a run ends once (``queued``/``running`` to
``done``/``failed``). Table: ``migrations/0009_mcpqueue.sql``.
"""

from __future__ import annotations

from typing import Any

from .cloudflare import _D1
from .cloudflare_queue import _changes

__all__ = ["D1RunLedger"]

_COLUMNS = "id, key, caller, tool, arguments, meter, status, step, reply, created_at, updated_at"


class D1RunLedger:
    def __init__(self, db: Any) -> None:
        self._d1 = _D1(db)

    async def create(self, row: dict[str, Any]) -> bool:
        """Insert a queued run; False when a run of the same ``key`` is going already."""
        sql = (
            "INSERT INTO mcp_runs (id, key, caller, tool, arguments, meter, status, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?) ON CONFLICT DO NOTHING"
        )
        params = (row["id"], row["key"], row["caller"], row["tool"], row["arguments"], row["meter"],
                  row["created_at"], row["created_at"])  # fmt: skip
        return await _changes(self._d1, sql, params) == 1

    async def get(self, run_id: str) -> dict[str, Any] | None:
        return await self._d1.first(f"SELECT {_COLUMNS} FROM mcp_runs WHERE id = ?", (run_id,))

    async def latest(self, key: str) -> dict[str, Any] | None:
        """The newest run of a call, going or ended."""
        return await self._d1.first(
            f"SELECT {_COLUMNS} FROM mcp_runs WHERE key = ? ORDER BY created_at DESC LIMIT 1", (key,)
        )

    async def set_status(
        self, run_id: str, before: tuple[str, ...], status: str, now: float, **values: str | None
    ) -> bool:
        """Move the run to ``status`` if it is in one of ``before``, setting ``values`` with it."""
        sets = "".join(f", {name} = ?" for name in values)
        marks = ", ".join("?" for _ in before)
        sql = f"UPDATE mcp_runs SET status = ?, updated_at = ?{sets} WHERE id = ? AND status IN ({marks})"
        return await _changes(self._d1, sql, (status, now, *values.values(), run_id, *before)) == 1

    async def set_fields(self, run_id: str, now: float, **values: str | None) -> None:
        """``step`` or ``reply`` of a run still going (an ended run is left as it ended)."""
        sets = ", ".join(f"{name} = ?" for name in values)
        await self._d1.statement(
            f"UPDATE mcp_runs SET {sets}, updated_at = ? WHERE id = ? AND status IN ('queued', 'running')",
            (*values.values(), now, run_id),
        ).run()

    async def prune(self, before: float) -> None:
        """Forget the runs that ended before ``before``."""
        await self._d1.statement(
            "DELETE FROM mcp_runs WHERE status IN ('done', 'failed') AND updated_at < ?", (before,)
        ).run()
