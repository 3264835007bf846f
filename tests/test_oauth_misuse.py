"""The OAuth server against misuse, on every runtime (memory, SQLite, the Worker's D1 and KV).

The issue's misuse table, one test a row: PKCE (wrong, missing, ``plain``), codes (twice, after
60 s, wrong client, redirect URI or resource), refresh reuse (the family is revoked), revoked and
expired tokens, another audience, a CSRF-less consent post, bad redirect URIs, a flood of
registrations, wrong owner keys. Expiry moves the server's clock (``app.state.oauth.clock``);
nothing sleeps. The last test collects every secret of a flow and fails if one shows up in a log
line or in a response that is not the one meant to carry it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from vid2context.api import create_app
from vid2context.auth.server import CODE_TTL_S, REGISTRATIONS_PER_HOUR
from vid2context.errors import VidError

from .oauth_client import OWNER_KEY, REDIRECT_URI, Flow, form_fields, pkce
from .runtimes import Runtimes, asgi_lifespan, on_each_runtime_when

pytestmark = pytest.mark.anyio
pytest_generate_tests = on_each_runtime_when("oauth")


@dataclass
class Oauth:
    flow: Flow
    http: httpx.AsyncClient
    server: Any
    """The app's ``OAuthServer``: tests move its ``clock``."""
    now: list[float]
    runtime: Any


@pytest.fixture
async def oauth(runtimes: Runtimes) -> AsyncIterator[Oauth]:
    runtime = await runtimes.build({"VID2CONTEXT_API_KEYS": OWNER_KEY, "VID2CONTEXT_MCP_RATE_LIMIT": "0"})
    app = create_app(runtime, owns_runtime=False)
    now = [1_800_000_000.0]
    app.state.oauth.clock = lambda: now[0]
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with asgi_lifespan(app), httpx.AsyncClient(transport=transport, base_url="http://v2c.test") as http:
        yield Oauth(flow=Flow(http), http=http, server=app.state.oauth, now=now, runtime=runtime)


def _error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code and body["error_description"] and body["hint"]
    assert response.headers["cache-control"] == "no-store"


# --- discovery -----------------------------------------------------------------------------------


async def test_discovery_names_the_resource_and_the_endpoints(oauth: Oauth) -> None:
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        resource = (await oauth.http.get(path)).json()
        assert resource["resource"] == "http://v2c.test/mcp"
        assert resource["authorization_servers"] == ["http://v2c.test"]
        assert resource["scopes_supported"] == ["mcp"]
    server = (await oauth.http.get("/.well-known/oauth-authorization-server")).json()
    assert server["issuer"] == "http://v2c.test"
    for name in ("authorization", "token", "registration", "revocation"):
        assert server[f"{name}_endpoint"].startswith("http://v2c.test/oauth/")
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert server["token_endpoint_auth_methods_supported"] == [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ]


async def test_browser_clients_may_read_the_json_endpoints(oauth: Oauth) -> None:
    for path in ("/.well-known/oauth-authorization-server", "/oauth/register", "/oauth/token"):
        preflight = await oauth.http.options(
            path, headers={"Origin": "https://inspector.example", "Access-Control-Request-Method": "POST"}
        )
        assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == "*"
        assert "Content-Type" in preflight.headers["access-control-allow-headers"]
    answer = await oauth.http.post(
        "/oauth/token", data={"grant_type": "x"}, headers={"Origin": "https://a.example"}
    )
    assert answer.headers["access-control-allow-origin"] == "*"


async def test_mcp_answers_401_with_the_resource_metadata(oauth: Oauth) -> None:
    response = await oauth.flow.mcp("not-a-token")
    assert response.status_code == 401
    assert response.headers.get_list("www-authenticate") == [
        'Bearer resource_metadata="http://v2c.test/.well-known/oauth-protected-resource/mcp", scope="mcp"'
    ]


# --- the good path, and what the tokens open ----------------------------------------------------


async def test_a_token_opens_mcp_but_never_the_api(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    tokens = await oauth.flow.tokens(client)
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600 and tokens["scope"] == "mcp"
    assert (await oauth.flow.mcp(tokens["access_token"])).status_code == 200
    api = await oauth.http.get(
        "/api/v1/library", headers={"Authorization": f"Bearer {tokens['access_token']}"}
    )
    assert api.status_code == 401
    assert (
        await oauth.flow.mcp(tokens["refresh_token"])
    ).status_code == 401  # a refresh token is no access token


async def test_a_confidential_client_authenticates_by_basic_or_post(oauth: Oauth) -> None:
    for method in ("client_secret_basic", "client_secret_post"):
        client = await oauth.flow.register(token_endpoint_auth_method=method)
        assert client["client_secret"] and client["client_secret_expires_at"] == 0
        code, verifier = await oauth.flow.code(client)
        data = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier}
        data["redirect_uri"] = REDIRECT_URI
        wrong = {**data, "client_id": client["client_id"], "client_secret": "wrong"}
        _error(await oauth.http.post("/oauth/token", data=wrong), 401, "invalid_client")
        if method == "client_secret_basic":
            auth = httpx.BasicAuth(client["client_id"], client["client_secret"])
            answer = await oauth.http.post("/oauth/token", data=data, auth=auth)
        else:
            data |= {"client_id": client["client_id"], "client_secret": client["client_secret"]}
            answer = await oauth.http.post("/oauth/token", data=data)
        # The wrong secret spent nothing: the code was still good.
        assert answer.status_code == 200, answer.text
    no_secret = await oauth.flow.exchange(client, "any", "any")
    _error(no_secret, 401, "invalid_client")
    basic = await oauth.http.post(
        "/oauth/token", data={"grant_type": "authorization_code"}, auth=("nobody", "x")
    )
    _error(basic, 401, "invalid_client")
    assert basic.headers["www-authenticate"].startswith("Basic")


# --- PKCE ----------------------------------------------------------------------------------------


async def test_a_wrong_or_missing_verifier_is_invalid_grant(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    code, _ = await oauth.flow.code(client)
    _error(await oauth.flow.exchange(client, code, pkce()[0]), 400, "invalid_grant")
    code, _ = await oauth.flow.code(client)
    _error(await oauth.flow.exchange(client, code, None), 400, "invalid_grant")


@pytest.mark.parametrize("method", ["plain", "", "S512"])
async def test_a_challenge_method_other_than_s256_gets_no_code(oauth: Oauth, method: str) -> None:
    client = await oauth.flow.register()
    verifier, _ = pkce()
    params = oauth.flow.params(client, verifier, code_challenge_method=method)
    response = await oauth.flow.consent(params)
    assert response.status_code == 302
    back = httpx.URL(response.headers["location"]).params
    assert back["error"] == "invalid_request" and back["state"] == params["state"] and "code" not in back


async def test_a_request_without_a_challenge_gets_no_code(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    params = oauth.flow.params(client, "")
    del params["code_challenge"]
    response = await oauth.flow.consent(params)
    assert httpx.URL(response.headers["location"]).params["error"] == "invalid_request"


# --- codes ---------------------------------------------------------------------------------------


async def test_a_code_used_twice_fails_and_revokes_what_it_issued(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    code, verifier = await oauth.flow.code(client)
    first = await oauth.flow.exchange(client, code, verifier)
    assert first.status_code == 200
    _error(await oauth.flow.exchange(client, code, verifier), 400, "invalid_grant")
    assert (await oauth.flow.mcp(first.json()["access_token"])).status_code == 401
    _error(await oauth.flow.refresh(client, first.json()["refresh_token"]), 400, "invalid_grant")


async def test_two_racing_exchanges_of_one_code_give_one_token(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    code, verifier = await oauth.flow.code(client)
    answers = await asyncio.gather(*(oauth.flow.exchange(client, code, verifier) for _ in range(4)))
    assert sorted(answer.status_code for answer in answers) == [200, 400, 400, 400]


async def test_a_code_lasts_60_seconds(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    code, verifier = await oauth.flow.code(client)
    oauth.now[0] += CODE_TTL_S - 1
    assert (await oauth.flow.exchange(client, code, verifier)).status_code == 200
    code, verifier = await oauth.flow.code(client)
    oauth.now[0] += CODE_TTL_S
    response = await oauth.flow.exchange(client, code, verifier)
    _error(response, 400, "invalid_grant")
    assert "expired" in response.json()["error_description"]


async def test_a_code_is_bound_to_its_client(oauth: Oauth) -> None:
    client, other = await oauth.flow.register(), await oauth.flow.register()
    code, verifier = await oauth.flow.code(client)
    _error(await oauth.flow.exchange(other, code, verifier), 400, "invalid_grant")


async def test_a_code_is_bound_to_its_redirect_uri(oauth: Oauth) -> None:
    other_uri = "https://app.example/callback"
    client = await oauth.flow.register(redirect_uris=[REDIRECT_URI, other_uri])
    code, verifier = await oauth.flow.code(client)
    _error(await oauth.flow.exchange(client, code, verifier, redirect_uri=other_uri), 400, "invalid_grant")


async def test_an_unregistered_redirect_uri_is_never_redirected_to(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    _, challenge = pkce()
    response = await oauth.flow.consent(
        oauth.flow.params(client, challenge, redirect_uri="https://evil.example/cb")
    )
    assert response.status_code == 400 and "location" not in response.headers
    assert "redirect_uri" in response.text and "evil.example" not in response.text
    unknown = await oauth.flow.consent(oauth.flow.params({"client_id": "v2c-nobody"}, challenge))
    assert unknown.status_code == 400 and "location" not in unknown.headers


async def test_a_code_is_bound_to_its_resource(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    _, challenge = pkce()
    elsewhere = await oauth.flow.consent(
        oauth.flow.params(client, challenge, resource="https://other.example/mcp")
    )
    assert httpx.URL(elsewhere.headers["location"]).params["error"] == "invalid_target"
    code, verifier = await oauth.flow.code(client, resource="http://v2c.test/mcp")
    wrong = await oauth.flow.exchange(client, code, verifier, resource="https://other.example/mcp")
    _error(wrong, 400, "invalid_target")


# --- refresh, revocation, expiry, audience --------------------------------------------------------


async def test_refresh_rotates_and_a_reused_refresh_token_revokes_its_family(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    first = await oauth.flow.tokens(client)
    rotated = await oauth.flow.refresh(client, first["refresh_token"])
    assert rotated.status_code == 200
    second = rotated.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert (await oauth.flow.mcp(second["access_token"])).status_code == 200
    _error(await oauth.flow.refresh(client, first["refresh_token"]), 400, "invalid_grant")  # the reuse
    assert (await oauth.flow.mcp(second["access_token"])).status_code == 401
    assert (await oauth.flow.mcp(first["access_token"])).status_code == 401
    _error(await oauth.flow.refresh(client, second["refresh_token"]), 400, "invalid_grant")


async def test_a_refresh_asking_another_scope_spends_nothing(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    tokens = await oauth.flow.tokens(client)
    data = {
        "grant_type": "refresh_token",
        "refresh_token": tokens["refresh_token"],
        "client_id": client["client_id"],
    }
    _error(await oauth.http.post("/oauth/token", data={**data, "scope": "admin"}), 400, "invalid_scope")
    assert (await oauth.flow.refresh(client, tokens["refresh_token"])).status_code == 200


async def test_a_refresh_token_belongs_to_its_client(oauth: Oauth) -> None:
    client, other = await oauth.flow.register(), await oauth.flow.register()
    tokens = await oauth.flow.tokens(client)
    _error(await oauth.flow.refresh(other, tokens["refresh_token"]), 400, "invalid_grant")
    assert (
        await oauth.flow.refresh(client, tokens["refresh_token"])
    ).status_code == 200  # not spent by the other


async def test_a_revoked_token_is_refused(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    tokens = await oauth.flow.tokens(client)
    revoke = await oauth.http.post(
        "/oauth/revoke", data={"token": tokens["access_token"], "client_id": client["client_id"]}
    )
    assert revoke.status_code == 200
    assert (await oauth.flow.mcp(tokens["access_token"])).status_code == 401
    again = await oauth.http.post(
        "/oauth/revoke", data={"token": "unknown", "client_id": client["client_id"]}
    )
    assert again.status_code == 200  # RFC 7009: an unknown token is not an error
    # Revoking the refresh token ends its whole grant.
    tokens = await oauth.flow.tokens(client)
    await oauth.http.post(
        "/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": client["client_id"]}
    )
    assert (await oauth.flow.mcp(tokens["access_token"])).status_code == 401
    _error(await oauth.flow.refresh(client, tokens["refresh_token"]), 400, "invalid_grant")


async def test_an_expired_token_is_refused(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    tokens = await oauth.flow.tokens(client)
    oauth.now[0] += 3599
    assert (await oauth.flow.mcp(tokens["access_token"])).status_code == 200
    oauth.now[0] += 1
    assert (await oauth.flow.mcp(tokens["access_token"])).status_code == 401
    assert (await oauth.flow.refresh(client, tokens["refresh_token"])).status_code == 200


async def test_a_token_for_another_audience_is_refused(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    tokens = await oauth.flow.tokens(client)  # issued for http://v2c.test/mcp
    assert (await oauth.flow.mcp(tokens["access_token"], host="other.test")).status_code == 401
    assert (await oauth.flow.mcp(tokens["access_token"], host="v2c.test")).status_code == 200


# --- the consent form ------------------------------------------------------------------------------


async def test_the_consent_page_shows_client_host_and_scope_without_script(oauth: Oauth) -> None:
    client = await oauth.flow.register(client_name="<script>alert(1)</script>Cl\u00e4ude")
    _, challenge = pkce()
    page = await oauth.flow.consent(oauth.flow.params(client, challenge))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script" not in page.text and "&lt;script&gt;" in page.text and "Cl\u00e4ude" in page.text
    assert "127.0.0.1:8976" in page.text and "mcp" in page.text
    assert 'name="owner_key"' in page.text and 'method="post" action="/oauth/authorize"' in page.text
    fields = form_fields(page.text)
    assert (
        fields["csrf_token"]
        and fields["client_id"] == client["client_id"]
        and fields["redirect_uri"] == REDIRECT_URI
    )
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


async def test_a_consent_post_without_its_csrf_token_gets_no_code(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    _, challenge = pkce()
    params = oauth.flow.params(client, challenge)
    page = await oauth.flow.consent(params)
    for csrf in ("", "forged"):
        answer = await oauth.flow.approve(page, csrf_token=csrf)
        assert answer.status_code == 403 and "location" not in answer.headers
    # A token of another form (other parameters) does not carry over, and a spent one is spent.
    other = await oauth.flow.consent({**params, "state": "another"})
    answer = await oauth.flow.approve(page, csrf_token=form_fields(other.text)["csrf_token"])
    assert answer.status_code == 403
    assert (await oauth.flow.approve(other)).status_code == 403  # and it was spent by the try
    fresh = await oauth.flow.consent(params)
    assert (await oauth.flow.approve(fresh)).status_code == 302
    assert (await oauth.flow.approve(fresh)).status_code == 403  # a token is single-use


async def test_deny_redirects_with_access_denied(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    _, challenge = pkce()
    page = await oauth.flow.consent(oauth.flow.params(client, challenge))
    answer = await oauth.flow.approve(page, key="", decision="deny")
    back = httpx.URL(answer.headers["location"]).params
    assert back["error"] == "access_denied" and "code" not in back


async def test_wrong_owner_keys_show_the_page_again_and_are_limited(oauth: Oauth) -> None:
    client = await oauth.flow.register()
    _, challenge = pkce()
    page = await oauth.flow.consent(oauth.flow.params(client, challenge))
    for _ in range(4):
        page = await oauth.flow.approve(page, key="wrong-key")
        assert page.status_code == 403 and "location" not in page.headers
        assert "not an admin key" in page.text and "wrong-key" not in page.text
        page = httpx.Response(200, text=page.text)  # the re-shown page's fresh form
    locked = await oauth.flow.approve(page, key="wrong-key")
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) > 0
    # Now even the right key waits: the limit is checked before any key is compared.
    refused = await oauth.flow.approve(httpx.Response(200, text=locked.text))
    assert refused.status_code == 429 and "location" not in refused.headers


async def test_a_read_key_cannot_approve(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_API_KEYS": "reader:read:" + "ab" * 32})
    app = create_app(runtime, owns_runtime=False)
    transport = httpx.ASGITransport(app=app)
    async with asgi_lifespan(app), httpx.AsyncClient(transport=transport, base_url="http://v2c.test") as http:
        flow = Flow(http)
        client = await flow.register()
        page = await flow.consent(flow.params(client, pkce()[1]))
        assert "no admin key" in page.text and 'name="owner_key"' not in page.text


# --- registration ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example/cb#fragment",
        "javascript:alert(1)",
        "data:text/html,<b>x</b>",
        "http://app.example/cb",  # plain http off loopback
        "https://user:pw@app.example/cb",
        "https:///no-host",
        "https://app.example/ cb",
        "",
        "https://app.example/" + "a" * 3000,
        "file:///etc/passwd",
        "vbscript:msgbox",
        "cursor:no-host",
    ],
)
async def test_a_bad_redirect_uri_is_refused(oauth: Oauth, uri: str) -> None:
    response = await oauth.http.post("/oauth/register", json={"redirect_uris": [uri]})
    _error(response, 400, "invalid_redirect_uri")


@pytest.mark.parametrize(
    "uri",
    [
        "https://claude.ai/api/mcp/auth_callback",
        "https://chatgpt.com/connector_platform_oauth_redirect",
        "cursor://anysphere.cursor-mcp/oauth/callback",
        "http://127.0.0.1:33418/cb",
        "http://localhost/cb",
        "http://[::1]:9/",
    ],
)
async def test_https_and_loopback_redirect_uris_are_accepted(oauth: Oauth, uri: str) -> None:
    response = await oauth.http.post(
        "/oauth/register", json={"redirect_uris": [uri], "token_endpoint_auth_method": "none"}
    )
    assert response.status_code == 201 and response.json()["redirect_uris"] == [uri]
    assert "client_secret" not in response.json()


async def test_an_app_scheme_is_for_public_clients_only(oauth: Oauth) -> None:
    body = {"redirect_uris": ["cursor://anysphere.cursor-mcp/oauth/callback"]}
    _error(
        await oauth.http.post("/oauth/register", json=body), 400, "invalid_redirect_uri"
    )  # a secret client
    # Cursor's own registration: three URIs at once, a public client.
    cursor = [
        "cursor://anysphere.cursor-mcp/oauth/callback",
        "https://www.cursor.com/agents/mcp/oauth/callback",
        "http://localhost:8787/callback",
    ]
    client = await oauth.flow.register(redirect_uris=cursor, client_name="Cursor")
    page = await oauth.flow.consent(oauth.flow.params(client, pkce()[1], redirect_uri=cursor[0]))
    assert "cursor://anysphere.cursor-mcp" in page.text


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"not json", "invalid_client_metadata"),
        (b"[]", "invalid_client_metadata"),
        (b"{}", "invalid_client_metadata"),
        (json.dumps({"redirect_uris": "https://a.example/cb"}).encode(), "invalid_client_metadata"),
        (json.dumps({"redirect_uris": []}).encode(), "invalid_redirect_uri"),
        (json.dumps({"redirect_uris": ["https://a.example/cb"] * 11}).encode(), "invalid_redirect_uri"),
        (
            json.dumps(
                {"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}
            ).encode(),
            "invalid_client_metadata",
        ),
        (
            json.dumps(
                {"redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]}
            ).encode(),
            "invalid_client_metadata",
        ),
        (
            json.dumps({"redirect_uris": ["https://a.example/cb"], "scope": "admin"}).encode(),
            "invalid_client_metadata",
        ),
        (
            json.dumps({"redirect_uris": ["https://a.example/cb"], "client_name": "x" * 201}).encode(),
            "invalid_client_metadata",
        ),
        (
            b'{"redirect_uris": ["https://a.example/cb"], "pad": "' + b"x" * 20_000 + b'"}',
            "invalid_client_metadata",
        ),
    ],
)
async def test_malformed_registrations_are_refused(oauth: Oauth, body: bytes, code: str) -> None:
    response = await oauth.http.post(
        "/oauth/register", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code in (400, 413)
    _error(response, response.status_code, code)


async def test_registrations_are_limited_per_address(oauth: Oauth, runtime_kind: str) -> None:
    """10,000 registrations from one address (on the memory runtime; the others stop after the limit
    is shown): the first ``REGISTRATIONS_PER_HOUR`` succeed, every other one is 429."""
    attempts = 10_000 if runtime_kind == "memory" else REGISTRATIONS_PER_HOUR + 5
    body = {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    statuses: list[int] = []
    for start in range(0, attempts, 500):
        batch = [oauth.http.post("/oauth/register", json=body) for _ in range(min(500, attempts - start))]
        statuses += [response.status_code for response in await asyncio.gather(*batch)]
    assert statuses.count(201) == REGISTRATIONS_PER_HOUR
    assert statuses.count(429) == attempts - REGISTRATIONS_PER_HOUR
    other = httpx.ASGITransport(app=oauth.http._transport.app, client=("198.51.100.9", 1))  # type: ignore[attr-defined]
    async with httpx.AsyncClient(transport=other, base_url="http://v2c.test") as elsewhere:
        assert (await elsewhere.post("/oauth/register", json=body)).status_code == 201


# --- malformed token requests ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "status", "code"),
    [
        ({"grant_type": "password", "username": "a", "password": "b"}, 400, "unsupported_grant_type"),
        ({"grant_type": "client_credentials"}, 400, "unsupported_grant_type"),
        ({}, 400, "unsupported_grant_type"),
        ({"grant_type": "authorization_code", "code": "x", "client_id": "v2c-nobody"}, 401, "invalid_client"),
        ({"grant_type": "authorization_code", "code": "x"}, 401, "invalid_client"),
    ],
)
async def test_malformed_token_requests_follow_rfc_6749(
    oauth: Oauth, data: dict, status: int, code: str
) -> None:
    _error(await oauth.http.post("/oauth/token", data=data), status, code)


async def test_a_repeated_parameter_or_an_oversized_body_is_refused(oauth: Oauth) -> None:
    twice = await oauth.http.post(
        "/oauth/token",
        content=b"grant_type=authorization_code&grant_type=refresh_token",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    _error(twice, 400, "invalid_request")
    huge = await oauth.http.post("/oauth/token", data={"grant_type": "x" * 20_000})
    _error(huge, 413, "invalid_request")


# --- secrets stay secret ------------------------------------------------------------------------------


async def test_no_secret_reaches_a_log_line_or_another_response(
    oauth: Oauth, capfd: pytest.CaptureFixture[str]
) -> None:
    """Every secret of a whole flow (owner key, client secret, CSRF token, code, verifier, access and
    refresh tokens), and every answer that is not meant to carry it: none holds it, and no log line."""
    responses: list[httpx.Response] = []

    async def record(response: httpx.Response) -> None:
        await response.aread()
        responses.append(response)

    oauth.http.event_hooks["response"].append(record)
    client = await oauth.flow.register(token_endpoint_auth_method="client_secret_post")
    verifier, challenge = pkce()
    page = await oauth.flow.consent(oauth.flow.params(client, challenge))
    csrf = form_fields(page.text)["csrf_token"]
    wrong = await oauth.flow.approve(page, key=OWNER_KEY + "-wrong")
    answer = await oauth.flow.approve(httpx.Response(200, text=wrong.text))
    code = httpx.URL(answer.headers["location"]).params["code"]
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT_URI,
    }
    data |= {"client_id": client["client_id"], "client_secret": client["client_secret"]}
    tokens = (await oauth.http.post("/oauth/token", data=data)).json()
    await oauth.http.post("/oauth/token", data=data)  # reused: an error that must not echo the code
    await oauth.http.get(f"/oauth/authorize?client_id={client['client_id']}&code_challenge={code}")
    await oauth.flow.mcp(tokens["access_token"])
    await oauth.flow.mcp(tokens["access_token"] + "x")
    await oauth.http.get("/api/v1/library", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    await oauth.flow.refresh(client, tokens["refresh_token"] + "x")
    await oauth.http.post("/oauth/revoke", data={"token": tokens["access_token"], **data})
    secrets_meant = {
        OWNER_KEY: set(),
        client["client_secret"]: {0},  # the registration answer gives it once
        csrf: {1},  # the consent page carries its own form's token
        code: {3},  # the approval redirect carries it
        verifier: set(),
        tokens["access_token"]: {4},
        tokens["refresh_token"]: {4},
    }
    for secret, allowed in secrets_meant.items():
        for index, response in enumerate(responses):
            shown = response.text + "".join(f"{k}: {v}\n" for k, v in response.headers.items())
            if index in allowed:
                continue
            assert secret not in shown, f"a secret appears in response {index} ({response.request.url.path})"
    logged = capfd.readouterr()
    assert logged.err.count('"path"') >= len(responses) - 1  # the access log did write lines
    for secret in secrets_meant:
        assert secret not in logged.out + logged.err, "a secret appears in a log line"


# --- the store ------------------------------------------------------------------------------------


async def test_the_store_keeps_digests_never_the_secrets(oauth: Oauth, runtimes: Runtimes) -> None:
    client = await oauth.flow.register(token_endpoint_auth_method="client_secret_post")
    code, verifier = await oauth.flow.code({**client})
    data = {"client_secret": client["client_secret"], "redirect_uri": REDIRECT_URI}
    tokens = (await oauth.flow.exchange(client, code, verifier, **data)).json()
    secrets = [client["client_secret"], code, tokens["access_token"], tokens["refresh_token"]]
    if runtimes.kind == "sqlite":
        held = oauth.runtime.storage.database.path.read_bytes()
        for wal in oauth.runtime.storage.database.path.parent.glob("*.db-wal"):
            held += wal.read_bytes()
        assert b"oauth_grants" in held
    elif runtimes.kind == "worker":
        env = runtimes.env_of(oauth.runtime)
        rows = (await env.DB.prepare("SELECT * FROM oauth_grants").all()).to_py()["results"]
        clients = (await env.DB.prepare("SELECT * FROM oauth_clients").all()).to_py()["results"]
        keys = await runtimes.kv_keys(oauth.runtime, "oauth:")
        held = json.dumps([rows, clients, keys]).encode()
        assert len(rows) >= 3 and any(key.startswith("oauth:access:") for key in keys)
    else:
        store = oauth.runtime.oauth
        held = repr([store._clients, store._grants]).encode()
    for secret in secrets:
        assert secret.encode() not in held


async def test_a_single_use_grant_is_spent_once_under_a_race(oauth: Oauth) -> None:
    from vid2context.auth.store import Grant

    store = oauth.runtime.oauth
    grant = Grant(kind="code", client_id="c", family="fam", expires_at=oauth.now[0] + 60)
    await store.put_grant("d" * 64, grant, now=oauth.now[0])
    spent = await asyncio.gather(*(store.use_grant("d" * 64, "code") for _ in range(8)))
    assert sorted(first for _, first in spent) == [False] * 7 + [True]
    assert await store.use_grant("d" * 64, "refresh") is None  # another kind is another grant
    assert await store.revoke_family("fam") == 1
    assert await store.use_grant("d" * 64, "code") is None and await store.get_grant("d" * 64, "code") is None


# --- settings --------------------------------------------------------------------------------------


async def test_oauth_off_serves_none_of_it(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_API_KEYS": OWNER_KEY, "VID2CONTEXT_OAUTH": "0"})
    app = create_app(runtime, owns_runtime=False)
    assert app.state.oauth is None
    async with (
        asgi_lifespan(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://v2c.test") as http,
    ):
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"):
            assert (await http.get(path)).status_code == 404
        assert (await http.post("/oauth/register", json={"redirect_uris": [REDIRECT_URI]})).status_code in (
            404,
            405,
        )
        assert (await http.post("/oauth/token", data={"grant_type": "authorization_code"})).status_code in (
            404,
            405,
        )
        response = await Flow(http).mcp("anything")
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
        assert (await Flow(http).mcp(OWNER_KEY)).status_code == 200  # the static tokens still work


async def test_the_public_origin_names_issuer_and_resource(runtimes: Runtimes) -> None:
    settings = {"VID2CONTEXT_API_KEYS": OWNER_KEY, "VID2CONTEXT_PUBLIC_ORIGIN": "https://v2c.example.com/"}
    app = create_app(await runtimes.build(settings), owns_runtime=False)
    async with (
        asgi_lifespan(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://10.0.0.5:8787") as http,
    ):
        resource = (await http.get("/.well-known/oauth-protected-resource")).json()
        assert resource["resource"] == "https://v2c.example.com/mcp"
        assert resource["authorization_servers"] == ["https://v2c.example.com"]
        server = (await http.get("/.well-known/oauth-authorization-server")).json()
        assert server["issuer"] == "https://v2c.example.com"
        assert server["token_endpoint"] == "https://v2c.example.com/oauth/token"
        flow = Flow(http)
        tokens = await flow.tokens(await flow.register())
        assert (await flow.mcp(tokens["access_token"])).status_code == 200  # bound to the public origin
        refused = await flow.mcp("wrong")
        assert (
            'resource_metadata="https://v2c.example.com/.well-known/' in refused.headers["www-authenticate"]
        )


@pytest.mark.parametrize(
    "origin", ["v2c.example.com", "ftp://v2c.example.com", "https://v2c.example.com/path", "https://"]
)
async def test_a_malformed_public_origin_stops_start_up_naming_the_variable(
    runtimes: Runtimes, origin: str
) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_PUBLIC_ORIGIN": origin})
    with pytest.raises(VidError) as raised:
        create_app(runtime)
    assert "VID2CONTEXT_PUBLIC_ORIGIN" in raised.value.message and origin not in raised.value.message
