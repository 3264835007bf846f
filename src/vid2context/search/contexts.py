"""Decoded videos kept between searches, so a search citing hits reads and decodes each video
once, not once a search (about 0.3 ms of CPU for an hour of speech: read the row, decode the
JSON; ten videos a search).

Valid only while nothing was written: every entry is dropped when the storage's
``data_version()`` (``storage.base.Versioned``) moves, which any commit by any process does. A
storage that cannot say (D1) gets no cache at all, so the Worker reads as before. Bounded by
count, least recently used out first. The contexts are shared: readers must not change them
(citing only reads).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from ..models import VideoContext
from ..storage.base import Storage, Versioned

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

    async def get_many(
        self, storage: Storage, video_ids: list[str], read_many: ReadMany | None = None
    ) -> list[VideoContext | None]:
        """Each video of ``video_ids`` as ``storage.get_context`` answers it (``None``: not saved),
        or as ``read_many`` does, all missing at once (a cache holds one kind of answer only)."""
        version = storage.data_version() if isinstance(storage, Versioned) else None
        if version is None or version != self._version:
            self._items.clear()
            self._version = version
        missing = [video_id for video_id in dict.fromkeys(video_ids) if video_id not in self._items]
        if read_many is not None:
            answers = await read_many(missing) if missing else []
        else:
            answers = await asyncio.gather(*(storage.get_context(v) for v in missing))
        read = dict(zip(missing, answers, strict=True))
        out = [read[v] if v in read else self._items[v] for v in video_ids]
        if version is not None and storage.data_version() == version:  # nothing written meanwhile
            self._items.update(read)
            for video_id in video_ids:
                self._items.move_to_end(video_id)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
        return out
