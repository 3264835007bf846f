"""Subscriptions to ``vid2context://collection/{id}/latest`` over the real stdio server.

``vid2context mcp`` runs as a subprocess on a SQLite home, reading YouTube from the replay server;
a collection following a replayed playlist is refreshed by the server itself (``create_collection``
with a source reads its videos, an ``add_to_collection`` adds more), and the SDK's client gets the
update: ``notifications/resources/updated`` after ``resources/subscribe`` (2025-11-25), or a
``subscriptions/listen`` event (2026-07-28).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from .test_mcp_stdio import _params
from .youtube_replay import PLAYLIST_ID, ReplayServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"
WAIT_S = 60  # a bound on a hang, never a measured time


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


class Updates:
    """A client's ``message_handler`` that keeps the URIs of ``notifications/resources/updated``;
    ``arrived`` is set at each one (replace it before waiting for the next)."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self.arrived.set()


def _client(tmp_path: Path, replay: ReplayServer, **kwargs: Any) -> Client:
    roots = tmp_path / "work"
    roots.mkdir(exist_ok=True)
    errors = (tmp_path / "stderr.txt").open("a", encoding="utf-8")
    return Client(stdio_client(_params(tmp_path / "home", replay.origin, roots), errlog=errors), **kwargs)


def _json(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def test_a_subscribed_collection_is_updated_when_its_refresh_adds_videos(
    tmp_path: Path, replay: ReplayServer
) -> None:
    updates = Updates()
    updated = updates.uris
    async with _client(tmp_path, replay, mode="legacy", message_handler=updates) as client:
        assert client.server_capabilities.resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe as 2025-era
            # By name: the list does not exist yet, so it has no id to subscribe to.
            await client.subscribe_resource("vid2context://collection/Followed/latest")
            with pytest.raises(MCPError) as refused:
                await client.subscribe_resource("vid2context://video/youtube%3AGJLlxj_dtq8")
        assert "only collections change" in refused.value.error.message
        assert updated == []
        created = _json(
            await client.call_tool("create_collection", {"name": "Followed", "sources": [PLAYLIST]})
        )
        assert len(created["summary"]["added"]) == 12  # the refresh that follows the playlist
        with anyio.fail_after(WAIT_S):
            await updates.arrived.wait()
        assert updated == ["vid2context://collection/Followed/latest"]

        cid = created["collection"]["id"]
        latest = await client.read_resource(f"vid2context://collection/{cid}/latest")
        body = json.loads(latest.contents[0].text)
        assert body["collection"]["id"] == cid and body["older"] == 0
        assert len(body["videos"]) == 12
        added_at = [video["addedAt"] for video in body["videos"]]
        assert added_at == sorted(added_at, reverse=True)
        assert {video["id"] for video in body["videos"]} == {v["id"] for v in created["summary"]["added"]}

        # A second subscription, by id; once unsubscribed by name, only the id is told.
        updates.arrived = anyio.Event()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(f"vid2context://collection/{cid}/latest")
            await client.unsubscribe_resource("vid2context://collection/Followed/latest")
        updated.clear()
        more = _json(
            await client.call_tool("add_to_collection", {"collection": cid, "urls": ["GJLlxj_dtq8"]})
        )
        assert [v["id"] for v in more["summary"]["added"]] == ["youtube:GJLlxj_dtq8"]
        with anyio.fail_after(WAIT_S):
            await updates.arrived.wait()
        assert updated == [f"vid2context://collection/{cid}/latest"]
        newest = json.loads(
            (await client.read_resource(f"vid2context://collection/{cid}/latest")).contents[0].text
        )
        assert newest["videos"][0]["id"] == "youtube:GJLlxj_dtq8" and newest["older"] == 0
        assert len(newest["videos"]) == 13

        # Nothing new: a second read of the same video adds nothing, and nobody is told.
        updated.clear()
        again = _json(
            await client.call_tool("add_to_collection", {"collection": cid, "urls": ["GJLlxj_dtq8"]})
        )
        assert again["summary"]["added"] == [] and again["summary"]["skipped"] == 1
        await client.list_tools()  # one more round trip: a notification sent before it has arrived
        assert updated == []


async def test_a_listen_stream_gets_the_update_on_the_2026_protocol(
    tmp_path: Path, replay: ReplayServer
) -> None:
    async with _client(tmp_path, replay, mode="2026-07-28") as client:
        created = _json(await client.call_tool("create_collection", {"name": "Later"}))
        cid = created["collection"]["id"]
        uri = f"vid2context://collection/{cid}/latest"
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            added = _json(
                await client.call_tool("add_to_collection", {"collection": cid, "urls": [PLAYLIST]})
            )
            assert len(added["summary"]["added"]) == 12
            with anyio.fail_after(WAIT_S):
                event = await anext(aiter(subscription))
        assert getattr(event, "uri", None) == uri


async def test_reading_the_latest_of_a_missing_collection_is_not_found(
    tmp_path: Path, replay: ReplayServer
) -> None:
    async with _client(tmp_path, replay, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("vid2context://collection/nope/latest")
        body = json.loads(caught.value.error.message)
        assert body["error"] == "not-found" and body["hint"]
