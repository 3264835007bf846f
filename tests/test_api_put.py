"""``PUT /api/v1/library/{id}``: a pushed ``VideoContext`` on the memory runtime and on the Worker's
(D1, KV and R2 on Miniflare, the Vectorize stand-in), checked before anything is stored.

The contexts are the made-up talks of ``talks.py`` (real shapes, no platform behind them), so no
request leaves the process: a video that the edge serves here was never fetched from anywhere.
Pushed vectors are tested against a runtime whose embedder is the local embeddings stand-in
(``fake_embeddings.py``, real HTTP on 127.0.0.1).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest

from vid2context.api import create_app
from vid2context.models import VideoContext
from vid2context.runtime import Runtime
from vid2context.search.embedders.openai_compat import OpenAICompatibleEmbedder
from vid2context.search.indexing import choose_space
from vid2context.search.windows import make_windows

from .fake_embeddings import FakeEmbeddings
from .runtimes import ON_WORKER_TOO, Runtimes, serve
from .talks import bike_review, sourdough
from .youtube_replay import httpx_callback

pytestmark = pytest.mark.anyio

QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
WRITER, READER = "writer-key-0123456789", "reader-key-0123456789"
KEYS = {
    "VID2CONTEXT_API_KEYS": f"w:write:{hashlib.sha256(WRITER.encode()).hexdigest()},"
    f"r:read:{hashlib.sha256(READER.encode()).hexdigest()}"
}


def path_of(video_id: str) -> str:
    return "/api/v1/library/" + video_id.replace(":", "%3A")


def body_of(context: VideoContext, **changes: Any) -> dict[str, Any]:
    body = msgspec.to_builtins(context)
    body.update(changes)
    return body


class Edge:
    def __init__(self, runtime: Runtime, key: str | None = None) -> None:
        self.runtime = runtime
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(runtime)),
            base_url="https://edge.example",
            headers=headers,
        )

    async def put(
        self, context: VideoContext | dict[str, Any], video_id: str | None = None, **kw: Any
    ) -> httpx.Response:
        body = msgspec.to_builtins(context) if isinstance(context, VideoContext) else context
        return await self.client.put(path_of(video_id or body["id"]), json=body, **kw)


@pytest.fixture
async def edge(runtimes: Runtimes) -> AsyncIterator[Edge]:
    served = Edge(await runtimes.build(QUIET))
    yield served
    await served.client.aclose()


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "attempts"} and body["error"]["code"] == code, body
    assert body["error"]["message"] and body["error"]["hint"], body
    assert "Traceback" not in response.text
    return body["error"]


@ON_WORKER_TOO
async def test_put_then_the_edge_serves_it_as_its_own(edge: Edge) -> None:
    """What was pushed is what GET answers, byte for byte, with the ETag the PUT gave; the
    transcript, outline and search read it from the library."""
    talk = bike_review()
    put = await edge.put(talk)
    assert put.status_code == 201, put.text
    answer = put.json()
    assert answer["created"] is True and answer["segments"] == len(talk.transcript.segments)
    got = await edge.client.get(path_of(talk.id))
    assert got.status_code == 200
    assert got.headers["etag"] == put.headers["etag"] == answer["etag"]
    assert msgspec.json.decode(got.content, type=VideoContext) == talk
    transcript = await edge.client.get("/api/v1/transcript", params={"url": talk.metadata.url})
    assert transcript.status_code == 200, transcript.text
    assert talk.transcript.segments[0].text in transcript.text
    outline = await edge.client.get("/api/v1/outline", params={"url": talk.metadata.url})
    assert outline.status_code == 200 and talk.metadata.chapters[0].title in outline.text
    word = talk.transcript.segments[3].text.split()[-1].strip(".,")
    hits = (await edge.client.get("/api/v1/search", params={"q": word, "mode": "keyword"})).json()["hits"]
    assert hits and all(hit["videoId"] == talk.id for hit in hits)
    again = await edge.put(talk)
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.headers["etag"] == put.headers["etag"]  # the same content, the same tag


async def test_if_match_guards_a_newer_copy(edge: Edge) -> None:
    talk = bike_review()
    first = await edge.put(talk)
    seen = first.headers["etag"]
    newer = body_of(talk, fetchedAt="2026-12-01T10:00:00Z")
    assert (await edge.put(newer, headers={"If-Match": seen})).status_code == 200
    stale = body_of(talk, fetchedAt="2026-11-01T10:00:00Z")
    error = refused(await edge.put(stale, headers={"If-Match": seen}), 412, "precondition-failed")
    assert "If-Match" in error["hint"]
    assert (await edge.client.get(path_of(talk.id))).json()["fetchedAt"] == "2026-12-01T10:00:00Z"
    other = sourdough()
    refused(await edge.put(other, headers={"If-Match": "*"}), 412, "precondition-failed")  # none saved
    assert (await edge.client.get(path_of(other.id))).status_code == 404
    assert (await edge.put(talk, headers={"If-Match": "*"})).status_code == 200


async def test_keys_and_scopes(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({**QUIET, **KEYS})
    talk = bike_review()
    for key, status, code in (
        (None, 401, "unauthorized"),
        (READER, 403, "forbidden"),
        ("wrong", 401, "unauthorized"),
    ):
        edge = Edge(runtime, key)
        refused(await edge.put(talk), status, code)
    reader = Edge(runtime, READER)
    assert (await reader.client.get(path_of(talk.id))).status_code == 404  # nothing was stored
    assert (await Edge(runtime, WRITER).put(talk)).status_code == 201
    assert (await reader.client.get(path_of(talk.id))).status_code == 200


def _segments(talk: VideoContext, *changes: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    body = body_of(talk)
    for index, change in changes:
        body["transcript"]["segments"][index].update(change)
    return body


TALK = bike_review()
BAD_BODIES: dict[str, tuple[Any, str]] = {
    "another id than the path": (body_of(TALK, id="youtube:jNQXAC9IVRw"), "path names"),
    "metadata of another video": (
        {**body_of(TALK), "metadata": {**body_of(TALK)["metadata"], "id": "youtube:jNQXAC9IVRw"}},
        "metadata.id",
    ),
    "segments out of order": (_segments(TALK, (5, {"startSec": 1.0, "endSec": 2.0})), "in order"),
    "a segment ending before it starts": (_segments(TALK, (0, {"endSec": -1.0})), "ends before"),
    "a segment after the end": (_segments(TALK, (-1, {"endSec": 99_999.0})), "after the video"),
    "a negative time": (_segments(TALK, (0, {"startSec": -3.0})), "finite number of seconds, zero or more"),
    "a field of the wrong type": (body_of(TALK, attempts="none"), "attempts"),
    "no metadata": ({"id": TALK.id}, "metadata"),
    "not an object": ([1, 2, 3], "not valid"),
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
async def test_a_bad_context_is_refused_before_anything_is_stored(edge: Edge, name: str) -> None:
    body, said = BAD_BODIES[name]
    error = refused(await edge.put(body, TALK.id), 400, "bad-request")
    assert said in error["message"] + error["hint"], error
    assert (await edge.client.get(path_of(TALK.id))).status_code == 404


@pytest.mark.parametrize(
    ("raw", "said"),
    [(b'{"id": "youtube:', "truncated"), (b'{"id": "\xff\xfe"}', "UTF-8"), (b"", ""), (b"[1e400]", "range")],
    ids=["truncated", "not UTF-8", "empty", "an infinite number"],
)
async def test_unreadable_bodies(edge: Edge, raw: bytes, said: str) -> None:
    response = await edge.client.put(
        path_of(TALK.id), content=raw, headers={"Content-Type": "application/json"}
    )
    error = refused(response, 400, "bad-request")
    assert said in error["message"] + error["hint"]


async def test_an_upload_id_is_no_library_id(edge: Edge) -> None:
    upload = "upload:" + "a" * 64
    body = body_of(TALK, id=upload)
    body["metadata"]["id"] = upload
    refused(await edge.put(body, upload), 400, "bad-request")


async def test_two_hundred_thousand_segments_are_too_large(edge: Edge) -> None:
    body = body_of(TALK)
    body["metadata"]["durationSec"] = 200_000.0
    body["transcript"]["segments"] = [
        {"startSec": i, "endSec": i + 0.5, "text": "word"} for i in range(200_000)
    ]
    error = refused(await edge.put(body), 413, "too-large")
    assert "100,000 segments" in error["message"] and "100,000" in error["hint"]
    assert (await edge.client.get(path_of(TALK.id))).status_code == 404
    body["transcript"]["segments"] = body["transcript"]["segments"][:100_001]  # just over: counted exactly
    error = refused(await edge.put(body), 413, "too-large")
    assert "100,001 segments" in error["message"]


async def test_the_push_cap_is_its_own(runtimes: Runtimes) -> None:
    """A pushed context may be far larger than other bodies (VID2CONTEXT_MAX_BODY_KB), up to
    VID2CONTEXT_MAX_PUSH_KB, whose hint names it."""
    runtime = await runtimes.build({**QUIET, "VID2CONTEXT_MAX_BODY_KB": "1", "VID2CONTEXT_MAX_PUSH_KB": "64"})
    edge = Edge(runtime)
    talk = bike_review()
    assert len(msgspec.json.encode(talk)) > 1024
    assert (await edge.put(talk)).status_code == 201
    body = body_of(talk, metadata={**body_of(talk)["metadata"], "description": "x" * 70_000})
    error = refused(await edge.put(body), 413, "too-large")
    assert "VID2CONTEXT_MAX_PUSH_KB" in error["hint"]
    chunked = await edge.client.put(
        path_of(talk.id),
        content=_chunks(json.dumps(body).encode()),
        headers={"Content-Type": "application/json"},
    )
    refused(chunked, 413, "too-large")
    refused(await edge.client.post("/api/v1/collections", json={"name": "x" * 2000}), 413, "too-large")


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 8192):
        yield data[start : start + 8192]


# --- vectors --------------------------------------------------------------------------------------


@pytest.fixture
async def embedding_edge(runtimes: Runtimes) -> AsyncIterator[Edge]:
    with FakeEmbeddings(key="k") as fake:
        runtime = await runtimes.build(QUIET)
        runtime.embed = [OpenAICompatibleEmbedder(runtime.http, url=fake.url + "/v1", key="k", dim=384)]
        served = Edge(runtime)
        yield served
        await served.client.aclose()


def _vectors(count: int, dim: int = 384) -> list[list[float]]:
    return [[(i + j) % 7 / 7 + 0.01 for j in range(dim)] for i in range(count)]


async def test_pushed_vectors_in_this_servers_space_are_kept(embedding_edge: Edge) -> None:
    runtime = embedding_edge.runtime
    space = (await choose_space(runtime)).space
    assert space is not None
    talk = bike_review()
    windows = make_windows(talk)
    body = body_of(
        talk,
        embeddings={
            "space": msgspec.to_builtins(space),
            "vectors": _vectors(len(windows)),
            "producer": "laptop",
        },
    )
    answer = await embedding_edge.put(body)
    assert answer.status_code == 201 and answer.json()["vectors"] == "pushed", answer.text
    assert await runtime.vectors.window_ids(space, talk.id) == sorted(w.id for w in windows)
    assert "embeddings" not in (await embedding_edge.client.get(path_of(talk.id))).json()


async def test_vectors_of_another_model_are_replaced_by_this_servers(embedding_edge: Edge) -> None:
    talk = bike_review()
    other = {"model": "some/other-model", "dim": 8, "pooling": "mean"}
    body = body_of(
        talk, embeddings={"space": other, "vectors": _vectors(len(make_windows(talk)), 8), "producer": "x"}
    )
    answer = (await embedding_edge.put(body)).json()
    assert answer["vectors"] == "embedded", answer
    assert any(a.get("reason") == "other-model" and a["outcome"] == "skipped" for a in answer["attempts"])


@pytest.mark.parametrize(
    ("change", "said"),
    [("count", "windows"), ("dim", "dimensions"), ("huge", "range"), ("zeros", "zeros")],
)
async def test_bad_pushed_vectors_are_refused(embedding_edge: Edge, change: str, said: str) -> None:
    space = msgspec.to_builtins((await choose_space(embedding_edge.runtime)).space)
    talk = bike_review()
    vectors = _vectors(len(make_windows(talk)))
    if change == "count":
        vectors = vectors[:-1]
    elif change == "dim":
        vectors[0] = vectors[0][:10]
    elif change == "huge":
        vectors[0][0] = 1e400
    else:
        vectors[0] = [0.0] * 384
    raw = json.dumps(body_of(talk, embeddings={"space": space, "vectors": vectors, "producer": "x"}))
    raw = raw.replace("Infinity", "1e400")  # JSON has no infinity; a number too large for a float is one
    response = await embedding_edge.client.put(
        path_of(talk.id), content=raw, headers={"Content-Type": "application/json"}
    )
    error = refused(response, 400, "bad-request")
    assert said in error["message"], error
    assert (await embedding_edge.client.get(path_of(talk.id))).status_code == 404


# --- the edge's blocked answer --------------------------------------------------------------------

MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}


@pytest.mark.httpx_mock(assert_all_responses_were_requested=False)
@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_blocked_on_the_edge_names_the_push_command_with_its_own_url(
    runtimes: Runtimes, httpx_mock: Any
) -> None:
    """On the Worker, YouTube's bot check answers with the exact command that brings the video
    here, with the URL the request reached this server by: over REST and over remote MCP. A Host
    that is not a plain host name is never printed (Litestar refuses the worst itself)."""
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    runtime = await runtimes.build(QUIET)
    command = "`vid2context push https://www.youtube.com/watch?v=botCheck001 --to https://edge.example`"
    async with serve(create_app(runtime)) as client:
        client.base_url = httpx.URL("https://edge.example")
        error = refused(await client.get("/api/v1/transcript", params={"url": "botCheck001"}), 503, "blocked")
        assert command in error["hint"] and "VID2CONTEXT_REMOTE_KEY" in error["hint"], error
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        call["params"] = {"name": "get_transcript", "arguments": {"url": "botCheck001"}}
        answer = (await client.post("/mcp", json=call, headers=MCP_HEADERS)).json()
        assert answer["result"]["isError"] is True
        assert command in json.loads(answer["result"]["content"][0]["text"])["hint"]
        hostile = await client.get(
            "/api/v1/transcript", params={"url": "botCheck001"}, headers={"Host": "edge_$(id).example"}
        )
        hint = refused(hostile, 503, "blocked")["hint"]
        assert "--to <this server's URL>`" in hint and "$(id)" not in hint, hint


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/library/..%2F..%2Fetc%2Fpasswd",
        "/api/v1/library/youtube%3ABikeReview1%00",
        "/api/v1/library/" + "x" * 10_000,
        "/api/v1/library/%20",
    ],
    ids=["traversal", "a NUL byte", "10 kB", "blank"],
)
async def test_hostile_ids_are_refused_and_store_nothing(edge: Edge, path: str) -> None:
    response = await edge.client.put(path, json=body_of(TALK))
    refused(response, 400, "bad-request")
    assert (await edge.client.get("/api/v1/library")).json()["items"] == []
