"""Watch lists on the local runtime: ``vid2context refresh --due`` in a real subprocess, and the
scheduler ``vid2context serve`` runs in its lifespan, on a real SQLite home with YouTube replayed."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from vid2context import library
from vid2context.models import Schedule
from vid2context.runtime import build_local_runtime
from vid2context.watch import WithScheduler

from .runtimes import asgi_lifespan
from .youtube_replay import PLAYLIST_ID, ReplayServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"


@pytest.fixture(scope="module")
def replay():  # type: ignore[no-untyped-def]
    with ReplayServer() as server:
        yield server


def _environ(home: Path, replay: ReplayServer) -> dict[str, str]:
    return {"VID2CONTEXT_HOME": str(home), "VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin, "HF_HUB_OFFLINE": "1"}


async def _due_collection(environ: dict[str, str]) -> str:
    runtime = build_local_runtime(environ)
    try:
        made = await library.create_collection(runtime, "watched", sources=[PLAYLIST])
        stored = await runtime.storage.get_collection(made.id)
        assert stored is not None
        await runtime.storage.put_collection(
            msgspec.structs.replace(stored, schedule=Schedule(every=60), created_at="2026-01-01T00:00:00Z")
        )
        return made.id
    finally:
        await runtime.aclose()


def _refresh_due(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vid2context", "refresh", "--due"],
        env={**os.environ, **environ},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


async def test_refresh_due_refreshes_a_due_list_once(tmp_path: Path, replay: ReplayServer) -> None:
    environ = _environ(tmp_path / "home", replay)
    collection_id = await _due_collection(environ)
    first = _refresh_due(environ)
    assert first.returncode == 0, first.stderr
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert len(lines) == 1 and lines[0]["status"] == "succeeded"
    assert lines[0]["collectionId"] == collection_id and len(lines[0]["added"]) == 12
    again = _refresh_due(environ)  # refreshed just now: not due
    assert again.returncode == 0 and again.stdout == "", again.stderr


async def test_the_servers_scheduler_refreshes_due_lists_in_its_lifespan(
    tmp_path: Path, replay: ReplayServer
) -> None:
    environ = _environ(tmp_path / "home", replay)
    collection_id = await _due_collection(environ)
    runtime = build_local_runtime(environ)

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})

    try:
        async with asgi_lifespan(WithScheduler(app, runtime, tick_s=0.1)):
            async with asyncio.timeout(120):
                while (await library.get_collection(runtime, collection_id)).checked_at is None:
                    await asyncio.sleep(0.1)
        view = await library.get_collection_view(runtime, collection_id)
        assert len(view.videos) == 12
    finally:
        await runtime.aclose()
