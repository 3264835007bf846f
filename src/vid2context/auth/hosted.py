"""Hosted mode's one service object: who a request is, signing in with GitHub, account keys.

``Hosted`` is made once per app (``create_app``) and shared by the API's auth layer, the ``/mcp``
mount, the ``/api/v1/auth`` and ``/api/v1/me`` routes and the OAuth consent page, so they all
answer "who is this?" the same way (``principal``):

- ``Authorization: Bearer v2c_...``: an account key, looked up by its SHA-256;
- else (not on ``/mcp``) the ``v2c_session`` cookie, looked up by its SHA-256.

Sign-in (``begin``/``finish``): a fresh ``state`` and PKCE verifier per attempt, kept in KV under
the state's digest for ten minutes and spent at the callback; the state also travels in a cookie
scoped to the callback path, and the callback needs both to agree, so a link with someone else's
state (login CSRF) does not sign anyone in. The session id is 256 random bits in an ``HttpOnly;
Secure; SameSite=Lax`` cookie; only its digest is stored. Where a sign-in returns to (``next``)
is a path on this server, never another origin.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple
from urllib.parse import quote

import msgspec

from ..errors import ErrorCode, VidError
from .accounts import MAX_KEYS, Account, AccountKey, AccountStore, CreatedKey, digest
from .accounts_sql import MemoryAccounts, SqlAccounts
from .github import GitHub
from .quotas import Meter, Quotas

__all__ = [
    "CALLBACK_PATH",
    "KEY_PREFIX",
    "LOGIN_PATH",
    "SESSION_COOKIE",
    "STATE_COOKIE",
    "Hosted",
    "Principal",
    "SetCookie",
    "cookie",
    "request_origin",
    "safe_next",
]

KEY_PREFIX = "v2c_"
SESSION_COOKIE = "v2c_session"
STATE_COOKIE = "v2c_signin"
AUTH_PREFIX = "/api/v1/auth/"
LOGIN_PATH = "/api/v1/auth/github/login"
CALLBACK_PATH = "/api/v1/auth/github/callback"
STATE_TTL_S = 600
_STATE_KV = "signin:"
_DEFAULT_NEXT = "/api/v1/me"


class Principal(NamedTuple):
    account: Account
    via: Literal["session", "key"]
    key_id: str | None = None

    @property
    def name(self) -> str:
        """The name the rate limiter buckets by and the access log prints (never a secret)."""
        return f"acct:{self.account.id}"


class _Pending(msgspec.Struct):
    verifier: str
    next: str


def _now_text(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SetCookie(NamedTuple):
    """A cookie to set; every cookie of ours is sent ``HttpOnly; Secure; SameSite=Lax``."""

    name: str
    value: str
    path: str
    max_age: int

    def header(self) -> str:
        """The ``Set-Cookie`` value."""
        return f"{self.name}={self.value}; Path={self.path}; Max-Age={self.max_age}; HttpOnly; Secure; SameSite=Lax"


def cookie(name: str, value: str, *, path: str = "/", max_age: int) -> SetCookie:
    return SetCookie(name, value, path, max_age)


def _cookies(scope: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers") or ():
        if key.lower() != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            name, _, rest = part.strip().partition("=")
            if name and name not in found:
                found[name] = rest.strip()
    return found


def request_origin(scope: Any) -> str:
    """This server's origin as the client reached it (scheme and Host)."""
    raw = next((value for key, value in scope.get("headers") or () if key.lower() == b"host"), b"")
    host = raw.decode("latin-1").strip()
    if not host and (server := scope.get("server")):
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


def safe_next(value: str | None) -> str:
    """``value`` when it is a path on this server (``/...``, not ``//host`` or ``/\\host``), else
    the account page."""
    if (
        not value
        or len(value) > 2048
        or not value.startswith("/")
        or value.startswith(("//", "/\\"))
        or any(ord(c) < 0x21 or ord(c) == 0x7F for c in value)
    ):
        return _DEFAULT_NEXT
    return value


def _bad_signin(why: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"This sign-in cannot be finished: {why}.",
        hint=f"Start the sign-in again at GET {LOGIN_PATH} in the same browser.",
    )


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

    # -- who is asking ------------------------------------------------------------------------------

    @staticmethod
    def is_account_key(token: bytes | str) -> bool:
        raw = token.encode("latin-1") if isinstance(token, str) else token
        return raw.startswith(KEY_PREFIX.encode())

    async def from_key(self, token: str) -> Principal | None:
        found = await self.store.key_account(digest(token))
        return None if found is None else Principal(found[0], "key", found[1].id)

    async def from_session(self, scope: Any) -> Principal | None:
        session = _cookies(scope).get(SESSION_COOKIE)
        if not session:
            return None
        account = await self.store.session_account(digest(session), now=int(self.clock()))
        return None if account is None else Principal(account, "session")

    def meter(self, principal: Principal, address: str) -> Meter:
        """The quotas ``principal``'s calls count against, from ``address`` (the rate limiter's
        bucket of the client address)."""
        return self.quotas.meter(principal.account.id, address)

    # -- signing in ---------------------------------------------------------------------------------

    def _github(self) -> GitHub:
        if self.github is None:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                "GitHub sign-in is not set up on this server.",
                hint="Tell the user the operator must set VID2CONTEXT_GITHUB_CLIENT_ID and "
                "VID2CONTEXT_GITHUB_CLIENT_SECRET; do not retry until then.",
            )
        return self.github

    async def begin(self, scope: Any, next_path: str | None) -> tuple[str, SetCookie]:
        """Start a sign-in: GitHub's authorize URL to redirect to, and the state cookie to set."""
        github = self._github()
        state = secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(48)
        pending = msgspec.json.encode(_Pending(verifier=verifier, next=safe_next(next_path))).decode()
        await self.kv.put(_STATE_KV + digest(state), pending, ttl=STATE_TTL_S)
        url = github.authorize_url(
            redirect_uri=request_origin(scope) + CALLBACK_PATH, state=state, verifier=verifier
        )
        return url, cookie(STATE_COOKIE, state, path=CALLBACK_PATH, max_age=STATE_TTL_S)

    async def finish(
        self, scope: Any, *, state: str | None, code: str | None, error: str | None
    ) -> tuple[str, SetCookie]:
        """Finish a sign-in at the callback: the path to send the browser to and the session
        cookie. Raises ``bad-request`` for a missing, forged, spent or expired state, a refusal at
        GitHub or a missing code; ``auth``/``upstream`` when GitHub itself fails."""
        github = self._github()
        expected = _cookies(scope).get(STATE_COOKIE, "")
        if not state or len(state) > 128:
            raise _bad_signin("the state parameter is missing")
        if not expected or not hmac.compare_digest(state.encode(), expected.encode()):
            raise _bad_signin("the state does not match this browser's sign-in")
        key = _STATE_KV + digest(state)
        raw = await self.kv.get(key)
        if raw is None:
            raise _bad_signin("the state is unknown, used or older than ten minutes")
        await self.kv.delete(key)  # single use, whatever happens next
        pending = msgspec.json.decode(raw, type=_Pending)
        if error:
            raise _bad_signin(f"GitHub answered {error[:40]!r} (the request was not approved)")
        if not code or len(code) > 256:
            raise _bad_signin("GitHub sent no code")
        user = await github.user_for(
            code=code, redirect_uri=request_origin(scope) + CALLBACK_PATH, verifier=pending.verifier
        )
        now = self.clock()
        account = await self.store.sign_in(user.id, user.login, now=_now_text(now))
        session = secrets.token_urlsafe(32)
        max_age = self.settings.session_days * 86_400
        await self.store.open_session(account.id, digest(session), expires_at=int(now) + max_age)
        return pending.next, cookie(SESSION_COOKIE, session, max_age=max_age)

    async def sign_out(self, scope: Any) -> SetCookie:
        """Forget this browser's session; the cookie that clears it."""
        session = _cookies(scope).get(SESSION_COOKIE)
        if session:
            await self.store.close_session(digest(session))
        return cookie(SESSION_COOKIE, "", max_age=0)

    def login_url(self, next_path: str) -> str:
        """Where to send a browser to sign in and come back to ``next_path`` (the OAuth consent
        page's way in)."""
        return f"{LOGIN_PATH}?next={quote(safe_next(next_path), safe='')}"

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
                hint="Delete a key you no longer use, then create the new one.",
            )
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        made: AccountKey = await self.store.add_key(
            account.id,
            "key_" + secrets.token_urlsafe(9),
            name,
            digest(key),
            key[: len(KEY_PREFIX) + 4],
            now=_now_text(self.clock()),
        )
        return CreatedKey(id=made.id, name=made.name, prefix=made.prefix, created_at=made.created_at, key=key)
