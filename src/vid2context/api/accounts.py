"""Hosted mode's routes: GitHub sign-in (``/api/v1/auth/*``) and the account's own (``/api/v1/me*``).

Thin skins over ``auth.hosted.Hosted``, which the app makes once in hosted mode and keeps in its
state. Outside hosted mode every one of these routes is ``not-found`` with a hint naming the
setting. Sign-in answers are redirects (``302``) for a browser; an error on the way (a forged or
spent state, no code, GitHub failing) is the API's error body with the contract's code. Each
answer sets one cookie at most: the Worker's ASGI adapter (``workers.asgi``) keeps only the last
header of a name. A created key is in its ``201`` answer and nowhere else, with
``Cache-Control: no-store``.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, Response, delete, get, post
from litestar.datastructures import Cookie
from litestar.params import JSONBody, Parameter, QueryParameter
from litestar.response import Redirect

from ..auth.accounts import CreatedKey, KeyList, Me, NewKeyRequest, Usage
from ..auth.consent_github import authorize_return_path
from ..auth.hosted import Hosted, Principal
from ..auth.signin import SetCookie
from ..errors import ErrorCode, VidError
from .params import BODY_ERRORS, decode_body

__all__ = ["ACCOUNT_ROUTES"]

_NO_STORE = {"Cache-Control": "no-store"}
KeyIdPath = Annotated[str, Parameter(description="The key's id (key_...), as GET /api/v1/me/keys lists it.")]


def _hosted(request: Request) -> Hosted:
    hosted = request.app.state.get("hosted")
    if hosted is None:
        raise VidError(
            ErrorCode.NOT_FOUND,
            "This server has no accounts: hosted mode is off.",
            hint="Tell the user this server runs without accounts (VID2CONTEXT_HOSTED is off); use its API "
            "keys instead, and do not retry.",
        )
    return hosted


def _principal(request: Request) -> tuple[Hosted, Principal]:
    hosted = _hosted(request)
    principal = request.scope.get("state", {}).get("account")
    if not isinstance(principal, Principal):
        raise VidError(
            ErrorCode.FORBIDDEN,
            "These routes are an account's own, and this request is not signed in as one.",
            hint="Sign in with GitHub at GET /api/v1/auth/github/login, or send an account key from "
            "POST /api/v1/me/keys.",
        )
    return hosted, principal


def _cookie(made: SetCookie) -> Cookie:
    return Cookie(
        key=made.name,
        value=made.value,
        path=made.path,
        max_age=made.max_age,
        httponly=True,
        secure=True,
        samesite="lax",
    )


@get("/api/v1/auth/github/login", status_code=302)
async def github_login(
    request: Request,
    next_path: Annotated[
        str | None,
        QueryParameter(name="next", max_length=2048, description="A path on this server to return to."),
    ] = None,
) -> Redirect:
    """Sign in with GitHub: a redirect to GitHub's authorize page; ``next`` is a path on this server
    to come back to (default ``/api/v1/me``)."""
    url, state_cookie = await _hosted(request).signin.begin(request.scope, next_path)
    return Redirect(url, status_code=302, cookies=[_cookie(state_cookie)], headers=_NO_STORE)


@get("/api/v1/auth/github/callback", status_code=302)
async def github_callback(
    request: Request,
    code: Annotated[str | None, QueryParameter(max_length=256)] = None,
    state_value: Annotated[str | None, QueryParameter(name="state", max_length=128)] = None,
    error: Annotated[str | None, QueryParameter(max_length=256)] = None,
) -> Redirect:
    """Where GitHub sends the browser back: sets the session cookie and redirects to ``next``."""
    hosted = _hosted(request)
    next_path, session = await hosted.signin.finish(request.scope, state=state_value, code=code, error=error)
    # One cookie per answer: the Worker's ASGI adapter builds its headers with Object.fromEntries,
    # which keeps only the last of repeated names. The state cookie, spent in KV already, is left
    # to expire (ten minutes, on the callback's path only).
    return Redirect(next_path, status_code=302, cookies=[_cookie(session)], headers=_NO_STORE)


@get("/api/v1/auth/github/consent", status_code=302)
async def github_consent(request: Request) -> Redirect:
    """The OAuth consent page's "Sign in with GitHub" button: signs in, then shows that consent
    page again (the authorize request's fields come as the query)."""
    fields = [
        (name, value[:2048]) for name, value in request.query_params.multi_items() if isinstance(value, str)
    ]
    url, state_cookie = await _hosted(request).signin.begin(request.scope, authorize_return_path(fields))
    return Redirect(url, status_code=302, cookies=[_cookie(state_cookie)], headers=_NO_STORE)


@post("/api/v1/auth/logout", status_code=204)
async def logout(request: Request) -> Response[None]:
    """Sign out: the session is forgotten and its cookie cleared."""
    cleared = await _hosted(request).signin.sign_out(request.scope)
    return Response(None, status_code=204, cookies=[_cookie(cleared)])


@get("/api/v1/me")
async def me(request: Request) -> Me:
    """The signed-in account: ``{ id, login, plan }``."""
    _, principal = _principal(request)
    account = principal.account
    return Me(id=account.id, login=account.login, plan=account.plan)


@get("/api/v1/me/usage")
async def me_usage(request: Request) -> Usage:
    """Today's (UTC) use and limits: videos read and speech-to-text minutes."""
    hosted, principal = _principal(request)
    return await hosted.quotas.usage(principal.account.id)


@get("/api/v1/me/keys")
async def list_keys(request: Request) -> KeyList:
    """The account's keys: names and first characters, never the keys."""
    hosted, principal = _principal(request)
    return KeyList(keys=await hosted.store.list_keys(principal.account.id))


@post("/api/v1/me/keys", status_code=201, exception_handlers=BODY_ERRORS)
async def create_key(request: Request, data: JSONBody[NewKeyRequest]) -> Response[CreatedKey]:
    """A new key for the account, ``{ name }``: the key is in this answer only, stored hashed."""
    hosted, principal = _principal(request)
    body = await decode_body(request, NewKeyRequest)
    made = await hosted.create_key(principal.account, body.name)
    return Response(made, status_code=201, headers=_NO_STORE)


@delete("/api/v1/me/keys/{key_id:str}", status_code=204)
async def delete_key(request: Request, key_id: KeyIdPath) -> None:
    """Delete one of the account's keys; it stops working at once."""
    hosted, principal = _principal(request)
    if len(key_id) > 64 or not await hosted.store.delete_key(principal.account.id, key_id):
        raise VidError(
            ErrorCode.NOT_FOUND,
            "This account has no key with that id.",
            hint="List the account's keys with GET /api/v1/me/keys and use one of their ids.",
        )


ACCOUNT_ROUTES = [
    github_login,
    github_callback,
    github_consent,
    logout,
    me,
    me_usage,
    list_keys,
    create_key,
    delete_key,
]
