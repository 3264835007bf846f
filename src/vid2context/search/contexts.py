"""Decoded videos kept between searches, so a search citing hits reads and decodes each video
once, not once a search (about 0.3 ms of CPU for an hour of speech: read the row, decode the
JSON; ten videos a search).

Valid only while nothing was written: every entry is dropped when the library's version moves
(``storage/versions.py``, the one ``api/rendered.py`` keys on too): SQLite's ``data_version``,
which any commit by any process moves, locally; on the Worker D1's ``library_version`` row, which
every write to a saved video by any isolate bumps (one small query a search, instead of a read and
a decode per video). Each entry was read after the version it is kept under, so a write at any
moment retires it at the next search. A storage with no version gets no cache. Bounded by count,
least recently used out first. The contexts are shared: readers must not change them (citing
only reads).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from ..models import VideoContext
from ..storage.base import Storage
from ..storage.versions import VersionReader, version_reader

__all__ = ["MAX_CARDS", "MAX_CONTEXTS", "ContextCache", "ReadMany"]

MAX_CONTEXTS = 64
"""Videos kept (an hour of speech decodes to about 0.5 MB of objects)."""
MAX_CARDS = 4096
"""Cards kept (``storage.base.CitingReads``: a video's metadata, a few kB)."""

ReadMany = Callable[[list[str]], Awaitable[list[VideoContext | None]]]


class ContextCache:
    def __init__(self, max_items: int = MAX_CONTEXTS) -> None:
        self.max_items = max_items
        self._items: OrderedDict[str, VideoContext | None] = OrderedDict()
        self._version: int | None = None
        self._storage: Storage | None = None
        self._read: VersionReader | None = None
        """How ``_storage``'s version is read, chosen once per storage (``version_reader``)."""
        self.hits = 0
        self.misses = 0
        """Videos answered from the cache and read from the storage."""

    async def get_many(
        self, storage: Storage, video_ids: list[str], read_many: ReadMany | None = None
    ) -> list[VideoContext | None]:
        """Each video of ``video_ids`` as ``storage.get_context`` answers it (``None``: not saved),
        or as ``read_many`` does, all missing at once (a cache holds one kind of answer only)."""
        if storage is not self._storage:
            self._storage, self._read, self._version = storage, version_reader(storage), None
        version = None if self._read is None else await self._read()
        if version is None or version != self._version:
            self._items.clear()
            self._version = version
        wanted = dict.fromkeys(video_ids)
        # Taken before the reads: a search running meanwhile may retire or evict entries.
        held = {video_id: self._items[video_id] for video_id in wanted if video_id in self._items}
        missing = [video_id for video_id in wanted if video_id not in held]
        if read_many is not None:
            answers = await read_many(missing) if missing else []
        else:
            answers = await asyncio.gather(*(storage.get_context(v) for v in missing))
        read = dict(zip(missing, answers, strict=True))
        self.hits += len(held)
        self.misses += len(missing)
        read.update(held)
        out = [read[v] for v in video_ids]
        if version is not None and version == self._version:  # no newer version seen meanwhile
            self._items.update(read)
            for video_id in wanted:
                self._items.move_to_end(video_id)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
        return out
