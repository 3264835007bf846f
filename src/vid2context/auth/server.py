"""The OAuth 2.1 authorization server and the resource check of ``/mcp``, with no HTTP in it.

Following the MCP authorization spec (2025-11-25): discovery (RFC 9728 protected resource
metadata, RFC 8414 server metadata), dynamic client registration (RFC 7591), the authorization
code grant with PKCE S256 only, refresh tokens that rotate (OAuth 2.1 §4.3.1), revocation
(RFC 7009), and audience binding of every code and token to ``<origin>/mcp`` (RFC 8707).

Secrets (codes, tokens, client secrets, CSRF tokens) are ``secrets.token_urlsafe(32)``, handed out
once and kept only as SHA-256. A token is looked up by its digest, which tells a timing observer
nothing about the token (the digest cannot be inverted); client secrets are compared with
``hmac.compare_digest``. The clock is ``clock`` (injectable: expiry tests set it, never sleep).

Errors are ``OAuthError``: the RFC 6749 ``error`` code and ``error_description``, plus our
``hint``; the HTTP layer (``api/oauth.py``) turns them into JSON, a redirect, or a page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

import msgspec

from ..addresses import AddressClass, host_class
from ..errors import ErrorCode, VidError
from .store import Client, Grant, OAuthStore

__all__ = [
    "ACCESS_TTL_S",
    "CODE_TTL_S",
    "REFRESH_TTL_S",
    "AuthorizeRequest",
    "OAuthError",
    "OAuthServer",
    "digest",
]

SCOPE = "mcp"
CODE_TTL_S = 60
ACCESS_TTL_S = 3600
REFRESH_TTL_S = 30 * 86400
CSRF_TTL_S = 600
REGISTRATIONS_PER_HOUR = 20
"""Registrations one address may make in an hour (``POST /oauth/register``)."""
MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
MAX_NAME_CHARS = 200
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
GRANT_TYPES = ("authorization_code", "refresh_token")
_PRIVATE_SCHEME = re.compile(r"[a-z][a-z0-9+.-]{1,63}")
_NEVER_SCHEMES = frozenset(
    {
        "http",
        "https",
        "javascript",
        "data",
        "file",
        "vbscript",
        "blob",
        "about",
        "filesystem",
        "ws",
        "wss",
        "ftp",
    }
)


def digest(secret: str) -> str:
    """The SHA-256 (hex) a secret is stored under."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _now_secret() -> str:
    return secrets.token_urlsafe(32)


class OAuthError(Exception):
    """An RFC 6749 error: ``error`` (``invalid_grant``...), a description, our hint, its status."""

    def __init__(
        self,
        error: str,
        description: str,
        *,
        hint: str,
        status: int = 400,
        headers: Mapping[str, str] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.hint = hint
        self.status = status
        self.headers = dict(headers or {})
        if retry_after is not None:
            self.headers["Retry-After"] = str(retry_after)

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description, "hint": self.hint}


class _Registration(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """The RFC 7591 metadata we read; other members are ignored, as the RFC allows."""

    redirect_uris: list[str]
    client_name: str | None = None
    token_endpoint_auth_method: str | None = None
    """``None``: RFC 7591's default, ``client_secret_basic``."""
    grant_types: list[str] | None = None
    """``None``: ``["authorization_code"]``."""
    response_types: list[str] | None = None
    scope: str | None = None


_decode_registration = msgspec.json.Decoder(_Registration).decode


def redirect_uri_problem(uri: Any, *, public: bool = True) -> str | None:
    """Why ``uri`` cannot be a redirect URI, or ``None``: ``https`` with a host, ``http`` to a
    loopback host (native apps, RFC 8252 §7.3), or, for a public client, a private-use scheme
    with a host (RFC 8252 §7.1: Cursor registers ``cursor://anysphere.cursor-mcp/oauth/callback``
    beside its https and loopback ones); never a fragment, ``javascript:``, ``data:``, ``file:``
    and their kind, nor plain ``http`` elsewhere. A private-use scheme can be claimed by another
    app on the machine; the code it would intercept is useless without the PKCE verifier."""
    if not isinstance(uri, str) or not uri:
        return "a redirect URI must be a non-empty string"
    if len(uri) > MAX_URI_CHARS:
        return f"a redirect URI is at most {MAX_URI_CHARS} characters"
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in uri):
        return "a redirect URI holds no spaces or control characters"
    if "#" in uri:
        return "a redirect URI must not have a fragment"
    try:
        parts = urlsplit(uri)
        host = (parts.hostname or "").lower()
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        return "the redirect URI is not a valid URL"
    if parts.username is not None or parts.password is not None:
        return "a redirect URI carries no user name or password"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and host_class(host) is AddressClass.LOOPBACK:
        return None
    if public and host and _PRIVATE_SCHEME.fullmatch(parts.scheme) and parts.scheme not in _NEVER_SCHEMES:
        return None
    return (
        "a redirect URI is https, http to a loopback address (127.0.0.1, [::1], localhost), or an app's "
        "own scheme with a host (public clients)"
    )


def _check_origin(origin: str) -> str:
    """``VID2CONTEXT_PUBLIC_ORIGIN`` as ``scheme://host[:port]``; ``bad-request`` naming the
    variable (never its value) when it is not one."""
    try:
        parts = urlsplit(origin.strip())
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.path in ("", "/")
        valid = valid and not parts.query and not parts.fragment and parts.username is None
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        valid = False
    if not valid:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "VID2CONTEXT_PUBLIC_ORIGIN is not an origin.",
            hint="Set VID2CONTEXT_PUBLIC_ORIGIN to scheme and host only, such as https://v2c.example.com, "
            "or unset it to use each request's own origin.",
        )
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class AuthorizeRequest:
    """A checked ``GET /oauth/authorize``: what the consent page shows and its form carries."""

    client: Client
    redirect_uri: str
    state: str
    code_challenge: str
    scope: str
    resource: str

    def form(self) -> dict[str, str]:
        """The parameters the consent form carries back in hidden fields."""
        return {
            "response_type": "code",
            "client_id": self.client.client_id,
            "redirect_uri": self.redirect_uri,
            "state": self.state,
            "code_challenge": self.code_challenge,
            "code_challenge_method": "S256",
            "scope": self.scope,
            "resource": self.resource,
        }

    def binding(self) -> str:
        """What a CSRF token is bound to: exactly these parameters."""
        return digest(msgspec.json.encode(self.form()).decode())

    def redirect(self, **params: str) -> str:
        """``redirect_uri`` with ``params`` and ``state`` added to its query."""
        query = urlencode({**params, **({"state": self.state} if self.state else {})})
        return self.redirect_uri + ("&" if "?" in self.redirect_uri else "?") + query


@dataclass
class OAuthServer:
    """The flows over an ``OAuthStore``. ``public_origin`` (``VID2CONTEXT_PUBLIC_ORIGIN``) names the
    issuer and resource; without it each request's own origin does."""

    store: OAuthStore
    public_origin: str | None = None
    clock: Callable[[], float] = field(default=time.time)

    def __post_init__(self) -> None:
        if self.public_origin:
            self.public_origin = _check_origin(self.public_origin)

    def origin(self, request_origin: str) -> str:
        return self.public_origin or request_origin.rstrip("/")

    # -- discovery ----------------------------------------------------------------------------------

    def resource_metadata(self, origin: str) -> dict[str, Any]:
        """RFC 9728 protected resource metadata for ``/mcp``."""
        origin = self.origin(origin)
        return {
            "resource": origin + "/mcp",
            "authorization_servers": [origin],
            "scopes_supported": [SCOPE],
            "bearer_methods_supported": ["header"],
            "resource_name": "vid2context",
        }

    def server_metadata(self, origin: str) -> dict[str, Any]:
        """RFC 8414 authorization server metadata."""
        origin = self.origin(origin)
        return {
            "issuer": origin,
            "authorization_endpoint": origin + "/oauth/authorize",
            "token_endpoint": origin + "/oauth/token",
            "registration_endpoint": origin + "/oauth/register",
            "revocation_endpoint": origin + "/oauth/revoke",
            "scopes_supported": [SCOPE],
            "response_types_supported": ["code"],
            "grant_types_supported": list(GRANT_TYPES),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
        }

    # -- registration (RFC 7591) --------------------------------------------------------------------

    async def register(self, body: bytes, address: str) -> dict[str, Any]:
        """Register a client from its JSON metadata; the response, with a secret unless ``none``."""
        count = await self.store.hit("register:" + address, 3600)
        if count > REGISTRATIONS_PER_HOUR:
            raise OAuthError(
                "too_many_requests",
                f"At most {REGISTRATIONS_PER_HOUR} client registrations an hour from one address.",
                hint="Wait Retry-After seconds, then repeat the call once; register once and keep the client_id.",
                status=429,
                retry_after=3600,
            )
        try:
            asked = _decode_registration(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise _metadata_error(f"The registration is not valid JSON metadata: {str(exc)[:200]}.") from None
        if not asked.redirect_uris or len(asked.redirect_uris) > MAX_REDIRECT_URIS:
            raise OAuthError(
                "invalid_redirect_uri",
                f"Give 1 to {MAX_REDIRECT_URIS} redirect_uris.",
                hint="List the URIs this client receives the code at.",
            )
        method = asked.token_endpoint_auth_method or "client_secret_basic"
        for uri in asked.redirect_uris:
            if problem := redirect_uri_problem(uri, public=method == "none"):
                raise OAuthError(
                    "invalid_redirect_uri",
                    f"Redirect URI refused: {problem}.",
                    hint="Use an https redirect URI, or http to 127.0.0.1 / localhost, without a fragment.",
                )
        grant_types = asked.grant_types or ["authorization_code"]
        if method not in AUTH_METHODS:
            raise _metadata_error(f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}.")
        if not set(grant_types) <= set(GRANT_TYPES) or "authorization_code" not in grant_types:
            raise _metadata_error("grant_types may be authorization_code and refresh_token only.")
        if asked.response_types not in (None, ["code"]):
            raise _metadata_error('response_types must be ["code"].')
        if asked.scope is not None and asked.scope.split() not in ([], [SCOPE]):
            raise _metadata_error('The only scope is "mcp".')
        name = (asked.client_name or "").strip()
        if len(name) > MAX_NAME_CHARS:
            raise _metadata_error(f"client_name is at most {MAX_NAME_CHARS} characters.")
        now = self.clock()
        secret = None if method == "none" else _now_secret()
        client = Client(
            client_id="v2c-" + secrets.token_urlsafe(16),
            client_name=name or "Unnamed client",
            redirect_uris=list(asked.redirect_uris),
            token_endpoint_auth_method=method,
            grant_types=list(grant_types),
            secret_hash=None if secret is None else digest(secret),
            created_at=now,
        )
        await self.store.put_client(client)
        answer: dict[str, Any] = {
            "client_id": client.client_id,
            "client_id_issued_at": int(now),
            "client_name": client.client_name,
            "redirect_uris": client.redirect_uris,
            "token_endpoint_auth_method": client.token_endpoint_auth_method,
            "grant_types": client.grant_types,
            "response_types": ["code"],
            "scope": SCOPE,
        }
        if secret is not None:
            answer |= {"client_secret": secret, "client_secret_expires_at": 0}
        return answer

    # -- authorization ------------------------------------------------------------------------------

    async def check_authorize(self, params: Mapping[str, str], origin: str) -> AuthorizeRequest:
        """The checked request. ``OAuthError`` without a redirect when the client or its
        redirect URI is wrong (RFC 6749 §4.1.2.1: never redirect there); otherwise the error
        carries ``redirect`` for the client's redirect URI."""
        client_id = params.get("client_id", "")
        client = await self.store.get_client(client_id) if client_id else None
        if client is None:
            raise OAuthError(
                "invalid_client",
                "Unknown client_id.",
                hint="Register the client with POST /oauth/register first.",
            )
        redirect_uri = params.get("redirect_uri", "")
        if not redirect_uri and len(client.redirect_uris) == 1:
            redirect_uri = client.redirect_uris[0]
        if redirect_uri not in client.redirect_uris:
            raise OAuthError(
                "invalid_request",
                "redirect_uri is not one this client registered.",
                hint="Use exactly one of the redirect_uris given at registration.",
            )
        request = AuthorizeRequest(
            client=client,
            redirect_uri=redirect_uri,
            state=params.get("state", "")[:2000],
            code_challenge=params.get("code_challenge", ""),
            scope=params.get("scope") or SCOPE,
            resource=params.get("resource") or self.origin(origin) + "/mcp",
        )
        problem: tuple[str, str] | None = None
        if params.get("response_type") != "code":
            problem = ("unsupported_response_type", "response_type must be code.")
        elif params.get("code_challenge_method") != "S256":
            problem = ("invalid_request", "PKCE is required, with code_challenge_method S256.")
        elif not _is_challenge(request.code_challenge):
            problem = ("invalid_request", "code_challenge must be 43 base64url characters (S256).")
        elif request.scope.split() != [SCOPE]:
            problem = ("invalid_scope", 'The only scope is "mcp".')
        elif not self._is_our_resource(request.resource, origin):
            problem = ("invalid_target", "resource must be this server's /mcp.")
        if problem is not None:
            error = OAuthError(problem[0], problem[1], hint="Fix the authorization request.")
            error.headers["Location"] = request.redirect(error=problem[0], error_description=problem[1])
            raise error
        return request

    async def new_csrf(self, request: AuthorizeRequest) -> str:
        """A CSRF token for one consent form, bound to its parameters, single-use, 10 minutes."""
        token = _now_secret()
        grant = Grant(
            kind="csrf",
            client_id=request.client.client_id,
            family="csrf",
            expires_at=self.clock() + CSRF_TTL_S,
            code_challenge=request.binding(),
        )
        await self.store.put_grant(digest(token), grant, now=self.clock())
        return token

    async def spend_csrf(self, token: str, request: AuthorizeRequest) -> bool:
        """Whether ``token`` is a fresh CSRF token of this very form (it is spent either way)."""
        if not token:
            return False
        used = await self.store.use_grant(digest(token), "csrf")
        if used is None:
            return False
        grant, first = used
        return (
            first
            and grant.expires_at > self.clock()
            and hmac.compare_digest(grant.code_challenge, request.binding())
        )

    async def approve(self, request: AuthorizeRequest, subject: str) -> str:
        """Issue a code for an approved request; the redirect URL carrying it and ``state``."""
        code = _now_secret()
        now = self.clock()
        grant = Grant(
            kind="code",
            client_id=request.client.client_id,
            family=secrets.token_urlsafe(12),
            expires_at=now + CODE_TTL_S,
            resource=request.resource,
            scope=request.scope,
            subject=subject,
            redirect_uri=request.redirect_uri,
            code_challenge=request.code_challenge,
        )
        await self.store.put_grant(digest(code), grant, now=now)
        return request.redirect(code=code)

    def deny(self, request: AuthorizeRequest) -> str:
        return request.redirect(error="access_denied", error_description="The owner did not approve.")

    # -- token endpoint -----------------------------------------------------------------------------

    async def token(self, form: Mapping[str, str], authorization: str | None, origin: str) -> dict[str, Any]:
        """``POST /oauth/token``: the token response, or ``OAuthError``."""
        grant_type = form.get("grant_type", "")
        if grant_type not in GRANT_TYPES:
            raise OAuthError(
                "unsupported_grant_type",
                "grant_type must be authorization_code or refresh_token.",
                hint="Exchange a code with grant_type=authorization_code.",
            )
        client = await self._client(form, authorization)
        resource = form.get("resource")
        if resource is not None and not self._is_our_resource(resource, origin):
            raise OAuthError("invalid_target", "resource must be this server's /mcp.", hint=_RESTART)
        if grant_type == "authorization_code":
            grant = await self._spend_code(form, client)
        elif grant_type not in client.grant_types:
            raise OAuthError(
                "unauthorized_client",
                "This client did not register the refresh_token grant.",
                hint="Register again with POST /oauth/register, with grant_types including refresh_token.",
            )
        else:
            grant = await self._spend_refresh(form, client)
        if resource is not None and resource.rstrip("/") != grant.resource.rstrip("/"):
            raise _invalid_grant("The resource differs from the one the grant was issued for.")
        return await self._issue(grant, refresh="refresh_token" in client.grant_types)

    async def _spend_code(self, form: Mapping[str, str], client: Client) -> Grant:
        code = form.get("code", "")
        used = await self.store.use_grant(digest(code), "code") if code else None
        if used is None:
            raise _invalid_grant("The code is not valid.")
        grant, first = used
        if not first:
            await self.store.revoke_family(grant.family)  # RFC 6749 §4.1.2: revoke what it issued
            raise _invalid_grant("The code was used before; the tokens issued from it are revoked.")
        if grant.expires_at <= self.clock():
            raise _invalid_grant(f"The code expired (codes last {CODE_TTL_S} s).")
        if not hmac.compare_digest(grant.client_id, client.client_id):
            raise _invalid_grant("The code was issued to another client.")
        if form.get("redirect_uri", grant.redirect_uri) != grant.redirect_uri:
            raise _invalid_grant("redirect_uri differs from the authorization request's.")
        verifier = form.get("code_verifier", "")
        if not verifier:
            raise _invalid_grant("code_verifier is required (PKCE).")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if not hmac.compare_digest(challenge, grant.code_challenge):
            raise _invalid_grant("code_verifier does not match the code_challenge (S256).")
        return grant

    async def _spend_refresh(self, form: Mapping[str, str], client: Client) -> Grant:
        token = form.get("refresh_token", "")
        token_hash = digest(token)
        current = await self.store.get_grant(token_hash, "refresh") if token else None
        if current is None:
            raise _invalid_grant("The refresh token is not valid.")
        if not hmac.compare_digest(current.client_id, client.client_id):
            raise _invalid_grant("The refresh token was issued to another client.")
        if form.get("scope") not in (None, "", SCOPE):  # checked before the token is spent
            raise OAuthError("invalid_scope", 'The only scope is "mcp".', hint=_RESTART)
        used = await self.store.use_grant(token_hash, "refresh")
        if used is None:
            raise _invalid_grant("The refresh token is not valid.")
        grant, first = used
        if not first:
            await self.store.revoke_family(grant.family)
            raise _invalid_grant("The refresh token was used before: every token of its grant is revoked.")
        if grant.expires_at <= self.clock():
            raise _invalid_grant("The refresh token expired.")
        return grant

    async def _issue(self, grant: Grant, *, refresh: bool) -> dict[str, Any]:
        now = self.clock()
        common = {"client_id": grant.client_id, "family": grant.family, "resource": grant.resource}
        common |= {"scope": grant.scope, "subject": grant.subject}
        access = "v2c_at_" + _now_secret()
        await self.store.put_grant(
            digest(access), Grant(kind="access", expires_at=now + ACCESS_TTL_S, **common), now=now
        )
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ACCESS_TTL_S,
            "scope": grant.scope,
        }
        if refresh:
            answer["refresh_token"] = token = "v2c_rt_" + _now_secret()
            await self.store.put_grant(
                digest(token), Grant(kind="refresh", expires_at=now + REFRESH_TTL_S, **common), now=now
            )
        return answer

    async def _client(self, form: Mapping[str, str], authorization: str | None) -> Client:
        """The authenticated client: HTTP Basic, ``client_secret`` in the form, or a public
        client's ``client_id`` alone."""
        basic = _basic(authorization)
        client_id, secret = basic if basic else (form.get("client_id", ""), form.get("client_secret"))
        if basic and form.get("client_id") not in (None, client_id):
            client_id = ""  # two different client ids: authenticate neither
        client = await self.store.get_client(client_id) if client_id else None
        if client is not None and client.secret_hash is None and secret is None:
            return client
        if client is not None and client.secret_hash is not None and secret is not None:
            if hmac.compare_digest(digest(secret), client.secret_hash):
                return client
        raise OAuthError(
            "invalid_client",
            "Client authentication failed.",
            hint="Send the client_id (and client_secret, when one was issued) from registration.",
            status=401,
            headers={"WWW-Authenticate": 'Basic realm="vid2context"'} if basic else None,
        )

    # -- revocation (RFC 7009) ----------------------------------------------------------------------

    async def revoke(self, form: Mapping[str, str], authorization: str | None) -> None:
        """Revoke an access or refresh token of this client (and, for a refresh token, its family).
        An unknown token is not an error (RFC 7009 §2.2)."""
        client = await self._client(form, authorization)
        token = form.get("token", "")
        if not token:
            raise OAuthError("invalid_request", "token is required.", hint="Send token=<the token>.")
        token_hash = digest(token)
        for kind in ("refresh", "access"):
            grant = await self.store.get_grant(token_hash, kind)
            if grant is not None and hmac.compare_digest(grant.client_id, client.client_id):
                if kind == "refresh":
                    await self.store.revoke_family(grant.family)
                else:
                    await self.store.revoke_grant(token_hash)
                return

    # -- the resource -------------------------------------------------------------------------------

    async def check_access(self, token: str, origin: str) -> Grant | None:
        """The grant of a live access token for this server's ``/mcp``, or ``None``."""
        grant = await self.store.get_grant(digest(token), "access")
        if grant is None or grant.expires_at <= self.clock():
            return None
        return grant if grant.resource.rstrip("/") == self.origin(origin) + "/mcp" else None

    def _is_our_resource(self, resource: str, origin: str) -> bool:
        return resource.rstrip("/") == self.origin(origin) + "/mcp"


_RESTART = "Start the authorization again from GET /oauth/authorize."


def _invalid_grant(description: str) -> OAuthError:
    return OAuthError("invalid_grant", description, hint=_RESTART)


def _metadata_error(description: str) -> OAuthError:
    return OAuthError(
        "invalid_client_metadata",
        description,
        hint="Fix the registration metadata (RFC 7591) and send it again.",
    )


def _is_challenge(value: str) -> bool:
    return len(value) == 43 and all(ch.isalnum() or ch in "-_" for ch in value) and value.isascii()


def _basic(authorization: str | None) -> tuple[str, str] | None:
    """``(client_id, secret)`` from ``Authorization: Basic``, or ``None``."""
    if not authorization or not authorization[:6].lower() == "basic ":
        return None
    try:
        raw = base64.b64decode(authorization[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return ("", "")
    client_id, _, secret = raw.partition(":")
    return unquote(client_id), unquote(secret)
