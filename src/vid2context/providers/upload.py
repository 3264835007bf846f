"""Uploads as a source: ``upload:<sha256>`` inputs, transcribed by the speech-to-text ladder.

The bytes and their details come from ``uploads.get_upload`` (KV + blobs, so every Worker
isolate sees them). An upload has no captions, no comments and no platform metadata: its title is
the filename without its extension, and its sound is the uploaded bytes as they are (the ladder
re-encodes and splits them where it can). The pipeline never saves upload contexts to the
library. In ``auto`` mode the pipeline does not ask for an upload's captions: it records them as
skipped, and speech-to-text alone answers.
Portable: runs on the Worker too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import CaptionTrack, Comment, Transcript, VideoMetadata, VideoRef
from ..uploads import UploadInfo, get_upload
from .speech import AudioInput

if TYPE_CHECKING:
    from ..runtime import Runtime

__all__ = ["UploadProvider"]


def title_of(filename: str) -> str:
    """``talk`` from ``talk.mp3``; a name without an extension (or only one) stays whole."""
    stem, dot, _ = filename.rpartition(".")
    return stem if dot and stem else filename


class UploadProvider:
    """``SourceProvider`` for ``upload:<sha256>`` references."""

    id = "upload"
    name = "Uploads"

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def accepts(self, ref: VideoRef) -> bool:
        return ref.platform == "upload"

    async def _load(self, ref: VideoRef, ctx: Ctx) -> tuple[UploadInfo, bytes]:
        """One read per call: metadata and audio share it through ``ctx.memo``."""
        key = ("upload", ref.native_id)
        if key not in ctx.memo:
            ctx.memo[key] = await get_upload(self._runtime, ref.native_id)
        return ctx.memo[key]

    async def metadata(self, ref: VideoRef, ctx: Ctx) -> VideoMetadata:
        info, _ = await self._load(ref, ctx)
        return VideoMetadata(id=ref.id, platform="upload", title=title_of(info.filename))

    async def caption_tracks(self, ref: VideoRef, ctx: Ctx) -> list[CaptionTrack]:
        return []

    async def captions(self, ref: VideoRef, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        """Only ``mode=captions`` asks: in ``auto`` the pipeline skips an upload's captions, so
        that speech-to-text alone answers (and this hint never points ``auto`` at itself)."""
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            "An upload has no captions.",
            hint="Use mode=stt (or auto) to transcribe its audio.",
        )

    async def items(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[VideoRef]:
        return [ref]

    async def comments(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[Comment]:
        return []

    async def audio(self, ref: VideoRef, ctx: Ctx) -> AudioInput:
        info, data = await self._load(ref, ctx)
        return AudioInput.from_bytes(data, filename=info.filename, mime=info.mime_type)
