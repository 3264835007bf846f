"""The search's cache of decoded videos (``search/contexts.py``) answers what the storage holds:
a save or a delete, by this process or any other (another isolate on the Worker), is seen by the
next read."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from vid2context.api import create_app
from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.search.contexts import ContextCache
from vid2context.storage.memory import MemoryStorage
from vid2context.storage.sqlite import SQLiteStorage

from .runtimes import Runtimes, serve


def _context(video_id: str, text: str) -> VideoContext:
    return VideoContext(
        id=video_id,
        metadata=VideoMetadata(id=video_id, platform="youtube", title=text),
        transcript=Transcript(
            language="en",
            origin="asr",
            timing="segment-approx",
            producer="test",
            segments=[Segment(start_sec=0, end_sec=1, text=text)],
        ),
    )


async def _check(writer, reader) -> None:  # noqa: ANN001
    cache = ContextCache(max_items=2)
    await writer.put_context(_context("youtube:c1", "one"))
    first = await cache.get_many(reader, ["youtube:c1", "youtube:c2"])
    assert [c.metadata.title if c else None for c in first] == ["one", None]
    again = await cache.get_many(reader, ["youtube:c1"])
    assert again[0] is first[0]  # kept: nothing was written
    await writer.put_context(_context("youtube:c1", "changed"))
    await writer.put_context(_context("youtube:c2", "two"))
    seen = await cache.get_many(reader, ["youtube:c1", "youtube:c2", "youtube:c3"])
    assert [c.metadata.title if c else None for c in seen] == ["changed", "two", None]
    assert await writer.delete_context("youtube:c2")
    assert (await cache.get_many(reader, ["youtube:c2"]))[0] is None


def test_memory_storage() -> None:
    store = MemoryStorage()
    asyncio.run(_check(store, store))


def test_another_process_writing_the_sqlite_file_is_seen(tmp_path: Path) -> None:
    async def run() -> None:
        reader, writer = SQLiteStorage(tmp_path / "c.db"), SQLiteStorage(tmp_path / "c.db")
        try:
            await _check(writer, reader)
        finally:
            await writer.close()
            await reader.close()

    asyncio.run(run())


@pytest.mark.anyio
@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_on_the_worker_search_cites_from_the_cache_until_a_write(runtimes: Runtimes) -> None:
    """D1's ``library_version`` row (``storage/versions.py``) keys the cache on the Worker too: a
    repeated search reads no video again; a push or a delete, in this isolate or through another
    isolate's ``CloudflareStorage`` on the same D1, retires it and the next search cites the new
    text."""
    from vid2context.storage.cloudflare import CloudflareStorage

    runtime = await runtimes.build({})
    storage = runtime.storage
    assert isinstance(storage, CloudflareStorage)
    other = CloudflareStorage(storage._d1.db, bucket=storage._bucket)  # another isolate's
    cache = runtime.contexts
    await storage.put_context(_context("youtube:w1", "the kickstand bends"))
    async with serve(create_app(runtime, owns_runtime=False)) as client:

        async def cited() -> list[str]:
            response = await client.get("/api/v1/search", params={"q": "kickstand", "mode": "keyword"})
            assert response.status_code == 200, response.text
            return [hit["text"] for hit in response.json()["hits"]]

        assert await cited() == ["the kickstand bends"]
        assert (cache.hits, cache.misses) == (0, 1)
        assert await cited() == ["the kickstand bends"]
        assert (cache.hits, cache.misses) == (1, 1)  # D1 asked for the version only
        await storage.put_context(_context("youtube:w1", "the kickstand snapped"))  # this isolate
        assert await cited() == ["the kickstand snapped"]
        assert (cache.hits, cache.misses) == (1, 2)
        await other.put_context(_context("youtube:w1", "a kickstand pushed elsewhere"))
        assert await cited() == ["a kickstand pushed elsewhere"]
        assert await cited() == ["a kickstand pushed elsewhere"]
        assert (cache.hits, cache.misses) == (2, 3)
        await other.put_context(_context("youtube:w2", "kickstand two"))
        assert sorted(await cited()) == ["a kickstand pushed elsewhere", "kickstand two"]
        assert cache.misses == 5  # both read again: the version moved
        assert await other.delete_context("youtube:w2")
        assert await cited() == ["a kickstand pushed elsewhere"]
        assert cache.misses == 6


def test_sqlite_cites_from_cards_and_window_rows_as_from_whole_videos(tmp_path: Path) -> None:
    """``CitingReads``: a card is the video's metadata with nothing else decoded, a window's rows
    are its segments (``None`` once the transcript no longer reaches its end), and a hit cited
    from them is the hit cited from the whole video."""
    from vid2context.models import Chapter, SearchHit
    from vid2context.search import engine
    from vid2context.search.vectors import VectorHit
    from vid2context.storage.base import CitingReads

    async def run() -> None:
        store = SQLiteStorage(tmp_path / "cards.db")
        try:
            assert isinstance(store, CitingReads) and not isinstance(MemoryStorage(), CitingReads)
            context = _context("youtube:cards1", "zero")
            segments = [
                Segment(start_sec=i, end_sec=i + 1, text=f"part {i}" + " kickstand" * (i % 2))
                for i in range(6)
            ]
            context.transcript.segments = segments  # type: ignore[union-attr]
            context.metadata.chapters = [
                Chapter(title="Intro", start_sec=0),
                Chapter(title="Bend", start_sec=3),
            ]
            await store.put_context(context)
            cards = await store.get_cards(["youtube:cards1", "youtube:none", "youtube:cards1"])
            assert cards[1] is None and cards[0] is not None and cards[2] is not None
            assert cards[0].metadata == context.metadata and cards[0].transcript is None
            rows = await store.get_passages(
                [("youtube:cards1", 1, 4), ("youtube:cards1", 4, 6), ("youtube:x", 0, 0)]
            )
            assert rows == [segments[1:5], None, None]
            words = engine.check_request(engine.SearchRequest(query="kickstand bend")).words
            window = VectorHit(
                id="w",
                video_id=context.id,
                start_sec=1,
                end_sec=5,
                first_segment=1,
                last_segment=4,
                score=0.5,
            )
            found = SearchHit(video_id=context.id, start_sec=3, end_sec=4, text=segments[3].text, score=1.0)
            for entry in (
                engine._Entry(context.id, window=window, vector_rank=1),  # noqa: SLF001
                engine._Entry(context.id, keyword=found, keyword_rank=1),  # noqa: SLF001
            ):
                cited = engine.cite_rows(cards[0], entry, words, rows[0] if entry.keyword is None else None)
                assert cited is not None and cited == engine.cite(context, entry, words)
            assert cited.chapter_title == "Bend" and cited.text == segments[3].text
        finally:
            await store.close()

    asyncio.run(run())
