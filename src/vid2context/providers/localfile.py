"""Media files on this machine: ffprobe metadata, subtitles beside or inside the file, ffmpeg audio.

Local only. A path is read only inside the allowed roots (``VID2CONTEXT_FILE_ROOTS``, default the
current directory): ``~`` is expanded, a relative path is read from the current directory, then
every symlink is resolved and the real path must lie in a root. The checks run before anything
about the file is revealed, so a path outside the roots cannot be used to learn whether it exists::

    real path outside every root ......................... unsupported-input
    inside by its name, outside once links are followed . unsupported-input (a link that escapes)
    nothing there ........................................ not-found
    a folder, a device or pipe, unreadable, empty ........ bad-request
    not media (ffprobe cannot read it, or no sound/video)  unsupported-input
    ffprobe / ffmpeg missing ............................. no-provider

Transcripts, most faithful first: a sidecar subtitle file (``talk.srt``, ``talk.vtt``,
``talk.en.vtt``, ``talk.pt-BR.forced.srt``: origin ``sidecar``), then a text subtitle stream inside
the file (SubRip, ASS, WebVTT, mov_text: origin ``embedded``). SubRip and WebVTT streams are copied
out as they are; the others are converted to WebVTT by ffmpeg. Copying is what keeps the text:
ffmpeg's SubRip decoder drops every tag it does not know (``<price>``, ``<div>``) and reads
``a < b > c`` as bold, so a converted SubRip stream has lost words before we see it.
Bitmap subtitles (DVD, Blu-ray) cannot become text and are skipped. With neither, ``no-transcript``:
the speech-to-text ladder takes over with ``extract_audio``.

``extract_audio(path, ctx, fmt=...)`` is the entry point for speech-to-text: mono 16 kHz audio
(what Whisper models take) from any media file, in the format an API accepts.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..chapters import choose_chapters
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import CaptionTrack, Comment, Segment, Transcript, VideoMetadata, VideoRef
from ..settings import Settings
from .captions import MAX_CAPTION_CHARS, choose_track
from .process import run_program
from .speech import AudioInput
from .subtitles import parse_srt, parse_vtt

__all__ = [
    "AUDIO_FORMATS",
    "FFMPEG_HINT",
    "LocalFileProvider",
    "Probe",
    "extract_audio",
    "media_mime",
    "parse_roots",
    "probe",
    "resolve_local_path",
]

FFMPEG_HINT = (
    "Tell the user to install ffmpeg, which brings ffprobe (`apt-get install ffmpeg`, `brew install "
    "ffmpeg`, `winget install ffmpeg`), and do not retry until then."
)
ROOTS_HINT = (
    "Give the path of a file inside an allowed folder, or tell the user to add its folder to "
    "VID2CONTEXT_FILE_ROOTS (comma-separated; unset means the current directory)."
)
SAMPLE_RATE = 16_000
AUDIO_FORMATS: dict[str, list[str]] = {
    "mp3": ["-c:a", "libmp3lame", "-b:a", "32k"],
    "m4a": ["-c:a", "aac", "-b:a", "32k"],
    "ogg": ["-c:a", "libopus", "-b:a", "24k"],
    "opus": ["-c:a", "libopus", "-b:a", "24k"],
    "webm": ["-c:a", "libopus", "-b:a", "24k"],
    "flac": ["-c:a", "flac"],
    "wav": ["-c:a", "pcm_s16le"],
}
"""Speech audio by output format: mono 16 kHz; lossy ones at bit rates that keep words clear (an
hour of mp3 is about 14 MB, under the 25 MB upload caps of hosted Whisper APIs)."""

PROBE_TIMEOUT_S = 60.0
SUBTITLE_TIMEOUT_S = 300.0
AUDIO_TIMEOUT_S = 3600.0
_TEXT_SUBTITLE_CODECS = {
    "subrip", "srt", "ass", "ssa", "webvtt", "mov_text", "text", "microdvd", "subviewer", "subviewer1",
    "jacosub", "sami", "realtext", "stl", "mpl2", "pjs", "vplayer",
}  # fmt: skip
_SIDECAR_EXTENSIONS = ("srt", "vtt")
_COPIED_AS = {"subrip": "srt", "srt": "srt", "webvtt": "webvtt"}
"""Embedded text streams read as the file holds them (ffmpeg ``-c:s copy``), by codec: the muxer."""
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")
_NOT_LANGUAGES = {"forced", "sdh", "cc", "hi", "default", "full", "sub", "subs", "eng_sdh"}
_ISO639_2 = {
    "eng": "en", "fre": "fr", "fra": "fr", "ger": "de", "deu": "de", "spa": "es", "ita": "it", "por": "pt",
    "dut": "nl", "nld": "nl", "rus": "ru", "jpn": "ja", "chi": "zh", "zho": "zh", "kor": "ko", "ara": "ar",
    "hin": "hi", "pol": "pl", "tur": "tr", "swe": "sv", "nor": "no", "dan": "da", "fin": "fi", "gre": "el",
    "ell": "el", "heb": "he", "cze": "cs", "ces": "cs", "hun": "hu", "rum": "ro", "ron": "ro", "ukr": "uk",
    "vie": "vi", "tha": "th", "ind": "id", "may": "ms", "msa": "ms", "per": "fa", "fas": "fa", "cat": "ca",
}  # fmt: skip
_IMAGE_FORMATS = re.compile(r"(^|,)(image2|[a-z0-9]+_pipe|gif|apng|webp)(,|$)")
_MIME = {
    "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "wav": "audio/wav", "flac": "audio/flac",
    "ogg": "audio/ogg", "oga": "audio/ogg", "opus": "audio/ogg", "weba": "audio/webm", "webm": "video/webm",
    "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "mkv": "video/x-matroska",
    "avi": "video/x-msvideo", "mpeg": "video/mpeg", "mpg": "video/mpeg", "3gp": "video/3gpp",
}  # fmt: skip


def media_mime(path: str | os.PathLike[str]) -> str:
    """The MIME type a hosted speech-to-text service expects for a file, from its extension."""
    return _MIME.get(os.fspath(path).rsplit(".", 1)[-1].lower(), "application/octet-stream")


def _shown(path: str) -> str:
    return repr(path if len(path) <= 80 else "..." + path[-77:])


def _tool_missing_hint(tool: str) -> str:
    return f"{tool} is part of ffmpeg. {FFMPEG_HINT}"


# --- roots and paths -----------------------------------------------------------------------------


def parse_roots(value: str | None, *, cwd: str | None = None) -> list[str]:
    """``VID2CONTEXT_FILE_ROOTS`` as real absolute paths; unset or blank means the current directory."""
    base = cwd or os.getcwd()
    entries = [part.strip() for part in (value or "").split(",") if part.strip()] or [base]
    return [os.path.realpath(os.path.join(base, os.path.expanduser(entry))) for entry in entries]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_local_path(native: str, roots: Sequence[str]) -> Path:
    """The real path of a local input, checked against ``roots`` and readable; else a ``VidError``."""
    shown = _shown(native)
    raw = os.path.expanduser(native)
    if not os.path.isabs(raw):
        raw = os.path.join(os.getcwd(), raw)
    lexical = os.path.normpath(raw)
    real = os.path.realpath(raw)
    if not any(_within(real, root) for root in roots):
        if any(_within(lexical, root) for root in roots):
            raise VidError(
                ErrorCode.UNSUPPORTED_INPUT,
                f"{shown} is a link that leads outside the folders vid2context may read.",
                hint=ROOTS_HINT,
            )
        raise VidError(
            ErrorCode.UNSUPPORTED_INPUT,
            f"{shown} is outside the folders vid2context may read.",
            hint=ROOTS_HINT,
        )
    try:
        info = os.stat(real)
    except FileNotFoundError:
        raise VidError(
            ErrorCode.NOT_FOUND,
            f"There is no file at {shown}.",
            hint=f"Check the path; a relative path is read from {os.getcwd()!r}.",
        ) from None
    except NotADirectoryError:
        raise VidError(
            ErrorCode.NOT_FOUND,
            f"There is no file at {shown}: part of the path is a file.",
            hint="Check the path.",
        ) from None
    except PermissionError:
        raise _unreadable(shown) from None
    except OSError as exc:  # a link loop, a name too long
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{shown} cannot be opened ({exc.strerror or 'error'}).",
            hint="Check the path.",
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{shown} is a folder, not a file.",
            hint="Give the path of a video or audio file.",
        )
    if not stat.S_ISREG(info.st_mode):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{shown} is not a regular file (a device, pipe or socket).",
            hint="Give the path of a video or audio file.",
        )
    try:
        with open(real, "rb"):  # os.access would say yes to root; opening is the real test
            pass
    except PermissionError:
        raise _unreadable(shown) from None
    except OSError as exc:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{shown} cannot be opened ({exc.strerror or 'error'}).",
            hint="Check the path; if it is right, tell the user the file cannot be opened, and do not retry.",
        ) from None
    if info.st_size == 0:
        raise VidError(
            ErrorCode.BAD_REQUEST, f"{shown} is empty (0 bytes).", hint="Give a media file with content."
        )
    return Path(real)


def _unreadable(shown: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"{shown} cannot be read: permission denied.",
        hint="Tell the user the file is not readable by the user running vid2context (its "
        "permissions); do not retry.",
    )


# --- ffprobe -------------------------------------------------------------------------------------


def _tag(tags: Any, *names: str) -> str | None:
    if not isinstance(tags, dict):
        return None
    lowered = {str(k).lower(): v for k, v in tags.items()}
    for name in names:
        value = lowered.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _language(code: str | None) -> str | None:
    if not code or code.lower() in ("und", "mul", "zxx", "mis"):
        return None
    code = code.strip()
    return _ISO639_2.get(code.lower(), code)


@dataclass(frozen=True)
class Probe:
    """What ffprobe says about a file: its ``format``, ``streams`` and ``chapters``."""

    format: dict[str, Any]
    streams: list[dict[str, Any]]
    chapters: list[dict[str, Any]]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [s for s in self.streams if s.get("codec_type") == kind]

    @property
    def is_media(self) -> bool:
        """Sound, or moving pictures: a still image or a subtitle file is not a video."""
        if self.of_type("audio"):
            return True
        videos = [s for s in self.of_type("video") if not (s.get("disposition") or {}).get("attached_pic")]
        return bool(videos) and not _IMAGE_FORMATS.search(str(self.format.get("format_name") or ""))

    @property
    def duration(self) -> float | None:
        return _float(self.format.get("duration"))


async def probe(
    path: str | os.PathLike[str], ctx: Ctx, *, ffprobe: str = "ffprobe", shown: str | None = None
) -> Probe:
    """ffprobe's reading of a trusted path (resolve it with ``resolve_local_path`` first).

    Raises ``unsupported-input`` when ffprobe cannot read the file as media.
    """
    shown = shown or _shown(os.path.basename(os.fspath(path)))
    argv = [
        ffprobe, "-v", "error", "-hide_banner", "-print_format", "json",
        "-show_format", "-show_streams", "-show_chapters", f"file:{os.fspath(path)}",
    ]  # fmt: skip
    done = await run_program(
        argv, ctx, timeout=PROBE_TIMEOUT_S, what="ffprobe", missing_hint=_tool_missing_hint("ffprobe")
    )
    try:
        data = json.loads(done.stdout or b"{}")
    except ValueError:
        data = {}
    if done.returncode != 0 or not isinstance(data, dict) or not isinstance(data.get("format"), dict):
        said = next((line for line in done.stderr.splitlines() if line.strip()), "unreadable")
        said = said.split(": ", 1)[-1][:160]
        raise VidError(
            ErrorCode.UNSUPPORTED_INPUT,
            f"{shown} is not a media file ffprobe can read ({said}).",
            hint="Give a video or audio file (mp4, mkv, webm, mov, mp3, m4a, wav...).",
        )
    streams = [s for s in data.get("streams") or [] if isinstance(s, dict)]
    chapters = [c for c in data.get("chapters") or [] if isinstance(c, dict)]
    return Probe(format=data["format"], streams=streams, chapters=chapters)


# --- audio ---------------------------------------------------------------------------------------


def _safe_stem(path: Path) -> str:
    return (re.sub(r"[^A-Za-z0-9._-]+", "_", path.stem).strip("._") or "audio")[:60]


async def extract_audio(
    path: str | os.PathLike[str],
    ctx: Ctx,
    *,
    fmt: str = "mp3",
    dest_dir: str | os.PathLike[str] | None = None,
    ffmpeg: str = "ffmpeg",
    ffprobe: str = "ffprobe",
    timeout: float = AUDIO_TIMEOUT_S,
) -> Path:
    """Mono 16 kHz speech audio from the first audio stream of a media file, as ``fmt``.

    ``path`` is trusted: the caller checked it (``resolve_local_path``) or made it (a download).
    The file is written into ``dest_dir``, or a new temporary folder when none is given; it is the
    caller's, who removes it (and the folder) when done. Raises ``bad-request`` for an unknown
    ``fmt`` or a file ffmpeg cannot decode, ``unsupported-input`` for a file that is not media, and
    ``no-transcript`` for media without sound (no audio stream, or one of zero length).
    """
    if fmt not in AUDIO_FORMATS:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"Unknown audio format {fmt[:20]!r}.",
            hint="Use one of: " + ", ".join(AUDIO_FORMATS) + ".",
        )
    source = Path(path)
    shown = _shown(source.name)
    probed = await probe(source, ctx, ffprobe=ffprobe, shown=shown)
    if not probed.of_type("audio"):
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"{shown} has no audio track, so there is no speech to transcribe.",
            hint="Tell the user the file has no sound to transcribe; do not retry.",
        )
    folder = Path(dest_dir) if dest_dir is not None else Path(tempfile.mkdtemp(prefix="vid2context-audio-"))
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{_safe_stem(source)}.16k-mono.{fmt}"
    argv = [
        ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-y", "-i", f"file:{source}",
        "-map", "0:a:0", "-vn", "-sn", "-dn", "-map_metadata", "-1",
        "-ac", "1", "-ar", str(SAMPLE_RATE), *AUDIO_FORMATS[fmt], f"file:{out}",
    ]  # fmt: skip
    ctx.progress("audio", None, f"extracting {fmt} audio")
    done = await run_program(
        argv, ctx, timeout=timeout, what="ffmpeg", missing_hint=_tool_missing_hint("ffmpeg")
    )
    if done.returncode != 0:
        out.unlink(missing_ok=True)
        said = next((line for line in done.stderr.splitlines() if line.strip()), "failed")[:160]
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"ffmpeg could not extract the audio of {shown} ({said}).",
            hint="Tell the user the file may be damaged or use a codec this ffmpeg lacks (converting it "
            "first may help); do not retry.",
        )
    length = None
    if out.is_file() and out.stat().st_size:
        try:
            length = (await probe(out, ctx, ffprobe=ffprobe, shown=shown)).duration
        except VidError as error:
            if error.code is not ErrorCode.UNSUPPORTED_INPUT:  # an MP3 with no frame is unreadable
                raise
    if not length:
        out.unlink(missing_ok=True)
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"The audio of {shown} is empty (zero length).",
            hint="Tell the user the audio is empty, so there is nothing to transcribe; do not retry.",
        )
    return out


# --- subtitles -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    kind: str
    """``sidecar`` or ``embedded``."""
    label: str
    """A file name, or ``stream #N``."""
    path: Path | None = None
    stream: int | None = None
    codec: str | None = None
    """ffprobe's ``codec_name`` of an embedded stream."""


def _sidecar_language(middle: str) -> str | None:
    for token in middle.split(".") if middle else []:
        if token and token.lower() not in _NOT_LANGUAGES and _LANGUAGE.fullmatch(token):
            return _language(token.replace("_", "-"))
    return None


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")  # hand-made SRT files are often Windows-1252


class LocalFileProvider:
    """``SourceProvider`` for files on this machine (``local`` inputs), through ffprobe and ffmpeg.

    ``download_audio(ref, ctx)`` is the extra the speech-to-text ladder uses.
    """

    id = "localfile"
    name = "Local files"

    def __init__(
        self, *, roots: Sequence[str] | None = None, ffprobe: str = "ffprobe", ffmpeg: str = "ffmpeg"
    ) -> None:
        self.roots = list(roots) if roots is not None else parse_roots(None)
        self._ffprobe = ffprobe
        self._ffmpeg = ffmpeg

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalFileProvider:
        return cls(roots=parse_roots(settings.file_roots))

    def accepts(self, ref: VideoRef) -> bool:
        return ref.platform == "local"

    def resolve(self, ref: VideoRef) -> Path:
        """The file's real path, inside the roots and readable (see the module docstring)."""
        return resolve_local_path(ref.native_id, self.roots)

    # -- the protocol --

    async def metadata(self, ref: VideoRef, ctx: Ctx) -> VideoMetadata:
        path, probed = await self._media(ref, ctx)
        tags = probed.format.get("tags")
        duration = probed.duration
        description = _tag(tags, "description", "comment", "synopsis")
        markers = []
        for number, chapter in enumerate(probed.chapters, 1):
            start = _float(chapter.get("start_time"))
            if start is not None:
                title = _tag(chapter.get("tags"), "title") or f"Chapter {number}"
                markers.append({"timeRangeStartMillis": start * 1000, "title": title})
        audio = probed.of_type("audio")
        published = _tag(tags, "date", "creation_time")
        return VideoMetadata(
            id=ref.id,
            platform="local",
            title=_tag(tags, "title") or Path(os.path.expanduser(ref.native_id)).stem or path.stem,
            url=path.as_uri(),
            channel=_tag(tags, "artist", "album_artist", "author", "composer"),
            duration_sec=duration or None,
            published_at=_iso_date(published),
            description=description,
            language=_language(_tag(audio[0].get("tags"), "language")) if audio else None,
            chapters=choose_chapters(creator_markers=markers, description=description, duration_sec=duration),
        )

    async def caption_tracks(self, ref: VideoRef, ctx: Ctx) -> list[CaptionTrack]:
        path, probed = await self._media(ref, ctx)
        return [track for track, _ in self._tracks(path, probed)]

    async def captions(self, ref: VideoRef, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        path, probed = await self._media(ref, ctx)
        listed = self._tracks(path, probed)
        audio = probed.of_type("audio")
        own = _language(_tag(audio[0].get("tags"), "language")) if audio else None
        choice = choose_track([t for t, _ in listed], lang=lang, video_language=own)
        if choice is None:
            raise VidError(
                ErrorCode.NO_TRANSCRIPT,
                f"{_shown(path.name)} has no subtitles: no {path.stem}.srt or {path.stem}.vtt beside it and "
                "no text subtitle stream in it.",
                hint=f"Put {path.stem}.srt (or .vtt) next to the file, or use mode=stt to transcribe the audio.",
            )
        order = [choice.index] + [i for i in range(len(listed)) if i != choice.index]
        for index in order:  # an empty or unreadable track gives way to the next one
            track, source = listed[index]
            ctx.check()
            segments = await self._read(path, source, ctx)
            if not segments:
                continue
            note = choice.note if index == choice.index else f"{track.name} used: the chosen track was empty"
            return Transcript(
                language=None if track.language == "und" else track.language,
                origin=source.kind,  # type: ignore[arg-type]
                timing="caption",
                producer="local/sidecar" if source.kind == "sidecar" else "local/ffmpeg",
                segments=segments,
                note=f"{note}; {source.label}",
                requested_language=choice.missing,
                available_languages=[code for code in choice.languages if code != "und"],
            )
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"The subtitles of {_shown(path.name)} have no cues with text.",
            hint="Check the subtitle file, or use mode=stt to transcribe the audio.",
        )

    async def items(self, ref: VideoRef, ctx: Ctx, *, limit: int | None = None) -> list[VideoRef]:
        return [ref]

    async def comments(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[Comment]:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "Local files have no comments.",
            hint="Tell the user local files have no comments; do not retry.",
        )

    # -- audio, for speech-to-text --

    async def audio(self, ref: VideoRef, ctx: Ctx) -> AudioInput:
        """``AudioSource``: the checked file itself (the ladder decodes its first audio stream).

        No copy is made, so there is nothing to release. ``no-transcript`` for media without sound.
        """
        path, probed = await self._media(ref, ctx)
        streams = probed.of_type("audio")
        if not streams:
            raise VidError(
                ErrorCode.NO_TRANSCRIPT,
                f"{_shown(ref.native_id)} has no audio track, so there is no speech to transcribe.",
                hint="Tell the user the file has no sound to transcribe; do not retry.",
            )
        duration = _float(streams[0].get("duration")) or probed.duration
        if duration is not None and duration == 0:
            raise VidError(
                ErrorCode.NO_TRANSCRIPT,
                f"The audio of {_shown(ref.native_id)} is empty (zero length).",
                hint="Tell the user the audio is empty, so there is nothing to transcribe; do not retry.",
            )
        return AudioInput.from_path(str(path), mime=media_mime(path), duration_sec=duration)

    async def download_audio(
        self, ref: VideoRef, ctx: Ctx, *, dest_dir: str | os.PathLike[str] | None = None, fmt: str = "mp3"
    ) -> Path:
        """Mono 16 kHz speech audio of the file as a new file (see ``extract_audio``); the caller
        removes it."""
        path = self.resolve(ref)
        return await extract_audio(
            path, ctx, fmt=fmt, dest_dir=dest_dir, ffmpeg=self._ffmpeg, ffprobe=self._ffprobe
        )

    # -- helpers --

    async def _media(self, ref: VideoRef, ctx: Ctx) -> tuple[Path, Probe]:
        """The checked path and its probe, once per call (``ctx.memo``)."""
        path = self.resolve(ref)
        key = ("localfile.probe", str(path))
        cached = ctx.memo.get(key)
        if isinstance(cached, Probe):
            return path, cached
        probed = await probe(path, ctx, ffprobe=self._ffprobe, shown=_shown(ref.native_id))
        if not probed.is_media:
            raise VidError(
                ErrorCode.UNSUPPORTED_INPUT,
                f"{_shown(ref.native_id)} has no audio or video stream, so it is not a media file.",
                hint="Give a video or audio file; a subtitle file is read when it sits next to its video.",
            )
        ctx.memo[key] = probed
        return path, probed

    def _sidecars(self, path: Path) -> list[tuple[CaptionTrack, _Source]]:
        stem = path.stem
        found: list[tuple[int, str, CaptionTrack, _Source]] = []
        try:
            entries = list(os.scandir(path.parent))
        except OSError:
            return []
        for entry in entries:
            name = entry.name
            ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            if ext not in _SIDECAR_EXTENSIONS or not name.startswith(stem + "."):
                continue
            middle = name[len(stem) + 1 : -(len(ext) + 1)] if len(name) > len(stem) + len(ext) + 1 else ""
            real = os.path.realpath(entry.path)
            if not any(_within(real, root) for root in self.roots) or not os.path.isfile(real):
                continue  # a sidecar that is a link out of the roots is not read
            language = _sidecar_language(middle)
            track = CaptionTrack(language=language or "und", name=name, kind="manual")
            found.append((0 if not middle else 1, name, track, _Source("sidecar", name, path=Path(real))))
        found.sort(key=lambda item: (item[0], item[1]))
        return [(track, source) for _, _, track, source in found]

    def _tracks(self, path: Path, probed: Probe) -> list[tuple[CaptionTrack, _Source]]:
        tracks = self._sidecars(path)
        for stream in probed.of_type("subtitle"):
            if stream.get("codec_name") not in _TEXT_SUBTITLE_CODECS or not isinstance(
                stream.get("index"), int
            ):
                continue
            tags = stream.get("tags")
            language = _language(_tag(tags, "language"))
            label = f"stream #{stream['index']}"
            name = _tag(tags, "title") or f"{label} ({stream.get('codec_name')})"
            track = CaptionTrack(language=language or "und", name=name, kind="manual")
            source = _Source("embedded", label, stream=stream["index"], codec=stream.get("codec_name"))
            tracks.append((track, source))
        return tracks

    async def _read(self, path: Path, source: _Source, ctx: Ctx) -> list[Segment]:
        if source.kind == "sidecar" and source.path is not None:
            size = source.path.stat().st_size
            if size > MAX_CAPTION_CHARS:
                raise VidError(
                    ErrorCode.TOO_LARGE,
                    f"The subtitle file {source.label} is {size:,} bytes; the limit is {MAX_CAPTION_CHARS:,}.",
                    hint="Use a smaller subtitle file, or use mode=stt to transcribe the audio.",
                )
            text = _decode(source.path.read_bytes())
            is_vtt = source.label.lower().endswith(".vtt") or text.lstrip("\ufeff \r\n").startswith("WEBVTT")
            return parse_vtt(text) if is_vtt else parse_srt(text)
        copied = _COPIED_AS.get(source.codec or "")
        ways = [(copied, ["-c:s", "copy"])] if copied else []
        for fmt, codec in [*ways, ("webvtt", [])]:  # a copy the muxer refuses is converted instead
            argv = [
                self._ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-i", f"file:{path}",
                "-map", f"0:{source.stream}", *codec, "-f", fmt, "-",
            ]  # fmt: skip
            done = await run_program(
                argv,
                ctx,
                timeout=SUBTITLE_TIMEOUT_S,
                what="ffmpeg",
                missing_hint=_tool_missing_hint("ffmpeg"),
            )
            if done.returncode == 0:
                break
        else:
            return []  # this stream cannot be converted; the next track is tried
        if len(done.stdout) > MAX_CAPTION_CHARS:
            raise VidError(
                ErrorCode.TOO_LARGE,
                f"The subtitle {source.label} of {_shown(path.name)} is too large to read.",
                hint="Use mode=stt to transcribe the audio instead.",
            )
        return parse_srt(done.stdout) if fmt == "srt" else parse_vtt(done.stdout)


def _iso_date(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value.strip()[:10]).isoformat()
    except ValueError:
        return None
