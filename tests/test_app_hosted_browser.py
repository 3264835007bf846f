"""The web app's GitHub sign-in in hosted mode, in headless Chromium against ``vid2context serve``.

The server is in hosted mode (``VID2CONTEXT_HOSTED=1``) with GitHub pointed at the OAuth stand-in
(``tests/fake_github.py``, which approves at once, as GitHub does for an app a user has authorised
before); YouTube is the replay server. A person opens ``/app``: the API answers 401 with the sign-in
step in its hint, the page shows "Sign in with GitHub", and the click runs the real redirect chain
in the browser (our login, the stand-in's authorize, our callback), which lands back on ``/app``
with the session cookie, so the library and a video read without any key.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, expect

from .fake_github import FakeGitHub
from .test_app_browser import browser, console_error  # noqa: F401  (the module's own Chromium)
from .test_mcp_http import _local_server
from .test_viewer import watch
from .youtube_replay import ReplayServer

pytestmark = pytest.mark.slow

VIDEO = "GJLlxj_dtq8"  # a replayed video with captions (as in test_hosted.py)


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory, github: FakeGitHub) -> Iterator[str]:
    home = tmp_path_factory.mktemp("hostedhome")
    with ReplayServer() as replay:
        settings = {
            **github.settings(),
            "VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin,
            "VID2CONTEXT_ACCESS_LOG": "0",
            "VID2CONTEXT_RATE_LIMIT": "0",
        }
        yield from _local_server(settings, home)


def test_sign_in_with_github_lands_back_on_the_app_signed_in(
    browser: Browser,  # noqa: F811
    origin: str,
    github: FakeGitHub,
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: console_error(message, errors))
    visited: list[str] = []
    page.on(
        "request", lambda request: visited.append(request.url) if request.is_navigation_request() else None
    )
    try:
        page.goto(origin + "/app")
        expect(page.locator("#access")).to_be_visible()  # the library's first look was a 401
        signin = page.get_by_role("link", name="Sign in with GitHub")
        expect(signin).to_be_visible()
        assert context.cookies() == []
        signin.click()
        page.wait_for_url(origin + "/app", timeout=60_000)
        expect(page.locator("#access")).to_be_hidden()

        # the chain the browser walked: our login, GitHub's authorize, our callback, the page
        hops = [urlsplit(url) for url in visited]
        assert [f"{hop.scheme}://{hop.netloc}{hop.path}" for hop in hops] == [
            f"{origin}/app",
            f"{origin}/api/v1/auth/github/login",
            f"{github.web_url}/login/oauth/authorize",
            f"{origin}/api/v1/auth/github/callback",
            f"{origin}/app",
        ]
        cookies = {cookie["name"]: cookie for cookie in context.cookies(origin)}
        assert cookies, "the callback set no session cookie"
        assert all(cookie["httpOnly"] for cookie in cookies.values())
        assert page.evaluate("sessionStorage.length + localStorage.length") == 0  # no key kept

        me = page.evaluate("fetch('/api/v1/me').then(async (r) => [r.status, await r.json()])")
        assert me[0] == 200 and me[1]["login"] == github.user.login, me

        page.get_by_label("Video link or id").fill(watch(VIDEO))
        page.get_by_label("Video link or id").press("Enter")
        expect(page.locator("#reader")).to_be_visible(timeout=60_000)
        expect(page.locator("#busy")).to_have_text("")
        assert page.locator(".v2c-segments > li").count() > 0
        assert page.locator("#notice").is_hidden()
    finally:
        context.close()
    assert errors == []
