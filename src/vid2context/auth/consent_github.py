"""Hosted mode's approver for the OAuth consent page: the signed-in account approves.

It plugs into ``auth.consent.Approver`` (``api/oauth.py`` takes it; ``create_app`` passes it in
hosted mode), so codes, tokens and ``Grant.subject`` work as for the owner key; the subject is the
account's id, which ``/mcp`` then meters the token's calls against.

A browser that is not signed in gets a "Sign in with GitHub" button in the same form, posting the
authorize request's fields with ``formaction`` and ``formmethod="get"`` (no JavaScript) to
``GET /api/v1/auth/github/consent``, which starts the GitHub sign-in with ``next`` set to the same
``/oauth/authorize?...`` URL; after GitHub the consent page is shown again, and Approve works.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

from .consent import Approval
from .hosted import Hosted
from .signin import CONSENT_SIGN_IN_PATH

__all__ = ["GitHubApprover", "authorize_return_path"]

_NOT_CARRIED = frozenset({"csrf_token", "decision"})
"""Fields of the consent form that are not the authorize request's (the CSRF token is single-use)."""
MAX_FIELDS = 20


def authorize_return_path(fields: list[tuple[str, str]]) -> str:
    """``/oauth/authorize?...`` with the authorize request's own fields, to come back to."""
    carried = [(name, value) for name, value in fields if name not in _NOT_CARRIED][:MAX_FIELDS]
    return "/oauth/authorize?" + urlencode(carried)


class GitHubApprover:
    def __init__(self, hosted: Hosted) -> None:
        self.hosted = hosted

    def sign_in_html(self, error: str) -> str:
        shown = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
        return (
            f"{shown}<p>Approve connects the app to your vid2context account, the one this browser is "
            "signed in to with GitHub. Not signed in yet?</p>"
            f'<button type="submit" name="decision" value="sign-in" formaction="{CONSENT_SIGN_IN_PATH}" '
            'formmethod="get" formnovalidate>Sign in with GitHub</button>'
        )

    async def approve(self, form: dict[str, str], request: Any, address: str) -> Approval:
        principal = await self.hosted.from_session(request.scope)
        if principal is None:
            return Approval(error="Sign in with GitHub first (the button below), then approve.")
        return Approval(subject=principal.account.id)
