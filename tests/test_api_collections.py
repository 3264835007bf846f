"""Every collections route of the contract, on the real app over each kind of runtime for the
tests that store something (memory, the local SQLite stores, the Worker's D1, KV and R2 on
Miniflare: ``tests/runtimes.py``), with YouTube (videos, a 12-video playlist) answered from the
recorded fixtures.

Ingest and refresh answer ``202`` with a queued ``Job``; the tests wait for it on the runtime's
queue (the app runs in the test's own event loop) and then read its result, its events over
HTTP and the collection it changed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pytest_httpx import HTTPXMock

from vid2context.api import create_app
from vid2context.runtime import Runtime

from .runtimes import Runtimes, on_each_runtime_when
from .youtube_replay import PLAYLIST_ID, httpx_callback

pytestmark = pytest.mark.anyio

API = "/api/v1"
VIDEO = "https://www.youtube.com/watch?v=GJLlxj_dtq8"
VIDEO_ID = "youtube:GJLlxj_dtq8"
OTHER_ID = "youtube:F1xioXWb8CY"
BLOCKED = "botCheck001"
PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"  # 12 videos
COLLECTION_FIELDS = {
    "id", "name", "description", "sources", "videoCount", "createdAt", "updatedAt", "checkedAt", "watch"
}  # fmt: skip
"""The one collection shape of every answer (MCP's too: tests/test_mcp_tools.py)."""
JOB_FIELDS = {"id", "kind", "status", "createdAt", "updatedAt"}


QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}


class Api:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://testserver"
        )

    async def create(self, **body: Any) -> dict[str, Any]:
        response = await self.client.post(f"{API}/collections", json={"name": "talks", **body})
        assert response.status_code == 201, response.text
        return response.json()

    async def finished(self, response: httpx.Response, kind: str) -> dict[str, Any]:
        """The job a 202 answered, once it has finished."""
        assert response.status_code == 202, response.text
        job = response.json()
        assert set(job) == JOB_FIELDS and job["kind"] == kind and job["status"] == "queued"
        await self.runtime.jobs.wait(self.runtime, job["id"])
        done = (await self.client.get(f"{API}/jobs/{job['id']}")).json()
        assert done["status"] == "succeeded", done
        return done


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
    body = response.json()
    assert set(body) == {"error", "attempts"} and body["error"]["code"] == code, body
    assert body["error"]["message"] and "Traceback" not in response.text
    return body["error"]


# --- create, list, get, update, delete ------------------------------------------------------------


async def test_create_list_and_get(stored_api: Api) -> None:
    assert (await stored_api.client.get(f"{API}/collections")).json() == {"collections": []}
    created = await stored_api.create(description="  Conference talks  ", sources=[PLAYLIST])
    assert set(created) == COLLECTION_FIELDS
    assert created["id"].startswith("col_") and created["name"] == "talks"
    assert created["description"] == "Conference talks" and created["sources"] == [PLAYLIST]
    assert created["watch"] is None and created["videoCount"] == 0 and created["checkedAt"] is None
    listed = (await stored_api.client.get(f"{API}/collections")).json()["collections"]
    assert [c["id"] for c in listed] == [created["id"]]
    view = (await stored_api.client.get(f"{API}/collections/{created['id']}")).json()
    assert set(view) == COLLECTION_FIELDS | {"videos", "pending"}
    assert view["videos"] == [] and view["pending"] == [] and view["watch"] is None


@pytest.mark.parametrize(
    ("every", "stored"), [("daily", "daily"), (90, 90), ({"minutes": 15}, 15), ("weekly", "weekly")]
)
async def test_create_with_a_watch_schedule(api: Api, every: Any, stored: Any) -> None:
    created = await api.create(watch={"every": every})
    assert created["watch"]["schedule"] == {"every": stored, "at": None, "enabled": True}
    view = (await api.client.get(f"{API}/collections/{created['id']}")).json()
    assert view["watch"] == created["watch"]
    assert view["checkedAt"] is None and set(view["watch"]["state"]) == {"nextDueAt"}
    assert view["watch"]["state"]["nextDueAt"]


async def test_patch_changes_only_what_is_given_and_null_clears(stored_api: Api) -> None:
    created = await stored_api.create(
        description="d", sources=[PLAYLIST], watch={"every": "daily", "at": "06:30"}
    )
    url = f"{API}/collections/{created['id']}"
    renamed = (await stored_api.client.patch(url, json={"name": "renamed"})).json()
    assert renamed["name"] == "renamed" and renamed["description"] == "d" and renamed["sources"] == [PLAYLIST]
    assert renamed["watch"]["schedule"] == {"every": "daily", "at": "06:30", "enabled": True}
    assert renamed["updatedAt"] >= created["updatedAt"]
    untouched = (await stored_api.client.patch(url, json={})).json()
    assert {k: untouched[k] for k in ("name", "description", "sources", "watch")} == {
        k: renamed[k] for k in ("name", "description", "sources", "watch")
    }
    paused = (
        await stored_api.client.patch(url, json={"watch": {"every": {"minutes": 30}, "enabled": False}})
    ).json()
    assert paused["watch"] == {
        "schedule": {"every": 30, "at": None, "enabled": False},
        "state": {"nextDueAt": None},
    }
    cleared = (
        await stored_api.client.patch(url, json={"watch": None, "description": None, "sources": None})
    ).json()
    assert cleared["watch"] is None and cleared["description"] is None and cleared["sources"] == []
    assert cleared["name"] == "renamed"
    assert (await stored_api.client.get(url)).json()["watch"] is None


async def test_delete_collection_keeps_the_videos(stored_api: Api) -> None:
    created = await stored_api.create()
    await stored_api.finished(
        await stored_api.client.post(f"{API}/collections/{created['id']}/items", json={"inputs": [VIDEO]}),
        "ingest",
    )
    response = await stored_api.client.delete(f"{API}/collections/{created['id']}")
    assert response.status_code == 204 and response.content == b""
    assert_error(await stored_api.client.get(f"{API}/collections/{created['id']}"), 404, "not-found")
    assert_error(await stored_api.client.delete(f"{API}/collections/{created['id']}"), 404, "not-found")
    assert (await stored_api.client.get(f"{API}/library/youtube%3AGJLlxj_dtq8")).status_code == 200


# --- ingest, remove, refresh ------------------------------------------------------------------


async def test_add_items_is_an_ingest_job(stored_api: Api) -> None:
    created = await stored_api.create()
    response = await stored_api.client.post(
        f"{API}/collections/{created['id']}/items", json={"inputs": [VIDEO, "F1xioXWb8CY", BLOCKED]}
    )
    done = await stored_api.finished(response, "ingest")
    result = done["result"]
    assert set(result) == {"collection", "summary"}
    assert result["collection"]["id"] == created["id"] and result["collection"]["videoCount"] == 2
    summary = result["summary"]
    assert [v["id"] for v in summary["added"]] == [VIDEO_ID, OTHER_ID]
    assert [(f["input"], f["code"]) for f in summary["failed"]] == [(BLOCKED, "blocked")]
    assert summary["collectionId"] == created["id"] and summary["remaining"] == 0
    assert done["progress"]["done"] == 3 and done["progress"]["total"] == 3
    stream = await stored_api.client.get(f"{API}/jobs/{done['id']}/events", headers={"Last-Event-ID": "0"})
    events = [block.split("\n") for block in stream.text.strip().split("\n\n")]
    items = [json.loads(lines[2][6:]) for lines in events if lines[1] == "event: item"]
    assert sorted(i["outcome"] for i in items) == ["error", "ok", "ok"]
    assert events[-1][1] == "event: done"
    view = (await stored_api.client.get(f"{API}/collections/{created['id']}")).json()
    assert [v["id"] for v in view["videos"]] == [VIDEO_ID, OTHER_ID]


async def test_add_items_with_a_limit_leaves_the_rest_pending(stored_api: Api) -> None:
    created = await stored_api.create()
    done = await stored_api.finished(
        await stored_api.client.post(
            f"{API}/collections/{created['id']}/items", json={"inputs": [PLAYLIST], "limit": 2}
        ),
        "ingest",
    )
    assert len(done["result"]["summary"]["added"]) == 2 and done["result"]["summary"]["remaining"] == 10
    view = (await stored_api.client.get(f"{API}/collections/{created['id']}")).json()
    assert len(view["videos"]) == 2 and len(view["pending"]) == 10


async def test_remove_items_and_refresh_does_not_bring_them_back(stored_api: Api) -> None:
    created = await stored_api.create(sources=[PLAYLIST])
    url = f"{API}/collections/{created['id']}"
    first = await stored_api.finished(
        await stored_api.client.post(f"{url}/refresh", json={"limit": 3}), "refresh"
    )
    added = [v["id"] for v in first["result"]["summary"]["added"]]
    assert len(added) == 3 and first["result"]["summary"]["remaining"] == 9
    assert first["result"]["collection"]["checkedAt"]
    response = await stored_api.client.request("DELETE", f"{url}/items", json={"videoIds": [added[0]]})
    assert response.status_code == 200, response.text
    assert set(response.json()) == COLLECTION_FIELDS and response.json()["videoCount"] == 2
    again = await stored_api.finished(await stored_api.client.post(f"{url}/refresh"), "refresh")
    assert added[0] not in [v["id"] for v in again["result"]["summary"]["added"]]
    view = (await stored_api.client.get(url)).json()
    assert added[0] not in [v["id"] for v in view["videos"]] and len(view["videos"]) == 11


@pytest.mark.parametrize("body", [None, b"", b"{}", b"null", b'{"limit": 5}'])
async def test_refresh_body_is_optional(api: Api, body: bytes | None) -> None:
    created = await api.create()
    url = f"{API}/collections/{created['id']}/refresh"
    if body is None:
        response = await api.client.post(url)
    else:
        response = await api.client.post(url, content=body, headers={"Content-Type": "application/json"})
    done = await api.finished(response, "refresh")
    assert done["result"]["summary"]["added"] == []


# --- export and import ------------------------------------------------------------------------


async def test_export_then_import(stored_api: Api) -> None:
    created = await stored_api.create(sources=[PLAYLIST], watch={"every": "weekly"})
    await stored_api.finished(
        await stored_api.client.post(f"{API}/collections/{created['id']}/items", json={"inputs": [VIDEO]}),
        "ingest",
    )
    exported = (await stored_api.client.get(f"{API}/collections/{created['id']}/export")).json()
    assert exported == {
        "format": "vid2context.collection",
        "version": 1,
        "name": "talks",
        "description": None,
        "sources": [PLAYLIST],
        "videos": [VIDEO],
        "schedule": {"every": "weekly", "at": None, "enabled": True},
    }
    taken = assert_error(
        await stored_api.client.post(f"{API}/collections/import", json=exported), 400, "bad-request"
    )
    assert (
        created["id"] in taken["hint"] and "GET /api/v1/collections/" in taken["hint"]
    )  # the name is in use
    exported["name"] = "talks, again"
    response = await stored_api.client.post(f"{API}/collections/import", json=exported)
    assert response.status_code == 201, response.text
    imported = response.json()
    assert set(imported) == {"collection"}
    assert imported["collection"]["id"] != created["id"] and imported["collection"]["sources"] == [PLAYLIST]
    view = (await stored_api.client.get(f"{API}/collections/{imported['collection']['id']}")).json()
    assert view["pending"] == [VIDEO] and view["videos"] == []


async def test_import_with_refresh_ingests_inline(stored_api: Api) -> None:
    definition = {"format": "vid2context.collection", "version": 1, "name": "now", "videos": [VIDEO, BLOCKED]}
    response = await stored_api.client.post(
        f"{API}/collections/import", params={"refresh": "1"}, json=definition
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"collection", "summary"}
    assert [v["id"] for v in body["summary"]["added"]] == [VIDEO_ID]
    assert body["summary"]["failed"][0]["code"] == "blocked"
    assert body["collection"]["videoCount"] == 1


BAD_DEFINITIONS: list[tuple[Any, str]] = [
    ({"format": "something.else", "version": 1, "name": "x"}, "format"),
    ({"format": "vid2context.collection", "version": 2, "name": "x"}, "version"),
    ({"format": "vid2context.collection", "version": 1}, "name"),
    ({"format": "vid2context.collection", "version": 1, "name": "x", "transcripts": []}, "transcripts"),
    ({"format": "vid2context.collection", "version": 1, "name": "x", "videos": "GJLlxj_dtq8"}, "videos"),
    ({"format": "vid2context.collection", "version": 1, "name": "x", "videos": [PLAYLIST]}, "videos"),
    ({"format": "vid2context.collection", "version": 1, "name": "x", "sources": [VIDEO]}, "sources"),
    (
        {"format": "vid2context.collection", "version": 1, "name": "x", "videos": ["GJLlxj_dtq8"] * 5001},
        "videos",
    ),
    ({"format": "vid2context.collection", "version": 1, "name": "x" * 201}, "name"),
    (
        {"format": "vid2context.collection", "version": 1, "name": "x", "schedule": {"every": "yearly"}},
        "schedule",
    ),
    (b"not json", "JSON"),
    (b"[1, 2]", "object"),
    (None, "body"),
]


@pytest.mark.parametrize(("body", "names"), BAD_DEFINITIONS, ids=[n for _, n in BAD_DEFINITIONS])
async def test_bad_imports_store_nothing(api: Api, body: Any, names: str) -> None:
    if body is None:
        response = await api.client.post(f"{API}/collections/import")
    elif isinstance(body, bytes):
        response = await api.client.post(
            f"{API}/collections/import", content=body, headers={"Content-Type": "application/json"}
        )
    else:
        response = await api.client.post(f"{API}/collections/import", json=body)
    error = assert_error(response, 400, "bad-request")
    assert error.get("hint")
    assert (await api.client.get(f"{API}/collections")).json() == {"collections": []}


async def test_import_refresh_flag_must_be_a_boolean(api: Api) -> None:
    definition = {"format": "vid2context.collection", "version": 1, "name": "x"}
    response = await api.client.post(
        f"{API}/collections/import", params={"refresh": "maybe"}, json=definition
    )
    assert_error(response, 400, "bad-request")


# --- bad input, every route -------------------------------------------------------------------

UNKNOWN = "col_doesnotexist"
HOSTILE_IDS = [
    "col_doesnotexist",
    "..%2F..%2Fetc%2Fpasswd",
    "col_%00",
    "x" * 10_000,
    "%ff",
    "col_..",
    "col%20x",
]


def routes(collection_id: str) -> list[tuple[str, str, Any]]:
    base = f"{API}/collections/{collection_id}"
    return [
        ("GET", base, None),
        ("PATCH", base, {"name": "x"}),
        ("DELETE", base, None),
        ("POST", f"{base}/items", {"inputs": [VIDEO]}),
        ("DELETE", f"{base}/items", {"videoIds": [VIDEO_ID]}),
        ("POST", f"{base}/refresh", None),
        ("GET", f"{base}/export", None),
    ]


@pytest.mark.parametrize(
    "collection_id", HOSTILE_IDS, ids=["unknown", "traversal", "NUL", "10 kB", "not UTF-8", "dots", "space"]
)
async def test_unknown_or_hostile_collection_ids_are_404_with_a_hint(
    api: Api, httpx_mock: HTTPXMock, collection_id: str
) -> None:
    await api.create()
    for method, path, body in routes(collection_id):
        response = await api.client.request(method, path, json=body)
        assert response.status_code == 404, (method, path[:80], response.text[:300])
        error = assert_error(response, 404, "not-found")
        assert "GET /api/v1/collections" in error["hint"] or "openapi" in error["hint"], error
        assert "root:" not in response.text and len(response.text) < 2000
    assert httpx_mock.get_requests() == []
    assert api.runtime.jobs._records == {}


CREATE_BODIES: list[tuple[Any, str]] = [
    (None, "missing body"),
    (b"not json", "not JSON"),
    (b"[]", "array"),
    ({}, "no name"),
    ({"name": ""}, "empty name"),
    ({"name": "   "}, "blank name"),
    ({"name": "x" * 201}, "long name"),
    ({"name": 5}, "name not a string"),
    ({"name": "x", "extra": 1}, "unknown field"),
    ({"name": "x", "description": 5}, "description not a string"),
    ({"name": "x", "description": "d" * 5001}, "long description"),
    ({"name": "x", "sources": VIDEO}, "sources not a list"),
    ({"name": "x", "sources": [VIDEO]}, "a video as a source"),
    ({"name": "x", "sources": [PLAYLIST] * 101}, "101 sources"),
    ({"name": "x", "sources": ["/etc/passwd\x00"]}, "NUL in a source"),
    ({"name": "x", "watch": {"every": "yearly"}}, "unknown period"),
    ({"name": "x", "watch": {"every": 0}}, "zero minutes"),
    ({"name": "x", "watch": {"every": "hourly", "at": "06:00"}}, "at with hourly"),
    ({"name": "x", "watch": {"every": "daily", "at": "25:00"}}, "bad time"),
    ({"name": "x", "watch": {"every": "daily", "often": True}}, "unknown watch field"),
    ({"name": "x", "watch": {"every": {"hours": 2}}}, "unknown every object"),
    ({"name": "x", "watch": "daily"}, "watch not an object"),
]


@pytest.mark.parametrize(("body", "why"), CREATE_BODIES, ids=[w for _, w in CREATE_BODIES])
async def test_bad_create_bodies(api: Api, body: Any, why: str) -> None:
    if body is None:
        response = await api.client.post(f"{API}/collections")
    elif isinstance(body, bytes):
        response = await api.client.post(
            f"{API}/collections", content=body, headers={"Content-Type": "application/json"}
        )
    else:
        response = await api.client.post(f"{API}/collections", json=body)
    error = assert_error(response, 400, "bad-request")
    assert error.get("hint"), why
    assert (await api.client.get(f"{API}/collections")).json() == {"collections": []}


PATCH_BODIES: list[tuple[Any, str]] = [
    ({"name": None}, "null name"),
    ({"name": ""}, "empty name"),
    ({"sources": [VIDEO]}, "a video as a source"),
    ({"watch": {"every": "sometimes"}}, "bad watch"),
    ({"schedule": None}, "the stored name, not the wire's"),
    ({"id": "col_other"}, "id is not writable"),
    (b"not json", "not JSON"),
    (b"[]", "array"),
]


@pytest.mark.parametrize(("body", "why"), PATCH_BODIES, ids=[w for _, w in PATCH_BODIES])
async def test_bad_patch_bodies_change_nothing(api: Api, body: Any, why: str) -> None:
    created = await api.create(description="d")
    url = f"{API}/collections/{created['id']}"
    if isinstance(body, bytes):
        response = await api.client.patch(url, content=body, headers={"Content-Type": "application/json"})
    else:
        response = await api.client.patch(url, json=body)
    assert_error(response, 400, "bad-request")
    after = (await api.client.get(url)).json()
    assert {k: after[k] for k in COLLECTION_FIELDS} == created


ITEM_BODIES: list[tuple[Any, str]] = [
    (None, "missing body"),
    ({}, "no inputs"),
    ({"inputs": []}, "empty inputs"),
    ({"inputs": VIDEO}, "inputs not a list"),
    ({"inputs": [1]}, "input not a string"),
    ({"inputs": [VIDEO] * 5001}, "5001 inputs"),
    ({"inputs": [VIDEO], "limit": 0}, "limit 0"),
    ({"inputs": [VIDEO], "limit": "2"}, "limit as a string"),
    ({"inputs": [VIDEO], "limit": 5001}, "limit over the cap"),
    ({"inputs": [VIDEO], "concurrency": 2}, "unknown field"),
]


@pytest.mark.parametrize(("body", "why"), ITEM_BODIES, ids=[w for _, w in ITEM_BODIES])
async def test_bad_add_items_bodies_queue_nothing(
    api: Api, httpx_mock: HTTPXMock, body: Any, why: str
) -> None:
    created = await api.create()
    url = f"{API}/collections/{created['id']}/items"
    response = await (api.client.post(url) if body is None else api.client.post(url, json=body))
    error = assert_error(response, 400, "bad-request")
    assert error.get("hint"), why
    assert api.runtime.jobs._records == {}
    assert httpx_mock.get_requests() == []


REMOVE_BODIES: list[tuple[Any, str]] = [
    (None, "missing body"),
    ({}, "no videoIds"),
    ({"videoIds": []}, "empty"),
    ({"videoIds": VIDEO_ID}, "not a list"),
    ({"videoIds": [PLAYLIST]}, "a list, not a video"),
    ({"videoIds": [""]}, "an empty id"),
    ({"videoIds": ["not a video"]}, "not an id"),
    ({"videoIds": ["x" * 10_000]}, "a 10 kB id"),
    ({"videoIds": [VIDEO_ID] * 5001}, "5001 ids"),
    ({"video_ids": [VIDEO_ID]}, "snake_case field"),
]


@pytest.mark.parametrize(("body", "why"), REMOVE_BODIES, ids=[w for _, w in REMOVE_BODIES])
async def test_bad_remove_items_bodies(api: Api, body: Any, why: str) -> None:
    created = await api.create()
    url = f"{API}/collections/{created['id']}/items"
    response = await (
        api.client.request("DELETE", url) if body is None else api.client.request("DELETE", url, json=body)
    )
    error = assert_error(response, 400, "bad-request")
    assert error.get("hint"), why


@pytest.mark.parametrize("body", [b'{"limit": 0}', b'{"limit": "5"}', b'{"every": 1}', b"[]", b"not json"])
async def test_bad_refresh_bodies(api: Api, body: bytes) -> None:
    created = await api.create()
    response = await api.client.post(
        f"{API}/collections/{created['id']}/refresh",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 400, "bad-request")
    assert api.runtime.jobs._records == {}


async def test_oversized_bodies_are_413(httpx_mock: HTTPXMock, runtimes: Runtimes) -> None:
    served = Api(await runtimes.build({**QUIET, "VID2CONTEXT_MAX_BODY_KB": "1"}))
    try:
        big = {"name": "x", "description": "d" * 2000}
        assert_error(await served.client.post(f"{API}/collections", json=big), 413, "too-large")
        assert_error(
            await served.client.post(
                f"{API}/collections/import", json={**big, "format": "vid2context.collection"}
            ),
            413,
            "too-large",
        )
    finally:
        await served.client.aclose()
