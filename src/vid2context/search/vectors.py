"""The vector index: one small async protocol, the shapes it speaks and the checks every backend makes.

A vector belongs to an **embedding space** (``models.EmbeddingSpace``: the model, its dimension and
its pooling), the very shape the embedders answer with, so what was embedded is what is stored.
Vectors of different spaces are never compared: each space is its own table (sqlite-vec) or
namespace and id prefix (Vectorize), and a query names the space it searches. What a vector stands for is a window
of a transcript (``windows.WindowRef``), kept beside it so that a hit can cite it.

Backends, one conformance suite over all of them (``tests/test_vector_conformance.py``):

- ``MemoryVectorIndex`` (``vectors_memory.py``): tests, and the reference the others must match.
- ``SQLiteVectorIndex`` (``storage/sqlite_vec.py``, local only): sqlite-vec's ``vec0`` tables in
  the library's own SQLite file; exact nearest neighbours.
- ``VectorizeIndex`` (``storage/vectorize.py``, Worker only): Cloudflare Vectorize through the
  ``VECTORS`` binding, with what it holds recorded in D1.

A Worker without a ``VECTORS`` binding has no vector index: ``Runtime.vectors`` is ``None``.

Writes may become visible to ``query`` only later (Vectorize takes a few seconds), so nothing may
read the index to learn what it just wrote: ``window_ids`` answers from a strongly consistent
record of what was written. Scores are cosine similarities, higher is closer (1 is the same
direction). Errors are ``VidError``: ``bad-request`` for a vector, space, id or limit that no
backend could take (with a hint), ``no-provider`` when this backend cannot hold the space (a
Vectorize index made for another dimension); anything else is a bug in the backend.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Sequence
from typing import Protocol, get_args, runtime_checkable

import msgspec

from ..errors import ErrorCode, VidError
from ..models import EmbeddingSpace, Pooling
from .windows import MAX_WINDOW_ID_BYTES, WindowRef

__all__ = [
    "MAX_BATCH",
    "MAX_DIM",
    "MAX_TOP_K",
    "VectorHit",
    "VectorIndex",
    "SpaceCount",
    "VectorRecord",
    "as_ref",
    "check_records",
    "check_space",
    "check_top_k",
    "check_vector",
    "check_video_ids",
    "hit",
    "video_key",
]

MAX_TOP_K = 100
"""The most hits one query returns (Vectorize's limit without values or full metadata); larger
``top_k`` is clamped to it."""
MAX_BATCH = 1000
"""The most vectors one write sends to a backend (Vectorize's limit from a Worker); larger batches
are split, never refused."""
MAX_DIM = 4096
"""The widest vector any backend takes here (Vectorize takes 1536; sqlite-vec more)."""
MAX_MODEL_CHARS = 200
POOLINGS: tuple[str, ...] = get_args(Pooling)
_KEY_BYTES = 64


class VectorRecord(msgspec.Struct, frozen=True):
    """A window and its vector, as written."""

    window: WindowRef
    vector: Sequence[float]


class SpaceCount(msgspec.Struct, frozen=True):
    """A space the index holds, with how many videos and windows its ledger counts."""

    space: EmbeddingSpace
    videos: int
    windows: int


class VectorHit(WindowRef, frozen=True, kw_only=True):
    """A window found by a query, with its cosine similarity to the query vector."""

    score: float


@runtime_checkable
class VectorIndex(Protocol):
    id: str
    """Backend name for health output and ``meta`` (``memory``, ``sqlite-vec``, ``vectorize``)."""

    async def upsert(self, space: EmbeddingSpace, records: Sequence[VectorRecord]) -> None:
        """Add ``records`` to ``space``, replacing any with the same window id (the last of
        duplicates in one call wins); any number, written ``MAX_BATCH`` at a time.

        ``bad-request`` for a vector of another dimension than ``space.dim``, a non-finite or
        all-zero vector, an empty or over-long window id (``MAX_WINDOW_ID_BYTES``); nothing of a
        refused call is written. ``no-provider`` when this backend cannot hold ``space``. A write
        may reach ``query`` a few seconds later (Vectorize); ``window_ids`` sees it at once.
        """
        ...

    async def replace_video(
        self, space: EmbeddingSpace, video_id: str, records: Sequence[VectorRecord]
    ) -> None:
        """Make ``records`` the whole of ``video_id``'s vectors in ``space``: upsert them, then
        remove the video's other windows there (never one just written), and count the video as
        indexed in ``space`` (``indexed``), even with no records: a video with nothing to embed is
        indexed too. ``bad-request`` as ``upsert``, and when a record belongs to another video."""
        ...

    async def spaces(self) -> list[SpaceCount]:
        """Every space that holds or held vectors, with the videos indexed in it (by
        ``replace_video``, or ``upsert`` of at least one of their windows) and their windows;
        most videos first. Read-after-write, like ``window_ids``."""
        ...

    async def indexed(self, space: EmbeddingSpace, video_ids: Sequence[str]) -> set[str]:
        """Those of ``video_ids`` indexed in ``space`` (see ``spaces``). Read-after-write."""
        ...

    async def query(
        self,
        space: EmbeddingSpace,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        video_ids: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        """The windows of ``space`` nearest to ``vector`` by cosine similarity, best first (equal
        scores by window id), at most ``top_k`` (clamped to ``MAX_TOP_K``); only windows of
        ``video_ids`` when given (an empty list finds nothing).

        An empty list when the space holds nothing (or was never written). ``bad-request`` for a
        vector ``upsert`` would refuse or a ``top_k`` below 1; ``no-provider`` as ``upsert``.
        """
        ...

    async def window_ids(self, space: EmbeddingSpace, video_id: str) -> list[str]:
        """The ids of ``video_id``'s windows in ``space``, sorted; ``[]`` when it has none.
        Read-after-write: includes what was just written, even where ``query`` does not yet."""
        ...

    async def delete_video(self, video_id: str) -> int:
        """Remove every vector of ``video_id`` in every space, and its place in their counts; how
        many vectors there were (0 when none)."""
        ...

    async def close(self) -> None:
        """Release connections; the index is unusable afterwards."""
        ...


# --- the checks every backend makes -------------------------------------------------------------------


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def check_space(space: EmbeddingSpace) -> EmbeddingSpace:
    """``space`` when its model is named and its dimension is one every backend can hold."""
    if not isinstance(space.model, str) or not 0 < len(space.model) <= MAX_MODEL_CHARS:
        raise _bad(
            f"An embedding space needs a model id of 1 to {MAX_MODEL_CHARS} characters.",
            "Name the embedder's model, as it reports it.",
        )
    if isinstance(space.dim, bool) or not isinstance(space.dim, int) or not 0 < space.dim <= MAX_DIM:
        raise _bad(
            f"An embedding space's dimension must be a whole number from 1 to {MAX_DIM}.",
            "Use the dimension the embedder reports for its model.",
        )
    if space.pooling not in POOLINGS:
        raise _bad(
            "An embedding space's pooling must be one of: " + ", ".join(POOLINGS) + ".",
            "Use the space the embedder reports (Embeddings.space).",
        )
    return space


def check_vector(space: EmbeddingSpace, vector: Sequence[float]) -> list[float]:
    """``vector`` as a list of floats when it fits ``space``: its dimension, finite, not all zero."""
    try:
        values = [float(v) for v in vector]
    except (TypeError, ValueError):
        raise _bad("A vector must be a list of numbers.", "Pass the embedder's output unchanged.") from None
    if len(values) != space.dim:
        raise _bad(
            f"The vector has {len(values)} dimensions; the space of {space.model[:80]} has {space.dim}.",
            "Embed with the model of the space you write or search, or use the space of the model "
            "that made the vector: vectors of different models are never compared.",
        )
    if not all(math.isfinite(v) for v in values):
        raise _bad("The vector holds a value that is not a finite number.", "Check the embedder's output.")
    if not any(values):
        raise _bad(
            "The vector is all zeros: it has no direction to compare by cosine.",
            "Give a vector of some text; an empty text has no meaning to search for.",
        )
    return values


def check_records(
    space: EmbeddingSpace, records: Sequence[VectorRecord], *, video_id: str | None = None
) -> list[tuple[WindowRef, list[float]]]:
    """The records as (window, vector) pairs, one per window id (the last wins), in first-seen
    order; ``bad-request`` for any record no backend could hold, before anything is written."""
    check_space(space)
    kept: dict[str, tuple[WindowRef, list[float]]] = {}
    for record in records:
        window = record.window
        size = len(window.id.encode("utf-8", "surrogatepass")) if isinstance(window.id, str) else 0
        if not 0 < size <= MAX_WINDOW_ID_BYTES:
            raise _bad(
                f"A window id must be 1 to {MAX_WINDOW_ID_BYTES} bytes.",
                "Use the ids windows.make_windows gives (windows.window_id).",
            )
        if not window.video_id:
            raise _bad("A window must name its video.", "Use the windows windows.make_windows gives.")
        if video_id is not None and window.video_id != video_id:
            raise _bad(
                f"A window of {window.video_id[:80]} was given to replace the windows of {video_id[:80]}.",
                "Give one video's windows at a time, and only that video's.",
            )
        kept.pop(window.id, None)
        kept[window.id] = (as_ref(window), check_vector(space, record.vector))
    return list(kept.values())


_REF_FIELDS = msgspec.structs.fields(WindowRef)


def as_ref(window: WindowRef) -> WindowRef:
    """Only the ``WindowRef`` of ``window`` (a ``Window`` carries its text too, which no index keeps)."""
    if type(window) is WindowRef:
        return window
    return WindowRef(**{f.name: getattr(window, f.name) for f in _REF_FIELDS})


def hit(window: WindowRef, score: float) -> VectorHit:
    """The hit of ``window`` with ``score``."""
    return VectorHit(**{f.name: getattr(window, f.name) for f in _REF_FIELDS}, score=score)


def check_top_k(top_k: int) -> int:
    """``top_k`` clamped to ``MAX_TOP_K``; ``bad-request`` unless it is a whole number of 1 or more."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise _bad(
            f"top_k must be a whole number from 1 to {MAX_TOP_K}.", f"Give a top_k of 1 to {MAX_TOP_K}."
        )
    return min(top_k, MAX_TOP_K)


def check_video_ids(video_ids: Sequence[str] | None) -> list[str] | None:
    """The distinct ids of ``video_ids`` in order, or ``None`` for no filter."""
    if video_ids is None:
        return None
    if isinstance(video_ids, str):
        raise _bad("video_ids must be a list of video ids.", "Pass a list, even of one id.")
    return list(dict.fromkeys(video_ids))


def video_key(video_id: str) -> str:
    """``video_id`` when it is at most 64 bytes, else ``~`` and a digest of it: the form in which a
    video id is filtered on where only 64 bytes of a value count (Vectorize's metadata indexes)."""
    if len(video_id.encode("utf-8", "surrogatepass")) <= _KEY_BYTES:
        return video_id
    digest = hashlib.sha256(video_id.encode("utf-8", "surrogatepass")).digest()
    return "~" + base64.b32encode(digest).decode().lower()[:52]
