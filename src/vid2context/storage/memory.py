"""The in-process store: for tests, and the fallback when no backend is configured.

Contexts are kept as encoded JSON, not as live objects, so a caller that mutates what it got back
cannot change what the next caller reads, and so the memory store fails the same way the durable
ones do when a shape cannot be encoded.
"""

from __future__ import annotations

import msgspec

from ..models import VideoContext

__all__ = ["MemoryStorage"]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(VideoContext).decode


class MemoryStorage:
    id = "memory"

    def __init__(self) -> None:
        self._contexts: dict[str, bytes] = {}

    async def get_context(self, video_id: str) -> VideoContext | None:
        raw = self._contexts.get(video_id)
        return None if raw is None else _decode(raw)

    async def put_context(self, context: VideoContext) -> None:
        self._contexts[context.id] = _encode(context)

    async def delete_context(self, video_id: str) -> bool:
        return self._contexts.pop(video_id, None) is not None

    async def close(self) -> None:
        self._contexts.clear()
