"""One contract suite for every storage backend: ``Storage``, ``KvStore`` and ``BlobStore``.

Each test takes a ``storage``, ``kv`` or ``blobs`` fixture and runs once per backend named in the
registries below: ``BACKENDS``, ``KV_BACKENDS`` and ``BLOB_BACKENDS`` map a backend name to a
factory, an async context manager that takes ``tmp_path`` (and, for KV, the ``FakeClock``) and
yields a ready store, closing it on exit.

Adding a backend (Cloudflare, say) takes no change here. In its own module::

    # tests/test_storage_cloudflare.py
    from tests.test_storage_conformance import *  # noqa: F403  the whole suite, collected again

    BACKENDS = {"cloudflare": cloudflare_storage}
    KV_BACKENDS = {"cloudflare": cloudflare_kv}
    BLOB_BACKENDS = {"cloudflare": cloudflare_blobs}
    NO_FAKE_CLOCK = {"cloudflare"}  # KV that keeps its own time: the clock-driven TTL tests skip

``pytest_generate_tests`` (imported by the star) reads the registries of the module being
collected, so that module runs the same tests against its own backends only, and running it
alone runs just them. (Adding an entry to ``BACKENDS`` here, or from ``tests/conftest.py``
before collection, works too.)
"""

from __future__ import annotations

import base64
import random
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import msgspec
import pytest

from vid2context.errors import ErrorCode, VidError
from vid2context.models import (
    Attempt,
    Chapter,
    Collection,
    CollectionItem,
    Comment,
    Schedule,
    Segment,
    Thumbnail,
    Transcript,
    VideoContext,
    VideoMetadata,
)
from vid2context.storage.base import BlobStore, KvStore, Storage, summarize
from vid2context.storage.common import MAX_LIMIT, encode_cursor
from vid2context.storage.keyword import WINDOW
from vid2context.storage.memory import MemoryBlobs, MemoryKv, MemoryStorage
from vid2context.storage.sqlite import FileBlobs, SQLiteKv, SQLiteStorage

pytestmark = pytest.mark.anyio


class FakeClock:
    """Seconds that move only when a test says so."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@asynccontextmanager
async def memory_storage(tmp_path: Path) -> AsyncIterator[Storage]:
    store = MemoryStorage()
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def sqlite_storage(tmp_path: Path) -> AsyncIterator[Storage]:
    store = SQLiteStorage(tmp_path / "vid2context.db")
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def memory_kv(tmp_path: Path, clock: FakeClock) -> AsyncIterator[KvStore]:
    yield MemoryKv(clock=clock)


@asynccontextmanager
async def sqlite_kv(tmp_path: Path, clock: FakeClock) -> AsyncIterator[KvStore]:
    store = SQLiteStorage(tmp_path / "vid2context.db")
    try:
        yield SQLiteKv(store.database, clock=clock)
    finally:
        await store.close()


@asynccontextmanager
async def memory_blobs(tmp_path: Path) -> AsyncIterator[BlobStore]:
    yield MemoryBlobs()


@asynccontextmanager
async def file_blobs(tmp_path: Path) -> AsyncIterator[BlobStore]:
    yield FileBlobs(tmp_path / "blobs")


BACKENDS: dict[str, Callable[[Path], AbstractAsyncContextManager[Storage]]] = {
    "memory": memory_storage,
    "sqlite": sqlite_storage,
}
KV_BACKENDS: dict[str, Callable[[Path, FakeClock], AbstractAsyncContextManager[KvStore]]] = {
    "memory": memory_kv,
    "sqlite": sqlite_kv,
}
BLOB_BACKENDS: dict[str, Callable[[Path], AbstractAsyncContextManager[BlobStore]]] = {
    "memory": memory_blobs,
    "files": file_blobs,
}
NO_FAKE_CLOCK: set[str] = set()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    registries = (
        ("storage", "BACKENDS"),
        ("kv", "KV_BACKENDS"),
        ("clocked_kv", "KV_BACKENDS"),
        ("blobs", "BLOB_BACKENDS"),
    )
    for fixture, registry in registries:
        if fixture in metafunc.fixturenames:
            names = list(getattr(metafunc.module, registry))
            metafunc.parametrize(fixture, names, indirect=True, ids=names)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def storage(
    request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str
) -> AsyncIterator[Storage]:
    async with request.module.BACKENDS[request.param](tmp_path) as store:
        yield store


@pytest.fixture
async def kv(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, anyio_backend: str
) -> AsyncIterator[KvStore]:
    async with request.module.KV_BACKENDS[request.param](tmp_path, clock) as store:
        yield store


@pytest.fixture
async def clocked_kv(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, anyio_backend: str
) -> AsyncIterator[KvStore]:
    """A KV store whose time is ``clock``; skipped for backends in ``NO_FAKE_CLOCK``."""
    if request.param in getattr(request.module, "NO_FAKE_CLOCK", ()):
        pytest.skip(f"{request.param} keeps its own time")
    async with request.module.KV_BACKENDS[request.param](tmp_path, clock) as store:
        yield store


@pytest.fixture
async def blobs(
    request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str
) -> AsyncIterator[BlobStore]:
    async with request.module.BLOB_BACKENDS[request.param](tmp_path) as store:
        yield store


# --- shapes ---------------------------------------------------------------------------------------


def make_context(
    n: int | str, texts: list[str] | None = None, *, title: str | None = None, platform: str = "youtube"
) -> VideoContext:
    video_id = f"{platform}:vid{n}" if isinstance(n, int) else n
    transcript = None
    if texts is not None:
        segments = [Segment(start_sec=i * 5.0, end_sec=i * 5.0 + 4.5, text=t) for i, t in enumerate(texts)]
        transcript = Transcript(
            language="en",
            origin="captions-manual",
            timing="caption",
            producer="youtube/innertube",
            segments=segments,
        )
    metadata = VideoMetadata(id=video_id, platform=platform, title=title or f"Video {n}", duration_sec=60.0)
    return VideoContext(
        id=video_id, metadata=metadata, transcript=transcript, fetched_at="2026-01-02T03:04:05Z"
    )


def rich_context() -> VideoContext:
    """Every field of every shape set, with text no ASCII-only store would survive."""
    metadata = VideoMetadata(
        id="youtube:jNQXAC9IVRw",
        platform="youtube",
        title="Me at the zoo 🐘 — «éléphants» 象 שלום مرحبا",
        url="https://www.youtube.com/watch?v=jNQXAC9IVRw",
        channel="jawed",
        channel_id="UC4QobU6STFB0P71PMvOGN5A",
        duration_sec=19.0,
        published_at="2005-04-24",
        description="The first video on YouTube.\nLine two\ttabbed \"quoted\" 'single' \\ backslash \x01",
        thumbnails=[Thumbnail(url="https://i.ytimg.com/vi/jNQXAC9IVRw/hqdefault.jpg", width=480, height=360)],
        tags=["zoo", "elephants", "🐘", "עברית"],
        view_count=300_000_000,
        language="en",
        is_live=False,
        chapters=[
            Chapter(title="Intro 👋", start_sec=0.0, end_sec=5.5),
            Chapter(title="الفيلة", start_sec=5.5),
        ],
    )
    transcript = Transcript(
        language="en",
        origin="captions-manual",
        timing="word",
        producer="youtube/innertube",
        segments=[
            Segment(start_sec=0.0, end_sec=1.2, text="All right, so here we are, in front of the elephants"),
            Segment(start_sec=1.2, end_sec=5.3, text="the cool thing about these guys is that they have 🐘 really long trunks", speaker="Jawed"),
            Segment(start_sec=5.3, end_sec=8.0, text="שלום עולם — مرحبا بالعالم — 你好，世界 — Ünïcödé naïve café"),
            Segment(start_sec=8.0, end_sec=12.5, text="and that's pretty much all there is to say \U0001f600\u200d\U0001f4bb"),
        ],
        note="manual English track",
    )  # fmt: skip
    return VideoContext(
        id=metadata.id,
        metadata=metadata,
        transcript=transcript,
        comments=[
            Comment(
                id="c1",
                text="first 🥇",
                author="someone",
                like_count=12,
                published_at="2006-01-01",
                parent_id=None,
            ),
            Comment(id="c2", text="רד: reply ↩", author=None, like_count=None, parent_id="c1"),
        ],
        attempts=[
            Attempt(id="cache", stage="cache", outcome="skipped", reason="refresh"),
            Attempt(id="youtube/innertube", stage="captions", outcome="ok", ms=431, detail="en manual"),
        ],
        fetched_at="2026-05-01T10:00:00Z",
    )


async def bad_request(awaitable) -> VidError:  # type: ignore[no-untyped-def]
    with pytest.raises(VidError) as caught:
        await awaitable
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert caught.value.message and caught.value.hint
    return caught.value


async def all_pages(storage: Storage, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = await storage.list_videos(limit=limit, cursor=cursor)
        seen.extend(s.id for s in page.items)
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


# --- videos ---------------------------------------------------------------------------------------


async def test_backends_speak_the_protocols(storage: Storage) -> None:
    assert isinstance(storage, Storage)
    assert storage.id


async def test_missing_video_is_none(storage: Storage) -> None:
    assert await storage.get_context("youtube:nope") is None
    assert await storage.delete_context("youtube:nope") is False
    assert await storage.get_summaries(["youtube:nope"]) == []
    assert await storage.list_videos() == (await storage.list_videos(limit=5))


async def test_rich_context_round_trips_exactly(storage: Storage) -> None:
    context = rich_context()
    await storage.put_context(context)
    assert await storage.get_context(context.id) == context
    (summary,) = await storage.get_summaries([context.id])
    assert summary == summarize(context)
    assert (await storage.list_videos()).items == [summarize(context)]


@pytest.mark.parametrize(
    "context",
    [
        make_context(1),  # no transcript
        make_context(2, []),  # an empty one
        make_context("local:/home/u/Vidéos/clip 1.mp4", ["x"], platform="local"),
        msgspec.structs.replace(make_context(3, ["a"]), comments=[], attempts=[]),
        msgspec.structs.replace(make_context("web:ex" + "a" * 500, ["b"], platform="web"), fetched_at=""),
    ],
    ids=["no-transcript", "empty-transcript", "local-path-id", "empty-lists", "long-id"],
)
async def test_every_shape_round_trips(storage: Storage, context: VideoContext) -> None:
    await storage.put_context(context)
    assert await storage.get_context(context.id) == context
    assert await storage.get_summaries([context.id]) == [summarize(context)]


async def test_a_one_megabyte_transcript_round_trips_and_is_searchable(storage: Storage) -> None:
    rng = random.Random(1)
    words = [
        "lorem",
        "ipsum",
        "dolor",
        "sit",
        "amet",
        "consectetur",
        "adipiscing",
        "elit",
        "sed",
        "do",
        "eiusmod",
        "tempor",
    ]
    texts = [" ".join(rng.choice(words) for _ in range(14)) for _ in range(11_000)]
    texts[7_777] = "the needle zyzzyva is here"
    context = make_context(1, texts)
    assert len(msgspec.json.encode(context)) > 1_000_000
    await storage.put_context(context)
    assert await storage.get_context(context.id) == context
    (hit,) = await storage.search("zyzzyva")
    assert (hit.video_id, hit.start_sec, hit.text) == (context.id, 7_777 * 5.0, "the needle zyzzyva is here")


async def test_what_a_caller_mutates_is_not_what_the_store_holds(storage: Storage) -> None:
    context = rich_context()
    await storage.put_context(context)
    context.metadata.title = "changed after saving"
    got = await storage.get_context(context.id)
    assert got is not None and got.metadata.title != "changed after saving"
    got.transcript.segments.clear()  # type: ignore[union-attr]
    assert await storage.get_context(context.id) == rich_context()


async def test_replace_keeps_the_list_position_and_replaces_everything_else(storage: Storage) -> None:
    for n in range(1, 4):
        await storage.put_context(make_context(n, [f"original words {n}"]))
    await storage.put_context(make_context(2, ["fresh vocabulary"], title="Renamed"))
    page = await storage.list_videos()
    assert [s.id for s in page.items] == ["youtube:vid3", "youtube:vid2", "youtube:vid1"]
    assert page.items[1].title == "Renamed"
    assert (await storage.get_context("youtube:vid2")).transcript.segments[0].text == "fresh vocabulary"  # type: ignore[union-attr]
    assert [h.video_id for h in await storage.search("original")] == ["youtube:vid1", "youtube:vid3"]
    assert [h.video_id for h in await storage.search("vocabulary")] == ["youtube:vid2"]


async def test_delete_and_re_add(storage: Storage) -> None:
    for n in range(1, 4):
        await storage.put_context(make_context(n, [f"shared words {n}"]))
    assert await storage.delete_context("youtube:vid3") is True
    assert await storage.delete_context("youtube:vid3") is False
    assert await storage.get_context("youtube:vid3") is None
    assert [h.video_id for h in await storage.search("shared")] == ["youtube:vid1", "youtube:vid2"]
    assert await storage.get_summaries(["youtube:vid3"]) == []
    await storage.put_context(make_context(1, ["shared again"]))  # a replace: keeps its place
    await storage.put_context(make_context(3, ["back again"]))  # a new save: goes on top
    assert await all_pages(storage, 2) == ["youtube:vid3", "youtube:vid2", "youtube:vid1"]
    assert [h.video_id for h in await storage.search("again")] == ["youtube:vid1", "youtube:vid3"]
    await storage.delete_context("youtube:vid3")
    await storage.put_context(make_context(4))  # a deleted newest row does not lend its place
    assert await all_pages(storage, 1) == ["youtube:vid4", "youtube:vid2", "youtube:vid1"]


async def test_pages_have_no_duplicates_or_gaps_while_rows_are_added(storage: Storage) -> None:
    for n in range(25):
        await storage.put_context(make_context(n))
    expected = [f"youtube:vid{n}" for n in reversed(range(25))]
    seen: list[str] = []
    cursor = None
    added = 100
    while True:
        page = await storage.list_videos(limit=7, cursor=cursor)
        seen.extend(s.id for s in page.items)
        # Between pages: new videos, a replace of one already seen and of one not seen yet.
        await storage.put_context(make_context(added))
        await storage.put_context(make_context(added + 1))
        await storage.put_context(make_context(24, title="replaced"))
        await storage.put_context(make_context(0, title="replaced"))
        added += 2
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == expected
    assert [len(p) for p in (seen[:7], seen[7:14], seen[14:21], seen[21:])] == [7, 7, 7, 4]
    fresh = await all_pages(storage, 50)
    assert fresh[: added - 100] == [f"youtube:vid{n}" for n in reversed(range(100, added))]
    assert fresh[added - 100 :] == expected


async def test_a_full_last_page_has_no_cursor(storage: Storage) -> None:
    for n in range(6):
        await storage.put_context(make_context(n))
    first = await storage.list_videos(limit=3)
    second = await storage.list_videos(limit=3, cursor=first.next_cursor)
    assert first.next_cursor is not None and len(second.items) == 3 and second.next_cursor is None
    assert (await storage.list_videos(limit=6)).next_cursor is None


@pytest.mark.parametrize("limit", [0, -1, -(2**70), True, 1.5, "10", None])
async def test_limits_out_of_range_are_bad_requests(storage: Storage, limit: object) -> None:
    await bad_request(storage.list_videos(limit=limit))  # type: ignore[arg-type]
    await bad_request(storage.search("word", limit=limit))  # type: ignore[arg-type]


async def test_large_limits_are_clamped(storage: Storage) -> None:
    for n in range(MAX_LIMIT + 5):
        await storage.put_context(make_context(n, ["same words"] if n < 3 else None))
    page = await storage.list_videos(limit=10**9)
    assert len(page.items) == MAX_LIMIT and page.next_cursor is not None
    assert len((await storage.list_videos(limit=1, cursor=None)).items) == 1
    assert len(await storage.search("same", limit=10**9)) == 3


def _b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not base64!",
        "djE6",  # "v1:" and no number
        _b64("v1:0"),
        _b64("v1:-3"),
        _b64("v1:007"),
        _b64("v1: 5"),
        _b64("v2:5"),
        _b64("5"),
        _b64("v1:99999999999999999999"),
        _b64('{"seq": 5}'),
        _b64(b"\xff\xfe\x00"),
        encode_cursor(5) + "==",  # padded: not what the store makes
        encode_cursor(5) + "A",
        "é",
        "x" * 10_000,
        "\x00",
        "null",
    ],
)
async def test_malformed_or_forged_cursors_are_bad_requests(storage: Storage, cursor: str) -> None:
    await storage.put_context(make_context(1))
    error = await bad_request(storage.list_videos(cursor=cursor))
    assert "cursor" in error.message.lower()


async def test_get_summaries_keeps_the_order_given_and_drops_missing_ids(storage: Storage) -> None:
    contexts = [make_context(n, [f"words {n}"]) for n in range(5)]
    for context in contexts:
        await storage.put_context(context)
    asked = ["youtube:vid3", "youtube:missing", "youtube:vid0", "youtube:vid3", "youtube:vid4"]
    assert await storage.get_summaries(asked) == [summarize(contexts[i]) for i in (3, 0, 4)]
    assert await storage.get_summaries([]) == []
    many = [f"youtube:vid{n % 5}" if n % 100 == 0 else f"youtube:none{n}" for n in range(2_000)]
    assert [s.id for s in await storage.get_summaries(many)] == ["youtube:vid0"]


async def test_concurrent_saves_and_reads_all_land(storage: Storage) -> None:
    import asyncio

    contexts = [make_context(n, [f"parallel words {n}"] * 50) for n in range(30)]
    await asyncio.gather(*(storage.put_context(c) for c in contexts))
    got = await asyncio.gather(*(storage.get_context(c.id) for c in contexts))
    assert got == contexts
    assert len(await all_pages(storage, 7)) == 30


# --- search ---------------------------------------------------------------------------------------

FILLER = [
    f"filler segment number {i} talks about apples oranges and the weather" for i in range(40)
]  # makes "apples" common and the words below rare, as in a real library


async def seed_search(storage: Storage) -> None:
    await storage.put_context(make_context("youtube:filler", FILLER, title="Filler"))
    await storage.put_context(make_context(1, [
        "we hit the rate limit on the api again",
        "apples apples banana",
        "limit the rate of requests, then the rate limit resets",
        "nothing to see here",
    ], title="One"))  # fmt: skip
    await storage.put_context(make_context(2, [
        "apples banana banana",
        "the rate was fine and there was no limit",
        "Café society and NAÏVE art",
    ], title="Two"))  # fmt: skip


async def test_more_and_rarer_matches_rank_first(storage: Storage) -> None:
    await seed_search(storage)
    hits = await storage.search("apples banana")
    # "banana" is rare and "apples" common: twice the rare word beats twice the common one.
    assert [(h.video_id, h.text) for h in hits] == [
        ("youtube:vid2", "apples banana banana"),
        ("youtube:vid1", "apples apples banana"),
    ]
    assert hits[0].score > hits[1].score > 0
    assert [h.title for h in hits] == ["Two", "One"]
    assert (hits[0].start_sec, hits[0].end_sec) == (0.0, 4.5)
    hits = await storage.search("rate")
    assert hits[0].text == "limit the rate of requests, then the rate limit resets"  # twice in it
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_words_are_anded_case_and_accent_insensitive(storage: Storage) -> None:
    await seed_search(storage)
    assert {h.text for h in await storage.search("RATE limit")} == {
        "we hit the rate limit on the api again",
        "limit the rate of requests, then the rate limit resets",
        "the rate was fine and there was no limit",
    }
    assert [h.text for h in await storage.search("cafe naive")] == ["Café society and NAÏVE art"]
    assert [h.text for h in await storage.search("CAFÉ")] == ["Café society and NAÏVE art"]
    assert await storage.search("rate banana") == []


async def test_phrases_keep_words_together(storage: Storage) -> None:
    await seed_search(storage)
    assert {h.text for h in await storage.search('"rate limit"')} == {
        "we hit the rate limit on the api again",
        "limit the rate of requests, then the rate limit resets",
    }
    assert [h.text for h in await storage.search('"limit the rate" requests')] == [
        "limit the rate of requests, then the rate limit resets"
    ]
    assert await storage.search('"limit rate"') == []
    # A chunk that splits into several words is a phrase, as in FTS5: "rate-limit" = "rate limit".
    assert len(await storage.search("rate-limit")) == 2
    # An unclosed quote runs to the end of the query.
    assert [h.text for h in await storage.search('api "rate limit on')] == [
        "we hit the rate limit on the api again"
    ]


async def test_exclusions(storage: Storage) -> None:
    await seed_search(storage)
    assert [h.text for h in await storage.search("rate -api -requests")] == [
        "the rate was fine and there was no limit"
    ]
    assert [h.text for h in await storage.search('rate -"rate limit"')] == [
        "the rate was fine and there was no limit"
    ]
    assert await storage.search("banana -apples") == []


async def test_search_within_videos_and_limit(storage: Storage) -> None:
    await seed_search(storage)
    assert {h.video_id for h in await storage.search("rate", video_ids=["youtube:vid2"])} == {"youtube:vid2"}
    assert len(await storage.search("rate", video_ids=["youtube:vid1", "youtube:vid2"])) == 3
    assert await storage.search("rate", video_ids=[]) == []
    assert await storage.search("rate", video_ids=["youtube:unknown"]) == []
    assert len(await storage.search("filler")) == 10  # the default limit
    assert len(await storage.search("filler", limit=3)) == 3
    assert len(await storage.search("filler", limit=100)) == 40
    many = ["youtube:vid1"] + [f"youtube:other{i}" for i in range(1_000)]
    assert len(await storage.search("rate", video_ids=many)) == 2


@pytest.mark.parametrize(
    "query", ["", "   ", "-rate", "-rate -limit", '""', '"   "', "---", "🎉 ✨", '-"rate limit"', "* : ( )"]
)
async def test_empty_or_operator_only_queries_are_bad_requests(storage: Storage, query: str) -> None:
    await seed_search(storage)
    await bad_request(storage.search(query))


HOSTILE = [
    '"',
    '"rate',
    'rate"',
    '"rate" "',
    "*",
    "rate*",
    "ra*te",
    "NEAR(rate limit)",
    "NEAR(rate limit, 2)",
    "rate NEAR limit",
    "rate AND limit",
    "rate OR banana",
    "NOT rate",
    "rate NOT limit",
    "text:rate",
    "video_id:youtube",
    "idx:1",
    "{text}: rate",
    "- rate",
    "rate:",
    ":",
    "(",
    ")",
    "(rate",
    "rate)",
    "^rate",
    "rate + limit",
    "rate'; DROP TABLE videos; --",
    "rate\x00limit",
    "\\",
    "rate\\",
    "rate" + "\u202e" + "limit",
    "a" * 10_000,
    "rate " * 2_000,
    "rate limit " + "-x " * 3_000,
    '"' * 10_001,
    "ⓡⓐⓣⓔ",
    "\ud800",
    "-",
    "-rate",
    '"rate limit',
    'rate "limit',
    '""rate""',
    "NEAR(",
    "NEAR(rate",
    "rate^2",
    "video_id:",
    "segments_fts:rate",
    "AND",
    "rate OR",
    "NOT",
    "rate\x01\x02\x7f limit",
    "rate\tlimit\r\n",
    "rate" + "\u200b" + "limit",
    "rates limited",
    "-rates rate",
    "x" * 10_240,
]


@pytest.mark.parametrize("query", HOSTILE, ids=[repr(q[:20]) + f"/{len(q)}" for q in HOSTILE])
async def test_hostile_queries_never_crash(storage: Storage, query: str) -> None:
    await seed_search(storage)
    try:
        hits = await storage.search(query)
    except VidError as error:
        assert error.code is ErrorCode.BAD_REQUEST, error
    else:
        assert isinstance(hits, list)
    assert len(await storage.search("rate")) == 3  # and the store still works
    assert await storage.get_context("youtube:vid1") is not None


async def test_search_operators_are_words_not_syntax(storage: Storage) -> None:
    await storage.put_context(make_context(1, ["NEAR the AND gate, NOT the OR gate", "a text: colon"]))
    assert [h.text for h in await storage.search("NEAR AND NOT OR")] == ["NEAR the AND gate, NOT the OR gate"]
    assert [h.text for h in await storage.search("text:colon")] == ["a text: colon"]
    assert [h.text for h in await storage.search("gate*")] == ["NEAR the AND gate, NOT the OR gate"]


async def test_search_in_scripts_beyond_latin(storage: Storage) -> None:
    await storage.put_context(rich_context())
    for query in ("שלום", "مرحبا", "trunks 🐘", "ünïcödé"):
        (hit,) = await storage.search(query)
        assert hit.video_id == "youtube:jNQXAC9IVRw", query


# --- stems ----------------------------------------------------------------------------------------

STEM_TEXTS = [
    "the kickstand bends back",
    "two kickstands and a wheel",
    "and then after a long long while of waiting around we started baking",
    "baked baked baked",
    "bake it at two hundred degrees",
    "baking bread in the oven",
    "she baked the bread",
    "baking breads all day",
    "bread and butter",
]


def spans(hit: object) -> list[str]:
    return [hit.text[start:end] for start, end in hit.highlights]  # type: ignore[attr-defined]


async def test_stems_find_other_forms_after_the_exact_words(storage: Storage) -> None:
    await storage.put_context(make_context("youtube:filler", FILLER))  # so that "bake" is rare
    await storage.put_context(make_context(1, STEM_TEXTS))
    hits = await storage.search("kickstand")
    assert [(h.text, h.stemmed, spans(h)) for h in hits] == [
        ("the kickstand bends back", False, ["kickstand"]),
        ("two kickstands and a wheel", True, ["kickstands"]),
    ]
    hits = await storage.search("kickstands")
    assert [(h.text, h.stemmed) for h in hits] == [
        ("two kickstands and a wheel", False),
        ("the kickstand bends back", True),
    ]
    hits = await storage.search("baking")
    exact, stemmed = hits[:3], hits[3:]
    assert not any(h.stemmed for h in exact) and all(h.stemmed for h in stemmed)
    assert {h.text for h in exact} == {STEM_TEXTS[2], STEM_TEXTS[5], STEM_TEXTS[7]}
    assert {h.text for h in stemmed} == {STEM_TEXTS[3], STEM_TEXTS[4], STEM_TEXTS[6]}
    # Exact words first even where BM25 alone would prefer the stems ("baked" three times, short).
    assert hits[-3].text == "baked baked baked" and hits[-3].score > hits[0].score
    for tier in (exact, stemmed):
        assert [h.score for h in tier] == sorted((h.score for h in tier), reverse=True)
    assert spans(hits[-3]) == ["baked", "baked", "baked"]


async def test_phrases_and_exclusions_go_by_stems_too(storage: Storage) -> None:
    await storage.put_context(make_context(1, STEM_TEXTS))
    hits = await storage.search('"baking bread"')
    assert [(h.text, h.stemmed, spans(h)) for h in hits] == [
        ("baking bread in the oven", False, ["baking", "bread"]),
        ("baking breads all day", True, ["baking", "breads"]),
    ]
    # -bakes drops every form of bake, though no segment says "bakes".
    assert [h.text for h in await storage.search("bread -bakes")] == ["bread and butter"]
    assert [h.text for h in await storage.search('bread -"bakes breads"')] == [
        "bread and butter",  # shorter, so first
        "she baked the bread",  # "baked" and "bread" apart: not the excluded phrase
    ]
    assert await storage.search("kickstands -kickstand") == []


async def test_stemmed_hits_fill_the_answer_up_to_the_limit(storage: Storage) -> None:
    await storage.put_context(make_context(1, ["one cat", "two cats", "three cats", "a cat again"]))
    hits = await storage.search("cat", limit=3)
    assert [(h.text, h.stemmed) for h in hits] == [
        ("one cat", False),
        ("a cat again", False),
        ("two cats", True),
    ]
    assert len(await storage.search("cat", limit=2)) == 2
    assert all(not h.stemmed for h in await storage.search("cat", limit=2))
    within = await storage.search("cats", video_ids=["youtube:vid1", "youtube:none"])
    assert [h.stemmed for h in within] == [False, False, True, True]
    assert await storage.search("cats", video_ids=["youtube:none"]) == []


async def test_highlights_mark_every_matched_word(storage: Storage) -> None:
    await storage.put_context(make_context(1, ["Rate limits: the RATE limit, then a rate-limit again"]))
    (hit,) = await storage.search('"rate limit"')
    assert spans(hit) == ["RATE", "limit", "rate", "limit"]
    (hit,) = await storage.search('"rate limits"')
    assert not hit.stemmed and spans(hit) == ["Rate", "limits"]
    (hit,) = await storage.search("again rate")
    assert spans(hit) == ["Rate", "RATE", "rate", "again"]


async def test_a_common_word_is_ranked_among_its_newest_matches(storage: Storage) -> None:
    """Past ``WINDOW`` matches a tier ranks only the newest ``WINDOW`` (bounded work), so an old
    segment BM25 would prefer is not the first hit; with fewer matches it is."""
    await storage.put_context(make_context(1, ["common common common marker"]))
    newer = [f"common word number {i} in a sentence" for i in range(WINDOW + 5)]
    await storage.put_context(make_context(2, newer))
    hits = await storage.search("common", limit=4)
    assert all(h.video_id == "youtube:vid2" for h in hits)
    # Equal scores go in saving order: the oldest four of the newest WINDOW.
    assert [h.text for h in hits] == newer[5:9]
    assert (await storage.search("common marker"))[0].video_id == "youtube:vid1"
    (hit,) = await storage.search("common", video_ids=["youtube:vid1"])
    assert hit.text == "common common common marker"
    assert len(await storage.search("common", limit=MAX_LIMIT)) == MAX_LIMIT


# --- collections ----------------------------------------------------------------------------------


def make_collection(cid: str, updated_at: str = "2026-01-01T00:00:00Z", **changes: object) -> Collection:
    fields: dict[str, object] = {
        "id": cid,
        "name": f"Collection {cid} ✨",
        "description": "Talks — «quoted» 🎤",
        "sources": ["https://www.youtube.com/playlist?list=PL123", "youtube:channel:UCabc"],
        "schedule": Schedule(every="daily", at="06:30", enabled=True),
        "created_at": "2025-12-31T00:00:00Z",
        "updated_at": updated_at,
    }
    if "checked_at" in Collection.__struct_fields__:  # a field newer than the table: kept all the same
        fields["checked_at"] = "2026-01-05T00:00:00Z"
    fields.update(changes)
    return Collection(**fields)  # type: ignore[arg-type]


async def test_collection_round_trips(storage: Storage) -> None:
    assert await storage.get_collection("c1") is None
    collection = make_collection("c1")
    await storage.put_collection(collection)
    assert await storage.get_collection("c1") == collection
    bare = Collection(id="c2", name="bare")
    await storage.put_collection(bare)
    assert await storage.get_collection("c2") == bare
    minutes = make_collection("c3", schedule=Schedule(every=90, enabled=False))
    await storage.put_collection(minutes)
    assert await storage.get_collection("c3") == minutes


async def test_video_count_is_computed_not_stored(storage: Storage) -> None:
    await storage.put_collection(make_collection("c1", video_count=99))
    assert (await storage.get_collection("c1")).video_count == 0  # type: ignore[union-attr]
    await storage.put_items("c1", [
        CollectionItem(video_id="youtube:a", state="saved", added_at="2026-01-01T00:00:01Z"),
        CollectionItem(video_id="youtube:b", state="pending", input="https://youtu.be/b", added_at="2026-01-01T00:00:02Z"),
        CollectionItem(video_id="youtube:c", state="removed", added_at="2026-01-01T00:00:03Z"),
        CollectionItem(video_id="youtube:d", state="saved", added_at="2026-01-01T00:00:04Z"),
    ])  # fmt: skip
    assert (await storage.get_collection("c1")).video_count == 2  # type: ignore[union-attr]
    assert [c.video_count for c in await storage.list_collections()] == [2]


async def test_replacing_a_collection_keeps_its_items(storage: Storage) -> None:
    await storage.put_collection(make_collection("c1"))
    await storage.put_items("c1", [CollectionItem(video_id="youtube:a", added_at="2026-01-01T00:00:00Z")])
    renamed = make_collection("c1", name="Renamed", description=None, sources=[], schedule=None)
    await storage.put_collection(renamed)
    got = await storage.get_collection("c1")
    assert got == msgspec.structs.replace(renamed, video_count=1)
    assert [i.video_id for i in await storage.list_items("c1")] == ["youtube:a"]


async def test_collections_list_most_recently_updated_first(storage: Storage) -> None:
    await storage.put_collection(make_collection("b", "2026-01-02T00:00:00Z"))
    await storage.put_collection(make_collection("a", "2026-01-02T00:00:00Z"))
    await storage.put_collection(make_collection("c", "2026-01-03T00:00:00Z"))
    await storage.put_collection(make_collection("d", "2026-01-01T00:00:00Z"))
    assert [c.id for c in await storage.list_collections()] == ["c", "a", "b", "d"]
    await storage.put_collection(make_collection("d", "2026-02-01T00:00:00Z"))
    assert [c.id for c in await storage.list_collections()] == ["d", "c", "a", "b"]


async def test_deleting_a_collection_takes_its_items_not_its_videos(storage: Storage) -> None:
    await storage.put_context(make_context(1, ["kept"]))
    await storage.put_collection(make_collection("c1"))
    await storage.put_items("c1", [CollectionItem(video_id="youtube:vid1")])
    assert await storage.delete_collection("c1") is True
    assert await storage.delete_collection("c1") is False
    assert await storage.get_collection("c1") is None
    assert await storage.list_collections() == []
    assert await storage.get_context("youtube:vid1") is not None
    with pytest.raises(VidError) as caught:
        await storage.list_items("c1")
    assert caught.value.code is ErrorCode.NOT_FOUND
    await storage.put_collection(make_collection("c1"))  # re-created: empty
    assert await storage.list_items("c1") == []


async def test_items_of_a_missing_collection_are_not_found(storage: Storage) -> None:
    for call in (
        storage.put_items("nope", [CollectionItem(video_id="youtube:a")]),
        storage.list_items("nope"),
    ):
        with pytest.raises(VidError) as caught:
            await call
        assert caught.value.code is ErrorCode.NOT_FOUND and caught.value.hint


async def test_item_semantics(storage: Storage) -> None:
    await storage.put_collection(make_collection("c1"))
    await storage.put_items("c1", [
        CollectionItem(video_id="youtube:late", state="saved", input="late", added_at="2026-01-03T00:00:00Z"),
        CollectionItem(video_id="youtube:first", state="pending", input="https://youtu.be/first", added_at="2026-01-01T00:00:00Z"),
        CollectionItem(video_id="youtube:tie2", added_at="2026-01-02T00:00:00Z"),
        CollectionItem(video_id="youtube:tie1", added_at="2026-01-02T00:00:00Z"),
    ])  # fmt: skip
    # Oldest first; equal dates in the order they were added.
    assert [i.video_id for i in await storage.list_items("c1")] == [
        "youtube:first", "youtube:tie2", "youtube:tie1", "youtube:late"
    ]  # fmt: skip
    # An update changes the state; the first add keeps its date, and its input unless a new one comes.
    await storage.put_items("c1", [
        CollectionItem(video_id="youtube:first", state="saved", added_at="2026-09-09T00:00:00Z"),
        CollectionItem(video_id="youtube:late", state="removed", input=None, added_at="2026-09-09T00:00:00Z"),
        CollectionItem(video_id="youtube:tie1", state="saved", input="new input", added_at="2026-09-09T00:00:00Z"),
    ])  # fmt: skip
    items = {i.video_id: i for i in await storage.list_items("c1")}
    assert items["youtube:first"] == CollectionItem(
        video_id="youtube:first",
        state="saved",
        input="https://youtu.be/first",
        added_at="2026-01-01T00:00:00Z",
    )
    assert items["youtube:late"] == CollectionItem(
        video_id="youtube:late", state="removed", input="late", added_at="2026-01-03T00:00:00Z"
    )  # removed, and kept: a refresh must see it to not add it back
    assert items["youtube:tie1"].input == "new input"
    assert (await storage.list_items("c1"))[0].video_id == "youtube:first"
    await storage.put_items("c1", [])
    assert len(await storage.list_items("c1")) == 4


async def test_what_a_caller_mutates_in_a_collection_is_not_stored(storage: Storage) -> None:
    collection = make_collection("c1")
    await storage.put_collection(collection)
    collection.sources.append("mutated")
    got = await storage.get_collection("c1")
    assert got is not None and "mutated" not in got.sources
    await storage.put_items("c1", [CollectionItem(video_id="youtube:a")])
    (item,) = await storage.list_items("c1")
    item.state = "removed"
    assert (await storage.list_items("c1"))[0].state == "saved"


# --- collection names -------------------------------------------------------------------------------


async def taken(storage: Storage, collection: Collection, *holders: str) -> VidError:
    """``collection`` is refused: bad-request, its hint naming the first holder on both surfaces."""
    with pytest.raises(VidError) as caught:
        await storage.put_collection(collection)
    error = caught.value
    assert error.code is ErrorCode.BAD_REQUEST and "unique" in error.message
    assert all(holder in error.message for holder in holders), error.message
    for surface, step in (("rest", f"GET /api/v1/collections/{holders[0]}"), ("mcp", "get_collection")):
        hint = error.hint_for(surface) or ""  # type: ignore[arg-type]
        assert holders[0] in hint and step in hint, (surface, hint)
    assert "/api/" not in (error.hint_for("mcp") or "")
    return error


async def test_collection_names_are_unique_trimmed_and_ascii_case_blind(storage: Storage) -> None:
    await storage.put_collection(make_collection("c1", name="Rust talks"))
    for twin in ("Rust talks", "RUST TALKS", "  rust Talks  "):
        await taken(storage, make_collection("c2", name=twin), "c1")
    assert await storage.get_collection("c2") is None
    assert [c.id for c in await storage.list_collections()] == ["c1"]
    await storage.put_collection(make_collection("c2", name="Rust talks, part 2"))
    await taken(storage, make_collection("c2", name="rust talks"), "c1")  # a rename into a taken name
    assert (await storage.get_collection("c2")).name == "Rust talks, part 2"  # type: ignore[union-attr]
    await storage.put_collection(make_collection("c1", name="RUST talks"))  # its own name, in other case
    assert (await storage.get_collection("c1")).name == "RUST talks"  # type: ignore[union-attr]
    # Only ASCII letters fold (as SQL's lower() does everywhere): É and é are different names.
    await storage.put_collection(make_collection("c3", name="Café"))
    await storage.put_collection(make_collection("c4", name="CAFÉ"))
    await taken(storage, make_collection("c5", name="CAFé"), "c3")
    # A deleted collection's name is free again.
    assert await storage.delete_collection("c3") is True
    await storage.put_collection(make_collection("c5", name="café"))


async def test_find_collections_by_name(storage: Storage) -> None:
    assert await storage.find_collections("nothing") == []
    await storage.put_collection(make_collection("c1", name="Hybrids ✨"))
    await storage.put_collection(make_collection("c2", name="Hybrids, again"))
    await storage.put_items("c1", [CollectionItem(video_id="youtube:a", state="saved")])
    (found,) = await storage.find_collections("  hybrids ✨ ")
    assert found == msgspec.structs.replace(make_collection("c1", name="Hybrids ✨"), video_count=1)
    assert [c.id for c in await storage.find_collections("HYBRIDS, AGAIN")] == ["c2"]
    assert await storage.find_collections("Hybrids") == []  # whole names, not prefixes


LEGACY_TWINS_SQL = [
    "INSERT INTO collections (id, name, created_at, updated_at) VALUES "
    "('col_old1', 'Talks', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z')",
    "INSERT INTO collections (id, name, created_at, updated_at) VALUES "
    "('col_old2', 'talks', '2025-02-01T00:00:00Z', '2025-02-01T00:00:00Z')",
    "INSERT INTO collections (id, name, created_at, updated_at) VALUES "
    "('col_solo', 'Solo ✨', '2025-03-01T00:00:00Z', '2025-03-01T00:00:00Z')",
]
"""Rows a database made before names were unique may hold (run against the 0001 schema only)."""


async def check_legacy_twins(storage: Storage) -> None:
    """What a store opened on ``LEGACY_TWINS_SQL`` plus every migration does with the twins: it
    finds both, saves either under its own name, refuses a third, and a rename resolves it."""
    assert [c.id for c in await storage.find_collections("TALKS")] == ["col_old1", "col_old2"]
    assert [c.id for c in await storage.find_collections("solo ✨")] == ["col_solo"]
    old2 = await storage.get_collection("col_old2")
    assert old2 is not None
    await storage.put_collection(msgspec.structs.replace(old2, description="still works"))
    assert (await storage.get_collection("col_old2")).description == "still works"  # type: ignore[union-attr]
    await taken(storage, make_collection("c_new", name="Talks"), "col_old1", "col_old2")
    await storage.put_collection(msgspec.structs.replace(old2, name="Talks (2)"))
    assert [c.id for c in await storage.find_collections("talks")] == ["col_old1"]
    await taken(storage, make_collection("c_new", name="talks"), "col_old1")


LEGACY_TEXTS = ["two kickstands and a wheel", "she baked the bread", "the rate limit again"]


def legacy_video_sql() -> list[tuple[str, tuple[object, ...]]]:
    """A save as stores made before stemming ran it (only ``segments_fts``; run against the 0001
    and 0002 schema): statements with their parameters."""
    context = make_context("youtube:legacy", LEGACY_TEXTS, title="Legacy")
    raw = msgspec.json.encode(context).decode()
    statements: list[tuple[str, tuple[object, ...]]] = [
        ("UPDATE sequences SET value = value + 1 WHERE name = 'videos'", ()),
        (
            "INSERT INTO videos (id, seq, title, platform, duration_sec, fetched_at, updated_at, context) "
            "VALUES (?, (SELECT value FROM sequences WHERE name = 'videos'), ?, 'youtube', 60.0, ?, ?, ?)",
            (context.id, "Legacy", context.fetched_at, context.fetched_at, raw),
        ),
    ]
    for i, text in enumerate(LEGACY_TEXTS):
        statements.append(
            (
                "INSERT INTO segments (video_id, idx, start_sec, end_sec, text) VALUES (?, ?, ?, ?, ?)",
                (context.id, i, i * 5.0, i * 5.0 + 4.5, text),
            )
        )
    statements.append(
        (
            "INSERT INTO segments_fts (rowid, text, video_id, idx) "
            "SELECT id, text, video_id, idx FROM segments WHERE video_id = ?",
            (context.id,),
        )
    )
    return statements


async def check_legacy_search(storage: Storage) -> None:
    """A store opened on ``legacy_video_sql()`` plus every migration finds the old segments by stems
    (the migration filled the stemmed index), and replaces and deletes them cleanly."""
    await storage.put_context(make_context("youtube:filler", FILLER))
    (hit,) = await storage.search("kickstand")
    assert (hit.video_id, hit.text, hit.stemmed) == ("youtube:legacy", "two kickstands and a wheel", True)
    assert [h.text for h in await storage.search("baking")] == ["she baked the bread"]
    assert [h.text for h in await storage.search("bread -bakes")] == []
    await storage.put_context(make_context("youtube:legacy", [*LEGACY_TEXTS, "kickstands again"]))
    assert [h.text for h in await storage.search("kickstand")] == [
        "kickstands again",
        "two kickstands and a wheel",
    ]
    assert await storage.delete_context("youtube:legacy")
    assert await storage.search("kickstand") == []
    assert await storage.search("bread") == []
    assert len(await storage.search("apples")) == 10


# --- KV -------------------------------------------------------------------------------------------


async def test_kv_get_put_delete(kv: KvStore) -> None:
    assert isinstance(kv, KvStore)
    assert await kv.get("missing") is None
    await kv.put("k", "v1")
    await kv.put("k", "v2 ✨ שלום")
    assert await kv.get("k") == "v2 ✨ שלום"
    await kv.delete("k")
    await kv.delete("k")
    assert await kv.get("k") is None
    await kv.put("big", "x" * 100_000)
    assert await kv.get("big") == "x" * 100_000


async def test_kv_ttl_expires(clocked_kv: KvStore, clock: FakeClock) -> None:
    kv = clocked_kv
    await kv.put("short", "v", ttl=60)
    await kv.put("forever", "v")
    clock.advance(59)
    assert await kv.get("short") == "v"
    clock.advance(2)
    assert await kv.get("short") is None
    assert await kv.get("forever") == "v"
    await kv.put("short", "again", ttl=60)  # a fresh put starts a fresh life
    assert await kv.get("short") == "again"
    await kv.put("short", "kept")  # a put without ttl keeps it for good
    clock.advance(3600)
    assert await kv.get("short") == "kept"


async def test_kv_incr(kv: KvStore) -> None:
    assert await kv.incr("n") == 1
    assert await kv.incr("n") == 2
    assert await kv.incr("n", 10) == 12
    assert await kv.incr("n", -20) == -8
    assert await kv.get("n") == "-8"
    await kv.put("m", "41")
    assert await kv.incr("m") == 42


async def test_kv_incr_ttl_is_set_when_the_key_is_created(clocked_kv: KvStore, clock: FakeClock) -> None:
    kv = clocked_kv
    assert await kv.incr("rate", ttl=60) == 1
    clock.advance(30)
    assert await kv.incr("rate", ttl=60) == 2  # does not push the expiry back
    clock.advance(31)
    assert await kv.get("rate") is None
    assert await kv.incr("rate", ttl=60) == 1  # a new window


async def test_kv_incr_is_atomic_within_a_process(kv: KvStore) -> None:
    import asyncio

    results = await asyncio.gather(*(kv.incr("hits") for _ in range(50)))
    assert sorted(results) == list(range(1, 51))


# --- blobs ----------------------------------------------------------------------------------------


async def test_blobs_round_trip_binary_data(blobs: BlobStore) -> None:
    assert isinstance(blobs, BlobStore)
    data = bytes(range(256)) * 4 + b"\n\r\n\x00" + random.Random(3).randbytes(1_000_000)
    await blobs.put_blob("uploads/a.bin", data, content_type="application/x-thing")
    blob = await blobs.get_blob("uploads/a.bin")
    assert blob is not None and blob.data == data and blob.content_type == "application/x-thing"
    await blobs.put_blob("empty", b"")
    empty = await blobs.get_blob("empty")
    assert empty is not None and empty.data == b"" and empty.content_type == "application/octet-stream"
    await blobs.put_blob("uploads/a.bin", b"second", content_type="text/plain; charset=utf-8")
    again = await blobs.get_blob("uploads/a.bin")
    assert again is not None and (again.data, again.content_type) == (b"second", "text/plain; charset=utf-8")


async def test_blobs_missing_and_delete(blobs: BlobStore) -> None:
    assert await blobs.get_blob("nope") is None
    assert await blobs.delete_blob("nope") is False
    await blobs.put_blob("k", b"v")
    assert await blobs.delete_blob("k") is True
    assert await blobs.get_blob("k") is None
    assert await blobs.list_blobs() == []


async def test_blobs_list_by_prefix_sorted(blobs: BlobStore) -> None:
    for key in ("uploads/b", "uploads/a", "uploadsX", "transcripts/youtube:x.json", "Uploads/a", "uploads/ä"):
        await blobs.put_blob(key, key.encode())
    assert await blobs.list_blobs("uploads/") == ["uploads/a", "uploads/b", "uploads/ä"]
    assert await blobs.list_blobs("uploads") == ["uploads/a", "uploads/b", "uploads/ä", "uploadsX"]
    assert await blobs.list_blobs() == sorted(
        ["uploads/b", "uploads/a", "uploadsX", "transcripts/youtube:x.json", "Uploads/a", "uploads/ä"]
    )
    assert await blobs.list_blobs("nothing/") == []
    assert (await blobs.get_blob("Uploads/a")).data == b"Uploads/a"  # type: ignore[union-attr]


TRAVERSAL = ["../escape", "../../etc/passwd", "/absolute", "a/../../b", "..", ".", "C:\\windows\\x", "~/x", "a//b",
             "nul", "CON", ".hidden", "k" * 1000, "spaced name ✨.txt"]  # fmt: skip


async def test_traversal_looking_keys_are_just_keys(blobs: BlobStore, tmp_path: Path) -> None:
    outside = sorted(p.name for p in tmp_path.parent.iterdir())
    for key in TRAVERSAL:
        await blobs.put_blob(key, key.encode())
    for key in TRAVERSAL:
        blob = await blobs.get_blob(key)
        assert blob is not None and blob.data == key.encode(), key
    assert await blobs.list_blobs() == sorted(TRAVERSAL)
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == outside  # nothing written beside tmp_path
    assert not (Path("/absolute").exists() or (tmp_path / "escape").exists())
    for key in TRAVERSAL:
        assert await blobs.delete_blob(key) is True


@pytest.mark.parametrize("key", ["", "a\x00b", "k" * 1025, "é" * 513])
async def test_unusable_blob_keys_are_bad_requests(blobs: BlobStore, key: str) -> None:
    await bad_request(blobs.put_blob(key, b"x"))
    assert await blobs.list_blobs() == []
