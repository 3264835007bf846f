"""Hosted mode's accounts: their shapes and the small store protocol behind them.

An account is a GitHub identity and nothing more of it: the numeric GitHub id (stable across
renames) and the login (refreshed at each sign-in). Sessions and keys are kept as the SHA-256 of
their secret: the secret itself is only ever in the browser's cookie or shown once to its owner,
so a copy of the database opens nothing. Secrets are 256 random bits, for which a plain hash is
as good as a slow one.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

import msgspec

__all__ = [
    "MAX_KEYS",
    "Account",
    "AccountKey",
    "AccountStore",
    "CreatedKey",
    "KeyList",
    "Me",
    "NewKeyRequest",
    "Usage",
    "UsageCounts",
    "UsageLimits",
    "digest",
]

MAX_KEYS = 20
"""The most keys one account may hold at once."""


def digest(secret: str) -> str:
    """The hex SHA-256 a session id or key is stored and looked up by."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class _Wire(msgspec.Struct, rename="camel", kw_only=True):
    pass


class Account(_Wire, frozen=True):
    id: str
    github_id: int
    login: str
    plan: str = "free"
    created_at: str = ""


class AccountKey(_Wire, frozen=True):
    """A key as its owner sees it after creation: never the key, only its first characters."""

    id: str
    name: str
    prefix: str
    created_at: str


class Me(_Wire, frozen=True):
    """``GET /api/v1/me``: the contract's ``{ id, login, plan }``."""

    id: str
    login: str
    plan: str


class UsageCounts(_Wire, frozen=True):
    videos: int
    stt_minutes: int


class UsageLimits(_Wire, frozen=True):
    """``None``: no limit."""

    videos: int | None
    stt_minutes: int | None
    address_videos: int | None


class Usage(_Wire, frozen=True):
    """``GET /api/v1/me/usage``: the contract's ``{ period, used, limits }``; the period is a UTC day."""

    period: str
    used: UsageCounts
    limits: UsageLimits
    resets_in_sec: int


class KeyList(_Wire, frozen=True):
    keys: list[AccountKey]


class NewKeyRequest(_Wire, forbid_unknown_fields=True):
    name: str


class CreatedKey(AccountKey, frozen=True):
    """``POST /api/v1/me/keys``: the only answer that ever carries the key."""

    key: str


class AccountStore(Protocol):
    """Accounts, their sessions and their keys (``accounts_sql``: SQLite, D1, memory)."""

    async def sign_in(self, github_id: int, login: str, *, now: str) -> Account:
        """The account of ``github_id``, made on its first sign-in; its login is updated."""
        ...

    async def get_account(self, account_id: str) -> Account | None:
        """The account, or ``None`` when there is none with that id."""
        ...

    async def open_session(self, account_id: str, session_digest: str, *, expires_at: int, now: int) -> None:
        """Record a sign-in by its session's digest, valid until ``expires_at`` (Unix seconds); the
        account's sessions that ended by ``now`` are forgotten."""
        ...

    async def session_account(self, session_digest: str, *, now: int) -> Account | None:
        """The account signed in by this session, ``None`` when unknown or expired."""
        ...

    async def close_session(self, session_digest: str) -> None:
        """Forget the session; nothing happens when it is unknown."""
        ...

    async def add_key(
        self, account_id: str, key_id: str, name: str, key_digest: str, prefix: str, *, now: str
    ) -> AccountKey:
        """Record a new key of the account (by its digest)."""
        ...

    async def list_keys(self, account_id: str) -> list[AccountKey]:
        """The account's keys, oldest first."""
        ...

    async def delete_key(self, account_id: str, key_id: str) -> bool:
        """Delete the account's key; ``False`` when the account has no key with that id."""
        ...

    async def key_account(self, key_digest: str) -> tuple[Account, AccountKey] | None:
        """The account and key this digest belongs to, or ``None``."""
        ...
