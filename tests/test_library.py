"""The library and collections, on real parts: the runtime, the storage backends and the YouTube
provider, with only the network replaced (pytest-httpx serves the recorded YouTube of
``youtube_replay``, including its playlist and channel pages).

Every test runs on each storage backend, so the library behaves the same on all of them.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
from pytest_httpx import HTTPXMock

from vid2context.collections_io import next_due
from vid2context.errors import ErrorCode, VidError
from vid2context.library import (
    add_to_collection,
    create_collection,
    delete_collection,
    delete_video,
    export_collection,
    get_collection,
    get_collection_view,
    get_video,
    import_collection,
    list_collections,
    list_videos,
    refresh_collection,
    remove_from_collection,
    update_collection,
)
from vid2context.models import CollectionDefinition, Schedule
from vid2context.pipeline import get_context, list_items
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings
from vid2context.storage.base import Storage
from vid2context.storage.memory import MemoryStorage

from .together import GUARD_S, Together
from .youtube_replay import CHANNEL_ID, PLAYLIST_ID, browse_answer, httpx_callback

pytestmark = pytest.mark.anyio

GOOD = "https://www.youtube.com/watch?v=GJLlxj_dtq8"
GOOD_ID = "youtube:GJLlxj_dtq8"
OTHER = "https://youtu.be/F1xioXWb8CY"
OTHER_ID = "youtube:F1xioXWb8CY"
BLOCKED = "botCheck001"  # "Sign in to confirm you're not a bot"
NO_CAPTIONS = "dsMFmonKDD4"
PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"  # 12 videos
CHANNEL = f"https://www.youtube.com/channel/{CHANNEL_ID}"  # 30 videos
SUMMARY_FIELDS = {
    "id", "name", "description", "sources", "videoCount", "createdAt", "updatedAt", "checkedAt", "watch"
}  # fmt: skip
"""The one collection shape of every answer, REST and MCP."""
ISO_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


class Upstream:
    """The recorded YouTube, plus what a test needs around it: new uploads answered by ``browse``
    (no continuation is recorded), and, for the concurrency tests, watch pages (one a video) held
    until ``together`` are in flight, or one video's requests held until ``held`` is set."""

    def __init__(self) -> None:
        self.uploads: list[str] = []
        self.together: Together | None = None
        self.held: tuple[str, asyncio.Event] | None = None

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.held and self.held[0] in f"{request.url} {request.content.decode('utf-8', 'replace')}":
            await asyncio.wait_for(self.held[1].wait(), GUARD_S)
        if self.together and request.url.path == "/watch":
            async with self.together.inside():
                return self._answer(request)
        return self._answer(request)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/youtubei/v1/browse" and self.uploads:
            return httpx.Response(200, json=browse_answer(self.uploads))
        return httpx_callback(request)


@pytest.fixture
def upstream(httpx_mock: HTTPXMock) -> Upstream:
    answer = Upstream()
    httpx_mock.add_callback(answer, is_reusable=True, is_optional=True)
    return answer


@pytest.fixture(params=["memory", "sqlite"])
def storage(request: pytest.FixtureRequest, tmp_path: Any) -> Storage:
    if request.param == "memory":
        return MemoryStorage()
    try:
        from vid2context.storage.sqlite import SQLiteStorage
    except ImportError:
        pytest.skip("storage/sqlite.py is not written yet")
    return SQLiteStorage(tmp_path / "v.db")


@pytest.fixture
async def runtime(storage: Storage, upstream: Upstream) -> AsyncIterator[Runtime]:
    rt = build_runtime(load_settings({}), storage=storage, http=httpx.AsyncClient())
    yield rt
    await rt.aclose()


async def fails(awaitable: Any, code: ErrorCode, *words: str) -> VidError:
    with pytest.raises(VidError) as caught:
        await awaitable
    error = caught.value
    assert error.code is code, (error.code, error.message)
    text = f"{error.message} {error.hint or ''}"
    for word in words:
        assert word in text, (word, text)
    return error


async def playlist_ids(runtime: Runtime, source: str = PLAYLIST) -> list[str]:
    return [ref.id for ref in await list_items(runtime, source)]


# --- saved videos -----------------------------------------------------------------------------------


async def test_list_get_and_delete_saved_videos(runtime: Runtime) -> None:
    await get_context(runtime, GOOD)
    page = await list_videos(runtime)
    assert [v.id for v in page.items] == [GOOD_ID] and page.next_cursor is None
    for given in (GOOD_ID, "youtube%3AGJLlxj_dtq8", "youtube%253AGJLlxj_dtq8", GOOD, " GJLlxj_dtq8 "):
        assert (await get_video(runtime, given)).id == GOOD_ID, given
    await delete_video(runtime, "youtube%3AGJLlxj_dtq8")  # double-encoded, decoded once by the router
    await fails(get_video(runtime, GOOD_ID), ErrorCode.NOT_FOUND, GOOD_ID, "GET /api/v1/library")
    await fails(delete_video(runtime, GOOD_ID), ErrorCode.NOT_FOUND, GOOD_ID)
    assert (await list_videos(runtime)).items == []


@pytest.mark.parametrize("video_id", ["", "   ", None, 42, "x" * 3000])
async def test_malformed_video_ids_are_bad_requests(runtime: Runtime, video_id: Any) -> None:
    await fails(get_video(runtime, video_id), ErrorCode.BAD_REQUEST)
    await fails(delete_video(runtime, video_id), ErrorCode.BAD_REQUEST)


async def test_unknown_ids_are_not_found(runtime: Runtime) -> None:
    await fails(get_video(runtime, "youtube:jNQXAC9IVRw"), ErrorCode.NOT_FOUND, "youtube:jNQXAC9IVRw")
    await fails(get_video(runtime, "no such thing"), ErrorCode.NOT_FOUND)


@pytest.mark.parametrize("limit", [0, 201, -1, True, "5", 1.5])
async def test_library_page_limit_is_checked(runtime: Runtime, limit: Any) -> None:
    await fails(list_videos(runtime, limit=limit), ErrorCode.BAD_REQUEST, "200")


async def test_library_pages(runtime: Runtime) -> None:
    await add_to_collection(runtime, (await create_collection(runtime, "c")).id, [PLAYLIST])
    first = await list_videos(runtime, limit=5)
    assert len(first.items) == 5 and first.next_cursor
    rest = await list_videos(runtime, limit=200, cursor=first.next_cursor)
    ids = [v.id for v in first.items + rest.items]
    assert sorted(ids) == sorted(await playlist_ids(runtime)) and rest.next_cursor is None
    await fails(list_videos(runtime, cursor="not-a-cursor"), ErrorCode.BAD_REQUEST)


# --- collections: create, read, update, delete ---------------------------------------------------------


async def test_create_collection(runtime: Runtime) -> None:
    watch_url = f"https://www.youtube.com/watch?v=GJLlxj_dtq8&list={PLAYLIST_ID}"
    collection = await create_collection(
        runtime,
        "  Talks  ",
        description="Conference talks",
        sources=[watch_url, PLAYLIST, "@ProgrammingKnowledge"],
    )
    assert re.fullmatch(r"col_[A-Za-z0-9_-]{12}", collection.id)
    assert collection.name == "Talks" and collection.description == "Conference talks"
    # The watch URL with list= stands for its playlist, so it and the playlist URL are one source.
    assert collection.sources == [PLAYLIST, "https://www.youtube.com/@ProgrammingKnowledge"]
    assert ISO_Z.fullmatch(collection.created_at) and collection.updated_at == collection.created_at
    assert collection.video_count == 0 and collection.watch is None and collection.checked_at is None
    assert (await get_collection(runtime, collection.id)) == collection
    assert [c.id for c in await list_collections(runtime)] == [collection.id]
    wire = json.loads(msgspec.json.encode(collection))
    assert set(wire) == SUMMARY_FIELDS


async def test_a_single_video_is_not_a_source(runtime: Runtime) -> None:
    error = await fails(
        create_collection(runtime, "c", sources=[PLAYLIST, GOOD]),
        ErrorCode.BAD_REQUEST,
        "sources[1]",
        "single video",
    )
    assert "add_to_collection" in (error.hint_for("mcp") or "")
    assert "POST /api/v1/collections/{id}/items" in (error.hint_for("rest") or "")
    await fails(
        create_collection(runtime, "c", sources=["not a url at all"]),
        ErrorCode.UNSUPPORTED_INPUT,
        "sources[0]",
    )
    await fails(
        create_collection(runtime, "c", sources=["https://example.com/feed.xml"]),
        ErrorCode.BAD_REQUEST,
        "read as a single video",
    )
    await fails(create_collection(runtime, "c", sources=PLAYLIST), ErrorCode.BAD_REQUEST, "sources")  # type: ignore[arg-type]
    assert await list_collections(runtime) == []


@pytest.mark.parametrize("name", ["", "   ", None, 7, "x" * 201])
async def test_collection_names_are_checked(runtime: Runtime, name: Any) -> None:
    error = await fails(create_collection(runtime, name), ErrorCode.BAD_REQUEST)
    assert "`name`" in (error.hint or "")


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ({"every": "daily", "at": "06:30"}, Schedule(every="daily", at="06:30")),
        ({"every": {"minutes": 30}}, Schedule(every=30)),
        (Schedule(every="weekly", enabled=False), Schedule(every="weekly", enabled=False)),
    ],
)
async def test_schedules(runtime: Runtime, schedule: Any, expected: Schedule) -> None:
    collection = await create_collection(runtime, "c", schedule=schedule)
    assert collection.watch is not None and collection.watch.schedule == expected


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        ({"every": "monthly"}, "schedule"),
        ({"every": 0}, "schedule.every"),
        ({"every": "hourly", "at": "06:30"}, "schedule.at"),
        ({"every": "daily", "at": "25:00"}, "schedule.at"),
        ({"every": "daily", "when": "now"}, "schedule"),
        ("daily", "schedule"),
    ],
)
async def test_bad_schedules(runtime: Runtime, schedule: Any, field: str) -> None:
    error = await fails(create_collection(runtime, "c", schedule=schedule), ErrorCode.BAD_REQUEST)
    assert f"`{field}`" in (error.hint or ""), error.hint


async def test_update_distinguishes_not_given_from_none(runtime: Runtime) -> None:
    created = await create_collection(
        runtime, "c", description="d", sources=[PLAYLIST], schedule={"every": "hourly"}
    )
    renamed = await update_collection(runtime, created.id, name="renamed")
    assert renamed.watch is not None
    assert (renamed.name, renamed.description, renamed.sources, renamed.watch.schedule) == (
        "renamed",
        "d",
        [PLAYLIST],
        Schedule(every="hourly"),
    )
    assert renamed.updated_at >= created.updated_at and renamed.created_at == created.created_at
    cleared = await update_collection(runtime, created.id, schedule=None, description=None)
    assert cleared.watch is None and cleared.description is None and cleared.sources == [PLAYLIST]
    moved = await update_collection(runtime, created.id, sources=[CHANNEL])
    assert moved.sources == [CHANNEL] and moved.name == "renamed"
    await fails(update_collection(runtime, created.id, sources=[GOOD]), ErrorCode.BAD_REQUEST, "single video")
    await fails(update_collection(runtime, created.id, name=""), ErrorCode.BAD_REQUEST)
    assert (await get_collection(runtime, created.id)).sources == [CHANNEL]


async def test_unknown_collections_are_not_found(runtime: Runtime) -> None:
    missing = "col_doesnotexist"
    for call in (
        get_collection(runtime, missing),
        get_collection_view(runtime, missing),
        update_collection(runtime, missing, name="x"),
        delete_collection(runtime, missing),
        add_to_collection(runtime, missing, [GOOD]),
        remove_from_collection(runtime, missing, [GOOD_ID]),
        refresh_collection(runtime, missing),
        export_collection(runtime, missing),
    ):
        error = await fails(call, ErrorCode.NOT_FOUND, missing, "GET /api/v1/collections")
        assert "list_collections" in (error.hint_for("mcp") or "")
    await fails(get_collection(runtime, ""), ErrorCode.BAD_REQUEST)


async def test_deleting_a_collection_keeps_its_videos(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c")
    await add_to_collection(runtime, collection.id, [GOOD])
    await delete_collection(runtime, collection.id)
    await fails(get_collection(runtime, collection.id), ErrorCode.NOT_FOUND)
    assert (await get_video(runtime, GOOD_ID)).id == GOOD_ID
    await fails(delete_collection(runtime, collection.id), ErrorCode.NOT_FOUND)


# --- adding videos -------------------------------------------------------------------------------


async def test_add_videos_and_a_playlist(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c")
    listed = await playlist_ids(runtime)
    assert len(listed) == 12
    summary = await add_to_collection(runtime, collection.id, [GOOD, PLAYLIST, OTHER])
    assert [v.id for v in summary.added] == [GOOD_ID, *listed, OTHER_ID]
    assert (summary.skipped, summary.failed, summary.remaining) == (0, [], 0)
    assert summary.collection_id == collection.id and ISO_Z.fullmatch(summary.checked_at)
    assert all(v.tokens > 0 and v.origin == "captions-manual" for v in summary.added)
    view = await get_collection_view(runtime, collection.id)
    assert view.videos == summary.added
    assert view.video_count == 14 and view.pending == [] and view.watch is None
    assert view.updated_at >= collection.updated_at
    again = await add_to_collection(runtime, collection.id, [PLAYLIST, GOOD, GOOD])
    assert (again.added, again.skipped, again.failed) == ([], 13, [])


async def test_added_order_is_the_input_order_whatever_finishes_first(
    runtime: Runtime, upstream: Upstream
) -> None:
    ids = await playlist_ids(runtime)
    finished: list[str] = []
    others_done = asyncio.Event()

    def on_item(event: dict[str, Any]) -> None:
        finished.append(event["id"])
        if set(finished) >= set(ids[1:]):
            others_done.set()

    # The first video is read last: its requests wait until every other video is in.
    upstream.held = (ids[0].removeprefix("youtube:"), others_done)
    collection = await create_collection(runtime, "c")
    summary = await add_to_collection(runtime, collection.id, [PLAYLIST], concurrency=8, on_item=on_item)
    assert finished[-1] == ids[0]
    assert [v.id for v in summary.added] == ids
    assert (await get_collection_view(runtime, collection.id)).videos == summary.added


async def test_one_failing_video_never_stops_the_others(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c")
    inputs = [BLOCKED, GOOD, NO_CAPTIONS, "not a video", "unavailable", PLAYLIST, OTHER, 42]
    summary = await add_to_collection(runtime, collection.id, inputs)  # type: ignore[list-item]
    assert [v.id for v in summary.added] == [GOOD_ID, *await playlist_ids(runtime), OTHER_ID]
    # Inputs that name nothing readable first, then the videos that failed, each in input order.
    assert [f.input for f in summary.failed] == ["not a video", "42", BLOCKED, NO_CAPTIONS, "unavailable"]
    failed = {f.input: f for f in summary.failed}
    assert failed[BLOCKED].code == "blocked" and "proxy" in (failed[BLOCKED].hint or "").lower()
    assert failed[NO_CAPTIONS].code == "no-transcript" and failed[NO_CAPTIONS].hint
    assert failed["not a video"].code == "unsupported-input" and failed["not a video"].hint
    assert failed["unavailable"].code == "not-found"  # YouTube says the video does not exist
    assert failed["42"].code == "bad-request"
    assert all(f.message for f in summary.failed)
    view = await get_collection_view(runtime, collection.id)
    assert len(view.videos) == 14 and view.pending == []


async def test_a_failing_video_in_a_list_names_its_list(runtime: Runtime, upstream: Upstream) -> None:
    upstream.uploads = [BLOCKED, "GJLlxj_dtq8"]  # the channel's continuation adds these two
    collection = await create_collection(runtime, "c")
    summary = await add_to_collection(runtime, collection.id, ["@ProgrammingKnowledge"])
    assert len(summary.added) == 31
    [failed] = summary.failed
    assert (failed.input, failed.code) == (f"https://www.youtube.com/watch?v={BLOCKED}", "blocked")
    assert failed.cause == "from @ProgrammingKnowledge"


async def test_limit_leaves_the_rest_pending(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c")
    listed = await playlist_ids(runtime)
    summary = await add_to_collection(runtime, collection.id, [PLAYLIST], limit=5)
    assert [v.id for v in summary.added] == listed[:5] and summary.remaining == 7
    view = await get_collection_view(runtime, collection.id)
    assert [v.id for v in view.videos] == listed[:5]
    assert view.pending == [f"https://www.youtube.com/watch?v={vid.split(':')[1]}" for vid in listed[5:]]
    more = await refresh_collection(runtime, collection.id, limit=4)
    assert [v.id for v in more.added] == listed[5:9] and more.remaining == 3
    rest = await refresh_collection(runtime, collection.id)
    assert [v.id for v in rest.added] == listed[9:] and rest.remaining == 0
    assert (await get_collection_view(runtime, collection.id)).pending == []


@pytest.mark.parametrize(
    ("inputs", "options"),
    [
        ([], {}),
        (GOOD, {}),
        (None, {}),
        ([GOOD], {"limit": 0}),
        ([GOOD], {"limit": 5001}),
        ([GOOD], {"concurrency": 0}),
        ([GOOD], {"concurrency": 17}),
        ([GOOD], {"limit": True}),
    ],
)
async def test_add_arguments_are_checked(runtime: Runtime, inputs: Any, options: dict[str, Any]) -> None:
    collection = await create_collection(runtime, "c")
    await fails(add_to_collection(runtime, collection.id, inputs, **options), ErrorCode.BAD_REQUEST)
    assert (await get_collection(runtime, collection.id)).video_count == 0


async def test_concurrency_is_bounded(runtime: Runtime, upstream: Upstream) -> None:
    collection = await create_collection(runtime, "c")
    upstream.together = together = Together(3)
    summary = await add_to_collection(runtime, collection.id, [PLAYLIST], concurrency=3)
    assert len(summary.added) == 12
    assert together.peak == 3  # three at once, and never more than asked


async def test_events(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c")
    await add_to_collection(runtime, collection.id, [GOOD])
    items: list[dict[str, Any]] = []
    progress: list[dict[str, Any]] = []

    async def on_progress(event: dict[str, Any]) -> None:  # async callbacks are awaited
        progress.append(event)

    await add_to_collection(
        runtime,
        collection.id,
        [GOOD, BLOCKED, OTHER, "bad input"],
        on_item=items.append,
        on_progress=on_progress,
    )
    outcomes = {event["id"]: event for event in items}
    assert outcomes[GOOD_ID] == {"id": GOOD_ID, "outcome": "skipped"}
    assert outcomes[OTHER_ID]["outcome"] == "ok" and outcomes[OTHER_ID]["title"]
    assert outcomes["youtube:botCheck001"]["error"]["code"] == "blocked"
    assert outcomes["bad input"]["outcome"] == "error"
    assert progress[0] == {"done": 0, "total": 2, "message": "2 videos to read"}
    assert progress[-1]["done"] == progress[-1]["total"] == 2


# --- removing and refreshing -----------------------------------------------------------------------


async def test_removed_videos_stay_removed_until_added_by_name(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c", sources=[PLAYLIST])
    listed = await playlist_ids(runtime)
    first = await refresh_collection(runtime, collection.id)
    assert [v.id for v in first.added] == listed
    one, two = listed[0], listed[1]
    url_of_two = f"https://www.youtube.com/watch?v={two.split(':')[1]}"
    after = await remove_from_collection(runtime, collection.id, [one.replace(":", "%3A"), url_of_two, one])
    assert after.video_count == 10
    view = await get_collection_view(runtime, collection.id)
    assert [v.id for v in view.videos] == listed[2:]
    again = await refresh_collection(runtime, collection.id)
    assert (again.added, again.skipped, again.failed) == ([], 12, [])
    by_list = await add_to_collection(runtime, collection.id, [PLAYLIST])
    assert (by_list.added, by_list.skipped) == ([], 12)  # a list that holds it does not restore it
    by_name = await add_to_collection(runtime, collection.id, [url_of_two])
    assert [v.id for v in by_name.added] == [two]  # named on its own, it comes back
    assert (await get_collection(runtime, collection.id)).video_count == 11
    assert (await refresh_collection(runtime, collection.id)).added == []
    assert (await get_video(runtime, one)).id == one  # removed from the collection, not the library


async def test_a_video_can_be_excluded_before_a_refresh_reaches_it(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c", sources=[PLAYLIST])
    listed = await playlist_ids(runtime)
    await remove_from_collection(runtime, collection.id, [listed[3]])
    summary = await refresh_collection(runtime, collection.id)
    assert [v.id for v in summary.added] == listed[:3] + listed[4:] and summary.skipped == 1


@pytest.mark.parametrize("video_ids", [[], None, [PLAYLIST], ["not a video"], GOOD_ID])
async def test_remove_arguments_are_checked(runtime: Runtime, video_ids: Any) -> None:
    collection = await create_collection(runtime, "c")
    await fails(remove_from_collection(runtime, collection.id, video_ids), ErrorCode.BAD_REQUEST)


async def test_refresh_adds_new_uploads_of_the_sources(runtime: Runtime, upstream: Upstream) -> None:
    collection = await create_collection(runtime, "c", sources=[CHANNEL])
    first = await refresh_collection(runtime, collection.id)
    channel = await playlist_ids(runtime, CHANNEL)
    assert len(channel) == 30 and [v.id for v in first.added] == channel
    upstream.uploads = ["GJLlxj_dtq8", "F1xioXWb8CY"]  # the channel uploads two videos
    second = await refresh_collection(runtime, collection.id)
    assert [v.id for v in second.added] == [GOOD_ID, OTHER_ID]
    assert (second.skipped, second.failed, second.remaining) == (30, [], 0)
    assert (await get_collection(runtime, collection.id)).video_count == 32


async def test_a_failing_source_is_listed_and_the_others_go_on(runtime: Runtime) -> None:
    missing = "https://www.youtube.com/playlist?list=PLnotrecorded0000"
    collection = await create_collection(runtime, "c", sources=[missing, PLAYLIST])
    summary = await refresh_collection(runtime, collection.id)
    assert len(summary.added) == 12
    [failed] = summary.failed
    assert failed.input == missing and failed.code in {"upstream", "not-found"} and failed.message


async def test_refresh_without_sources_or_pending_does_nothing(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c")
    summary = await refresh_collection(runtime, collection.id)
    assert (summary.added, summary.skipped, summary.failed, summary.remaining) == ([], 0, [], 0)
    await fails(refresh_collection(runtime, collection.id, limit=0), ErrorCode.BAD_REQUEST)


async def test_a_video_deleted_from_the_library_is_read_again(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "c")
    await add_to_collection(runtime, collection.id, [GOOD])
    await delete_video(runtime, GOOD_ID)
    assert (await get_collection_view(runtime, collection.id)).videos == []
    summary = await add_to_collection(runtime, collection.id, [GOOD])
    assert [v.id for v in summary.added] == [GOOD_ID]


# --- watch state --------------------------------------------------------------------------------------


async def test_watch_is_null_without_a_schedule_and_echoes_it_with_one(runtime: Runtime) -> None:
    plain = await create_collection(runtime, "c")
    assert (await get_collection_view(runtime, plain.id)).watch is None
    watched = await create_collection(runtime, "w", schedule={"every": "daily", "at": "06:30"})
    view = await get_collection_view(runtime, watched.id)
    assert view.watch is not None and view.watch.schedule == Schedule(every="daily", at="06:30")
    wire = json.loads(msgspec.json.encode(view))
    assert set(wire["watch"]) == {"schedule", "state"}
    assert set(wire["watch"]["state"]) == {"nextDueAt"} and wire["checkedAt"] is None
    assert {"videos", "pending", "videoCount"} <= set(wire)


async def test_watch_state_follows_refreshes(runtime: Runtime) -> None:
    collection = await create_collection(runtime, "w", schedule={"every": 30})
    summary = await refresh_collection(runtime, collection.id)
    view = await get_collection_view(runtime, collection.id)
    assert view.watch is not None and view.watch.state.next_due_at
    assert view.checked_at == summary.checked_at and view.watch.state.next_due_at > summary.checked_at


@pytest.mark.parametrize(
    ("schedule", "since", "due"),
    [
        (Schedule(every="hourly"), "2026-03-01T10:15:00", "2026-03-01T11:15:00"),
        (Schedule(every=90), "2026-03-01T10:15:00", "2026-03-01T11:45:00"),
        (Schedule(every="daily"), "2026-03-01T10:15:00", "2026-03-02T10:15:00"),
        (Schedule(every="daily", at="06:30"), "2026-03-01T10:15:00", "2026-03-02T06:30:00"),
        (Schedule(every="daily", at="23:00"), "2026-03-01T10:15:00", "2026-03-01T23:00:00"),
        (Schedule(every="weekly", at="06:30"), "2026-03-01T10:15:00", "2026-03-08T06:30:00"),
        (Schedule(every="weekly"), "2026-03-01T10:15:00", "2026-03-08T10:15:00"),
    ],
)
def test_next_due(schedule: Schedule, since: str, due: str) -> None:
    from datetime import UTC, datetime

    start = datetime.fromisoformat(since).replace(tzinfo=UTC)
    assert next_due(schedule, start) == datetime.fromisoformat(due).replace(tzinfo=UTC)


# --- export and import -----------------------------------------------------------------------------


async def make_exportable(runtime: Runtime) -> str:
    collection = await create_collection(
        runtime, "Talks", description="d", sources=[PLAYLIST], schedule={"every": "weekly", "at": "06:00"}
    )
    await add_to_collection(runtime, collection.id, [GOOD, OTHER])
    await remove_from_collection(runtime, collection.id, [OTHER_ID])
    await add_to_collection(runtime, collection.id, ["youtu.be/Njp5uhTorCo"], limit=1)  # fails: not kept
    await add_to_collection(runtime, collection.id, [PLAYLIST], limit=1)  # 1 saved, 11 pending
    return collection.id


async def test_export_is_a_portable_definition(runtime: Runtime) -> None:
    collection_id = await make_exportable(runtime)
    definition = await export_collection(runtime, collection_id)
    listed = await playlist_ids(runtime)
    urls = [f"https://www.youtube.com/watch?v={vid.split(':')[1]}" for vid in listed]
    assert definition.videos == [GOOD, *urls]  # saved and pending, not the removed one
    wire = json.loads(msgspec.json.encode(definition))
    assert wire == {
        "format": "vid2context.collection",
        "version": 1,
        "name": "Talks",
        "description": "d",
        "sources": [PLAYLIST],
        "videos": [GOOD, *urls],
        "schedule": {"every": "weekly", "at": "06:00", "enabled": True},
    }


@pytest.mark.parametrize("form", ["bytes", "text", "dict", "struct"])
async def test_export_import_round_trip(runtime: Runtime, form: str) -> None:
    exported = await make_exportable(runtime)
    definition = await export_collection(runtime, exported)
    # Here the name is taken: refused, naming the collection that has it, and nothing is stored.
    await fails(import_collection(runtime, definition), ErrorCode.BAD_REQUEST, exported, "Talks")
    assert [c.id for c in await list_collections(runtime)] == [exported]
    await delete_collection(runtime, exported)  # as on another installation
    encoded = msgspec.json.encode(definition)
    given: Any = {
        "bytes": encoded,
        "text": encoded.decode(),
        "dict": json.loads(encoded),
        "struct": definition,
    }[form]
    collection, summary = await import_collection(runtime, given)
    assert summary is None
    assert (collection.name, collection.description, collection.sources) == (
        definition.name,
        definition.description,
        definition.sources,
    )
    assert (collection.watch.schedule if collection.watch else None) == definition.schedule
    view = await get_collection_view(runtime, collection.id)
    assert view.videos == [] and view.pending == definition.videos
    assert await export_collection(runtime, collection.id) == definition


async def test_imported_videos_wait_for_a_refresh(runtime: Runtime) -> None:
    definition = {
        "format": "vid2context.collection",
        "version": 1,
        "name": "n",
        "videos": [GOOD, BLOCKED, OTHER],
    }
    collection, summary = await import_collection(runtime, definition)
    assert summary is None and collection.video_count == 0  # counts saved videos only
    view = await get_collection_view(runtime, collection.id)
    assert view.pending == [GOOD, BLOCKED, OTHER] and view.videos == []
    refreshed = await refresh_collection(runtime, collection.id)
    assert [v.id for v in refreshed.added] == [GOOD_ID, OTHER_ID]
    assert [(f.input, f.code) for f in refreshed.failed] == [(BLOCKED, "blocked")]
    view = await get_collection_view(runtime, collection.id)
    assert [v.id for v in view.videos] == [GOOD_ID, OTHER_ID] and view.pending == [
        BLOCKED
    ]  # retried next time


async def test_import_with_refresh_ingests_at_once(runtime: Runtime) -> None:
    definition = {
        "format": "vid2context.collection",
        "version": 1,
        "name": "n",
        "sources": [PLAYLIST],
        "videos": [GOOD, GOOD_ID],
    }
    collection, summary = await import_collection(runtime, json.dumps(definition).encode(), refresh=True)
    assert summary is not None and summary.collection_id == collection.id
    assert [v.id for v in summary.added] == [GOOD_ID, *await playlist_ids(runtime)]
    assert (await get_collection_view(runtime, collection.id)).pending == []


def definition_with(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"format": "vid2context.collection", "version": 1, "name": "n", "videos": [GOOD]}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not ...}


@pytest.mark.parametrize(
    ("given", "field"),
    [
        (definition_with(format="other.format"), "format"),
        (definition_with(format=...), "format"),
        (definition_with(version=2), "version"),
        (definition_with(version="1"), "version"),
        (definition_with(version=True), "version"),
        (definition_with(extra=1), "extra"),
        (definition_with(name=...), "name"),
        (definition_with(name="  "), "name"),
        (definition_with(name=5), "name"),
        (definition_with(videos=[GOOD] * 5001), "videos"),
        (definition_with(videos=GOOD), "videos"),
        (definition_with(videos=[GOOD, 3]), "videos[1]"),
        (definition_with(videos=[PLAYLIST]), "sources"),
        (definition_with(sources=[GOOD]), "sources[0]"),
        (definition_with(schedule={"every": "monthly"}), "schedule"),
        (definition_with(schedule={"every": "daily", "extra": 1}), "schedule"),
        (b"{not json", "JSON"),
        (b"[1, 2]", "object"),
        ("", "JSON"),
    ],
)
async def test_import_validation(runtime: Runtime, given: Any, field: str) -> None:
    error = await fails(import_collection(runtime, given), ErrorCode.BAD_REQUEST)
    assert field in f"{error.message} {error.hint}", (field, error.message, error.hint)
    assert await list_collections(runtime) == []  # nothing half-imported


async def test_import_refuses_huge_files(runtime: Runtime) -> None:
    await fails(import_collection(runtime, b" " * (3 * 1024 * 1024)), ErrorCode.TOO_LARGE, "5,000")


async def test_import_accepts_exactly_5000_videos(runtime: Runtime) -> None:
    videos = [f"youtube:{n:011d}" for n in range(5000)]
    collection, _ = await import_collection(runtime, definition_with(videos=videos))
    assert len((await get_collection_view(runtime, collection.id)).pending) == 5000
    assert isinstance(await export_collection(runtime, collection.id), CollectionDefinition)
