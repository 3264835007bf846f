"""The search's cache of decoded videos (``search/contexts.py``) answers what the storage holds:
a save or a delete, by this process or any other, is seen by the next read."""

from __future__ import annotations

import asyncio
from pathlib import Path

from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.search.contexts import ContextCache
from vid2context.storage.memory import MemoryStorage
from vid2context.storage.sqlite import SQLiteStorage


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
