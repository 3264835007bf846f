"""GitHub's OAuth web application flow, as GitHub documents it for OAuth apps.

1. The browser goes to ``<web>/login/oauth/authorize`` with ``client_id``, ``redirect_uri``,
   ``state`` and a PKCE ``code_challenge`` (S256, which GitHub accepts since July 2025 and
   recommends; the only method it takes). No ``scope``: the public profile is all we read.
2. GitHub sends it back to ``redirect_uri`` with ``code`` and ``state``.
3. ``POST <web>/login/oauth/access_token`` with the client id and secret, the code, the redirect URI
   and the ``code_verifier``, ``Accept: application/json``. GitHub answers 200 even for a refusal:
   ``{"error": "bad_verification_code", "error_description": ..., "error_uri": ...}``.
4. ``GET <api>/user`` with ``Authorization: Bearer <token>``: ``id`` and ``login`` are kept, the
   token is dropped at once (never stored, logged or sent anywhere else).

Failures become ``VidError``: a code GitHub refused (expired, used, forged) is ``bad-request`` (the
person signs in again); our own app's credentials or callback refused is ``auth`` (the operator
fixes the settings); GitHub unreachable or answering garbage is ``upstream``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Awaitable
from typing import NamedTuple, TypeVar
from urllib.parse import urlencode

import httpx
import msgspec

from ..errors import ErrorCode, VidError

__all__ = ["API_URL", "WEB_URL", "GitHub", "GitHubUser", "pkce_challenge"]

T = TypeVar("T")
WEB_URL = "https://github.com"
API_URL = "https://api.github.com"
_CONFIG_ERRORS = frozenset({"incorrect_client_credentials", "redirect_uri_mismatch", "unverified_user_email"})
"""Token-endpoint errors that are this server's to fix, not the person's."""


class GitHubUser(NamedTuple):
    id: int
    login: str


class _Token(msgspec.Struct):
    access_token: str | None = None
    error: str | None = None


class _User(msgspec.Struct):
    id: int
    login: str


def pkce_challenge(verifier: str) -> str:
    """RFC 7636's S256: base64url (no padding) of the SHA-256 of the verifier."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


def _upstream(what: str) -> VidError:
    return VidError(
        ErrorCode.UPSTREAM,
        f"GitHub sign-in failed: {what}.",
        hint="Wait a minute, then sign in again once; if it fails again, tell the user GitHub is not "
        "answering and do not retry.",
    )


class GitHub:
    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        client_id: str,
        client_secret: str,
        web_url: str | None = None,
        api_url: str | None = None,
    ) -> None:
        self.http = http
        self.client_id = client_id
        self._secret = client_secret
        self.web_url = (web_url or WEB_URL).rstrip("/")
        self.api_url = (api_url or API_URL).rstrip("/")

    def __repr__(self) -> str:  # never the secret
        return f"GitHub(client_id={self.client_id!r}, web_url={self.web_url!r})"

    def authorize_url(self, *, redirect_uri: str, state: str, verifier: str) -> str:
        query = urlencode(
            {
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "code_challenge": pkce_challenge(verifier),
                "code_challenge_method": "S256",
                "allow_signup": "true",
            }
        )
        return f"{self.web_url}/login/oauth/authorize?{query}"

    async def user_for(self, *, code: str, redirect_uri: str, verifier: str) -> GitHubUser:
        """The GitHub user who approved ``code``; raises ``bad-request``, ``auth`` or ``upstream``."""
        token = await self._exchange(code=code, redirect_uri=redirect_uri, verifier=verifier)
        user = await self._call(
            "GET /user",
            _User,
            self.http.get(
                f"{self.api_url}/user",
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": "2022-11-28",
                },
            ),
        )
        if not 0 < user.id < 2**53 or not 0 < len(user.login) <= 39:
            raise _upstream("GET /user answered an id or login out of range")
        return GitHubUser(user.id, user.login)

    @staticmethod
    async def _call(what: str, shape: type[T], request: Awaitable[httpx.Response]) -> T:
        """``request``'s 200 JSON answer as ``shape``; anything else is ``upstream`` naming ``what``."""
        try:
            response = await request
        except httpx.HTTPError:
            raise _upstream(f"{what} could not be reached") from None
        if response.status_code != 200:
            raise _upstream(f"{what} answered {response.status_code}")
        try:
            return msgspec.json.decode(response.content, type=shape)
        except msgspec.DecodeError:
            raise _upstream(f"{what} did not answer JSON in GitHub's shape") from None

    async def _exchange(self, *, code: str, redirect_uri: str, verifier: str) -> str:
        answer = await self._call(
            "the token endpoint",
            _Token,
            self.http.post(
                f"{self.web_url}/login/oauth/access_token",
                data={
                    "client_id": self.client_id,
                    "client_secret": self._secret,
                    "code": code,
                    "redirect_uri": redirect_uri,
                    "code_verifier": verifier,
                },
                headers={"Accept": "application/json"},
            ),
        )
        if answer.error in _CONFIG_ERRORS:
            raise VidError(
                ErrorCode.AUTH,
                f"GitHub refused this server's OAuth app ({answer.error[:40]}).",
                hint="Tell the user the server's GitHub OAuth app is misconfigured (VID2CONTEXT_GITHUB_CLIENT_ID, "
                "VID2CONTEXT_GITHUB_CLIENT_SECRET and its callback URL); do not retry until it is fixed.",
            )
        if answer.error is not None:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"GitHub did not accept the sign-in code ({answer.error[:40]}).",
                hint="Start the sign-in again: codes are single-use and expire after ten minutes.",
            )
        if not answer.access_token:
            raise _upstream("the token endpoint answered no token")
        return answer.access_token
