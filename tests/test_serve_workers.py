"""``vid2context serve --workers 2``: two real server processes on one port and one SQLite file.

What must hold: both workers start (migrations applied once, WAL shared), concurrent writes
through either of them all land (no ``database is locked``), and no worker serves a rendered
answer older than a write another worker made (``api/rendered.py``: the version is the file's).
Which worker answers a connection is the kernel's choice, so no assertion rests on it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from vid2context.models import VideoContext

from .ports import healthy, start_serve
from .talks import BIKE_TOPICS, topic_talk
from .youtube_replay import ReplayServer

pytestmark = pytest.mark.slow

WORKERS = 2
PUSHES = 12


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _worker_processes(pid: int) -> list[int]:
    """The server's child processes that run the app (granian's workers import vid2context)."""
    workers = []
    for child in _children(pid):
        try:
            maps = Path(f"/proc/{child}/maps").read_text()
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline and "granian" in maps:
            workers.append(child)
    return workers


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with ReplayServer() as replay:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
        env.update(
            VID2CONTEXT_HOME=str(tmp_path),
            VID2CONTEXT_YOUTUBE_ORIGIN=replay.origin,
            VID2CONTEXT_ACCESS_LOG="0",
            VID2CONTEXT_RATE_LIMIT="0",
            VID2CONTEXT_EMBED_ON_SAVE="0",
        )
        process, base = start_serve(
            env,
            tmp_path / "serve.log",
            lambda url, started: len(_worker_processes(started.pid)) >= WORKERS and healthy(url, started),
            args=["--workers", str(WORKERS)],
            within_s=120,
        )
        try:
            yield base
            assert len(_worker_processes(process.pid)) == WORKERS
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _get(base: str, path: str, **params: str) -> httpx.Response:
    # A fresh connection each time, so the kernel may hand it to either worker.
    with httpx.Client(base_url=base, timeout=60) as client:
        return client.get(path, params=params)


def test_two_workers_share_the_file_for_reads_and_writes(server: str) -> None:
    talks = [topic_talk(f"Push{n:07d}", f"Pushed talk {n}", BIKE_TOPICS, seed=n) for n in range(PUSHES)]

    def push(talk: object) -> int:
        with httpx.Client(base_url=server, timeout=120) as client:
            body = msgspec.json.encode(talk)
            video_id = msgspec.json.decode(body)["id"]
            return client.put(f"/api/v1/library/{video_id}", content=body).status_code

    with ThreadPoolExecutor(PUSHES) as pool:  # every push at once, over connections of their own
        statuses = list(pool.map(push, talks))
    assert set(statuses) <= {200, 201}, statuses
    listed = _get(server, "/api/v1/library", limit="100").json()["items"]
    assert {item["id"] for item in listed} >= {talk.id for talk in talks}


def _opening(talk: VideoContext, words: str) -> VideoContext:
    assert talk.transcript is not None
    first = msgspec.structs.replace(talk.transcript.segments[0], text=words)
    segments = [first, *talk.transcript.segments[1:]]
    return msgspec.structs.replace(
        talk, transcript=msgspec.structs.replace(talk.transcript, segments=segments)
    )


def _put(base: str, talk: VideoContext) -> int:
    with httpx.Client(base_url=base, timeout=120) as client:
        return client.put(f"/api/v1/library/{talk.id}", content=msgspec.json.encode(talk)).status_code


def test_no_worker_serves_a_transcript_older_than_another_workers_write(server: str) -> None:
    native = "Cached00001"
    talk = _opening(topic_talk(native, "Cached talk", BIKE_TOPICS, seed=1), "Opening words first")
    assert _put(server, talk) in (200, 201)
    before = [_get(server, "/api/v1/transcript", url=native, format="srt") for _ in range(12)]
    assert all(r.status_code == 200 and "Opening words first" in r.text for r in before)
    assert len({r.headers["etag"] for r in before}) == 1
    assert _put(server, _opening(talk, "Changed by a push")) == 200
    after = [_get(server, "/api/v1/transcript", url=native, format="srt") for _ in range(12)]
    for response in after:
        assert response.status_code == 200
        assert "Changed by a push" in response.text and "Opening words first" not in response.text
        assert response.headers["etag"] != before[0].headers["etag"]


class _Granian:
    calls: list[dict[str, Any]] = []  # noqa: RUF012 - one list per test, reset by the fixture

    def __init__(self, target: str, **kwargs: Any) -> None:
        _Granian.calls.append(kwargs)

    def serve(self) -> None:
        return None


def test_workers_default_to_the_cores_and_are_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import granian

    from vid2context import cli

    _Granian.calls = []
    monkeypatch.setattr(granian, "Granian", _Granian)
    for name in ("VID2CONTEXT_API_KEYS", "VID2CONTEXT_HOSTED"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["serve"]) == 0
    assert _Granian.calls[-1]["workers"] == 1  # MCP's long runs and sessions live in one process
    assert cli.main(["serve", "--workers", "3"]) == 0
    assert _Granian.calls[-1]["workers"] == 3
    for bad in ("0", "-1", "257"):
        assert cli.main(["serve", "--workers", bad]) == 2
        assert "--workers" in capsys.readouterr().err
    monkeypatch.setenv("VID2CONTEXT_MCP_SESSIONS", "1")
    assert cli.main(["serve", "--workers", "2"]) == 2
    assert "VID2CONTEXT_MCP_SESSIONS" in capsys.readouterr().err
    assert cli.main(["serve"]) == 0
    assert len(_Granian.calls) == 3
