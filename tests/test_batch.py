"""``batch.read_videos``, the one way every surface reads several videos, on its own.

Real parts throughout: a memory and a SQLite runtime, the YouTube provider, the pipeline and its
library, with only the network replaced by the recorded YouTube of ``youtube_replay``. Where a test
needs videos to finish in a chosen order it holds one upstream request on an event that another
video's item event sets, so the order is forced by the events themselves, never by sleeping.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from pytest_httpx import HTTPXMock

from vid2context.batch import Batch, read_each, read_videos
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.models import VideoContext
from vid2context.pipeline import list_items, resolve
from vid2context.runtime import Runtime

from .runtimes import Runtimes
from .youtube_replay import PLAYLIST_ID, httpx_callback

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("runtime_kind", ["memory", "sqlite"], indirect=True),
]

VIDEO = "https://www.youtube.com/watch?v=GJLlxj_dtq8"
VIDEO_ID = "youtube:GJLlxj_dtq8"
OTHER = "F1xioXWb8CY"
OTHER_ID = f"youtube:{OTHER}"
BLOCKED = "botCheck001"
NO_CAPTIONS = "dsMFmonKDD4"
NOT_A_SOURCE = "ftp://nope.example/x"
PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"  # 12 videos
PLAYLIST_SIZE = 12
GUARD_S = 60.0
"""Only a safety net against a hang when a held request is never released; nothing is timed."""


class Upstream:
    """The recorded YouTube, which can hold one video's watch page until ``release`` is set, and
    notes the videos whose watch page was asked for and the most being read at once (a video is
    being read from its watch page until a test's item hook calls ``finished``)."""

    def __init__(self) -> None:
        self.hold: str | None = None
        self.release = asyncio.Event()
        self.watched: list[str] = []
        self.done = 0
        self.most_reading = 0

    def finished(self) -> None:
        self.done += 1

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/watch":
            video = request.url.params.get("v", "")
            self.watched.append(video)
            self.most_reading = max(self.most_reading, len(self.watched) - self.done)
            if video == self.hold:
                await asyncio.wait_for(self.release.wait(), GUARD_S)
        return httpx_callback(request)


@pytest.fixture
def upstream(httpx_mock: HTTPXMock) -> Upstream:
    answer = Upstream()
    httpx_mock.add_callback(answer, is_reusable=True, is_optional=True)
    return answer


@pytest.fixture
async def runtime(runtimes: Runtimes) -> Runtime:
    return await runtimes.build({"VID2CONTEXT_ACCESS_LOG": "0"})


def ids(contexts: list[VideoContext]) -> list[str]:
    return [context.id for context in contexts]


async def test_results_keep_input_order_whichever_finishes_first(
    runtime: Runtime, upstream: Upstream
) -> None:
    listed = await list_items(runtime, PLAYLIST, limit=1)
    third = listed[0].url or listed[0].id
    upstream.hold = "GJLlxj_dtq8"  # the first input finishes last
    items: list[str] = []

    def on_item(event: dict[str, Any]) -> None:
        items.append(event["id"])
        upstream.finished()
        if event["id"] == listed[0].id:
            upstream.release.set()

    found = await read_videos(runtime, [VIDEO, OTHER, third], ctx=Ctx(), concurrency=2, on_item=on_item)
    assert ids(found.contexts) == [VIDEO_ID, OTHER_ID, listed[0].id]
    assert items == [OTHER_ID, listed[0].id, VIDEO_ID]  # finished in another order
    assert upstream.most_reading == 2  # the held video kept its slot: two at once, never more
    assert found.failed == [] and found.total == 3 and found.left_out == 0


async def test_failures_are_recorded_in_input_order_not_raised(runtime: Runtime, upstream: Upstream) -> None:
    found = await read_videos(runtime, [BLOCKED, VIDEO, NOT_A_SOURCE, NO_CAPTIONS], ctx=Ctx())
    assert ids(found.contexts) == [VIDEO_ID]
    assert [(label, error.code) for label, error in found.failed] == [
        (BLOCKED, ErrorCode.BLOCKED),
        (NOT_A_SOURCE, ErrorCode.UNSUPPORTED_INPUT),  # failed before reading, kept in its place
        (NO_CAPTIONS, ErrorCode.NO_TRANSCRIPT),
    ]
    assert found.total == 4
    found.raise_if_empty("unused")  # one video was read: there is something to answer with


async def test_nothing_readable_raises_only_when_asked(runtime: Runtime, upstream: Upstream) -> None:
    found = await read_videos(runtime, [NO_CAPTIONS, BLOCKED], ctx=Ctx())
    assert found.contexts == [] and len(found.failed) == 2
    with pytest.raises(VidError) as caught:
        found.raise_if_empty("Give other videos.")
    assert caught.value.code is ErrorCode.NO_TRANSCRIPT  # the first failure, with its own code
    with pytest.raises(VidError) as caught:
        Batch(contexts=[], failed=[], total=0).raise_if_empty("Give other videos.")
    assert caught.value.code is ErrorCode.BAD_REQUEST and caught.value.hint == "Give other videos."


async def test_repeats_are_read_once_at_their_first_place(runtime: Runtime, upstream: Upstream) -> None:
    listed = await list_items(runtime, PLAYLIST)
    member = listed[3].url or listed[3].id
    found = await read_videos(
        runtime, [OTHER, VIDEO, "youtu.be/GJLlxj_dtq8", member, PLAYLIST, OTHER], ctx=Ctx()
    )
    expected = [OTHER_ID, VIDEO_ID, listed[3].id] + [ref.id for ref in listed if ref.id != listed[3].id]
    assert ids(found.contexts) == expected
    assert found.total == len(expected) == 2 + PLAYLIST_SIZE
    assert upstream.watched.count("GJLlxj_dtq8") == 1 and upstream.watched.count(OTHER) == 1


async def test_progress_and_item_hooks(runtime: Runtime, upstream: Upstream) -> None:
    progress: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []

    async def on_item(event: dict[str, Any]) -> None:  # async hooks are awaited, sync ones called
        items.append(event)

    await read_videos(
        runtime, [PLAYLIST, NOT_A_SOURCE], ctx=Ctx(), on_item=on_item, on_progress=progress.append
    )
    total = PLAYLIST_SIZE
    assert progress[0] == {"done": 0, "total": None, "message": "Expanding a list"}
    assert progress[1] == {"done": 0, "total": total, "message": f"{total} videos to read"}
    assert [event["done"] for event in progress[2:]] == list(range(1, total + 1))
    assert progress[-1] == {"done": total, "total": total, "message": f"{total} of {total} videos read"}
    assert items[0]["id"] == NOT_A_SOURCE and items[0]["outcome"] == "error"  # expansion comes first
    assert items[0]["error"]["code"] == "unsupported-input" and set(items[0]["error"]) <= {
        "code",
        "message",
        "hint",
    }
    read = items[1:]
    assert len(read) == total and all(event["outcome"] == "ok" and event["title"] for event in read)


async def test_a_limit_refuses_before_any_video_is_read(runtime: Runtime, upstream: Upstream) -> None:
    with pytest.raises(VidError) as caught:
        await read_videos(runtime, [VIDEO, PLAYLIST], ctx=Ctx(), limit=5)
    assert caught.value.code is ErrorCode.TOO_LARGE and "5" in (caught.value.hint or "")
    assert upstream.watched == []
    whole = await read_videos(runtime, [VIDEO, PLAYLIST], ctx=Ctx(), limit=None)
    assert len(whole.contexts) == 1 + PLAYLIST_SIZE


async def test_leave_out_counts_what_the_limit_left(runtime: Runtime, upstream: Upstream) -> None:
    found = await read_videos(runtime, [VIDEO, PLAYLIST, NOT_A_SOURCE], ctx=Ctx(), limit=5, leave_out=True)
    assert len(found.contexts) == 5 and found.contexts[0].id == VIDEO_ID
    assert found.left_out == 1 + PLAYLIST_SIZE - 5
    assert found.left_out_by == [(PLAYLIST, PLAYLIST_SIZE - 4)]  # the input that lost them, named
    assert [label for label, _ in found.failed] == [NOT_A_SOURCE]  # a failed input is no video
    assert found.total == 6 and len(upstream.watched) == 5
    again = await read_videos(
        runtime, [PLAYLIST, VIDEO, PLAYLIST], ctx=Ctx(), limit=PLAYLIST_SIZE, leave_out=True
    )
    assert again.left_out_by == [(VIDEO, 1)] and again.left_out == 1  # a repeat is not lost twice


async def test_an_aborted_call_starts_no_more_videos_and_raises(runtime: Runtime, upstream: Upstream) -> None:
    ctx = Ctx()
    seen: list[str] = []

    def on_item(event: dict[str, Any]) -> None:
        seen.append(event["id"])
        ctx.abort()  # as a job's cancel does

    with pytest.raises(VidError) as caught:
        await read_videos(runtime, [VIDEO, OTHER, NO_CAPTIONS], ctx=ctx, concurrency=1, on_item=on_item)
    assert caught.value.code is ErrorCode.CANCELED
    assert seen == [VIDEO_ID] and upstream.watched == ["GJLlxj_dtq8"]


async def test_an_abort_answered_as_a_timeout_raises_the_timeout(
    runtime: Runtime, upstream: Upstream
) -> None:
    ctx = Ctx()
    ctx.abort("timeout")  # what the request-timeout middleware does when it answers 504
    with pytest.raises(VidError) as caught:
        await read_videos(runtime, [VIDEO], ctx=ctx)
    assert caught.value.code is ErrorCode.TIMEOUT
    assert upstream.watched == []


async def test_read_each_answers_one_outcome_per_ref_in_order(runtime: Runtime, upstream: Upstream) -> None:
    refs = [*await list_items(runtime, PLAYLIST, limit=2), resolve(runtime, BLOCKED), resolve(runtime, VIDEO)]
    outcomes = await read_each(runtime, refs, ctx=None, concurrency=3)  # no ctx: the pipeline's own
    assert [o.id if isinstance(o, VideoContext) else o.code for o in outcomes] == [
        refs[0].id,
        refs[1].id,
        ErrorCode.BLOCKED,
        VIDEO_ID,
    ]
