"""A hand-driven OAuth client for the misuse tests: each step on its own, so a test can change one.

``Flow(http)`` registers a client, reads the consent page (its hidden fields and CSRF token, as a
browser would), posts it with the owner key, and exchanges the code. The SDK's own client
(``mcp.client.auth``) drives the whole flow in ``test_oauth_sdk.py``; this one exists to go wrong
on purpose.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from html import unescape
from typing import Any

import httpx

from .test_mcp_http import INIT, MCP_HEADERS

__all__ = ["OWNER_KEY", "REDIRECT_URI", "Flow", "form_fields", "pkce"]

OWNER_KEY = "owner-" + "k3y" * 8
"""The test server's ``admin`` key in ``VID2CONTEXT_API_KEYS`` (a plain key is admin)."""
REDIRECT_URI = "http://127.0.0.1:8976/callback"
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def form_fields(page: str) -> dict[str, str]:
    """The consent form's hidden fields, as the browser would post them back."""
    return {unescape(name): unescape(value) for name, value in _HIDDEN.findall(page)}


class Flow:
    def __init__(self, http: httpx.AsyncClient, *, redirect_uri: str = REDIRECT_URI) -> None:
        self.http = http
        self.redirect_uri = redirect_uri

    async def register(self, **metadata: Any) -> dict[str, Any]:
        body = {"redirect_uris": [self.redirect_uri], "client_name": "Test client", **metadata}
        body.setdefault("token_endpoint_auth_method", "none")
        body.setdefault("grant_types", ["authorization_code", "refresh_token"])
        response = await self.http.post("/oauth/register", json=body)
        assert response.status_code == 201, response.text
        return response.json()

    def params(self, client: dict[str, Any], challenge: str, **overrides: str) -> dict[str, str]:
        params = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": self.redirect_uri,
            "state": "state-" + secrets.token_hex(4),
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "scope": "mcp",
        }
        return {**params, **overrides}

    async def consent(self, params: dict[str, str]) -> httpx.Response:
        return await self.http.get("/oauth/authorize", params=params)

    async def approve(self, page: httpx.Response, *, key: str = OWNER_KEY, **changes: str) -> httpx.Response:
        assert page.status_code == 200, page.text
        fields = {**form_fields(page.text), "owner_key": key, "decision": "approve", **changes}
        return await self.http.post("/oauth/authorize", data=fields)

    async def code(self, client: dict[str, Any], **overrides: str) -> tuple[str, str]:
        """A fresh code for ``client`` and its PKCE verifier."""
        verifier, challenge = pkce()
        answer = await self.approve(await self.consent(self.params(client, challenge, **overrides)))
        assert answer.status_code == 302, answer.text
        return httpx.URL(answer.headers["location"]).params["code"], verifier

    async def exchange(
        self, client: dict[str, Any], code: str, verifier: str | None, **extra: str
    ) -> httpx.Response:
        data = {"grant_type": "authorization_code", "code": code, "client_id": client["client_id"]}
        data["redirect_uri"] = self.redirect_uri
        if verifier is not None:
            data["code_verifier"] = verifier
        return await self.http.post("/oauth/token", data={**data, **extra})

    async def tokens(self, client: dict[str, Any]) -> dict[str, Any]:
        code, verifier = await self.code(client)
        response = await self.exchange(client, code, verifier)
        assert response.status_code == 200, response.text
        return response.json()

    async def refresh(self, client: dict[str, Any], refresh_token: str) -> httpx.Response:
        data = {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": client["client_id"],
        }
        return await self.http.post("/oauth/token", data=data)

    async def mcp(self, token: str, *, host: str | None = None) -> httpx.Response:
        """``initialize`` on ``/mcp`` with ``token``."""
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        if host:
            headers["Host"] = host
        return await self.http.post("/mcp", json=INIT, headers=headers)
