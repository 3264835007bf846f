"""The local OCR rung: frames picked by ffmpeg, read by Tesseract, merged into stretches.

Local only (files, subprocesses). Free and offline. It reads local files (through the file
provider's checks: roots, links) and uploads (their bytes written to a temporary file, since
ffmpeg needs to seek). Every frame and the copy live in one temporary folder, removed when the
call is done whatever its outcome.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..ctx import Ctx
from ..models import VideoRef
from ..providers.localfile import LocalFileProvider
from ..providers.upload import UploadProvider
from ..settings import Settings
from .base import VisualReading
from .frames import FramePlan, frame_count_note, pick_frames
from .merge import merge_frames
from .tesseract import read_frames

__all__ = ["LocalOcr"]


class LocalOcr:
    """``VisualReader`` for files and uploads: ffmpeg's frames through one Tesseract process."""

    id = "visual/tesseract"
    service = "tesseract"
    model = "tesseract"
    tier = "local"
    requires: tuple[str, ...] = ()  # no variable: a program on PATH
    needs = "install tesseract-ocr (the Tesseract program on PATH)"

    def __init__(
        self,
        *,
        files: LocalFileProvider,
        uploads: UploadProvider | None,
        plan: FramePlan,
        lang: str = "eng",
        tesseract: str = "tesseract",
    ) -> None:
        self._files = files
        self._uploads = uploads
        self._plan = plan
        self._lang = lang
        self._tesseract = tesseract

    @classmethod
    def from_settings(
        cls, settings: Settings, *, files: LocalFileProvider, uploads: UploadProvider | None
    ) -> LocalOcr:
        plan = FramePlan(
            scene=settings.frame_scene_pct / 100,
            interval_s=settings.frame_interval_s,
            max_frames=settings.frame_max,
        )
        return cls(files=files, uploads=uploads, plan=plan, lang=settings.ocr_lang)

    @property
    def lang(self) -> str:
        return self._lang

    @property
    def enabled(self) -> bool:
        return shutil.which(self._tesseract) is not None

    def accepts(self, ref: VideoRef) -> bool:
        return ref.platform == "local" or (ref.platform == "upload" and self._uploads is not None)

    async def read(self, ref: VideoRef, ctx: Ctx) -> VisualReading:
        folder = Path(tempfile.mkdtemp(prefix="vid2context-frames-"))
        try:
            if ref.platform == "upload" and self._uploads is not None:
                upload = await self._uploads.audio(ref, ctx)  # the upload's bytes, whatever they hold
                source = folder / "upload.media"
                source.write_bytes(upload.data or b"")
                shown = (upload.filename or "the upload")[:80]
            else:
                source = self._files.resolve(ref)
                shown = source.name
            frames_dir = folder / "frames"
            frames_dir.mkdir()
            frames, probed = await pick_frames(source, frames_dir, ctx, plan=self._plan, shown=shown)
            texts = await read_frames(frames, folder, ctx, lang=self._lang, tesseract=self._tesseract)
            items = merge_frames(texts, end_sec=probed.duration)
            capped = frame_count_note(len(frames), self._plan)
            return VisualReading(items=items, frames=len(frames), notes=[capped] if capped else [])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
