"""``OAuthStore`` in SQL (``migrations/0007_oauth.sql``): SQLite locally, D1 on the edge.

The same statements run on both through ``Sql``, a two-method executor that each platform's
storage module provides (``storage.sqlite.SQLiteSql``, ``storage.cloudflare.D1Sql``), so this
module imports neither ``sqlite3`` nor the Worker's bindings.

Why D1 and not KV for codes and refresh tokens: KV is eventually consistent (a write may take up
to a minute to reach other locations) and has no compare-and-set, so two requests could both
spend one code or one refresh token. D1 is one SQLite database with a single writer; the
conditional ``UPDATE ... WHERE used = 0`` returns how many rows it changed, and only the request
that changed one has spent the grant.

Why KV as well, for access tokens (``EdgeOAuthStore``): every ``/mcp`` request checks one, and a
KV read is served from the location's cache while a D1 read goes to the database's region. D1
stays the record (family revocation finds the access tokens there); a revoked access token is
deleted from KV, which other locations may still serve for up to about 60 s (KV's documented
propagation), a window kept short by the token's own one-hour life.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import msgspec

from ..storage.base import KvStore
from .store import Client, Grant, GrantKind, KvCounters

__all__ = ["EdgeOAuthStore", "Sql", "SqlOAuthStore"]

_client_decode = msgspec.json.Decoder(Client).decode
_grant_decode = msgspec.json.Decoder(Grant).decode
_encode = msgspec.json.Encoder().encode
ACCESS_PREFIX = "oauth:access:"


class Sql(Protocol):
    """Run one statement: ``rows`` for a query, ``run`` for a change (returns rows changed)."""

    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int: ...


class SqlOAuthStore(KvCounters):
    """``OAuthStore`` on the ``oauth_clients`` and ``oauth_grants`` tables; counters in ``kv``."""

    def __init__(self, sql: Sql, kv: KvStore) -> None:
        self.sql = sql
        self.kv = kv

    async def put_client(self, client: Client) -> None:
        await self.sql.run(
            "INSERT INTO oauth_clients (client_id, client, created_at) VALUES (?, ?, ?)",
            (client.client_id, _encode(client).decode(), client.created_at),
        )

    async def get_client(self, client_id: str) -> Client | None:
        rows = await self.sql.rows("SELECT client FROM oauth_clients WHERE client_id = ?", (client_id,))
        return _client_decode(rows[0]["client"]) if rows else None

    async def put_grant(self, token_hash: str, grant: Grant, *, now: float) -> None:
        await self.sql.run("DELETE FROM oauth_grants WHERE expires_at < ?", (now,))
        await self.sql.run(
            "INSERT INTO oauth_grants (hash, kind, family, grant_json, expires_at) VALUES (?, ?, ?, ?, ?)",
            (token_hash, grant.kind, grant.family, _encode(grant).decode(), grant.expires_at),
        )

    async def get_grant(self, token_hash: str, kind: GrantKind) -> Grant | None:
        rows = await self.sql.rows(
            "SELECT grant_json FROM oauth_grants WHERE hash = ? AND kind = ? AND revoked = 0",
            (token_hash, kind),
        )
        return _grant_decode(rows[0]["grant_json"]) if rows else None

    async def use_grant(self, token_hash: str, kind: GrantKind) -> tuple[Grant, bool] | None:
        # Read, then mark used: the one whose update changes the row is first. Reading after the
        # update lost the winner of a race, since a racing replay revokes the whole family (the
        # code's row too) between the two, and then nobody got a token.
        grant = await self.get_grant(token_hash, kind)
        if grant is None:
            return None
        first = await self.sql.run(
            "UPDATE oauth_grants SET used = 1 WHERE hash = ? AND kind = ? AND used = 0 AND revoked = 0",
            (token_hash, kind),
        )
        return grant, first == 1

    async def revoke_grant(self, token_hash: str) -> Grant | None:
        rows = await self.sql.rows(
            "SELECT grant_json FROM oauth_grants WHERE hash = ? AND revoked = 0", (token_hash,)
        )
        if not rows:
            return None
        await self.sql.run("UPDATE oauth_grants SET revoked = 1 WHERE hash = ?", (token_hash,))
        return _grant_decode(rows[0]["grant_json"])

    async def revoke_family(self, family: str) -> int:
        return await self.sql.run(
            "UPDATE oauth_grants SET revoked = 1 WHERE family = ? AND revoked = 0", (family,)
        )


class EdgeOAuthStore(SqlOAuthStore):
    """``SqlOAuthStore`` on D1, with access tokens also in KV for the per-request check (see the
    module docstring for why, and for the revocation window that buys)."""

    async def put_grant(self, token_hash: str, grant: Grant, *, now: float) -> None:
        await super().put_grant(token_hash, grant, now=now)
        if grant.kind == "access":
            ttl = max(1, int(grant.expires_at - now) + 1)
            await self.kv.put(ACCESS_PREFIX + token_hash, _encode(grant).decode(), ttl=ttl)

    async def get_grant(self, token_hash: str, kind: GrantKind) -> Grant | None:
        if kind != "access":
            return await super().get_grant(token_hash, kind)
        raw = await self.kv.get(ACCESS_PREFIX + token_hash)
        return None if raw is None else _grant_decode(raw)

    async def revoke_grant(self, token_hash: str) -> Grant | None:
        grant = await super().revoke_grant(token_hash)
        if grant is not None and grant.kind == "access":
            await self.kv.delete(ACCESS_PREFIX + token_hash)
        return grant

    async def revoke_family(self, family: str) -> int:
        rows = await self.sql.rows(
            "SELECT hash FROM oauth_grants WHERE family = ? AND kind = 'access' AND revoked = 0", (family,)
        )
        revoked = await super().revoke_family(family)
        for row in rows:
            await self.kv.delete(ACCESS_PREFIX + row["hash"])
        return revoked
