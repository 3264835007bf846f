"""What a source of videos must offer.

A ``SourceProvider`` knows one family of inputs (YouTube over InnerTube, any page yt-dlp
understands, local files). The runtime holds them in an ordered list and the pipeline asks the
first one whose ``accepts()`` is true, falling through to the next on ``no-provider``.

Every method raises ``VidError`` with a precise code on failure; any other exception is a bug and
is reported as ``internal`` by the pipeline's rung wrapper. A provider that cannot do something at
all (comments, for instance) raises ``no-provider`` with a hint naming what can.

Optional capability (``AudioSource``), not part of the required surface (``hasattr`` decides)::

    async def audio(self, ref: VideoRef, ctx: Ctx) -> AudioInput

The video's sound for the speech-to-text ladder (``mode=stt``, or ``auto`` without captions):
an ``AudioInput`` (``providers/speech.py``) of kind ``path`` (a local file, or a download in a
temporary folder; the smallest audio-only format will do, the ladder re-encodes it) or ``bytes``
(an upload). Video tracks are fine too: ffmpeg keeps only the first audio stream. It raises
``VidError`` like every other method (``no-transcript`` for media without sound). A provider
without ``audio`` (YouTube over InnerTube, which cannot download media) makes the pipeline answer
``no-provider``: on the Worker, speech-to-text of YouTube videos needs the local runtime (yt-dlp).
A provider whose ``audio`` makes a temporary file (a download) may also offer
``async def release_audio(self, audio: AudioInput) -> None``: the pipeline calls it once the
ladder is done with that audio, whatever the outcome.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..ctx import Ctx
from ..models import CaptionTrack, Comment, Transcript, VideoMetadata, VideoRef
from .speech import AudioInput

__all__ = ["AudioSource", "SourceProvider"]


@runtime_checkable
class SourceProvider(Protocol):
    id: str
    """Short stable id used in attempts and health output (``youtube``, ``ytdlp``)."""
    name: str
    """Human name for health output (``YouTube``)."""

    def accepts(self, ref: VideoRef) -> bool:
        """True when this provider can try ``ref``; cheap and offline."""
        ...

    async def metadata(self, ref: VideoRef, ctx: Ctx) -> VideoMetadata:
        """The video's metadata, chapters included. No captions or audio are fetched."""
        ...

    async def caption_tracks(self, ref: VideoRef, ctx: Ctx) -> list[CaptionTrack]:
        """The caption tracks the platform offers; an empty list when it has none."""
        ...

    async def captions(self, ref: VideoRef, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        """The best caption track for ``lang`` (or the video's own language), as segments.

        Raises ``no-transcript`` when the video has no captions at all.
        """
        ...

    async def items(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[VideoRef]:
        """A playlist or channel expanded to at most ``limit`` videos; a video returns itself."""
        ...

    async def comments(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[Comment]:
        """Up to ``limit`` top-level comments, newest platform order."""
        ...


@runtime_checkable
class AudioSource(Protocol):
    """A ``SourceProvider`` that can also hand over a video's sound (see the module docstring)."""

    async def audio(self, ref: VideoRef, ctx: Ctx) -> AudioInput:
        """The sound of ``ref`` for speech-to-text; ``no-transcript`` when it has none."""
        ...
