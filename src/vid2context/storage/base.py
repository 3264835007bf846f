"""Where fetched videos are kept.

``Storage`` is the library: every context the pipeline builds is saved here and read back instead
of being fetched again. Backends (memory, SQLite, Cloudflare D1/KV/R2) implement it one per module;
the runtime holds the chosen one. Every method is async because the edge backends are.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..models import VideoContext

__all__ = ["Storage"]


@runtime_checkable
class Storage(Protocol):
    id: str
    """Backend name for health output (``memory``, ``sqlite``, ``cloudflare``)."""

    async def get_context(self, video_id: str) -> VideoContext | None:
        """The saved context for ``video_id`` (``youtube:jNQXAC9IVRw``), or ``None`` if not saved."""
        ...

    async def put_context(self, context: VideoContext) -> None:
        """Save ``context`` under ``context.id``, replacing any earlier copy."""
        ...

    async def delete_context(self, video_id: str) -> bool:
        """Forget ``video_id``; ``False`` when it was not saved."""
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...
