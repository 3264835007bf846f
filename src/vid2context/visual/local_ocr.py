"""The local OCR rung: frames picked by ffmpeg, read by Tesseract, merged into stretches.

Local only (files, subprocesses). Free and offline once it has the media. It reads local files
(through the file provider's checks: roots, links), uploads (their bytes written to a temporary
file, since ffmpeg needs to seek), and YouTube videos and pages yt-dlp reads (their picture
downloaded by yt-dlp, ``download_video``). Every frame and the copy live in one temporary folder, removed when the
call is done whatever its outcome.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..ctx import Ctx
from ..errors import VidError
from ..models import VideoRef, VisualItem
from ..providers.localfile import LocalFileProvider
from ..providers.upload import UploadProvider
from ..providers.ytdlp import YtDlpProvider
from ..settings import Settings
from .base import VisualReading
from .frames import Frame, FramePlan, frame_count_note, pick_frames
from .merge import FrameText, clean_text, merge_frames
from .tesseract import read_frames
from .vision_openai import OpenAIVision

__all__ = ["MAX_DESCRIBED", "LocalOcr"]

MAX_DESCRIBED = 20
"""Frames a vision model describes per video at most: one per run of frames OCR found no text in."""


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
        vision: OpenAIVision | None = None,
        web: YtDlpProvider | None = None,
    ) -> None:
        self._web = web
        self._vision = vision if vision is not None and vision.enabled else None
        self._files = files
        self._uploads = uploads
        self._plan = plan
        self._lang = lang
        self._tesseract = tesseract

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        files: LocalFileProvider,
        uploads: UploadProvider | None,
        vision: OpenAIVision | None = None,
        web: YtDlpProvider | None = None,
    ) -> LocalOcr:
        plan = FramePlan(
            scene=settings.frame_scene_pct / 100,
            interval_s=settings.frame_interval_s,
            max_frames=settings.frame_max,
        )
        return cls(files=files, uploads=uploads, plan=plan, lang=settings.ocr_lang, vision=vision, web=web)

    @property
    def lang(self) -> str:
        return self._lang

    @property
    def enabled(self) -> bool:
        return shutil.which(self._tesseract) is not None

    def accepts(self, ref: VideoRef) -> bool:
        if ref.platform in ("youtube", "web"):
            return self._web is not None and self._web.accepts(ref)
        return ref.platform == "local" or (ref.platform == "upload" and self._uploads is not None)

    async def read(self, ref: VideoRef, ctx: Ctx) -> VisualReading:
        folder = Path(tempfile.mkdtemp(prefix="vid2context-frames-"))
        try:
            if ref.platform == "upload" and self._uploads is not None:
                upload = await self._uploads.audio(ref, ctx)  # the upload's bytes, whatever they hold
                source = folder / "upload.media"
                source.write_bytes(upload.data or b"")
                shown = (upload.filename or "the upload")[:80]
            elif ref.platform in ("youtube", "web") and self._web is not None:
                source = await self._web.download_video(ref, ctx, dest_dir=folder / "download")
                shown = ref.native_id[:80]
            else:
                source = self._files.resolve(ref)
                shown = source.name
            frames_dir = folder / "frames"
            frames_dir.mkdir()
            frames, probed = await pick_frames(source, frames_dir, ctx, plan=self._plan, shown=shown)
            texts = await read_frames(frames, folder, ctx, lang=self._lang, tesseract=self._tesseract)
            items = merge_frames(texts, end_sec=probed.duration)
            capped = frame_count_note(len(frames), self._plan)
            reading = VisualReading(items=items, frames=len(frames), notes=[capped] if capped else [])
            if self._vision is not None:
                await self._describe(self._vision, frames, texts, probed.duration, reading, ctx)
            return reading
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    async def _describe(
        self,
        vision: OpenAIVision,
        frames: list[Frame],
        texts: list[FrameText],
        end_sec: float | None,
        reading: VisualReading,
        ctx: Ctx,
    ) -> None:
        """A ``scene`` stretch for each run of frames with no readable text, described by the
        vision model from the run's first frame; the first failure ends it, said in the notes."""
        from ..pipeline import run_rung  # the pipeline imports the layer: import at call time

        runs: list[tuple[int, int]] = []  # [first, after-last) frame indexes of each textless run
        for i, text in enumerate(texts):
            if clean_text(text.text):
                continue
            if runs and runs[-1][1] == i:
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
        for first, after in runs[:MAX_DESCRIBED]:
            frame = frames[first]
            try:
                said = await run_rung(
                    reading.attempts,
                    vision.id,
                    "vision",
                    lambda f=frame: vision.describe(f.path.read_bytes(), ctx),
                )
            except VidError as error:
                reading.notes.append(f"Scenes were not described ({error.code.value}: {error.message})")
                break
            end = frames[after].time_sec if after < len(frames) else (end_sec or frame.time_sec)
            reading.items.append(
                VisualItem(
                    start_sec=round(frame.time_sec, 3),
                    end_sec=round(max(end, frame.time_sec), 3),
                    kind="scene",
                    text=said,
                )
            )
        reading.items.sort(key=lambda item: item.start_sec)
        if len(runs) > MAX_DESCRIBED:
            reading.notes.append(f"Only the first {MAX_DESCRIBED} scenes without text were described.")
