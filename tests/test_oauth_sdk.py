"""The MCP SDK's own OAuth client (``mcp.client.auth``) connects to ``/mcp`` on loopback, twice:
``vid2context serve`` (SQLite) in a subprocess, and the Worker's app on Miniflare's D1 and KV served
as the Workers adapter runs it (``test_mcp_http``'s servers).

A tool call then reads a video from the YouTube replay server, which records what it was sent:
no credential of the client's goes upstream. The client starts with nothing: the 401's ``WWW-Authenticate`` sends it to the protected resource
metadata, then the server metadata, it registers itself, and its redirect handler plays the
browser (it reads the consent page and posts the form with the owner key); then it exchanges the
code with PKCE and lists the tools. The server's log is read afterwards for every secret of the
flow.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from .mcp_catalogue import TOOLS
from .oauth_client import OWNER_KEY, REDIRECT_URI, form_fields
from .test_mcp_http import _local_server, _worker_server
from .youtube_replay import ReplayServer

pytestmark = pytest.mark.slow

SETTINGS = {"VID2CONTEXT_API_KEYS": OWNER_KEY}


class Served(NamedTuple):
    origin: str
    log: Path | None
    """The local server's log file; the Worker's lines go to this process's stderr."""
    replay: ReplayServer


@pytest.fixture(scope="module", params=["local", "worker"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The app on 127.0.0.1 with an owner key and OAuth on, its YouTube a replay server."""
    with ReplayServer() as replay:
        settings = {**SETTINGS, "VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin}
        if request.param == "local":
            home = tmp_path_factory.mktemp("home")
            for origin in _local_server(settings, home):
                yield Served(origin, home / "server.log", replay)
        else:
            worker_settings = {**settings, "VID2CONTEXT_ACCESS_LOG": "1"}
            for origin in _worker_server(worker_settings, request.getfixturevalue("miniflare")):
                yield Served(origin, None, replay)


class Tokens:
    """The SDK's ``TokenStorage``, in memory; it keeps what it saw for the leak check."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The person at the consent page: opens the URL, enters the owner key, follows nothing
    further than the redirect's ``Location`` (the client's callback is not served)."""

    def __init__(self, key: str = OWNER_KEY) -> None:
        self.key = key
        self.result: AuthorizationCodeResult | None = None
        self.seen: list[str] = []

    async def open(self, url: str) -> None:
        async with httpx.AsyncClient(timeout=30) as browser:
            page = await browser.get(url)
            assert page.status_code == 200, page.text
            fields = {**form_fields(page.text), "owner_key": self.key, "decision": "approve"}
            self.seen.append(fields["csrf_token"])
            answer = await browser.post(str(httpx.URL(url).copy_with(query=None)), data=fields)
        assert answer.status_code == 302, answer.text
        location = httpx.URL(answer.headers["location"])
        assert str(location).startswith(REDIRECT_URI)
        self.result = AuthorizationCodeResult(
            code=location.params["code"], state=location.params.get("state")
        )
        self.seen.append(self.result.code)

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None, "the consent page was never answered"
        return self.result


def _provider(origin: str, storage: Tokens, browser: Browser, method: str) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        redirect_uris=[REDIRECT_URI],
        client_name="SDK test client",
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method=method,
        scope="mcp",
    )
    return OAuthClientProvider(
        server_url=origin + "/mcp",
        client_metadata=metadata,
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "method"), [("legacy", "none"), ("auto", "client_secret_post")])
async def test_the_sdk_oauth_client_connects_and_lists_tools(
    server: Served, mode: str, method: str, capfd: pytest.CaptureFixture[str]
) -> None:
    origin, log, replay = server
    storage, browser = Tokens(), Browser()
    http = httpx2.AsyncClient(auth=_provider(origin, storage, browser, method), timeout=60)
    upstream_before = len(replay.headers_seen)
    async with Client(streamable_http_client(origin + "/mcp", http_client=http), mode=mode) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
        # A video without captions: nothing to cache, so every run reads it upstream again.
        missing = await client.call_tool("get_transcript", {"url": "dsMFmonKDD4"})
        assert missing.is_error and "no-transcript" in missing.content[0].text
    assert storage.tokens is not None and storage.tokens.refresh_token and storage.tokens.expires_in == 3600
    assert storage.client is not None and storage.client.client_id.startswith("v2c-")
    # The token opens /mcp, and never /api/*.
    access = storage.tokens.access_token
    api = httpx.get(origin + "/api/v1/library", headers={"Authorization": f"Bearer {access}"}, timeout=30)
    assert api.status_code == 401
    secrets = [OWNER_KEY, access, storage.tokens.refresh_token, *browser.seen]
    if storage.client.client_secret:
        secrets.append(storage.client.client_secret)
    # The tool call went upstream (to the YouTube replay) without any credential of ours.
    upstream = replay.headers_seen[upstream_before:]
    assert upstream, "the tool call should have read the video from the replay server"
    for headers in upstream:
        assert "authorization" not in headers.lower()
        assert not any(secret in headers for secret in secrets)
    logged = capfd.readouterr()
    lines = logged.out + logged.err + (log.read_text() if log else "")
    assert '"path":"/oauth/token"' in lines  # the access log wrote the flow's lines
    for secret in secrets:
        assert secret not in lines, "a secret of the OAuth flow appears in the server's log"


@pytest.mark.anyio
async def test_the_sdk_client_gives_up_on_a_wrong_owner_key(server: Served) -> None:
    origin = server.origin
    storage, browser = Tokens(), Browser(key="not-the-owner")
    http = httpx2.AsyncClient(auth=_provider(origin, storage, browser, "none"), timeout=60)
    with pytest.raises(Exception):  # noqa: B017, PT011  the redirect handler's assertion, maybe in a group
        async with Client(streamable_http_client(origin + "/mcp", http_client=http), mode="legacy") as client:
            await client.list_tools()
    assert browser.result is None and storage.tokens is None
