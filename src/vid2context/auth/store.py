"""The OAuth server's state behind one small protocol, and its memory backend.

Two records: a registered ``Client`` and a ``Grant`` (an authorization code, an access token, a
refresh token, or a consent form's CSRF token), each kept under the SHA-256 of its secret, so a
leaked database holds nothing a caller could present. Every grant belongs to a ``family``: the
code and every token issued from it or rotated from those, so one reuse revokes them all.

Backends: ``MemoryOAuthStore`` here (tests and the memory runtime), ``store_sql.SqlOAuthStore``
over SQLite locally and D1 on the edge, and ``store_sql.EdgeOAuthStore``, which also keeps access
tokens in KV so that checking one on every ``/mcp`` request is a KV read. Counters for the
rate limits go to the runtime's ``KvStore`` in every backend (a limit may overshoot a little
across isolates; a spent code never may, hence the conditional updates of ``use_grant``).

The store never reads a clock: callers pass ``now`` (``server.OAuthServer`` holds the one,
injectable clock), so expiry is testable without sleeping.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import msgspec

from ..storage.base import KvStore

__all__ = ["Client", "Grant", "GrantKind", "MemoryOAuthStore", "KvCounters", "OAuthStore"]

GrantKind = Literal["code", "access", "refresh", "csrf"]


class Client(msgspec.Struct, kw_only=True):
    """A client registered through ``POST /oauth/register`` (RFC 7591)."""

    client_id: str
    client_name: str
    redirect_uris: list[str]
    token_endpoint_auth_method: str
    grant_types: list[str]
    secret_hash: str | None = None
    """SHA-256 (hex) of the client secret; ``None`` for a public client (``none``)."""
    created_at: float = 0.0


class Grant(msgspec.Struct, kw_only=True):
    """What a code or token stands for."""

    kind: GrantKind
    client_id: str
    family: str
    expires_at: float
    resource: str = ""
    scope: str = "mcp"
    subject: str = "owner"
    """Who approved: ``owner`` on a self-hosted server (the owner key), an account in hosted mode."""
    redirect_uri: str = ""
    code_challenge: str = ""
    """PKCE S256 challenge (codes); for a CSRF grant, the digest of the form's parameters."""


@runtime_checkable
class OAuthStore(Protocol):
    async def put_client(self, client: Client) -> None:
        """Save a newly registered client."""
        ...

    async def get_client(self, client_id: str) -> Client | None:
        """The client, or ``None`` when no client has this id."""
        ...

    async def put_grant(self, token_hash: str, grant: Grant, *, now: float) -> None:
        """Save ``grant`` under ``token_hash``; grants that expired before ``now`` may be dropped."""
        ...

    async def get_grant(self, token_hash: str, kind: GrantKind) -> Grant | None:
        """The grant of this kind, or ``None`` when there is none or it was revoked. Expiry is the
        caller's to check (``expires_at``); a used code or refresh token is still returned."""
        ...

    async def use_grant(self, token_hash: str, kind: GrantKind) -> tuple[Grant, bool] | None:
        """Spend a single-use grant: ``(grant, True)`` for the one caller that spent it,
        ``(grant, False)`` when it was spent before (a reuse), ``None`` when there is none or it was
        revoked. Atomic: of two racing callers exactly one gets ``True``."""
        ...

    async def revoke_grant(self, token_hash: str) -> Grant | None:
        """Revoke one grant; the grant revoked, or ``None`` when there was none."""
        ...

    async def revoke_family(self, family: str) -> int:
        """Revoke every grant of ``family``; how many there were."""
        ...

    async def hit(self, counter: str, window_s: int) -> int:
        """Count one more event on ``counter`` in a window of ``window_s`` seconds (from its first
        event); the count so far, this one included."""
        ...

    async def count(self, counter: str) -> int:
        """The events counted on ``counter`` in its current window (0 when none)."""
        ...


class KvCounters:
    """``OAuthStore.hit`` and ``count`` on a ``KvStore`` (every backend counts this way)."""

    kv: KvStore

    async def hit(self, counter: str, window_s: int) -> int:
        return await self.kv.incr("oauth:count:" + counter, 1, ttl=window_s)

    async def count(self, counter: str) -> int:
        raw = await self.kv.get("oauth:count:" + counter)
        try:
            return int(raw) if raw is not None else 0
        except ValueError:
            return 0


class MemoryOAuthStore(KvCounters):
    """``OAuthStore`` in process memory."""

    def __init__(self, kv: KvStore) -> None:
        self.kv = kv
        self._clients: dict[str, Client] = {}
        self._grants: dict[str, list] = {}  # hash -> [grant, used, revoked]

    async def put_client(self, client: Client) -> None:
        self._clients[client.client_id] = client

    async def get_client(self, client_id: str) -> Client | None:
        return self._clients.get(client_id)

    async def put_grant(self, token_hash: str, grant: Grant, *, now: float) -> None:
        for old in [key for key, entry in self._grants.items() if entry[0].expires_at < now]:
            del self._grants[old]
        self._grants[token_hash] = [grant, False, False]

    def _entry(self, token_hash: str, kind: GrantKind) -> list | None:
        entry = self._grants.get(token_hash)
        if entry is None or entry[2] or entry[0].kind != kind:
            return None
        return entry

    async def get_grant(self, token_hash: str, kind: GrantKind) -> Grant | None:
        entry = self._entry(token_hash, kind)
        return None if entry is None else entry[0]

    async def use_grant(self, token_hash: str, kind: GrantKind) -> tuple[Grant, bool] | None:
        entry = self._entry(token_hash, kind)
        if entry is None:
            return None
        first = not entry[1]
        entry[1] = True
        return entry[0], first

    async def revoke_grant(self, token_hash: str) -> Grant | None:
        entry = self._grants.get(token_hash)
        if entry is None or entry[2]:
            return None
        entry[2] = True
        return entry[0]

    async def revoke_family(self, family: str) -> int:
        revoked = 0
        for entry in self._grants.values():
            if entry[0].family == family and not entry[2]:
                entry[2] = True
                revoked += 1
        return revoked
