"""``GET /library``, ``GET /library/{id}`` and ``DELETE /library/{id}``: the real app on each kind
of runtime for the tests that store something (memory, the local SQLite stores, the Worker's D1,
KV and R2 on Miniflare: ``tests/runtimes.py``), with YouTube answered from the recorded fixtures.

Ids are checked in every form a client may send them: encoded once, encoded twice, as a video
URL, and hostile (path traversal, control characters, bytes that are not UTF-8, 10 kB).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pytest_httpx import HTTPXMock

from vid2context.api import create_app
from vid2context.pipeline import get_context
from vid2context.runtime import Runtime

from .runtimes import Runtimes, on_each_runtime_when
from .youtube_replay import httpx_callback

pytestmark = pytest.mark.anyio

API = "/api/v1"
VIDEO_ID = "youtube:GJLlxj_dtq8"
OTHER_ID = "youtube:F1xioXWb8CY"
ENCODED = "youtube%3AGJLlxj_dtq8"
DOUBLE_ENCODED = "youtube%253AGJLlxj_dtq8"


QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}


class Api:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.app = create_app(runtime)
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://testserver"
        )

    async def save(self, *video_ids: str) -> None:
        """Read videos through the pipeline, which saves them in the library."""
        for video_id in video_ids:
            await get_context(self.runtime, video_id)


@pytest.fixture
async def youtube(httpx_mock: HTTPXMock) -> HTTPXMock:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    return httpx_mock


@pytest.fixture
async def api(youtube: HTTPXMock, runtimes: Runtimes) -> AsyncIterator[Api]:
    """The app on the memory runtime (the bad-input tests), or the kind the test asks for."""
    served = Api(await runtimes.build(QUIET))
    yield served
    await served.client.aclose()


@pytest.fixture
def stored_api(api: Api) -> Api:
    """The app on each kind of runtime: a test that takes it runs once per kind."""
    return api


pytest_generate_tests = on_each_runtime_when("stored_api")


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "attempts"} and body["error"]["code"] == code, body
    assert body["error"]["message"] and "Traceback" not in response.text
    return body


# --- GET /library ---------------------------------------------------------------------------------


async def test_empty_library(stored_api: Api) -> None:
    response = await stored_api.client.get(f"{API}/library")
    assert response.status_code == 200
    assert response.json() == {"items": [], "nextCursor": None}


async def test_list_pages_newest_first(stored_api: Api) -> None:
    await stored_api.save(VIDEO_ID, OTHER_ID)
    whole = (await stored_api.client.get(f"{API}/library")).json()
    assert [item["id"] for item in whole["items"]] == [OTHER_ID, VIDEO_ID] and whole["nextCursor"] is None
    summary = whole["items"][1]
    assert summary["title"] and summary["platform"] == "youtube" and summary["tokens"] > 0
    assert "transcript" not in summary
    first = (await stored_api.client.get(f"{API}/library", params={"limit": 1})).json()
    assert [item["id"] for item in first["items"]] == [OTHER_ID] and first["nextCursor"]
    second = (
        await stored_api.client.get(f"{API}/library", params={"limit": 1, "cursor": first["nextCursor"]})
    ).json()
    assert [item["id"] for item in second["items"]] == [VIDEO_ID] and second["nextCursor"] is None
    assert (
        await stored_api.client.get(f"{API}/library", params={"limit": "200", "cursor": ""})
    ).status_code == 200


@pytest.mark.parametrize("limit", ["0", "201", "-1", "abc", "1.5", "9" * 30, "\x00"])
async def test_bad_limits(api: Api, limit: str) -> None:
    body = assert_error(await api.client.get(f"{API}/library", params={"limit": limit}), 400, "bad-request")
    assert "limit" in body["error"]["message"] and body["error"]["hint"]


@pytest.mark.parametrize("cursor", ["garbage", "x" * 10_000, "eyJub3QiOiJvdXJzIn0", "%ff"])
async def test_bad_cursors(api: Api, cursor: str) -> None:
    await api.save(VIDEO_ID)
    assert_error(await api.client.get(f"{API}/library", params={"cursor": cursor}), 400, "bad-request")


# --- GET /library/{id} ----------------------------------------------------------------------------


async def test_get_with_etag_and_304(stored_api: Api) -> None:
    await stored_api.save(VIDEO_ID)
    response = await stored_api.client.get(f"{API}/library/{ENCODED}")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["id"] == VIDEO_ID and body["transcript"]["segments"] and body["metadata"]["title"]
    etag = response.headers["etag"]
    assert etag == f'"{hashlib.sha256(response.content).hexdigest()}"'
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        cached = await stored_api.client.get(f"{API}/library/{ENCODED}", headers={"If-None-Match": header})
        assert cached.status_code == 304 and cached.content == b"" and cached.headers["etag"] == etag
    stale = await stored_api.client.get(f"{API}/library/{ENCODED}", headers={"If-None-Match": '"not-it"'})
    assert stale.status_code == 200 and stale.content == response.content


@pytest.mark.parametrize(
    "path",
    [
        ENCODED,
        DOUBLE_ENCODED,
        "youtube:GJLlxj_dtq8",
        "GJLlxj_dtq8",
        "https%3A%2F%2Fwww.youtube.com%2Fwatch%3Fv%3DGJLlxj_dtq8",
        "https%3A%2F%2Fyoutu.be%2FGJLlxj_dtq8",
    ],
)
async def test_every_form_of_the_id_finds_the_video(api: Api, path: str) -> None:
    await api.save(VIDEO_ID)
    response = await api.client.get(f"{API}/library/{path}")
    assert response.status_code == 200, response.text
    assert response.json()["id"] == VIDEO_ID


async def test_unknown_video_is_404_with_a_hint(api: Api) -> None:
    body = assert_error(await api.client.get(f"{API}/library/youtube%3AjNQXAC9IVRw"), 404, "not-found")
    assert "youtube:jNQXAC9IVRw" in body["error"]["message"]
    assert "GET /api/v1/library" in body["error"]["hint"]


@pytest.mark.parametrize(
    "path",
    [
        "..%2F..%2Fetc%2Fpasswd",
        "..%252F..%252Fetc%252Fpasswd",
        "%2Fetc%2Fpasswd",
        "file%3A%2F%2F%2Fetc%2Fpasswd",
    ],
)
async def test_path_traversal_ids_are_plain_misses(stored_api: Api, path: str) -> None:
    await stored_api.save(VIDEO_ID)
    for method in ("GET", "DELETE"):
        response = await stored_api.client.request(method, f"{API}/library/{path}")
        assert response.status_code in (400, 404), response.text
        assert_error(response, response.status_code, response.json()["error"]["code"])
        assert "root:" not in response.text
    assert (await stored_api.client.get(f"{API}/library/{ENCODED}")).status_code == 200


@pytest.mark.parametrize(
    ("raw_path", "why"),
    [
        (b"/api/v1/library/" + b"a" * 10_000, "10 kB"),
        (b"/api/v1/library/youtube%3AGJLlxj_dtq8%00", "NUL"),
        (b"/api/v1/library/youtube%0D%0AX-Injected%3A%201", "CRLF"),
        (b"/api/v1/library/%ff%fe", "not UTF-8"),
        (b"/api/v1/library/%20%20", "blank"),
    ],
)
async def test_hostile_ids_are_bad_requests(stored_api: Api, raw_path: bytes, why: str) -> None:
    for method in ("GET", "DELETE"):
        status, body = await raw_request(stored_api, method, raw_path)
        assert status == 400, (why, body)
        assert b'"bad-request"' in body and b"Traceback" not in body


async def raw_request(api: Api, method: str, raw_path: bytes) -> tuple[int, bytes]:
    """The app called with exactly this path, decoded as an ASGI server would (undecodable
    bytes kept as surrogates), so the client library cannot tidy it first."""
    from urllib.parse import unquote_to_bytes

    path = unquote_to_bytes(raw_path).decode("utf-8", "surrogateescape")
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": raw_path, "root_path": "", "query_string": b"",
        "headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 1), "server": ("testserver", 80),
    }  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await api.app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


# --- DELETE /library/{id} -------------------------------------------------------------------------


async def test_delete_then_gone(stored_api: Api) -> None:
    await stored_api.save(VIDEO_ID, OTHER_ID)
    response = await stored_api.client.delete(f"{API}/library/{DOUBLE_ENCODED}")
    assert response.status_code == 204 and response.content == b""
    assert_error(await stored_api.client.get(f"{API}/library/{ENCODED}"), 404, "not-found")
    assert_error(await stored_api.client.delete(f"{API}/library/{ENCODED}"), 404, "not-found")
    remaining = (await stored_api.client.get(f"{API}/library")).json()["items"]
    assert [item["id"] for item in remaining] == [OTHER_ID]


async def test_delete_unknown_is_404(api: Api) -> None:
    body = assert_error(await api.client.delete(f"{API}/library/youtube%3AjNQXAC9IVRw"), 404, "not-found")
    assert body["error"]["hint"]


async def test_wrong_methods_are_405_with_our_body(api: Api) -> None:
    response = await api.client.post(f"{API}/library", json={})
    assert_error(response, 405, "bad-request")
    response = await api.client.patch(f"{API}/library/{ENCODED}", json={})
    assert_error(response, 405, "bad-request")
    response = await api.client.put(f"{API}/library", json={})  # PUT takes an id (test_api_put.py)
    assert_error(response, 405, "bad-request")
