"""``/app`` and ``GET /api/v1/view`` over the real app, on the memory runtime and the Worker's
(Miniflare's D1, KV and R2): the page and every ``ui/`` script with their types and headers,
unknown and hostile names refused with the contract's body, and the view's good, missing,
malformed, oversized and blocked input. The page itself in a browser: ``test_app_browser.py``.
"""

from __future__ import annotations

import re

import pytest

from vid2context.api import create_app
from vid2context.api.webapp import ASSETS

from .runtimes import ON_WORKER_TOO, Runtimes, serve
from .test_mcp_tools import LONG, long_context
from .test_viewer import HOSTILE, HOSTILE_ID, hostile_context, watch

pytestmark = pytest.mark.anyio

KEY = "app-route-key-0123456789"


@ON_WORKER_TOO
async def test_the_page_and_every_ui_script_are_served_without_a_key(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_API_KEYS": KEY, "VID2CONTEXT_ACCESS_LOG": "0"})
    async with serve(create_app(runtime, owns_runtime=runtime.name != "worker")) as http:
        for path in ("/app", "/app/"):
            page = await http.get(path)
            assert page.status_code == 200 and page.text == ASSETS["app.html"]
            assert page.headers["content-type"] == "text/html; charset=utf-8"
            policy = page.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "unsafe-inline" not in policy
            assert page.headers["x-content-type-options"] == "nosniff"
        scripts = [name for name in ASSETS if name.endswith(".js")]
        assert {"app.js", "transcript.js", "viewer.js"} <= set(scripts)
        for name in scripts:
            answer = await http.get(f"/app/{name}")
            assert answer.status_code == 200 and answer.text == ASSETS[name], name
            assert answer.headers["content-type"] == "text/javascript; charset=utf-8"
        style = await http.get("/app/app.css")
        assert style.status_code == 200 and style.headers["content-type"] == "text/css; charset=utf-8"
        # the API behind the page still wants the key
        assert (await http.get("/api/v1/view", params={"url": watch(LONG)})).status_code == 401


@ON_WORKER_TOO
@pytest.mark.parametrize(
    "name",
    ["nope.js", "app.html", "assets.py", "..%2Fassets.py", "APP.JS", "x" * 300 + ".js"],
)
async def test_names_outside_the_folder_are_not_found(runtimes: Runtimes, name: str) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_ACCESS_LOG": "0"})
    async with serve(create_app(runtime, owns_runtime=runtime.name != "worker")) as http:
        answer = await http.get(f"/app/{name}")
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert error["code"] == "not-found" and error["hint"]
    assert "def " not in answer.text and "ASSETS" not in answer.text


@ON_WORKER_TOO
async def test_view_is_the_viewer_data_with_the_token_count(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_ACCESS_LOG": "0"})
    for context in (long_context(), hostile_context()):
        await runtime.storage.put_context(context)
    async with serve(create_app(runtime, owns_runtime=runtime.name != "worker")) as http:
        view = (await http.get("/api/v1/view", params={"url": watch(LONG)})).json()
        outline = (await http.get("/api/v1/outline", params={"url": watch(LONG)})).json()
        hostile = (await http.get("/api/v1/view", params={"url": HOSTILE_ID})).json()
    assert view["id"] == f"youtube:{LONG}" and view["sections"] == "chapters"
    assert view["totalTokens"] == outline["totalTokens"] > 0
    assert [c["startSec"] for c in view["chapters"]] == [c["startSec"] for c in outline["chapters"]]
    assert view["link"] == f"https://www.youtube.com/watch?v={LONG}&t=<seconds>s"
    assert view["origin"] == "captions-manual" and view["language"] == "en"
    assert len(view["segments"]) == len(long_context().transcript.segments)
    assert hostile["metadata"]["title"] == HOSTILE  # data, as it came: the page writes it as text


@ON_WORKER_TOO
@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, "bad-request"),
        ({"url": "   "}, "bad-request"),
        ({"url": "javascript:alert(1)"}, "unsupported-input"),
        ({"url": "x" * 10_000}, None),
        ({"url": watch(LONG), "mode": "telepathy"}, "bad-request"),
        ({"url": watch(LONG), "lang": "<script>"}, "bad-request"),
        ({"url": watch(LONG), "refresh": "perhaps"}, "bad-request"),
    ],
)
async def test_view_refuses_bad_input_with_a_hint(
    runtimes: Runtimes, params: dict[str, str], code: str | None
) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_ACCESS_LOG": "0"})
    await runtime.storage.put_context(long_context())
    async with serve(create_app(runtime, owns_runtime=runtime.name != "worker")) as http:
        answer = await http.get("/api/v1/view", params=params)
    assert 400 <= answer.status_code < 500, answer.text
    error = answer.json()["error"]
    assert error["hint"] and "Traceback" not in answer.text
    if code is not None:
        assert error["code"] == code
    else:
        assert error["code"] in {"bad-request", "unsupported-input", "too-large"}


@ON_WORKER_TOO
@pytest.mark.parametrize("hosted", [True, False])
async def test_the_refusal_tells_the_page_whether_to_offer_github(runtimes: Runtimes, hosted: bool) -> None:
    """The page offers "Sign in with GitHub" when a 401's hint names the sign-in route (hosted
    mode), and only the key field otherwise: the route it looks for is the one the hint names."""
    sign_in = re.search(r'const SIGN_IN = "([^"]+)";', ASSETS["app.js"])
    assert sign_in is not None
    settings = {"VID2CONTEXT_HOSTED": "1"} if hosted else {"VID2CONTEXT_API_KEYS": KEY}
    runtime = await runtimes.build({**settings, "VID2CONTEXT_ACCESS_LOG": "0"})
    async with serve(create_app(runtime, owns_runtime=runtime.name != "worker")) as http:
        refused = await http.get("/api/v1/view", params={"url": watch(LONG)})
        page = await http.get("/app")
    assert refused.status_code == 401 and page.status_code == 200
    assert (sign_in.group(1) in refused.json()["error"]["hint"]) is hosted
