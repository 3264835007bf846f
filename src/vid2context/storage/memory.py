"""The in-process stores: for tests, and the fallback when no backend is configured.

Contexts and collections are kept as encoded JSON, not as live objects, so a caller that mutates
what it got back cannot change what the next caller reads, and so the memory store fails the same
way the durable ones do when a shape cannot be encoded.

Keyword search is ``keyword.plan()``, the algorithm SQLite and D1 run, answered from two inverted
indexes here (words and their stems, as FTS5's ``unicode61`` and ``porter`` tokenizers make them),
so the memory store finds and ranks exactly what they do.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from ..errors import ErrorCode, VidError
from ..models import Collection, CollectionItem, Page, SearchHit, VideoContext, VideoSummary
from ..search.query import Phrase, count_phrase, parse_query, stems, tokenize
from . import keyword
from .base import Blob, summarize
from .common import (
    ON_SCREEN_IDX,
    check_blob_key,
    check_limit,
    decode_cursor,
    encode_cursor,
    name_key,
    name_taken,
    searchable_rows,
)

__all__ = ["MemoryBlobs", "MemoryKv", "MemoryStorage"]

_encode = msgspec.json.Encoder().encode
_decode_context = msgspec.json.Decoder(VideoContext).decode
_decode_collection = msgspec.json.Decoder(Collection).decode


class _Segment(msgspec.Struct, frozen=True):
    order: int
    """Saving order over all segments, never reused: the rowid SQLite and D1 would give it."""
    start_sec: float
    end_sec: float
    text: str
    tokens: tuple[str, ...]
    stems: tuple[str, ...]
    on_screen: bool = False


class _Video(msgspec.Struct):
    seq: int
    summary: VideoSummary
    raw: bytes
    segments: list[_Segment]


def _not_found(collection_id: str) -> VidError:
    return VidError(
        ErrorCode.NOT_FOUND,
        f"There is no collection {collection_id!r}.",
        hint="List collections to see their ids, or create this one first.",
    )


class MemoryStorage:
    id = "memory"

    def __init__(self) -> None:
        self._videos: dict[str, _Video] = {}  # insertion order is first-saved order
        self._seq = 0
        self._segment_seq = 1
        self._postings: dict[str, set[int]] = {}  # a word -> the orders of the segments holding it
        self._stem_postings: dict[str, set[int]] = {}
        self._owners: dict[int, str] = {}  # a segment's order -> its video's id
        self._total_tokens = 0
        self._total_segments = 0
        self._collections: dict[str, bytes] = {}
        self._items: dict[str, dict[str, CollectionItem]] = {}
        self._version = 0

    # --- videos -------------------------------------------------------------------------------

    async def get_context(self, video_id: str) -> VideoContext | None:
        video = self._videos.get(video_id)
        return None if video is None else _decode_context(video.raw)

    def data_version(self) -> int:
        """``Versioned``: counts saves and deletes (only this process sees this store)."""
        return self._version

    async def put_context(self, context: VideoContext) -> None:
        self._version += 1
        raw = _encode(context)
        summary = summarize(context)
        segments = []
        for i, (idx, start, end, text) in enumerate(searchable_rows(context)):
            words = tokenize(text)
            order = self._segment_seq + i
            segments.append(
                _Segment(order, start, end, text, tuple(words), tuple(stems(words)), idx >= ON_SCREEN_IDX)
            )
        self._segment_seq += len(segments)
        old = self._videos.get(context.id)
        if old is not None:
            self._unindex(old)
            old.summary, old.raw, old.segments = summary, raw, segments
            video = old
        else:
            self._seq += 1
            video = self._videos[context.id] = _Video(self._seq, summary, raw, segments)
        for segment in video.segments:
            for postings, words in ((self._postings, segment.tokens), (self._stem_postings, segment.stems)):
                for word in set(words):
                    postings.setdefault(word, set()).add(segment.order)
            self._owners[segment.order] = context.id
            self._total_tokens += len(segment.tokens)
        self._total_segments += len(video.segments)

    def _unindex(self, video: _Video) -> None:
        for segment in video.segments:
            for postings, words in ((self._postings, segment.tokens), (self._stem_postings, segment.stems)):
                for word in set(words):
                    orders = postings[word]
                    orders.discard(segment.order)
                    if not orders:
                        del postings[word]
            del self._owners[segment.order]
            self._total_tokens -= len(segment.tokens)
        self._total_segments -= len(video.segments)

    async def delete_context(self, video_id: str) -> bool:
        video = self._videos.pop(video_id, None)
        if video is None:
            return False
        self._version += 1
        self._unindex(video)
        return True

    async def list_videos(self, *, limit: int = 50, cursor: str | None = None) -> Page[VideoSummary]:
        limit = check_limit(limit)
        before = decode_cursor(cursor) if cursor is not None else None
        items: list[VideoSummary] = []
        last = 0
        for video in reversed(self._videos.values()):
            if before is not None and video.seq >= before:
                continue
            if len(items) == limit:
                return Page(items=items, next_cursor=encode_cursor(last))
            items.append(msgspec.structs.replace(video.summary))
            last = video.seq
        return Page(items=items, next_cursor=None)

    async def get_summaries(self, video_ids: list[str]) -> list[VideoSummary]:
        found = (self._videos.get(video_id) for video_id in dict.fromkeys(video_ids))
        return [msgspec.structs.replace(video.summary) for video in found if video is not None]

    async def count_videos(self) -> int:
        return len(self._videos)

    async def search(
        self, query: str, *, video_ids: list[str] | None = None, limit: int = 10
    ) -> list[SearchHit]:
        parsed = parse_query(query)
        limit = check_limit(limit)
        within = None if video_ids is None else set(video_ids)
        if within is not None and not within:
            return []
        plan = keyword.plan(parsed, limit=limit, within=within is not None, stems_later=True)
        return keyword.drive(plan, lambda requests: [self._answer(r, within) for r in requests])

    def _answer(self, request: keyword.Request, within: set[str] | None) -> object:
        """``request`` answered from the indexes, as ``keyword.sql_statements`` answers it."""
        if isinstance(request, keyword.Stats):
            saved = [video.segments for video in self._videos.values() if video.segments]
            orders = [order for segments in saved for order in (segments[0].order, segments[-1].order)]
            return keyword.LibraryStats(
                self._total_segments, self._total_tokens, min(orders, default=0), max(orders, default=0)
            )
        if isinstance(request, keyword.RowsWith):
            newest = sorted(self._holding(request.phrase, request.stemmed), reverse=True)[: keyword.WINDOW]
            return len(newest), (newest[-1] if newest else None)
        found = set.intersection(*(self._holding(phrase, request.stemmed) for phrase in request.required))
        for phrase in request.excluded:
            found -= self._holding(phrase, request.stemmed)
        if within is not None:
            found = {order for order in found if self._owners[order] in within}
        return [self._candidate(order) for order in sorted(found, reverse=True)[: keyword.WINDOW]]

    def _holding(self, phrase: Phrase, stemmed: bool) -> set[int]:
        """The orders of the segments holding ``phrase``: word for word, or by stems."""
        postings = self._stem_postings if stemmed else self._postings
        words = tuple(stems(list(phrase))) if stemmed else phrase
        found = set.intersection(*(postings.get(word, set()) for word in words))
        if len(words) == 1:
            return found
        return {order for order in found if count_phrase(list(self._words(order, stemmed)), words)}

    def _segment(self, order: int) -> _Segment:
        video = self._videos[self._owners[order]]
        return video.segments[order - video.segments[0].order]

    def _words(self, order: int, stemmed: bool) -> tuple[str, ...]:
        segment = self._segment(order)
        return segment.stems if stemmed else segment.tokens

    def _candidate(self, order: int) -> keyword.Candidate:
        video_id = self._owners[order]
        s = self._segment(order)
        return keyword.Candidate(
            order, video_id, s.start_sec, s.end_sec, s.text, self._videos[video_id].summary.title, s.on_screen
        )

    # --- collections ----------------------------------------------------------------------------

    async def put_collection(self, collection: Collection) -> None:
        key = name_key(collection.name)
        holders = [c for c in await self._by_age() if c.id != collection.id and name_key(c.name) == key]
        stored = self._collections.get(collection.id)
        if holders and (stored is None or _decode_collection(stored).name != collection.name):
            raise name_taken(collection.name, [c.id for c in holders])
        self._collections[collection.id] = _encode(msgspec.structs.replace(collection, video_count=0))
        self._items.setdefault(collection.id, {})

    async def get_collection(self, collection_id: str) -> Collection | None:
        raw = self._collections.get(collection_id)
        if raw is None:
            return None
        collection = _decode_collection(raw)
        collection.video_count = sum(1 for i in self._items[collection_id].values() if i.state == "saved")
        return collection

    async def list_collections(self) -> list[Collection]:
        found = [await self.get_collection(collection_id) for collection_id in sorted(self._collections)]
        collections = [c for c in found if c is not None]
        collections.sort(key=lambda c: c.updated_at, reverse=True)  # stable: ties stay in id order
        return collections

    async def find_collections(self, name: str) -> list[Collection]:
        key = name_key(name)
        return [c for c in await self._by_age() if name_key(c.name) == key]

    async def _by_age(self) -> list[Collection]:
        found = [await self.get_collection(collection_id) for collection_id in self._collections]
        return sorted((c for c in found if c is not None), key=lambda c: (c.created_at, c.id))

    async def delete_collection(self, collection_id: str) -> bool:
        self._items.pop(collection_id, None)
        return self._collections.pop(collection_id, None) is not None

    async def put_items(self, collection_id: str, items: list[CollectionItem]) -> None:
        if collection_id not in self._collections:
            raise _not_found(collection_id)
        stored = self._items[collection_id]
        for item in items:
            old = stored.get(item.video_id)
            if old is not None:  # the first add keeps its date and, unless a new one is given, its input
                item = msgspec.structs.replace(
                    item, input=item.input if item.input is not None else old.input, added_at=old.added_at
                )
            stored[item.video_id] = msgspec.structs.replace(item)

    async def list_items(self, collection_id: str) -> list[CollectionItem]:
        if collection_id not in self._collections:
            raise _not_found(collection_id)
        items = sorted(self._items[collection_id].values(), key=lambda i: i.added_at)  # stable
        return [msgspec.structs.replace(item) for item in items]

    async def close(self) -> None:
        for mapping in (
            self._videos,
            self._postings,
            self._stem_postings,
            self._owners,
            self._collections,
            self._items,
        ):
            mapping.clear()


class MemoryKv:
    """``KvStore`` in a dict; ``clock`` (seconds, monotonic) is injectable so tests need not sleep."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._data: dict[str, tuple[str, float | None]] = {}

    def _live(self, key: str) -> tuple[str, float | None] | None:
        entry = self._data.get(key)
        if entry is not None and entry[1] is not None and entry[1] <= self._clock():
            del self._data[key]
            return None
        return entry

    async def get(self, key: str) -> str | None:
        entry = self._live(key)
        return None if entry is None else entry[0]

    async def put(self, key: str, value: str, *, ttl: int | None = None) -> None:
        self._data[key] = (value, None if ttl is None else self._clock() + ttl)
        if len(self._data) % 1024 == 0:  # now and then, forget what expired unread
            now = self._clock()
            self._data = {k: e for k, e in self._data.items() if e[1] is None or e[1] > now}

    async def delete(self, key: str) -> None:
        self._data.pop(key, None)

    async def incr(self, key: str, amount: int = 1, *, ttl: int | None = None) -> int:
        entry = self._live(key)
        if entry is None:
            value, expires = amount, (None if ttl is None else self._clock() + ttl)
        else:
            value, expires = int(entry[0]) + amount, entry[1]
        self._data[key] = (str(value), expires)
        return value


class MemoryBlobs:
    """``BlobStore`` in a dict."""

    def __init__(self) -> None:
        self._blobs: dict[str, Blob] = {}

    async def put_blob(
        self, key: str, data: bytes, *, content_type: str = "application/octet-stream"
    ) -> None:
        self._blobs[check_blob_key(key)] = Blob(data=bytes(data), content_type=content_type)

    async def get_blob(self, key: str) -> Blob | None:
        return self._blobs.get(key)

    async def delete_blob(self, key: str) -> bool:
        return self._blobs.pop(key, None) is not None

    async def list_blobs(self, prefix: str = "") -> list[str]:
        return sorted(key for key in self._blobs if key.startswith(prefix))
