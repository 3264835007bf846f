"""Push, pull and sync for real: two servers on loopback and the real ``vid2context`` command.

- The "edge" is ``vid2context serve`` in a subprocess whose YouTube (a ``ReplayServer(blocked=True)``)
  answers every player request with the recorded bot check, as YouTube answers cloud addresses;
  it has API keys (a write and a read key) and the offline MiniLM model for vector search.
- The "laptop" is the CLI in a subprocess, whose YouTube replay answers normally.

The laptop pushes a video and a playlist (and a video YouTube says is unavailable, which fails
alone); the edge then serves their transcripts, outlines and search without a single request to
its YouTube; a fresh home pulls them back, and ``sync`` moves collections both ways.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from vid2context import library
from vid2context.runtime import build_local_runtime

from .ports import healthy, start_serve
from .youtube_replay import PLAYLIST_ID, ReplayServer, listed_ids

WRITE_KEY = "push-writer-key-0123456789"
READ_KEY = "push-reader-key-0123456789"
VIDEO = "https://www.youtube.com/watch?v=GJLlxj_dtq8"
PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"
GONE = "https://www.youtube.com/watch?v=unavailable"
NOWHERE = "http://127.0.0.1:9"
"""A YouTube origin nothing answers: a command that needs YouTube there fails."""


def _env(home: Path, origin: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(
        {
            "VID2CONTEXT_HOME": str(home),
            "VID2CONTEXT_YOUTUBE_ORIGIN": origin,
            "VID2CONTEXT_ACCESS_LOG": "0",
            "VID2CONTEXT_EMBED_ON_SAVE": "0",
            **extra,
        }
    )
    return env


def cli(home: Path, origin: str, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "vid2context", *args],
        capture_output=True,
        text=True,
        env=_env(home, origin, **extra),
        timeout=300,
        check=False,
    )
    assert WRITE_KEY not in result.stdout + result.stderr and READ_KEY not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result


@dataclass
class Edge:
    url: str
    youtube: ReplayServer
    home: Path

    def get(self, path: str, key: str = READ_KEY, **params: str) -> httpx.Response:
        return httpx.get(
            self.url + path, params=params, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )

    def send(self, method: str, path: str, body: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {WRITE_KEY}"}
        return httpx.request(method, self.url + path, json=body, headers=headers, timeout=60)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@pytest.fixture(scope="module")
def laptop_youtube() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory, embed_model_dir: Path) -> Iterator[Edge]:
    home = tmp_path_factory.mktemp("edge")
    with ReplayServer(blocked=True) as youtube:
        env = _env(
            home,
            youtube.origin,
            VID2CONTEXT_API_KEYS=f"laptop:write:{_digest(WRITE_KEY)},agent:read:{_digest(READ_KEY)}",
            VID2CONTEXT_RATE_LIMIT="0",
            VID2CONTEXT_EMBED_ON_SAVE="1",
            VID2CONTEXT_EMBED_MODEL_DIR=str(embed_model_dir),
            VID2CONTEXT_EMBED_POOLING="mean",
        )
        server, url = start_serve(env, home / "edge.log", healthy)
        try:
            yield Edge(url=url, youtube=youtube, home=home)
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@pytest.fixture(scope="module")
def pushed(edge: Edge, laptop_youtube: ReplayServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The laptop pushes a video, a playlist and a video that is gone, into collection Talks."""
    laptop = tmp_path_factory.mktemp("laptop")
    result = cli(
        laptop,
        laptop_youtube.origin,
        "push",
        VIDEO,
        PLAYLIST,
        GONE,
        "--to",
        edge.url,
        "--collection",
        "Talks",
        VID2CONTEXT_REMOTE_KEY=WRITE_KEY,
    )
    assert result.returncode == 1, result.stderr  # the gone video failed, alone
    lines = result.stderr.splitlines()
    assert sum(" ok " in line for line in lines) == 1 + len(listed_ids() & _playlist_ids(edge)), result.stderr
    assert any("failed youtube:unavailable: not-found" in line for line in lines), result.stderr
    assert "1 failed" in result.stdout and "collection col_" in result.stdout, result.stdout
    return laptop


def _playlist_ids(edge: Edge) -> set[str]:
    view = edge.get("/api/v1/collections/Talks").json()
    return {video["id"].removeprefix("youtube:") for video in view["videos"]}


def test_the_edge_serves_what_was_pushed_without_calling_youtube(edge: Edge, pushed: Path) -> None:
    view = edge.get("/api/v1/collections/Talks").json()
    ids = [video["id"] for video in view["videos"]]
    assert "youtube:GJLlxj_dtq8" in ids and len(ids) >= 10, view
    some = ids[-1]
    transcript = edge.get("/api/v1/transcript", url=some)
    assert transcript.status_code == 200 and "Hey, this is just a test" in transcript.text, transcript.text
    outline = edge.get("/api/v1/outline", url=some)
    assert outline.status_code == 200, outline.text
    found = edge.get("/api/v1/search", q="just a test", collection="Talks").json()
    assert found["hits"] and found["meta"]["vector"] == "ok", found["meta"]
    assert {hit["videoId"] for hit in found["hits"]} <= set(ids)
    assert edge.youtube.requests == []  # the edge never asked its YouTube for anything


def test_pushing_again_skips_what_is_there(edge: Edge, laptop_youtube: ReplayServer, pushed: Path) -> None:
    asked = len(laptop_youtube.requests)
    result = cli(pushed, laptop_youtube.origin, "push", VIDEO, PLAYLIST, "--to", edge.url, "--key", WRITE_KEY)
    assert result.returncode == 0, result.stderr
    assert "0 pushed" in result.stdout and "0 failed" in result.stdout, result.stdout
    assert all(" skipped " in line for line in result.stderr.splitlines()), result.stderr
    # Only the playlist page was read again (to expand it): no video was.
    assert all("/player" not in path and "/watch" not in path for _, path in laptop_youtube.requests[asked:])
    refreshed = cli(
        pushed, laptop_youtube.origin, "push", VIDEO, "--to", edge.url, "--key", WRITE_KEY, "--refresh"
    )
    assert refreshed.returncode == 0 and "1 pushed" in refreshed.stdout, refreshed.stderr


def test_push_needs_a_write_key_and_says_so(edge: Edge, laptop_youtube: ReplayServer, pushed: Path) -> None:
    result = cli(
        pushed, laptop_youtube.origin, "push", VIDEO, "--to", edge.url, "--key", READ_KEY, "--refresh"
    )
    assert result.returncode == 1
    assert "forbidden" in result.stderr, result.stderr
    nowhere = cli(pushed, laptop_youtube.origin, "push", VIDEO)
    assert nowhere.returncode == 1 and "VID2CONTEXT_REMOTE_URL" in nowhere.stderr
    gone = cli(pushed, laptop_youtube.origin, "push", VIDEO, "--to", NOWHERE, "--key", WRITE_KEY)
    assert gone.returncode == 1 and "failed youtube:GJLlxj_dtq8: upstream: Could not reach" in gone.stderr
    assert "1 failed" in gone.stdout
    not_ours = cli(
        pushed, laptop_youtube.origin, "push", VIDEO, "--to", laptop_youtube.origin, "--key", WRITE_KEY
    )
    assert not_ours.returncode == 1 and "not a vid2context error" in not_ours.stderr, not_ours.stderr


def test_a_fresh_home_pulls_them_back(edge: Edge, pushed: Path, tmp_path: Path) -> None:
    result = cli(tmp_path, NOWHERE, "pull", "--collection", "Talks", "--from", edge.url, "--key", READ_KEY)
    assert result.returncode == 0, result.stderr
    count = len(edge.get("/api/v1/collections/Talks").json()["videos"])
    assert f"{count} pulled" in result.stdout and "Talks" in result.stdout, result.stdout
    got = cli(tmp_path, NOWHERE, "get", "youtube:GJLlxj_dtq8")  # from the library: its YouTube is nowhere
    assert got.returncode == 0 and "Hey, this is just a test" in got.stdout, got.stderr
    view = asyncio.run(_local_view(tmp_path, "Talks"))
    assert len(view.videos) == count
    everything = cli(
        tmp_path / "all", NOWHERE, "pull", "--from", edge.url, "--key", READ_KEY
    )  # every collection
    assert everything.returncode == 0 and "Talks" in everything.stdout, everything.stderr
    assert len(asyncio.run(_local_view(tmp_path / "all", "Talks")).videos) == count


async def _local_view(home: Path, name: str) -> library.CollectionView:
    runtime = build_local_runtime({"VID2CONTEXT_HOME": str(home)})
    try:
        return await library.get_collection_view(runtime, name)
    finally:
        await runtime.aclose()


async def _local_collection(home: Path, name: str, video_ids: list[str]) -> None:
    runtime = build_local_runtime({"VID2CONTEXT_HOME": str(home), "VID2CONTEXT_YOUTUBE_ORIGIN": NOWHERE})
    try:
        created = await library.create_collection(runtime, name, description="from the laptop")
        await library.add_to_collection(runtime, created.id, video_ids)
    finally:
        await runtime.aclose()


def test_sync_moves_collections_both_ways(edge: Edge, pushed: Path, tmp_path: Path) -> None:
    assert (
        cli(
            tmp_path, NOWHERE, "pull", "youtube:GJLlxj_dtq8", "--from", edge.url, "--key", READ_KEY
        ).returncode
        == 0
    )
    asyncio.run(_local_collection(tmp_path, "Mine", ["youtube:GJLlxj_dtq8"]))
    theirs = edge.send(
        "POST", "/api/v1/collections", {"name": "Theirs", "description": "from the edge"}
    ).json()
    talks = edge.get("/api/v1/collections/Talks").json()["videos"]
    job = edge.send("POST", f"/api/v1/collections/{theirs['id']}/items", {"inputs": [talks[-1]["id"]]}).json()
    edge.get(f"/api/v1/jobs/{job['id']}/events", key=WRITE_KEY)  # the stream ends with the job

    result = cli(tmp_path, NOWHERE, "sync", "--with", edge.url, "--key", WRITE_KEY)
    assert result.returncode == 0, result.stderr
    assert "-> Mine (created, 1 videos)" in result.stderr, result.stderr
    assert "<- Theirs (created, 1 videos)" in result.stderr, result.stderr
    assert "<- Talks (created" in result.stderr, result.stderr
    assert "2 to here" in result.stdout and "1 to the server" in result.stdout, result.stdout
    mine = edge.get("/api/v1/collections/Mine").json()
    assert [v["id"] for v in mine["videos"]] == ["youtube:GJLlxj_dtq8"] and mine[
        "description"
    ] == "from the laptop"
    assert [v.id for v in asyncio.run(_local_view(tmp_path, "Theirs")).videos] == [talks[-1]["id"]]

    again = cli(tmp_path, NOWHERE, "sync", "--with", edge.url, "--key", WRITE_KEY)
    assert "0 to the server, 0 to here, 3 the same" in again.stdout, again.stderr

    # The edge's copy changes later: newest updatedAt wins, so it comes here.
    edge.send("PATCH", f"/api/v1/collections/{theirs['id']}", {"description": "renamed on the edge"})
    newer = cli(tmp_path, NOWHERE, "sync", "--with", edge.url, "--key", WRITE_KEY)
    assert "<- Theirs (updated, 1 videos)" in newer.stderr, newer.stderr
    assert asyncio.run(_local_view(tmp_path, "Theirs")).description == "renamed on the edge"
