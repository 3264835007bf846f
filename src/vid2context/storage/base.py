"""Where fetched videos are kept: three small async protocols, one backend per module.

- ``Storage`` is the library: contexts by id, pages of summaries, keyword search over segments,
  and collections. The pipeline saves every context it builds here and reads it back instead of
  fetching again.
- ``KvStore`` holds small values with a time to live: rate-limit buckets, upload details, job state.
- ``BlobStore`` holds bytes: uploads, large transcripts.

Backends: ``memory.py`` (tests and the fallback), ``sqlite.py`` (one local file), ``cloudflare.py``
(D1, KV and R2 through the Worker's bindings). One conformance suite runs against all three, so
they behave the same. Every method is async because the edge backends are.

``None`` always means "not there"; errors are ``VidError`` (``bad-request`` for a malformed cursor,
``not-found`` where a method says so); anything else is a bug in the backend.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import msgspec

from ..models import Collection, CollectionItem, Page, SearchHit, Segment, VideoContext, VideoSummary
from ..tokens import estimate_tokens

__all__ = [
    "Blob",
    "BlobStore",
    "CitingReads",
    "KvStore",
    "LibraryVersioned",
    "Storage",
    "Versioned",
    "summarize",
]


@runtime_checkable
class Storage(Protocol):
    id: str
    """Backend name for health output and attempts (``memory``, ``sqlite``, ``cloudflare``)."""

    # --- videos -------------------------------------------------------------------------------

    async def get_context(self, video_id: str) -> VideoContext | None:
        """The saved context for ``video_id`` (``youtube:jNQXAC9IVRw``), or ``None`` if not saved."""
        ...

    async def put_context(self, context: VideoContext) -> None:
        """Save ``context`` under ``context.id``, replacing any earlier copy.

        A replaced video keeps its place in ``list_videos`` (its first-saved order), so a client
        paging through the library never sees it twice or misses it.
        """
        ...

    async def delete_context(self, video_id: str) -> bool:
        """Forget ``video_id`` and its segments; ``False`` when it was not saved."""
        ...

    async def list_videos(self, *, limit: int = 50, cursor: str | None = None) -> Page[VideoSummary]:
        """Saved videos, newest first, ``limit`` at a time.

        Pages follow an opaque ``cursor`` (keyset, not offset): rows added while a client pages
        appear before its first page, never as duplicates or gaps. A cursor this backend did not
        make raises ``bad-request``.
        """
        ...

    async def get_summaries(self, video_ids: list[str]) -> list[VideoSummary]:
        """Summaries for the saved ones among ``video_ids``, in the order given; unsaved ids are
        left out."""
        ...

    async def count_videos(self) -> int:
        """How many videos are saved (what search compares the vector index's count with)."""
        ...

    async def search(
        self, query: str, *, video_ids: list[str] | None = None, limit: int = 10
    ) -> list[SearchHit]:
        """Segments matching every word of ``query`` (``"quoted phrases"`` kept together,
        ``-word`` excluded; the language is ``search/query.py``), at most ``limit``, within
        ``video_ids`` when given: those with the very words first, then those matching only
        through English stems (``stemmed``), each best first by BM25, a common word ranked among
        its newest matches (``keyword.py``). A query that is empty, only operators or
        exclusions, or too long raises ``bad-request``."""
        ...

    # --- collections ----------------------------------------------------------------------------

    async def put_collection(self, collection: Collection) -> None:
        """Create or replace the collection ``collection.id`` (its items are kept).

        Names are unique (compared by ``common.name_key``: trimmed, ASCII case ignored):
        ``bad-request`` naming the holder's id when another collection has this name, unless
        this collection already has exactly this name (twins from before keep working)."""
        ...

    async def get_collection(self, collection_id: str) -> Collection | None:
        """The collection with ``video_count`` filled in, or ``None``."""
        ...

    async def list_collections(self) -> list[Collection]:
        """Every collection, most recently updated first."""
        ...

    async def find_collections(self, name: str) -> list[Collection]:
        """The collections called ``name`` (compared as ``put_collection`` does), oldest first:
        one, none, or several twins made before names were unique."""
        ...

    async def delete_collection(self, collection_id: str) -> bool:
        """Delete the collection and its items (the videos stay in the library); ``False`` when
        there was no such collection."""
        ...

    async def put_items(self, collection_id: str, items: list[CollectionItem]) -> None:
        """Add or update items (by ``video_id``) of an existing collection; ``not-found`` if the
        collection does not exist."""
        ...

    async def list_items(self, collection_id: str) -> list[CollectionItem]:
        """Every item of the collection, removed ones included, oldest first; ``not-found`` if the
        collection does not exist."""
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


@runtime_checkable
class Versioned(Protocol):
    """A storage that can tell, without a round trip, whether a saved video may have changed.

    What keeps a rendered answer (``api/rendered.py``) from outliving the row it came from, even
    when another process wrote the row. The Worker's D1 has nothing of the kind (an isolate sees
    other isolates' writes only by asking), so ``CloudflareStorage`` offers ``LibraryVersioned``.
    """

    def data_version(self) -> int | None:
        """A number that differs from every earlier answer once any write that may have changed a
        saved video was committed, by this process or another; ``None`` when it cannot be told
        now without waiting (then nothing may be served from a cache). Synchronous and cheap:
        it runs on the event loop."""
        ...


@runtime_checkable
class CitingReads(Protocol):
    """A storage that can hand search what citing a hit needs without decoding whole videos.

    Citing reads a video's title, channel, link and chapters, and for a vector hit the segments of
    its window; a whole saved video is an hour of speech to decode for that (search cites ten).
    The SQLite store offers it; the others are cited from ``get_context`` as before.
    """

    async def get_cards(self, video_ids: list[str]) -> list[VideoContext | None]:
        """Each video of ``video_ids`` as a *card*: its ``id`` and ``metadata``, with no transcript,
        comments or on-screen layer; ``None`` when it is not saved."""
        ...

    async def get_passages(self, spans: list[tuple[str, int, int]]) -> list[list[Segment] | None]:
        """For each ``(video_id, first, last)``, the searchable rows ``first`` to ``last`` of that
        video as ``keyword`` finds them (transcript segments by index, on-screen stretches from
        ``common.ON_SCREEN_IDX``), in order; ``None`` when its row ``last`` is not saved (the
        transcript is shorter than the span, or the video is gone)."""
        ...


@runtime_checkable
class LibraryVersioned(Protocol):
    """A storage that can tell with one small query whether a saved video may have changed.

    ``Versioned`` for a store whose other writers are seen only by asking: D1, where every write
    to a saved video bumps one row (``migrations/0011_leanlist.sql``'s triggers). Reading it costs
    a round trip, far less than reading and rendering a saved video again.
    """

    async def library_version(self) -> int | None:
        """A number that differs from every earlier answer once any write that may have changed a
        saved video was committed, by any isolate; ``None`` when it cannot be told (then nothing
        may be served from a cache)."""
        ...


@runtime_checkable
class KvStore(Protocol):
    async def get(self, key: str) -> str | None:
        """The value, or ``None`` when missing or expired."""
        ...

    async def put(self, key: str, value: str, *, ttl: int | None = None) -> None:
        """Store ``value``; with ``ttl`` (seconds, at least 60 on Cloudflare) it expires."""
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key``; no error when it is missing."""
        ...

    async def incr(self, key: str, amount: int = 1, *, ttl: int | None = None) -> int:
        """Add ``amount`` to the integer at ``key`` (missing counts as 0) and return the new value.

        Atomic on one process; on Cloudflare KV it is read-modify-write, close enough for rate
        limits, which is all it is used for. ``ttl`` is set when the key is created.
        """
        ...


class Blob(msgspec.Struct, frozen=True):
    data: bytes
    content_type: str


@runtime_checkable
class BlobStore(Protocol):
    async def put_blob(
        self, key: str, data: bytes, *, content_type: str = "application/octet-stream"
    ) -> None: ...

    async def get_blob(self, key: str) -> Blob | None:
        """The bytes and content type, or ``None`` when missing."""
        ...

    async def delete_blob(self, key: str) -> bool:
        """``False`` when there was no such blob."""
        ...

    async def list_blobs(self, prefix: str = "") -> list[str]:
        """Keys under ``prefix``, sorted."""
        ...


def summarize(context: VideoContext) -> VideoSummary:
    """The list entry for a saved context; every backend stores exactly this."""
    meta = context.metadata
    transcript = context.transcript
    tokens = 0
    if transcript is not None:
        tokens = estimate_tokens(" ".join(segment.text for segment in transcript.segments))
    return VideoSummary(
        id=context.id,
        title=meta.title,
        platform=meta.platform,
        url=meta.url,
        channel=meta.channel,
        duration_sec=meta.duration_sec,
        published_at=meta.published_at,
        origin=transcript.origin if transcript else None,
        language=transcript.language if transcript else None,
        tokens=tokens,
        fetched_at=context.fetched_at,
    )
