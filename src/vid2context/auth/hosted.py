"""Hosted mode's one service object: who a request is, account keys, quotas, signing in.

``Hosted`` is made once per app (``create_app``) and shared by the API's auth layer, the ``/mcp``
mount, the ``/api/v1/auth`` and ``/api/v1/me`` routes and the OAuth consent page, so they all
answer "who is this?" the same way (``principal``):

- ``Authorization: Bearer v2c_...``: an account key, looked up by its SHA-256;
- else (not on ``/mcp``) the ``v2c_session`` cookie, looked up by its SHA-256.

Signing in is ``signin.SignIn`` (``Hosted.signin``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from ..errors import ErrorCode, VidError
from .accounts import MAX_KEYS, Account, AccountKey, AccountStore, CreatedKey, digest
from .accounts_sql import MemoryAccounts, SqlAccounts
from .github import GitHub
from .quotas import Meter, Quotas
from .signin import SESSION_COOKIE, SignIn, now_text, read_cookies

__all__ = ["KEY_PREFIX", "Hosted", "Principal"]

KEY_PREFIX = "v2c_"


class Principal(NamedTuple):
    account: Account
    via: Literal["session", "key"]
    key_id: str | None = None

    @property
    def name(self) -> str:
        """The name the rate limiter buckets by and the access log prints (never a secret)."""
        return f"acct:{self.account.id}"


class Hosted:
    def __init__(
        self,
        runtime: Any,
        *,
        store: AccountStore | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        settings = runtime.settings
        self.settings = settings
        self.kv = runtime.kv
        self.store: AccountStore = store or (
            SqlAccounts(runtime.sql) if runtime.sql is not None else MemoryAccounts()
        )
        self.quotas = Quotas(runtime.kv, settings, clock=clock)
        self.clock = clock
        self.github = (
            GitHub(
                runtime.http,
                client_id=settings.github_client_id,
                client_secret=settings.github_client_secret,
                web_url=settings.github_url,
                api_url=settings.github_api_url,
            )
            if settings.github_client_id and settings.github_client_secret
            else None
        )
        self.signin = SignIn(
            kv=runtime.kv,
            store=self.store,
            github=self.github,
            session_days=settings.session_days,
            clock=clock,
        )

    # -- who is asking ------------------------------------------------------------------------------

    @staticmethod
    def is_account_key(token: bytes | str) -> bool:
        raw = token.encode("latin-1") if isinstance(token, str) else token
        return raw.startswith(KEY_PREFIX.encode())

    async def from_key(self, token: str) -> Principal | None:
        found = await self.store.key_account(digest(token))
        return None if found is None else Principal(found[0], "key", found[1].id)

    async def from_session(self, scope: Any) -> Principal | None:
        session = read_cookies(scope).get(SESSION_COOKIE)
        if not session:
            return None
        account = await self.store.session_account(digest(session), now=int(self.clock()))
        return None if account is None else Principal(account, "session")

    def meter(self, principal: Principal, address: str) -> Meter:
        """The quotas ``principal``'s calls count against, from ``address`` (the rate limiter's
        bucket of the client address)."""
        return self.quotas.meter(principal.account.id, address)

    # -- keys ---------------------------------------------------------------------------------------

    async def create_key(self, account: Account, name: str) -> CreatedKey:
        name = name.strip()
        if not 1 <= len(name) <= 64 or any(ord(c) < 0x20 for c in name):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "A key's name must be 1 to 64 characters, without control characters.",
                hint='Give a short name such as {"name": "laptop"}.',
            )
        if len(await self.store.list_keys(account.id)) >= MAX_KEYS:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"This account already has {MAX_KEYS} keys, the most it may hold.",
                hint="Remove a key you no longer use, then create the new one.",
            )
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        made: AccountKey = await self.store.add_key(
            account.id,
            "key_" + secrets.token_urlsafe(9),
            name,
            digest(key),
            key[: len(KEY_PREFIX) + 4],
            now=now_text(self.clock()),
        )
        return CreatedKey(id=made.id, name=made.name, prefix=made.prefix, created_at=made.created_at, key=key)
