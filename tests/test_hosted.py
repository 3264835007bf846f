"""Hosted mode end to end: GitHub sign-in through a stand-in, sessions, account keys, quotas.

Every test runs the real app (``create_app``) over a real store: SQLite locally and, where marked,
the Worker runtime over Miniflare's D1 and KV (``tests/runtimes.py``). GitHub is
``tests/fake_github.py`` on loopback, answering as GitHub documents its OAuth web flow; YouTube is
the replay server. The browser is played by hand: cookies are read from ``Set-Cookie`` and sent
back as ``Cookie`` (``Secure`` cookies would not travel over the test's ``http://`` in a jar).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from vid2context.api import create_app

from .fake_github import CLIENT_SECRET, FakeGitHub, User
from .oauth_client import Flow, form_fields, pkce
from .runtimes import Runtimes, serve
from .youtube_replay import ReplayServer

pytestmark = pytest.mark.anyio

LOCAL_AND_WORKER = pytest.mark.parametrize("runtime_kind", ["sqlite", "worker"], indirect=True)
EVERY_STORE = pytest.mark.parametrize("runtime_kind", ["memory", "sqlite", "worker"], indirect=True)
VIDEO = "GJLlxj_dtq8"
OTHER_VIDEO = "F1xioXWb8CY"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def youtube() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def set_cookies(response: httpx.Response) -> dict[str, dict[str, Any]]:
    """Each cookie ``response`` sets: its value and attributes (flags as ``True``)."""
    found = {}
    for raw in response.headers.get_list("set-cookie"):
        parsed = SimpleCookie()
        parsed.load(raw)
        for name, morsel in parsed.items():
            flags = {part.strip().lower() for part in raw.split(";")[1:]}
            found[name] = {"value": morsel.value, "raw": raw, "flags": flags, "path": morsel["path"]}
    return found


class Browser:
    """The test's browser: one app client, the GitHub stand-in, and the cookies it was given."""

    def __init__(self, http: httpx.AsyncClient, github: FakeGitHub) -> None:
        self.http = http
        self.github = github
        self.cookies: dict[str, str] = {}
        self.responses: list[httpx.Response] = []

    def _keep(self, response: httpx.Response) -> httpx.Response:
        self.responses.append(response)
        for name, cookie in set_cookies(response).items():
            if "max-age=0" in cookie["flags"]:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = cookie["value"]
        return response

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return headers

    async def get(self, url: str, **headers: str) -> httpx.Response:
        return self._keep(await self.http.get(url, headers=self._headers(headers)))

    async def request(
        self, method: str, url: str, *, json: Any = None, data: Any = None, **headers: str
    ) -> httpx.Response:
        return self._keep(
            await self.http.request(method, url, json=json, data=data, headers=self._headers(headers))
        )

    def at_github(self, location: str) -> httpx.Response:
        """Follow a redirect to GitHub (a real HTTP request to the stand-in), not its answer's. The
        browser's own traffic is not logged: the log check is about the server's lines."""
        before = logging.root.manager.disable
        logging.disable(logging.CRITICAL)  # the app is not running meanwhile: nothing of it is lost
        try:
            answer = httpx.get(location, follow_redirects=False)
        finally:
            logging.disable(before)
        assert answer.status_code == 302, answer.text
        return answer

    async def sign_in(self, next_path: str = "/api/v1/me") -> httpx.Response:
        """The whole flow: our login, GitHub's authorize, our callback. The callback's answer."""
        start = await self.get(f"/api/v1/auth/github/login?next={next_path}")
        assert start.status_code == 302, start.text
        back = self.at_github(start.headers["location"])
        callback = urlsplit(back.headers["location"])
        assert callback.path == "/api/v1/auth/github/callback"
        return await self.get(f"{callback.path}?{callback.query}")


@asynccontextmanager
async def hosted_app(
    runtimes: Runtimes, github: FakeGitHub, **settings: str
) -> AsyncIterator[tuple[Any, Browser]]:
    runtime = await runtimes.build({**github.settings(), "VID2CONTEXT_RATE_LIMIT": "0", **settings})
    app = create_app(runtime, owns_runtime=False)
    async with serve(app) as http:
        yield app, Browser(http, github)


# --- signing in -----------------------------------------------------------------------------------


@EVERY_STORE
async def test_github_sign_in_sets_a_session_cookie_and_opens_me(
    runtimes: Runtimes, github: FakeGitHub
) -> None:
    async with hosted_app(runtimes, github) as (_, browser):
        start = await browser.get("/api/v1/auth/github/login?next=/api/v1/me/usage")
        assert start.status_code == 302
        asked = parse_qs(urlsplit(start.headers["location"]).query)
        assert start.headers["location"].startswith(github.web_url + "/login/oauth/authorize?")
        assert asked["client_id"] == [github.client_id]
        assert asked["redirect_uri"] == ["http://testserver/api/v1/auth/github/callback"]
        assert asked["code_challenge_method"] == ["S256"] and len(asked["code_challenge"][0]) == 43
        assert "scope" not in asked  # the public profile is all we read
        state_cookie = set_cookies(start)["v2c_signin"]
        assert state_cookie["value"] == asked["state"][0]
        assert {"httponly", "secure", "samesite=lax"} <= state_cookie["flags"]

        back = browser.at_github(start.headers["location"])
        callback = urlsplit(back.headers["location"])
        done = await browser.get(f"{callback.path}?{callback.query}")
        assert done.status_code == 302, done.text
        assert done.headers["location"] == "/api/v1/me/usage"
        assert done.headers["cache-control"] == "no-store"
        session = set_cookies(done)["v2c_session"]
        assert {"httponly", "secure", "samesite=lax", "max-age=2592000"} <= session["flags"]
        assert session["path"] == "/"
        assert len(session["value"]) >= 43
        # one Set-Cookie per answer: the Worker's adapter (workers.asgi, Object.fromEntries) keeps
        # only the last header of a name; the spent state cookie expires on its own
        assert len(done.headers.get_list("set-cookie")) == 1

        # PKCE: the verifier sent to GitHub's token endpoint matches the challenge of the authorize step
        (token_form,) = github.seen.token
        verifier = token_form["code_verifier"]
        import base64

        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        assert challenge == asked["code_challenge"][0]

        me = await browser.get("/api/v1/me")
        assert me.status_code == 200, me.text
        body = me.json()
        assert body["login"] == "octocat" and body["plan"] == "free" and body["id"].startswith("acct_")
        assert set(body) == {"id", "login", "plan"}
        usage = (await browser.get("/api/v1/me/usage")).json()
        assert usage["used"] == {"videos": 0, "sttMinutes": 0}
        assert usage["limits"] == {"videos": 100, "sttMinutes": 60, "addressVideos": 300}
        assert len(usage["period"]) == 10 and 0 < usage["resetsInSec"] <= 86_400

        # signing in again (a renamed GitHub user) is the same account, with the new login
        github.user = User(id=583231, login="octocat-renamed")
        await browser.sign_in()
        again = (await browser.get("/api/v1/me")).json()
        assert again == {**body, "login": "octocat-renamed"}

        assert all(len(r.headers.get_list("set-cookie")) <= 1 for r in browser.responses)
        out = await browser.request("POST", "/api/v1/auth/logout")
        assert out.status_code == 204
        assert "max-age=0" in set_cookies(out)["v2c_session"]["flags"]
        assert (await browser.get("/api/v1/me")).status_code == 401


@LOCAL_AND_WORKER
async def test_only_the_github_id_and_login_are_stored_and_secrets_only_as_digests(
    runtimes: Runtimes, github: FakeGitHub
) -> None:
    async with hosted_app(runtimes, github) as (app, browser):
        await browser.sign_in()
        session = browser.cookies["v2c_session"]
        made = (await browser.request("POST", "/api/v1/me/keys", json={"name": "laptop"})).json()
        sql = app.state["runtime"].sql
        (account,) = await sql.rows("SELECT * FROM accounts")
        assert set(account) == {"id", "github_id", "login", "plan", "created_at"}
        assert (account["github_id"], account["login"]) == (583231, "octocat")
        rows = [
            *await sql.rows("SELECT * FROM accounts"),
            *await sql.rows("SELECT * FROM account_sessions"),
            *await sql.rows("SELECT * FROM account_keys"),
        ]
        stored = repr(rows)
        (github_token,) = github.tokens
        for secret in (
            session,
            made["key"],
            github_token,
            CLIENT_SECRET,
            "octocat@example.com",
            "The Octocat",
        ):
            assert secret not in stored
        assert hashlib.sha256(session.encode()).hexdigest() in stored
        assert hashlib.sha256(made["key"].encode()).hexdigest() in stored
        if runtimes.kind == "worker":  # nor in KV (the sign-in state was spent and deleted)
            assert await runtimes.kv_keys(app.state["runtime"], "signin:") == []


@LOCAL_AND_WORKER
async def test_bad_sign_ins_are_refused_with_a_hint(runtimes: Runtimes, github: FakeGitHub) -> None:
    async with hosted_app(runtimes, github) as (_, browser):
        # forged state: a callback whose state this browser never started
        start = await browser.get("/api/v1/auth/github/login")
        back = urlsplit(browser.at_github(start.headers["location"]).headers["location"])
        query = parse_qs(back.query)
        code = query["code"][0]
        forged = await browser.get(f"/api/v1/auth/github/callback?code={code}&state=forged-state")
        assert forged.status_code == 400
        assert forged.json()["error"]["code"] == "bad-request"
        assert "/api/v1/auth/github/login" in forged.json()["error"]["hint"]
        # someone else's state and code, in a browser without the state cookie (login CSRF)
        stranger = Browser(browser.http, github)
        csrf = await stranger.get(f"/api/v1/auth/github/callback?{back.query}")
        assert csrf.status_code == 400
        assert "v2c_session" not in set_cookies(csrf)
        # missing code (the state is spent by it)
        start = await browser.get("/api/v1/auth/github/login")
        state = parse_qs(urlsplit(start.headers["location"]).query)["state"][0]
        missing = await browser.get(f"/api/v1/auth/github/callback?state={state}")
        assert missing.status_code == 400 and "no code" in missing.json()["error"]["message"]
        # a spent state
        reused = await browser.get(f"/api/v1/auth/github/callback?state={state}&code=abc")
        assert reused.status_code == 400
        # no state at all
        assert (await browser.get("/api/v1/auth/github/callback?code=abc")).status_code == 400
        # the person said no at GitHub
        github.deny = True
        denied = await browser.sign_in()
        assert denied.status_code == 400 and "access_denied" in denied.json()["error"]["message"]
        github.deny = False
        # GitHub refuses the code: a code already spent at GitHub (bad_verification_code)
        start = await browser.get("/api/v1/auth/github/login")
        back = urlsplit(browser.at_github(start.headers["location"]).headers["location"])
        github.codes[parse_qs(back.query)["code"][0]].used = True
        spent = await browser.get(f"{back.path}?{back.query}")
        assert spent.status_code == 400
        assert "bad_verification_code" in spent.json()["error"]["message"]
        # GitHub answering 500 at the token endpoint
        start = await browser.get("/api/v1/auth/github/login")
        back = urlsplit(browser.at_github(start.headers["location"]).headers["location"])
        github.fail_next = [500]
        down = await browser.get(f"{back.path}?{back.query}")
        assert down.status_code == 502 and down.json()["error"]["code"] == "upstream"
        assert down.json()["error"]["hint"]
        # ... and at GET /user, after a good token answer
        start = await browser.get("/api/v1/auth/github/login")
        back = urlsplit(browser.at_github(start.headers["location"]).headers["location"])
        github.fail_at["/api/user"] = [500]
        down = await browser.get(f"{back.path}?{back.query}")
        assert down.status_code == 502 and "GET /user answered 500" in down.json()["error"]["message"]
        assert "v2c_session" not in set_cookies(down)
        # our app's credentials refused: the operator's to fix (auth, 502)
        github.client_secret = "rotated-at-github"
        start = await browser.get("/api/v1/auth/github/login")
        back = urlsplit(browser.at_github(start.headers["location"]).headers["location"])
        wrong = await browser.get(f"{back.path}?{back.query}")
        assert wrong.status_code == 502 and wrong.json()["error"]["code"] == "auth"
        assert "VID2CONTEXT_GITHUB_CLIENT_SECRET" in wrong.json()["error"]["hint"]
        # a next that leaves this server goes to the account page instead
        github.client_secret = CLIENT_SECRET
        for hostile in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
            done = await browser.sign_in(next_path=hostile)
            assert done.headers["location"] == "/api/v1/me", hostile


async def test_an_html_page_from_the_token_endpoint_is_upstream(
    runtimes: Runtimes, github: FakeGitHub
) -> None:
    async with hosted_app(runtimes, github) as (_, browser):
        start = await browser.get("/api/v1/auth/github/login")
        back = urlsplit(browser.at_github(start.headers["location"]).headers["location"])
        github.fail_next = [200]  # the token endpoint answers 200 with an HTML page in place of JSON
        html = await browser.get(f"{back.path}?{back.query}")
        assert html.status_code == 502 and html.json()["error"]["code"] == "upstream"
        assert "did not answer JSON" in html.json()["error"]["message"]


async def test_without_the_github_app_sign_in_says_what_to_set(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_HOSTED": "1"})
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.get("/api/v1/auth/github/login")
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "no-provider"
        assert "VID2CONTEXT_GITHUB_CLIENT_ID" in answer.json()["error"]["hint"]


async def test_outside_hosted_mode_the_account_routes_are_not_found(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({})
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        for method, path in (
            ("GET", "/api/v1/auth/github/login"),
            ("GET", "/api/v1/me"),
            ("POST", "/api/v1/me/keys"),
            ("POST", "/api/v1/auth/logout"),
        ):
            answer = await http.request(method, path, json={"name": "x"} if method == "POST" else None)
            assert answer.status_code == 404, (method, path)
            assert "VID2CONTEXT_HOSTED" in answer.json()["error"]["hint"]


# --- closed routes --------------------------------------------------------------------------------


@LOCAL_AND_WORKER
async def test_every_route_but_health_auth_and_discovery_needs_a_session_or_key(
    runtimes: Runtimes, github: FakeGitHub
) -> None:
    async with hosted_app(runtimes, github) as (_, browser):
        http = browser.http
        for path in (
            "/api/v1/health",
            "/api/v1/openapi.json",
            "/.well-known/ai-catalog.json",
            "/mcp/server-card",
        ):
            assert (await http.get(path)).status_code == 200, path
        assert (await http.get("/api/v1/auth/github/login")).status_code == 302
        for method, path in (
            ("GET", "/api/v1/library"),
            ("GET", f"/api/v1/context?url={VIDEO}"),
            ("GET", "/api/v1/me"),
            ("GET", "/api/v1/me/keys"),
            ("POST", "/api/v1/me/keys"),
            ("DELETE", "/api/v1/me/keys/key_x"),
            ("POST", "/api/v1/pack"),
            ("GET", "/api/v1/no-such-route"),
        ):
            answer = await http.request(method, path)
            assert answer.status_code == 401, (method, path, answer.text)
            assert answer.json()["error"]["code"] == "unauthorized"
            assert "/api/v1/auth/github/login" in answer.json()["error"]["hint"]
        answer = await http.get("/api/v1/library", headers={"Cookie": "v2c_session=made-up"})
        assert answer.status_code == 401
        answer = await http.get("/api/v1/library", headers={"Authorization": "Bearer v2c_made-up"})
        assert answer.status_code == 401
        mcp = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert mcp.status_code == 401
        # a session cookie does not open /mcp (bearer tokens only there)
        await browser.sign_in()
        mcp = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Cookie": f"v2c_session={browser.cookies['v2c_session']}"},
        )
        assert mcp.status_code == 401


# --- account keys ---------------------------------------------------------------------------------


@LOCAL_AND_WORKER
async def test_keys_are_shown_once_work_as_api_keys_and_stop_when_deleted(
    runtimes: Runtimes, github: FakeGitHub
) -> None:
    async with hosted_app(runtimes, github) as (_, browser):
        await browser.sign_in()
        made = await browser.request("POST", "/api/v1/me/keys", json={"name": "laptop"})
        assert made.status_code == 201, made.text
        assert made.headers["cache-control"] == "no-store"
        key = made.json()
        assert key["key"].startswith("v2c_") and len(key["key"]) >= 40
        assert key["prefix"] == key["key"][:8] and key["name"] == "laptop"
        listed = (await browser.get("/api/v1/me/keys")).json()
        assert listed == {"keys": [{k: key[k] for k in ("id", "name", "prefix", "createdAt")}]}
        assert key["key"] not in repr(listed)

        http = browser.http
        bearer = {"Authorization": f"Bearer {key['key']}"}
        me = await http.get("/api/v1/me", headers=bearer)
        assert me.status_code == 200 and me.json()["login"] == "octocat"
        assert (await http.get("/api/v1/library", headers=bearer)).status_code == 200
        # an account reads; it does not change the shared library
        refused = await http.post("/api/v1/collections", json={"name": "mine"}, headers=bearer)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        # ... but manages its own keys with its key
        second = await http.post("/api/v1/me/keys", json={"name": "ci"}, headers=bearer)
        assert second.status_code == 201
        # MCP takes the key too
        mcp = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**bearer, "Accept": "application/json, text/event-stream"},
        )
        assert mcp.status_code != 401, mcp.text

        deleted = await browser.request("DELETE", f"/api/v1/me/keys/{key['id']}")
        assert deleted.status_code == 204
        gone = await http.get("/api/v1/me", headers=bearer)
        assert gone.status_code == 401 and gone.json()["error"]["code"] == "unauthorized"
        again = await browser.request("DELETE", f"/api/v1/me/keys/{key['id']}")
        assert again.status_code == 404 and again.json()["error"]["hint"]
        assert (await browser.request("DELETE", "/api/v1/me/keys/" + "x" * 500)).status_code == 404
        # another account cannot see or delete this one's keys
        github.user = User(id=42, login="someone-else")
        other = Browser(http, github)
        await other.sign_in()
        assert (await other.get("/api/v1/me/keys")).json() == {"keys": []}
        theirs = (await browser.get("/api/v1/me/keys")).json()["keys"][0]["id"]
        assert (await other.request("DELETE", f"/api/v1/me/keys/{theirs}")).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        None,
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 65},
        {"name": "bad\u0000name"},
        {"name": 7},
        {"name": "ok", "scope": "admin"},
        [1, 2],
        "just text",
    ],
)
async def test_malformed_key_requests_are_bad_request(
    runtimes: Runtimes, github: FakeGitHub, body: Any
) -> None:
    async with hosted_app(runtimes, github) as (_, browser):
        await browser.sign_in()
        answer = await browser.request("POST", "/api/v1/me/keys", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] == "bad-request" and answer.json()["error"]["hint"]
        assert (await browser.get("/api/v1/me/keys")).json() == {"keys": []}


async def test_a_session_change_from_a_foreign_origin_is_forbidden(
    runtimes: Runtimes, github: FakeGitHub
) -> None:
    async with hosted_app(runtimes, github) as (_, browser):
        await browser.sign_in()
        foreign = await browser.request(
            "POST", "/api/v1/me/keys", json={"name": "x"}, Origin="https://evil.example"
        )
        assert foreign.status_code == 403
        same = await browser.request(
            "POST", "/api/v1/me/keys", json={"name": "x"}, Origin="http://testserver"
        )
        assert same.status_code == 201


async def test_too_many_keys(runtimes: Runtimes, github: FakeGitHub) -> None:
    from vid2context.auth.accounts import MAX_KEYS

    async with hosted_app(runtimes, github) as (_, browser):
        await browser.sign_in()
        for n in range(MAX_KEYS):
            assert (
                await browser.request("POST", "/api/v1/me/keys", json={"name": f"k{n}"})
            ).status_code == 201
        over = await browser.request("POST", "/api/v1/me/keys", json={"name": "one more"})
        assert over.status_code == 400 and "Remove a key" in over.json()["error"]["hint"]


# --- the OAuth consent page in hosted mode --------------------------------------------------------


@LOCAL_AND_WORKER
async def test_the_consent_page_signs_in_with_github_and_the_token_counts_against_the_account(
    runtimes: Runtimes, github: FakeGitHub, youtube: ReplayServer
) -> None:
    async with hosted_app(
        runtimes,
        github,
        VID2CONTEXT_MCP_RATE_LIMIT="0",
        VID2CONTEXT_QUOTA_VIDEOS="1",
        VID2CONTEXT_YOUTUBE_ORIGIN=youtube.origin,
    ) as (_, browser):
        flow = Flow(browser.http)
        client = await flow.register()
        verifier, challenge = pkce()
        params = flow.params(client, challenge)
        page = await browser.get("/oauth/authorize?" + urlencode(params))
        assert page.status_code == 200, page.text
        assert 'name="owner_key"' not in page.text  # no owner key in hosted mode
        assert 'formaction="/api/v1/auth/github/consent"' in page.text and "<script" not in page.text
        # Approve before signing in: the page again, with the error, and no code
        fields = {**form_fields(page.text), "decision": "approve"}
        early = await browser.request("POST", "/oauth/authorize", data=fields)
        assert early.status_code == 403 and "Sign in with GitHub first" in early.text
        assert "location" not in early.headers
        # the button: the form's fields to the consent sign-in, then GitHub, then back to the same page
        fields = {**form_fields(early.text), "decision": "sign-in"}
        start = await browser.get("/api/v1/auth/github/consent?" + urlencode(fields))
        assert start.status_code == 302 and start.headers["location"].startswith(github.web_url)
        back = urlsplit(browser.at_github(start.headers["location"]).headers["location"])
        signed = await browser.get(f"{back.path}?{back.query}")
        assert signed.status_code == 302
        returned = urlsplit(signed.headers["location"])
        assert returned.path == "/oauth/authorize"
        carried = {k: v[0] for k, v in parse_qs(returned.query).items()}
        assert carried.items() >= params.items() and "csrf_token" not in carried and "decision" not in carried
        page = await browser.get(signed.headers["location"])
        approved = await browser.request(
            "POST", "/oauth/authorize", data={**form_fields(page.text), "decision": "approve"}
        )
        assert approved.status_code == 302, approved.text
        code = httpx.URL(approved.headers["location"]).params["code"]
        tokens = (await flow.exchange(client, code, verifier)).json()
        listed = await flow.mcp(tokens["access_token"])
        assert listed.status_code == 200, listed.text
        # the token's tool calls count against the signed-in account
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "get_metadata", "arguments": {"url": VIDEO}},
        }
        headers = {
            "Authorization": f"Bearer {tokens['access_token']}",
            "Accept": "application/json, text/event-stream",
            "Mcp-Protocol-Version": "2025-11-25",
        }
        for video in (VIDEO, OTHER_VIDEO):
            call["params"] = {"name": "get_transcript", "arguments": {"url": video}}
            answer = await browser.http.post("/mcp", json=call, headers=headers)
            assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        assert result["isError"] is True and "rate-limited" in result["content"][0]["text"]
        usage = (await browser.get("/api/v1/me/usage")).json()
        assert usage["used"]["videos"] == 1


# --- quotas ---------------------------------------------------------------------------------------


@LOCAL_AND_WORKER
async def test_videos_over_the_daily_quota_are_429_with_retry_after(
    runtimes: Runtimes, github: FakeGitHub, youtube: ReplayServer
) -> None:
    async with hosted_app(
        runtimes, github, VID2CONTEXT_QUOTA_VIDEOS="1", VID2CONTEXT_YOUTUBE_ORIGIN=youtube.origin
    ) as (_, browser):
        await browser.sign_in()
        first = await browser.get(f"/api/v1/context?url={VIDEO}")
        assert first.status_code == 200, first.text
        cached = await browser.get(f"/api/v1/context?url={VIDEO}")
        assert cached.status_code == 200  # a library copy is free
        over = await browser.get(f"/api/v1/context?url={OTHER_VIDEO}")
        assert over.status_code == 429, over.text
        assert over.json()["error"]["code"] == "rate-limited"
        assert 0 < int(over.headers["retry-after"]) <= 86_400
        assert "00:00 UTC" in over.json()["error"]["hint"]
        usage = (await browser.get("/api/v1/me/usage")).json()
        assert usage["used"]["videos"] == 1 and usage["limits"]["videos"] == 1


async def test_the_address_quota_holds_across_accounts(
    runtimes: Runtimes, github: FakeGitHub, youtube: ReplayServer
) -> None:
    async with hosted_app(
        runtimes, github, VID2CONTEXT_QUOTA_ADDRESS_VIDEOS="1", VID2CONTEXT_YOUTUBE_ORIGIN=youtube.origin
    ) as (_, browser):
        await browser.sign_in()
        assert (await browser.get(f"/api/v1/context?url={VIDEO}")).status_code == 200
        github.user = User(id=7, login="second-account")
        other = Browser(browser.http, github)
        await other.sign_in()
        over = await other.get(f"/api/v1/context?url={OTHER_VIDEO}")
        assert over.status_code == 429 and "from this address" in over.json()["error"]["message"]


async def test_speech_to_text_minutes_are_metered(runtimes: Runtimes) -> None:
    """The STT ladder's hook: a spent day is refused before any rung runs; minutes are counted
    after one answers."""
    from vid2context.auth.hosted import Hosted
    from vid2context.ctx import METER, Ctx
    from vid2context.errors import VidError
    from vid2context.pipeline import transcribe
    from vid2context.providers.speech import AudioInput

    runtime = await runtimes.build(
        {
            "VID2CONTEXT_HOSTED": "1",
            "VID2CONTEXT_QUOTA_STT_MINUTES": "2",
            "VID2CONTEXT_STT_URL": "http://127.0.0.1:9/v1",  # enabled, and never reached
        }
    )
    hosted = Hosted(runtime)
    account = await hosted.store.sign_in(9, "talker", now="2026-12-01T00:00:00Z")
    meter = hosted.meter((await _principal(hosted, account)), "127.0.0.1")
    token = METER.set(meter)
    try:
        ctx = Ctx()
    finally:
        METER.reset(token)
    assert ctx.meter is meter
    await meter.stt_used(90.2)  # as the ladder counts after a rung answered
    assert (await hosted.quotas.usage(account.id)).used.stt_minutes == 2
    await meter.stt_used(30)
    with pytest.raises(VidError) as refused:
        await transcribe(runtime, AudioInput.from_bytes(b"RIFF"), ctx=ctx)
    assert refused.value.code == "rate-limited" and refused.value.retry_after
    assert not refused.value.attempts or all(
        a.stage != "stt" or a.outcome == "skipped" for a in refused.value.attempts
    )


async def _principal(hosted: Any, account: Any) -> Any:
    from vid2context.auth.hosted import Principal

    return Principal(account, "key", "key_x")


# --- nothing secret leaks -------------------------------------------------------------------------


@LOCAL_AND_WORKER
async def test_no_token_session_key_or_secret_in_a_log_line_or_a_response(
    runtimes: Runtimes,
    github: FakeGitHub,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with hosted_app(runtimes, github) as (_, browser):
        await browser.sign_in()
        made = await browser.request("POST", "/api/v1/me/keys", json={"name": "laptop"})
        key = made.json()["key"]
        bearer = {"Authorization": f"Bearer {key}"}
        for path in (
            "/api/v1/me",
            "/api/v1/me/keys",
            "/api/v1/me/usage",
            "/api/v1/library",
            "/api/v1/health",
        ):
            browser._keep(await browser.http.get(path, headers=bearer))
            await browser.get(path)
        await browser.get("/api/v1/auth/github/callback?state=x&code=y")
        await browser.request("DELETE", f"/api/v1/me/keys/{made.json()['id']}")
        browser._keep(await browser.http.get("/api/v1/me", headers=bearer))
        session = browser.cookies["v2c_session"]
        await browser.request("POST", "/api/v1/auth/logout")
    out, err = capfd.readouterr()
    # httpx's own lines about the test client's requests (to http://testserver) are the browser's;
    # every other line, at every level, is the server's or its outbound client's.
    lines = [record.getMessage() for record in caplog.records]
    logs = out + err + "\n".join(line for line in lines if "http://testserver/" not in line)
    assert '"path":"/api/v1/me"' in logs.replace(" ", "")  # the access log was on and captured
    github_tokens = list(github.tokens)
    codes = list(github.codes)
    secrets_ = {"session": session, "key": key, "client secret": CLIENT_SECRET}
    secrets_ |= {f"github token {n}": token for n, token in enumerate(github_tokens)}
    secrets_ |= {f"github code {n}": code for n, code in enumerate(codes)}
    for what, secret in secrets_.items():
        assert secret not in logs, f"the {what} is in a log line"
        for response in browser.responses:
            shown = response.text + repr(
                [(k, v) for k, v in response.headers.multi_items() if k.lower() != "set-cookie"]
            )
            if response is made and what == "key":
                assert shown.count(secret) == 1  # shown once: in its creation answer
                continue
            assert secret not in shown, f"the {what} is in the answer to {response.request.url}"


async def test_sign_in_is_limited_per_address(runtimes: Runtimes, github: FakeGitHub) -> None:
    """Sign-in needs no credentials, so the per-address bucket (``VID2CONTEXT_RATE_LIMIT``) is what
    holds a flood of it back."""
    async with hosted_app(runtimes, github, VID2CONTEXT_RATE_LIMIT="60", VID2CONTEXT_RATE_BURST="3") as (
        _,
        browser,
    ):
        answers = [await browser.http.get("/api/v1/auth/github/login") for _ in range(4)]
        assert [a.status_code for a in answers] == [302, 302, 302, 429]
        assert int(answers[-1].headers["retry-after"]) >= 1
        assert answers[-1].json()["error"]["code"] == "rate-limited"


@EVERY_STORE
async def test_the_account_store_contract(runtimes: Runtimes) -> None:
    """One suite over the three stores (memory, SQLite, D1): what ``AccountStore`` promises."""
    from vid2context.auth.hosted import Hosted

    store = Hosted(await runtimes.build({"VID2CONTEXT_HOSTED": "1"})).store
    first = await store.sign_in(1, "ada", now="2026-12-01T00:00:00Z")
    again = await store.sign_in(1, "ada-renamed", now="2026-12-02T00:00:00Z")
    assert (again.id, again.login, again.created_at) == (first.id, "ada-renamed", "2026-12-01T00:00:00Z")
    other = await store.sign_in(2, "bob", now="2026-12-01T00:00:00Z")
    assert other.id != first.id and await store.get_account(other.id) == other
    assert await store.get_account("acct_none") is None

    await store.open_session(first.id, "d-old", expires_at=100, now=0)
    assert (await store.session_account("d-old", now=99)).id == first.id  # type: ignore[union-attr]
    assert await store.session_account("d-old", now=100) is None  # expired
    await store.open_session(first.id, "d-live", expires_at=500, now=50)
    await store.open_session(other.id, "d-bob", expires_at=150, now=0)
    await store.open_session(first.id, "d-new", expires_at=900, now=200)  # d-old ended by 200: gone
    assert await store.session_account("d-old", now=50) is None
    assert (await store.session_account("d-live", now=300)).id == first.id  # type: ignore[union-attr]
    assert (await store.session_account("d-bob", now=120)).id == other.id  # type: ignore[union-attr]
    await store.close_session("d-live")
    await store.close_session("d-unknown")
    assert await store.session_account("d-live", now=300) is None

    made = await store.add_key(first.id, "key_a", "laptop", "kd-a", "v2c_abcd", now="2026-12-01T00:00:01Z")
    await store.add_key(first.id, "key_b", "ci", "kd-b", "v2c_efgh", now="2026-12-01T00:00:02Z")
    assert [k.id for k in await store.list_keys(first.id)] == ["key_a", "key_b"]
    assert await store.list_keys(other.id) == []
    found = await store.key_account("kd-a")
    assert found is not None and found[0].id == first.id and found[1] == made
    assert await store.key_account("kd-none") is None
    assert await store.delete_key(other.id, "key_a") is False  # not bob's
    assert await store.delete_key(first.id, "key_a") is True
    assert await store.delete_key(first.id, "key_a") is False
    assert await store.key_account("kd-a") is None


@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_sign_in_as_the_worker_serves_it(runtimes: Runtimes, github: FakeGitHub) -> None:
    """Through ``WorkerLikeApp``: the lifespan around every request (so nothing of a sign-in may
    live in the app between requests), no client address but ``CF-Connecting-IP``."""
    from .runtimes import WorkerLikeApp

    runtime = await runtimes.build({**github.settings(), "VID2CONTEXT_RATE_LIMIT": "0"})
    transport = httpx.ASGITransport(app=WorkerLikeApp(create_app(runtime, owns_runtime=False)))
    async with httpx.AsyncClient(
        transport=transport, base_url="https://v2c.example", headers={"CF-Connecting-IP": "198.51.100.4"}
    ) as http:
        browser = Browser(http, github)
        done = await browser.sign_in()
        assert done.status_code == 302, done.text
        assert github.seen.authorize[-1]["redirect_uri"] == "https://v2c.example/api/v1/auth/github/callback"
        made = await browser.request("POST", "/api/v1/me/keys", json={"name": "edge"})
        assert made.status_code == 201, made.text
        me = await http.get("/api/v1/me", headers={"Authorization": f"Bearer {made.json()['key']}"})
        assert me.status_code == 200 and me.json()["login"] == "octocat"
