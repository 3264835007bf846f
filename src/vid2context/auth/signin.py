"""Signing in with GitHub: the state, the PKCE verifier, the session cookie (REST only).

Sign-in (``begin``/``finish``): a fresh ``state`` and PKCE verifier per attempt, kept in KV under
the state's digest for ten minutes and spent at the callback; the state also travels in a cookie
scoped to the callback path, and the callback needs both to agree, so a link with someone else's
state (login CSRF) does not sign anyone in. The session id is 256 random bits in an ``HttpOnly;
Secure; SameSite=Lax`` cookie; only its digest is stored (``accounts.AccountStore``). Where a
sign-in returns to (``next``) is a path on this server, never another origin. Only browsers and
the REST routes come here, never an MCP call.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple
from urllib.parse import quote

import msgspec

from ..errors import ErrorCode, VidError
from ..storage.base import KvStore
from .accounts import AccountStore, digest
from .github import GitHub

__all__ = [
    "AUTH_PREFIX",
    "CALLBACK_PATH",
    "CONSENT_SIGN_IN_PATH",
    "LOGIN_PATH",
    "SESSION_COOKIE",
    "STATE_COOKIE",
    "SetCookie",
    "SignIn",
    "cookie",
    "read_cookies",
    "request_origin",
    "safe_next",
]

SESSION_COOKIE = "v2c_session"
STATE_COOKIE = "v2c_signin"
AUTH_PREFIX = "/api/v1/auth/"
LOGIN_PATH = "/api/v1/auth/github/login"
CALLBACK_PATH = "/api/v1/auth/github/callback"
CONSENT_SIGN_IN_PATH = "/api/v1/auth/github/consent"
STATE_TTL_S = 600
_STATE_KV = "signin:"
_DEFAULT_NEXT = "/api/v1/me"


def now_text(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Pending(msgspec.Struct):
    verifier: str
    next: str


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


def read_cookies(scope: Any) -> dict[str, str]:
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
        or len(value) > 8192
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


class SignIn:
    """The GitHub web flow for one app: ``github`` is ``None`` when the OAuth app is not set up."""

    def __init__(
        self,
        *,
        kv: KvStore,
        store: AccountStore,
        github: GitHub | None,
        session_days: int,
        clock: Callable[[], float],
    ) -> None:
        self.kv = kv
        self.store = store
        self.github = github
        self.session_days = session_days
        self.clock = clock

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
        expected = read_cookies(scope).get(STATE_COOKIE, "")
        if not state or len(state) > 128:
            raise _bad_signin("the state parameter is missing")
        if not expected or not hmac.compare_digest(state.encode(), expected.encode()):
            raise _bad_signin("the state does not match this browser's sign-in")
        key = _STATE_KV + digest(state)
        raw = await self.kv.get(key)
        if raw is None:
            raise _bad_signin("the state is unknown, used or older than ten minutes")
        await self.kv.delete(key)  # single use, whatever happens next
        try:
            pending = msgspec.json.decode(raw, type=_Pending)
        except msgspec.DecodeError:
            raise _bad_signin("the state's record is unreadable") from None
        if error:
            raise _bad_signin(f"GitHub answered {error[:40]!r} (the request was not approved)")
        if not code or len(code) > 256:
            raise _bad_signin("GitHub sent no code")
        user = await github.user_for(
            code=code, redirect_uri=request_origin(scope) + CALLBACK_PATH, verifier=pending.verifier
        )
        now = self.clock()
        account = await self.store.sign_in(user.id, user.login, now=now_text(now))
        session = secrets.token_urlsafe(32)
        max_age = self.session_days * 86_400
        await self.store.open_session(
            account.id, digest(session), expires_at=int(now) + max_age, now=int(now)
        )
        return pending.next, cookie(SESSION_COOKIE, session, max_age=max_age)

    async def sign_out(self, scope: Any) -> SetCookie:
        """Forget this browser's session; the cookie that clears it."""
        session = read_cookies(scope).get(SESSION_COOKIE)
        if session:
            await self.store.close_session(digest(session))
        return cookie(SESSION_COOKIE, "", max_age=0)

    def login_url(self, next_path: str) -> str:
        """Where to send a browser to sign in and come back to ``next_path`` (the OAuth consent
        page's way in)."""
        return f"{LOGIN_PATH}?next={quote(safe_next(next_path), safe='')}"
