"""What a rung of the on-screen ladder offers: read the picture of a video into ``VisualItem``s.

Rungs are held in order in ``Runtime.visual`` (the local OCR rung first, then vision models), and
``visual/layer.py`` walks them through ``pipeline.run_rung``. A rung that is not set up says so
through ``enabled`` and ``requires`` and is recorded as skipped, as the speech-to-text rungs are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..ctx import Ctx
from ..models import Attempt, VideoRef, VisualItem

__all__ = ["VisualReader", "VisualReading"]


@dataclass(frozen=True)
class VisualReading:
    """A rung's answer: the stretches it read, how many frames it looked at, and ``note`` when the
    answer is known to hold less than the picture (``notes``: a frame cap reached)."""

    items: list[VisualItem]
    frames: int
    notes: list[str] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    """The rung's own steps (each vision-model call), for the answer's ``attempts``."""


class VisualReader(Protocol):
    id: str
    """``visual/tesseract``, ``visual/openai-compatible/<model>``: attempts name the rung with it."""
    service: str
    model: str
    tier: str
    """``local`` (this machine) or, for a hosted vision rung, that service's tier."""
    enabled: bool
    requires: tuple[str, ...]
    """The environment variables a disabled rung needs (names, never values), as ``/models`` lists them."""
    needs: str
    """What the user must set or install for a disabled rung, for its skipped attempt."""

    def accepts(self, ref: VideoRef) -> bool:
        """Whether this rung can get at the picture of ``ref`` here (a file, an upload)."""
        ...

    async def read(self, ref: VideoRef, ctx: Ctx) -> VisualReading:
        """The picture of ``ref`` read; raises ``VidError`` (``unsupported-input`` for a file with
        no video track, ``no-provider`` for a tool that is missing)."""
        ...
