"""The consent page of ``GET /oauth/authorize``, and the seam that says who may approve.

The page is plain HTML with no JavaScript and no outside resources: the client's name, the host
its code goes to, the scope, and a form that posts back to the same path with the request's
parameters in hidden fields and a single-use CSRF token (``OAuthServer.new_csrf``, bound to those
very parameters). Every value shown is HTML-escaped; the client's name is the client's own claim,
so the redirect host is shown beside it as the fact to check.

**The approver seam.** ``Approver`` decides who approves and renders that part of the form:

- ``sign_in_html(error)``: the HTML inside the form before the buttons (a field, a link, or the
  signed-in account's name), with ``error`` (already plain text) shown when the last try failed;
- ``approve(form, request, address)``: given the posted form (a ``dict`` of strings), the
  Litestar ``Request`` (for cookies) and the client's address (for limits; ``client_ip``'s
  answer), either the ``subject`` that approved
  (``Approval(subject=...)``), or a refusal (``Approval(error=..., retry_after=...)``), which shows
  the page again with the error and no code.

``OwnerKeyApprover`` is the self-hosted one: the owner types an ``admin`` key of
``VID2CONTEXT_API_KEYS`` into ``owner_key``; wrong keys count against the address (5 in 15
minutes, then 429 until the window ends). Hosted mode plugs in an approver whose
``sign_in_html`` links to GitHub sign-in (returning to this same authorize URL) and whose
``approve`` reads the session cookie and answers the account id as ``subject``; the rest of the
flow (codes, tokens, ``Grant.subject``) is unchanged. ``api/oauth.py`` takes the approver as an
argument, so nothing else moves.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from html import escape
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..api.middleware.auth import ApiKey
from .server import AuthorizeRequest
from .store import OAuthStore

__all__ = ["Approval", "Approver", "OwnerKeyApprover", "consent_page", "message_page"]

FAILURES_ALLOWED = 5
FAILURE_WINDOW_S = 900


@dataclass(frozen=True)
class Approval:
    subject: str | None = None
    """Who approved; ``None`` when refused."""
    error: str = ""
    retry_after: int | None = None
    """Set when refused for too many tries: the page is answered 429 with ``Retry-After``."""


class Approver(Protocol):
    def sign_in_html(self, error: str) -> str: ...

    async def approve(self, form: dict[str, str], request: Any, address: str) -> Approval: ...


class OwnerKeyApprover:
    """The owner approves with an ``admin`` key of ``VID2CONTEXT_API_KEYS`` (field ``owner_key``)."""

    def __init__(self, keys: tuple[ApiKey, ...], store: OAuthStore) -> None:
        self.keys = tuple(key for key in keys if key.scope == "admin")
        self.store = store

    def sign_in_html(self, error: str) -> str:
        if not self.keys:
            return (
                '<p class="error">This server has no admin key, so no one can approve. Set '
                "VID2CONTEXT_API_KEYS with an admin key, then try again.</p>"
            )
        shown = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
        return (
            f'{shown}<label for="owner_key">Owner key (an admin key of this server)</label>'
            '<input id="owner_key" name="owner_key" type="password" autocomplete="off" required>'
        )

    async def approve(self, form: dict[str, str], request: Any, address: str) -> Approval:
        counter = "consent-failures:" + address
        if not self.keys:
            return Approval(error="This server has no admin key to approve with.")
        if await self.store.count(counter) >= FAILURES_ALLOWED:  # before any key is compared
            return _locked()
        given = form.get("owner_key", "").encode("utf-8", "replace")
        digest = hashlib.sha256(given).digest()
        matched = False
        for key in self.keys:  # every key compared, no early exit
            matched |= hmac.compare_digest(digest, key.digest)
        if matched and given:
            return Approval(subject="owner")
        if await self.store.hit(counter, FAILURE_WINDOW_S) >= FAILURES_ALLOWED:
            return _locked()
        return Approval(error="That is not an admin key of this server.")


def _locked() -> Approval:
    return Approval(
        error="Too many wrong keys from this address. Wait 15 minutes, then try again.",
        retry_after=FAILURE_WINDOW_S,
    )


_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#111}"
    "h1{font-size:1.4rem}.box{border:1px solid #ccc;border-radius:8px;padding:1rem 1.25rem}"
    "dt{font-weight:600}dd{margin:0 0 .5rem}label{display:block;margin:.75rem 0 .25rem}"
    "input[type=password]{width:100%;padding:.5rem;font:inherit}"
    "button{font:inherit;padding:.5rem 1rem;margin:1rem .5rem 0 0}.error{color:#a00}"
)


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta name="referrer" content="no-referrer"><title>{escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def consent_page(request: AuthorizeRequest, csrf: str, approver: Approver, error: str = "") -> str:
    """The consent form for ``request``."""
    parts = urlsplit(request.redirect_uri)
    host = parts.netloc if parts.scheme in ("https", "http") else f"{parts.scheme}://{parts.netloc}"
    hidden = "".join(
        f'<input type="hidden" name="{escape(name)}" value="{escape(value)}">'
        for name, value in [*request.form().items(), ("csrf_token", csrf)]
    )
    body = (
        "<h1>Connect an app to vid2context</h1>"
        '<div class="box"><dl>'
        f"<dt>App</dt><dd>{escape(request.client.client_name)}</dd>"
        f"<dt>Sends you back to</dt><dd>{escape(host)}</dd>"
        f"<dt>Access</dt><dd>{escape(request.scope)}: use this server's MCP tools</dd>"
        "</dl>"
        '<form method="post" action="/oauth/authorize">'
        f"{hidden}{approver.sign_in_html(error)}"
        '<button type="submit" name="decision" value="approve">Approve</button>'
        '<button type="submit" name="decision" value="deny" formnovalidate>Deny</button>'
        "</form></div>"
        "<p>Approve only if you started this connection yourself in that app.</p>"
    )
    return _page("Connect an app to vid2context", body)


def message_page(title: str, message: str, hint: str) -> str:
    """A page for an authorize request that cannot go back to the client."""
    return _page(title, f"<h1>{escape(title)}</h1><p>{escape(message)}</p><p>{escape(hint)}</p>")
