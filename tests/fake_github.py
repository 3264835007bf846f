"""A small local stand-in for GitHub's OAuth web flow and ``GET /user``, over real HTTP on 127.0.0.1.

It answers as GitHub documents for OAuth apps ("Authorizing OAuth apps", and the REST API's
"Get the authenticated user"):

- ``GET /login/oauth/authorize?client_id&redirect_uri&state&code_challenge&code_challenge_method``:
  GitHub would show its page; the stand-in's user (``user``) approves at once and is sent back
  ``302`` to ``redirect_uri?code=...&state=...`` (or, with ``deny``, ``?error=access_denied&
  error_description=...&state=...``). An unknown ``client_id`` is a 404 page, as GitHub shows one.
  Only ``S256`` is accepted as a challenge method.
- ``POST /login/oauth/access_token`` (form: ``client_id, client_secret, code, redirect_uri,
  code_verifier``; ``Accept: application/json``): ``200 {access_token, token_type: "bearer",
  scope}``. Refusals are also ``200``, with ``{error, error_description, error_uri}``:
  ``incorrect_client_credentials``, ``redirect_uri_mismatch``, ``bad_verification_code`` (a code
  unknown, used already, or whose PKCE verifier does not match). A code is single-use.
- ``GET /api/user`` (the API's origin is ``api_url``) with ``Authorization: Bearer <token>``: the
  user (``login, id, node_id, avatar_url, type, name, email``...); ``401 {"message": "Bad
  credentials"}`` for another token.
- ``fail_next`` scripts statuses (500, 502, or 200) for the next requests, ``fail_at`` for the next
  requests to one path, each with an HTML body as GitHub's unicorn page has.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from .standin_http import QuietHandler, StandinServer, reply

CLIENT_ID = "Iv1.0123456789abcdef"
CLIENT_SECRET = "gh-test-secret-0123456789abcdef0123456789"
DOCS = (
    "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"
)


@dataclass
class User:
    id: int = 583231
    login: str = "octocat"
    name: str = "The Octocat"
    email: str = "octocat@example.com"


@dataclass
class _Code:
    client_id: str
    redirect_uri: str
    challenge: str | None
    user: User
    used: bool = False


@dataclass
class Seen:
    """What the stand-in was sent, for tests to check (secrets included, as GitHub sees them)."""

    authorize: list[dict[str, str]] = field(default_factory=list)
    token: list[dict[str, str]] = field(default_factory=list)
    user: list[str] = field(default_factory=list)


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class _Handler(QuietHandler):
    server: FakeGitHub  # type: ignore[assignment]

    def _scripted(self, path: str) -> bool:
        with self.server.lock:
            at = self.server.fail_at.get(path)
            if at:
                status: int | None = at.pop(0)
            else:
                status = self.server.fail_next.pop(0) if self.server.fail_next else None
        if status is None:
            return False
        self._send(
            status,
            raw=b"<html><body>Unicorn! We had issues producing the response.</body></html>",
            content_type="text/html",
        )
        return True

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if self._scripted(parts.path):
            return
        if parts.path == "/login/oauth/authorize":
            return self._authorize(query)
        if parts.path == "/api/user":
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
            with self.server.lock:
                self.server.seen.user.append(token)
                user = self.server.tokens.get(token)
            if user is None:
                return self._send(
                    401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}
                )
            return self._send(
                200,
                {
                    "login": user.login,
                    "id": user.id,
                    "node_id": "MDQ6VXNlcjE=",
                    "avatar_url": "https://github.com/images/error/octocat_happy.gif",
                    "html_url": f"https://github.com/{user.login}",
                    "type": "User",
                    "site_admin": False,
                    "name": user.name,
                    "email": user.email,
                    "created_at": "2008-01-14T04:33:35Z",
                },
            )
        self._send(404, {"message": "Not Found"})

    def _authorize(self, query: dict[str, str]) -> None:
        with self.server.lock:
            self.server.seen.authorize.append(query)
        if query.get("client_id") != self.server.client_id:
            return self._send(404, raw=b"<html>Not Found</html>", content_type="text/html")
        method = query.get("code_challenge_method")
        if "code_challenge" in query and method != "S256":
            return self._send(
                400, raw=b"<html>Unsupported code challenge method</html>", content_type="text/html"
            )
        redirect = query.get("redirect_uri", "")
        state = query.get("state")
        if self.server.deny:
            answer = {
                "error": "access_denied",
                "error_description": "The user has denied your application access.",
                "error_uri": DOCS,
            }
        else:
            code = secrets.token_hex(10)
            with self.server.lock:
                self.server.codes[code] = _Code(
                    self.server.client_id, redirect, query.get("code_challenge"), self.server.user
                )
            answer = {"code": code}
        if state is not None:
            answer["state"] = state
        self.send_response(302)
        self.send_header("Location", f"{redirect}{'&' if '?' in redirect else '?'}{urlencode(answer)}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        if self._scripted(parts.path):
            return
        if parts.path != "/login/oauth/access_token":
            return self._send(404, {"message": "Not Found"})
        with self.server.lock:
            self.server.seen.token.append(form)
            if (
                form.get("client_id") != self.server.client_id
                or form.get("client_secret") != self.server.client_secret
            ):
                return self._refuse(
                    "incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect."
                )
            code = self.server.codes.get(form.get("code", ""))
            if code is not None and form.get("redirect_uri") not in (None, code.redirect_uri):
                return self._refuse(
                    "redirect_uri_mismatch",
                    "The redirect_uri MUST match the registered callback URL for this application.",
                )
            verifier = form.get("code_verifier")
            if (
                code is None
                or code.used
                or (code.challenge is not None and (verifier is None or _s256(verifier) != code.challenge))
            ):
                return self._refuse("bad_verification_code", "The code passed is incorrect or expired.")
            code.used = True
            token = "gho_" + secrets.token_hex(18)
            self.server.tokens[token] = code.user
        self._send(200, {"access_token": token, "token_type": "bearer", "scope": ""})

    def _refuse(self, error: str, description: str) -> None:
        self._send(200, {"error": error, "error_description": description, "error_uri": DOCS})

    def _send(
        self,
        status: int,
        body: Any = None,
        *,
        raw: bytes | None = None,
        content_type: str = "application/json",
    ) -> None:
        data = raw if raw is not None else json.dumps(body).encode()
        reply(self, status, data, {"Content-Type": content_type})


class FakeGitHub(StandinServer):
    """``with FakeGitHub() as gh: ... VID2CONTEXT_GITHUB_URL=gh.web_url, ..._API_URL=gh.api_url``."""

    def __init__(self, client_id: str = CLIENT_ID, client_secret: str = CLIENT_SECRET) -> None:
        super().__init__(_Handler)
        self.client_id = client_id
        self.client_secret = client_secret
        self.user = User()
        self.deny = False
        self.lock = threading.Lock()
        self.codes: dict[str, _Code] = {}
        self.tokens: dict[str, User] = {}
        self.seen = Seen()
        self.fail_next: list[int] = []
        self.fail_at: dict[str, list[int]] = {}
        """Statuses for the next requests to one path (``/api/user``), before ``fail_next``."""

    @property
    def web_url(self) -> str:
        return self.origin

    @property
    def api_url(self) -> str:
        return self.web_url + "/api"

    def settings(self) -> dict[str, str]:
        """The hosted-mode settings that point a server at this stand-in."""
        return {
            "VID2CONTEXT_HOSTED": "1",
            "VID2CONTEXT_GITHUB_CLIENT_ID": self.client_id,
            "VID2CONTEXT_GITHUB_CLIENT_SECRET": self.client_secret,
            "VID2CONTEXT_GITHUB_URL": self.web_url,
            "VID2CONTEXT_GITHUB_API_URL": self.api_url,
        }
