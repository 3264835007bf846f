"""Any site yt-dlp understands, through the ``yt-dlp`` program run as a subprocess.

Local only. One ``yt-dlp`` run per question, each bounded by ``VID2CONTEXT_YTDLP_TIMEOUT_S`` and
the call's deadline, its whole process group stopped when time is up (``process.run_program``):

    metadata ........ ``-J --flat-playlist --no-playlist URL``: title, chapters, the caption list;
                      memoised in ``ctx.memo`` so captions and audio reuse it without extracting again
    captions ........ ``--load-info-json`` of that answer, ``--skip-download --write-(auto-)subs``
                      for the chosen track (json3, srv3, vtt or srt), parsed by ``subtitles.py``
    audio ........... ``-f wa/ba/w`` (the smallest audio-only format, else the smallest with sound)
                      into a folder; ``download_audio`` returns the file for speech-to-text
    items ........... ``--flat-playlist -J --playlist-end N``: playlists, channels, feeds
    comments ........ ``--write-comments -J`` with ``youtube:max_comments=N,N,0,0`` (no replies)

Every run gets ``--ignore-config`` (a user's config must not change what we parse), the proxy
(``VID2CONTEXT_PROXY``), the cookies file (``VID2CONTEXT_YTDLP_COOKIES``), the extra arguments
(``VID2CONTEXT_YTDLP_ARGS``), and ``--`` before the URL so no input is read as an option. Cookie
contents are never read or logged; proxy credentials are masked in every message.

In public mode (``egress`` given) the input's host is checked before a run starts, every run
fetches through the filtering proxy with a credential of its own, and a run that failed after
the proxy refused a destination is ``unsupported-input`` naming the refused class; what else
could fetch around the proxy is closed by ``ytdlp_public``.

yt-dlp's ``ERROR:`` lines become our codes in ``ytdlp_errors``.

yt-dlp missing, not runnable or older than ``MIN_VERSION`` is ``no-provider`` with the install hint.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

from ..chapters import choose_chapters
from ..ctx import Ctx
from ..egress import Egress
from ..errors import ErrorCode, VidError, steps
from ..inputs import is_list, parse_input
from ..models import CaptionTrack, Comment, Thumbnail, Transcript, VideoMetadata, VideoRef
from ..settings import Settings
from .captions import choose_track
from .localfile import media_mime
from .process import Completed, run_program
from .speech import AudioInput
from .subtitles import SUBTITLE_EXTENSIONS, parse_subtitles
from .ytdlp_errors import mask, ytdlp_error
from .ytdlp_public import (
    check_saved_media,
    public_args,
    public_env,
    public_format,
    public_info_file,
    refuse_file_urls,
)

__all__ = [
    "AUDIO_FORMAT",
    "INSTALL_HINT",
    "MIN_VERSION",
    "YtDlpProvider",
    "find_ytdlp",
    "parse_version",
    "ytdlp_error",
]

MIN_VERSION = (2025, 1, 1)
"""Oldest yt-dlp we run: the release ``pyproject.toml`` asks for (YouTube breaks older ones anyway)."""
INSTALL_HINT = (
    "Tell the user to install or update yt-dlp (`pip install -U yt-dlp`, or `pip install "
    "'vid2context[local]'`), or to set VID2CONTEXT_YTDLP to its path; do not retry until then."
)
AUDIO_FORMAT = "wa[abr>=?32]/wa/ba/w"
"""Smallest audio-only format that still sounds like speech, else any audio-only, else the smallest
format with sound: speech-to-text needs no video and no hi-fi audio."""
VIDEO_FORMAT = "bv*[height<=1080]/b[height<=1080]/wv*/w"
"""The best picture up to 1080 lines, sound or not, for the on-screen layer: OCR reads no more from a
4K frame (frames are scaled to 1920 wide anyway), and a video-only stream skips the audio."""
SUB_FORMATS = "json3/srv3/vtt/srt/srv2/srv1"
PRODUCER = "ytdlp"
AUDIO_TIMEOUT_FACTOR = 5

_SKIPPED_TRACKS = {"live_chat", "danmaku", "comments", "rechat"}
_SMUGGLE = "__youtubedl_smuggle"
_VERSION = re.compile(r"(\d{4})\.(\d{1,2})\.(\d{1,2})")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``(2026, 10, 26)`` from ``yt-dlp --version`` output (``2026.10.26``, nightly ``.123456`` too)."""
    match = _VERSION.search(text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def find_ytdlp(configured: str | None = None) -> str:
    """The program to run: the setting, else ``yt-dlp`` on PATH, else the one beside this Python
    (a virtualenv's ``bin``, which is not on PATH when nobody activated it)."""
    if configured:
        return os.path.expanduser(configured)
    found = shutil.which("yt-dlp")
    if found:
        return found
    beside = Path(sys.executable).parent / "yt-dlp"
    return str(beside) if beside.is_file() else "yt-dlp"


# --- info JSON to our shapes ----------------------------------------------------------------------


def _str(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        return None
    return float(value)


def _published(info: dict[str, Any]) -> str | None:
    for key in ("upload_date", "release_date"):
        raw = info.get(key)
        if isinstance(raw, str) and re.fullmatch(r"\d{8}", raw):
            return f"{raw[:4]}-{raw[4:6]}-{raw[6:]}"
    for key in ("timestamp", "release_timestamp"):
        stamp = _number(info.get(key))
        if stamp is not None:
            try:
                return datetime.fromtimestamp(stamp, UTC).date().isoformat()
            except (OverflowError, OSError, ValueError):
                continue
    return None


def _thumbnails(info: dict[str, Any]) -> list[Thumbnail]:
    found: list[Thumbnail] = []
    seen: set[str] = set()
    items = info.get("thumbnails") if isinstance(info.get("thumbnails"), list) else []
    if not items and isinstance(info.get("thumbnail"), str):
        items = [{"url": info["thumbnail"]}]
    for item in items:
        url = item.get("url") if isinstance(item, dict) else None
        if not isinstance(url, str) or not url.startswith(("https://", "http://")) or url in seen:
            continue
        seen.add(url)
        width, height = item.get("width"), item.get("height")
        found.append(
            Thumbnail(
                url=url,
                width=width if isinstance(width, int) and not isinstance(width, bool) else None,
                height=height if isinstance(height, int) and not isinstance(height, bool) else None,
            )
        )
    return found[-8:]  # yt-dlp lists them worst first; YouTube has dozens


def _markers(info: dict[str, Any]) -> list[dict[str, Any]]:
    """yt-dlp's chapters in the marker shape ``chapters.py`` reads (sorted, cleaned, clipped there)."""
    markers = []
    for chapter in info.get("chapters") or []:
        if isinstance(chapter, dict) and (start := _number(chapter.get("start_time"))) is not None:
            markers.append({"timeRangeStartMillis": start * 1000, "title": str(chapter.get("title") or "")})
    return markers


def _is_playlist(info: dict[str, Any]) -> bool:
    return info.get("_type") in ("playlist", "multi_video")


def _metadata(ref: VideoRef, info: dict[str, Any]) -> VideoMetadata:
    duration = _number(info.get("duration"))
    description = _str(info.get("description"))
    tags = [t for t in info.get("tags") or [] if isinstance(t, str)][:100]
    views = info.get("view_count")
    return VideoMetadata(
        id=ref.id,
        platform=ref.platform,
        title=_str(info.get("title")) or _str(info.get("fulltitle")) or _str(info.get("id")) or ref.id,
        url=ref.url or _str(info.get("webpage_url")),
        channel=_str(info.get("channel")) or _str(info.get("uploader")) or _str(info.get("creator")),
        channel_id=_str(info.get("channel_id")) or _str(info.get("uploader_id")),
        duration_sec=duration or None,
        published_at=_published(info),
        description=description,
        thumbnails=_thumbnails(info),
        tags=tags,
        view_count=views if isinstance(views, int) and not isinstance(views, bool) else None,
        language=_str(info.get("language")),
        is_live=bool(info.get("is_live")) or info.get("live_status") == "is_live",
        chapters=[]
        if _is_playlist(info)
        else choose_chapters(
            creator_markers=_markers(info), description=description, duration_sec=duration or None
        ),
    )


def _readable(formats: Any) -> bool:
    return isinstance(formats, list) and any(
        isinstance(f, dict) and f.get("ext") in SUBTITLE_EXTENSIONS for f in formats
    )


def _is_translation(formats: list[dict[str, Any]]) -> bool:
    return any("tlang=" in str(f.get("url") or "") for f in formats if isinstance(f, dict))


def _track_name(formats: list[dict[str, Any]], fallback: str) -> str:
    for f in formats:
        if isinstance(f, dict) and isinstance(f.get("name"), str) and f["name"].strip():
            return f["name"].strip()
    return fallback


class _Tracks:
    """The caption tracks an info JSON lists, with the yt-dlp key and kind each one downloads by."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.tracks: list[CaptionTrack] = []
        self.keys: list[tuple[str, bool]] = []  # (yt-dlp language key, is automatic)
        manual = info.get("subtitles") if isinstance(info.get("subtitles"), dict) else {}
        auto = info.get("automatic_captions") if isinstance(info.get("automatic_captions"), dict) else {}
        auto = {k: v for k, v in auto.items() if isinstance(k, str) and _readable(v) and "," not in k}
        # YouTube lists its machine translations as automatic captions (their URLs carry tlang=) and
        # marks the original language's track "-orig": translations are offered as such, not as tracks.
        self.translations = {k: k for k, v in auto.items() if _is_translation(v)}
        originals = {k: v for k, v in auto.items() if k.endswith("-orig")}
        if not originals:
            originals = {k: v for k, v in auto.items() if k not in self.translations}
        for key, formats in manual.items():
            if isinstance(key, str) and key not in _SKIPPED_TRACKS and "," not in key and _readable(formats):
                self._add(key, key, _track_name(formats, key), "manual")
        for key, formats in originals.items():
            language = key.removesuffix("-orig")
            self._add(key, language, _track_name(formats, language).removesuffix(" (Original)"), "auto")

    def _add(self, key: str, language: str, name: str, kind: str) -> None:
        self.tracks.append(
            CaptionTrack(
                language=language,
                name=name,
                kind=kind,  # type: ignore[arg-type]
                translatable=bool(self.translations),
            )
        )
        self.keys.append((key, kind == "auto"))


# --- the provider --------------------------------------------------------------------------------


class YtDlpProvider:
    """``SourceProvider`` over the ``yt-dlp`` program: web pages, and YouTube as a later rung.

    ``download_audio(ref, ctx)`` is the extra the speech-to-text ladder uses.
    """

    id = "ytdlp"
    name = "yt-dlp"

    def __init__(
        self,
        *,
        binary: str | None = None,
        cookies: str | None = None,
        proxy: str | None = None,
        extra_args: Sequence[str] = (),
        timeout_s: float = 120,
        platforms: Sequence[str] = ("web", "youtube"),
        max_items: int = 500,
        public: bool = False,
        egress: Egress | None = None,
    ) -> None:
        if public and egress is None:
            raise ValueError("public mode needs an Egress: every run fetches through its proxy")
        if egress is not None:
            refuse_file_urls(extra_args)
        self.binary = find_ytdlp(binary)
        self._cookies = os.path.expanduser(cookies) if cookies else None
        self._proxy = proxy
        self._extra = list(extra_args)
        self.timeout_s = timeout_s
        self._platforms = frozenset(platforms)
        self._max_items = max_items
        self._public = public or egress is not None
        self._egress = egress
        self._ready = False
        self._audio_dirs: set[str] = set()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        platforms: Sequence[str] = ("web", "youtube"),
        egress: Egress | None = None,
    ) -> YtDlpProvider:
        """The provider the settings describe; ``egress`` is the runtime's guard in public mode."""
        try:
            extra = shlex.split(settings.ytdlp_args or "")
        except ValueError as exc:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"VID2CONTEXT_YTDLP_ARGS cannot be split into arguments: {exc}.",
                hint="Tell the user to quote VID2CONTEXT_YTDLP_ARGS like a shell command line (e.g. "
                "`--cookies-from-browser firefox`); do not retry until then.",
            ) from None
        return cls(
            binary=settings.ytdlp,
            cookies=settings.ytdlp_cookies,
            proxy=settings.proxy,
            extra_args=extra,
            timeout_s=settings.ytdlp_timeout_s or 120,
            platforms=platforms,
            max_items=settings.max_playlist_items,
            public=settings.public,
            egress=egress,
        )

    def accepts(self, ref: VideoRef) -> bool:
        return ref.platform in self._platforms

    # -- the protocol --

    async def metadata(self, ref: VideoRef, ctx: Ctx) -> VideoMetadata:
        return _metadata(ref, await self._info(ref, ctx))

    async def page_info(self, ref: VideoRef, ctx: Ctx) -> dict[str, Any]:
        """yt-dlp's ``-J`` answer for one video's page, as the other calls read it (a live page's
        stream: ``live.pages``); ``bad-request`` for a list."""
        return self._single(ref, await self._info(ref, ctx))

    async def caption_tracks(self, ref: VideoRef, ctx: Ctx) -> list[CaptionTrack]:
        return _Tracks(self._single(ref, await self._info(ref, ctx))).tracks

    async def captions(self, ref: VideoRef, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        info = self._single(ref, await self._info(ref, ctx))
        listed = _Tracks(info)
        choice = choose_track(
            listed.tracks,
            lang=lang,
            video_language=_str(info.get("language")),
            translation_languages=list(listed.translations),
        )
        subject = self._subject(ref)
        if choice is None:
            raise VidError(
                ErrorCode.NO_TRANSCRIPT,
                f"{subject} has no captions that yt-dlp can read.",
                hint="Use mode=stt to transcribe the audio instead.",
            )
        track = listed.tracks[choice.index]
        key, automatic = listed.keys[choice.index]
        if choice.translate_to:
            key, automatic = listed.translations[choice.translate_to], True
        ctx.progress("captions", None, f"downloading {choice.translate_to or track.language} captions")
        segments, ext = await self._download_subtitles(ref, ctx, info, key, automatic)
        if not segments:
            raise VidError(
                ErrorCode.NO_TRANSCRIPT,
                f"The {track.language} captions of {subject} are empty.",
                hint="Use mode=stt to transcribe the audio instead.",
            )
        origin = "captions-translated" if choice.translate_to else f"captions-{track.kind}"
        return Transcript(
            language=choice.translate_to or track.language,
            origin=origin,  # type: ignore[arg-type]
            timing="caption",
            producer=f"{PRODUCER}/{ext}",
            segments=segments,
            note=choice.note,
            requested_language=choice.missing,
            available_languages=list(choice.languages),
        )

    async def items(self, ref: VideoRef, ctx: Ctx, *, limit: int | None = None) -> list[VideoRef]:
        limit = self._max_items if limit is None else max(0, min(limit, self._max_items))
        if limit == 0:
            return []
        url = self._url(ref)
        if (
            ref.platform == "youtube"
            and ref.kind == "channel"
            and not re.search(r"/(videos|streams|shorts)$", url)
        ):
            url += "/videos"  # a channel's home page lists tabs, not videos
        info = self._json(
            await self._run(["--flat-playlist", "-J", "--playlist-end", str(limit)], url, ctx, ref)
        )
        if not _is_playlist(info):
            return [ref]
        local_ok = url.lower().startswith("file:")
        found: list[VideoRef] = []
        seen: set[str] = set()
        for entry in info.get("entries") or []:
            if len(found) >= limit:
                break
            item = self._entry_ref(entry, local_ok)
            if item is not None and item.id not in seen:
                seen.add(item.id)
                found.append(item)
        return found

    async def comments(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[Comment]:
        limit = max(0, limit)
        if limit == 0:
            return []
        args = [
            "--write-comments", "--no-playlist", "--flat-playlist", "-J",
            "--extractor-args", f"youtube:max_comments={limit},{limit},0,0",
        ]  # fmt: skip
        info = self._json(await self._run(args, self._url(ref), ctx, ref))
        found: list[Comment] = []
        for item in info.get("comments") or []:
            if not isinstance(item, dict) or item.get("parent", "root") != "root":
                continue
            text = _str(item.get("text"))
            if text is None:
                continue
            likes = item.get("like_count")
            stamp = _number(item.get("timestamp"))
            found.append(
                Comment(
                    id=str(item.get("id") or len(found)),
                    text=text,
                    author=_str(item.get("author")),
                    like_count=likes if isinstance(likes, int) and not isinstance(likes, bool) else None,
                    published_at=datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                    if stamp is not None
                    else None,
                )
            )
            if len(found) >= limit:
                break
        return found

    # -- audio, for speech-to-text --

    async def audio(self, ref: VideoRef, ctx: Ctx) -> AudioInput:
        """``AudioSource``: ``download_audio`` into a temporary folder that ``release_audio`` removes."""
        folder = tempfile.mkdtemp(prefix="vid2context-audio-")
        self._audio_dirs.add(folder)
        try:
            path = await self.download_audio(ref, ctx, dest_dir=folder)
        except BaseException:
            self._audio_dirs.discard(folder)
            shutil.rmtree(folder, ignore_errors=True)
            raise
        cached = ctx.memo.get(("ytdlp.info", self._url(ref)))
        duration = _number(cached[0].get("duration")) if isinstance(cached, tuple) else None
        return AudioInput.from_path(str(path), mime=media_mime(path), duration_sec=duration or None)

    async def release_audio(self, audio: AudioInput) -> None:
        """Remove the folder ``audio`` made; other paths are left alone."""
        folder = os.path.dirname(audio.path or "")
        if folder in self._audio_dirs:
            self._audio_dirs.discard(folder)
            await asyncio.to_thread(shutil.rmtree, folder, True)

    async def download_audio(
        self, ref: VideoRef, ctx: Ctx, *, dest_dir: str | os.PathLike[str] | None = None
    ) -> Path:
        """The video's smallest audio (no video track) as a file, as the site serves it (m4a, webm...).

        Written into ``dest_dir``, or a new temporary folder when none is given; the file is the
        caller's: remove its folder when done. Reuses the metadata call's extraction when the same
        ``ctx`` already ran it. Speech-to-text may want ``localfile.extract_audio`` next, for mono
        16 kHz audio of a known size.
        """
        path = await self._download(ref, ctx, dest_dir, fmt=AUDIO_FORMAT, stem="audio", what="audio")
        if path.stat().st_size == 0:
            raise VidError(
                ErrorCode.NO_TRANSCRIPT,
                f"The audio of {self._subject(ref)} is empty.",
                hint="Tell the user the audio is empty, so there is nothing to transcribe; do not retry.",
            )
        return path

    async def download_video(self, ref: VideoRef, ctx: Ctx, *, dest_dir: str | os.PathLike[str]) -> Path:
        """The video's picture (``VIDEO_FORMAT``) as a file in ``dest_dir``, for the on-screen layer;
        the file is the caller's, as with ``download_audio``."""
        return await self._download(ref, ctx, dest_dir, fmt=VIDEO_FORMAT, stem="video", what="video")

    async def _download(
        self,
        ref: VideoRef,
        ctx: Ctx,
        dest_dir: str | os.PathLike[str] | None,
        *,
        fmt: str,
        stem: str,
        what: str,
    ) -> Path:
        folder = (
            Path(dest_dir) if dest_dir is not None else Path(tempfile.mkdtemp(prefix=f"vid2context-{stem}-"))
        )
        folder.mkdir(parents=True, exist_ok=True)
        args = [
            "-f", fmt if self._egress is None else public_format(fmt), "--no-playlist", "--no-part", "--no-mtime", "--ignore-no-formats-error",
            "-P", str(folder), "-o", f"{stem}.%(ext)s", "--print", "after_move:filepath", "--no-simulate",
        ]  # fmt: skip
        ctx.progress("audio" if what == "audio" else "frames", None, f"downloading the {what}")
        cached = ctx.memo.get(("ytdlp.info", self._url(ref)))
        timeout = self.timeout_s * AUDIO_TIMEOUT_FACTOR
        if isinstance(cached, tuple):
            info_file = folder / "info.json"
            info_file.write_bytes(self._info_file(cached[1]))
            try:
                done = await self._run(
                    [*args, "--load-info-json", str(info_file)], None, ctx, ref, timeout=timeout, whole=True
                )
            finally:
                info_file.unlink(missing_ok=True)
        else:
            done = await self._run(args, self._url(ref), ctx, ref, timeout=timeout, whole=True)
        printed = [
            line.strip() for line in done.stdout.decode("utf-8", "replace").splitlines() if line.strip()
        ]
        path = Path(printed[-1]) if printed else None
        if path is None or not path.is_file():
            files = sorted(p for p in folder.glob(f"{stem}.*") if p.is_file())
            path = files[0] if files else None
        if path is None:
            raise VidError(
                ErrorCode.UNAVAILABLE,
                f"yt-dlp downloaded no {what} for {self._subject(ref)}.",
                hint="Tell the user the page has no media yt-dlp could download (updating yt-dlp, `pip "
                "install -U yt-dlp`, may help); do not retry.",
            )
        if self._egress is not None:
            check_saved_media(path, self._subject(ref))
        return path

    # -- running yt-dlp --

    def _url(self, ref: VideoRef) -> str:
        return ref.url or ref.native_id

    def _subject(self, ref: VideoRef) -> str:
        if ref.platform == "youtube":
            return f"video {ref.native_id}" if ref.kind == "video" else f"{ref.kind} {ref.native_id}"
        url = mask(self._url(ref), [self._proxy or ""])
        return url if len(url) <= 100 else url[:97] + "..."

    def _argv(self, args: Sequence[str], url: str | None, *, through: str | None = None) -> list[str]:
        """The command line; ``through`` is the run's filtering-proxy URL in public mode."""
        argv = [self.binary, "--ignore-config", "--no-progress", "--socket-timeout", "30"]
        if self._proxy and through is None:
            argv += ["--proxy", self._proxy]
        if self._cookies:
            argv += ["--cookies", self._cookies]
        argv += self._extra
        if through is not None:  # after the operator's arguments, so these win
            argv += public_args(through)
        argv += args  # ours last: on a repeated option, the last one wins
        if url is not None:
            argv += ["--", url]
        return argv

    async def _ensure_ready(self, ctx: Ctx) -> None:
        """yt-dlp is there and new enough; checked once per provider (one process run)."""
        if self._ready:
            return
        done = await run_program(
            [self.binary, "--version"],
            ctx,
            timeout=30,
            what="yt-dlp",
            missing_hint=INSTALL_HINT,
            env=self._env(),
        )
        version = parse_version(done.stdout.decode("utf-8", "replace"))
        if done.returncode != 0 or version is None:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                f"{os.path.basename(self.binary)} did not answer --version as yt-dlp does.",
                hint=INSTALL_HINT,
            )
        if version < MIN_VERSION:
            shown, needed = ".".join(map(str, version)), ".".join(f"{n:02d}" for n in MIN_VERSION)
            raise VidError(
                ErrorCode.NO_PROVIDER,
                f"yt-dlp {shown} is too old; vid2context needs {needed} or newer.",
                hint="Tell the user to update it (`pip install -U yt-dlp`, or `yt-dlp -U` for the standalone "
                "program), and do not retry until then.",
            )
        self._ready = True

    def _env(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8"}
        return public_env(env) if self._egress is not None else env

    async def _run(
        self,
        args: Sequence[str],
        url: str | None,
        ctx: Ctx,
        ref: VideoRef,
        *,
        timeout: float | None = None,
        whole: bool = False,
    ) -> Completed:
        """One run; ``whole``: in public mode, a run that succeeded without some of what it asked
        for (yt-dlp skips a fragment it cannot get) is refused as well."""
        await self._ensure_ready(ctx)
        if self._egress is not None:
            return await self._run_guarded(
                args, url, ctx, ref, timeout=timeout or self.timeout_s, whole=whole
            )
        done = await run_program(
            self._argv(args, url),
            ctx,
            timeout=timeout or self.timeout_s,
            what="yt-dlp",
            missing_hint=INSTALL_HINT,
            env=self._env(),
        )
        if done.returncode != 0:
            raise ytdlp_error(done.stderr, self._subject(ref), secrets=[self._proxy or ""])
        return done

    async def _run_guarded(
        self, args: Sequence[str], url: str | None, ctx: Ctx, ref: VideoRef, *, timeout: float, whole: bool
    ) -> Completed:
        """A public-mode run: the input's host checked first, every fetch through the proxy, and a
        failure after a refusal answered as that refusal (see the module docstring)."""
        assert self._egress is not None
        subject = self._subject(ref)
        if url is not None:
            await self._egress.check_url(url, subject=subject)
        async with self._egress.call() as call:
            done = await run_program(
                self._argv(args, url, through=call.proxy_url),
                ctx,
                timeout=timeout,
                what="yt-dlp",
                missing_hint=INSTALL_HINT,
                env=self._env(),
            )
        if call.refused is not None and (done.returncode != 0 or whole):
            raise call.refused.error(f"{subject} (or a page, redirect or media it led to)")
        if done.returncode != 0:
            raise ytdlp_error(done.stderr, subject, secrets=[self._proxy or "", call.proxy_url])
        return done

    def _info_file(self, raw: bytes) -> bytes:
        """The info JSON given back to ``--load-info-json`` (trimmed in public mode)."""
        return raw if self._egress is None else public_info_file(raw)

    def _json(self, done: Completed) -> dict[str, Any]:
        try:
            info = json.loads(done.stdout)
        except ValueError:
            info = None
        if not isinstance(info, dict):
            raise VidError(
                ErrorCode.UPSTREAM,
                "yt-dlp's answer was not the JSON it prints with -J.",
                hint="Tell the user to check VID2CONTEXT_YTDLP_ARGS for options that change yt-dlp's output, and "
                "to update yt-dlp; do not retry until then.",
            )
        return info

    async def _info(self, ref: VideoRef, ctx: Ctx) -> dict[str, Any]:
        """``yt-dlp -J`` for the ref, once per call: kept in ``ctx.memo`` with its raw bytes."""
        url = self._url(ref)
        key = ("ytdlp.info", url)
        lock = ctx.memo.setdefault(("ytdlp.lock", url), asyncio.Lock())
        async with lock:
            cached = ctx.memo.get(key)
            if isinstance(cached, tuple):
                return cached[0]
            done = await self._run(["-J", "--flat-playlist", "--no-playlist"], url, ctx, ref)
            info = self._json(done)
            ctx.memo[key] = (info, done.stdout)
            return info

    def _single(self, ref: VideoRef, info: dict[str, Any]) -> dict[str, Any]:
        if _is_playlist(info):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"{self._subject(ref)} is a list of videos, not one video.",
                hint=steps("List its videos with {items} and ask for each one."),
            )
        return info

    async def _download_subtitles(
        self, ref: VideoRef, ctx: Ctx, info: dict[str, Any], key: str, automatic: bool
    ) -> tuple[list, str]:
        """One caption track through yt-dlp (its cookies, headers and tokens), from the memoised info."""
        folder = Path(tempfile.mkdtemp(prefix="vid2context-subs-"))
        try:
            info_file = folder / "info.json"
            cached = ctx.memo.get(("ytdlp.info", self._url(ref)))
            info_file.write_bytes(
                self._info_file(cached[1] if isinstance(cached, tuple) else json.dumps(info).encode())
            )
            args = [
                "--load-info-json", str(info_file), "--skip-download", "--ignore-no-formats-error",
                "--write-auto-subs" if automatic else "--write-subs", "--sub-langs", re.escape(key),
                "--sub-format", SUB_FORMATS, "-P", str(folder), "-o", "sub.%(ext)s",
            ]  # fmt: skip
            await self._run(args, None, ctx, ref, whole=True)  # a refused track is only a warning
            files = sorted(p for p in folder.glob("sub.*") if p.is_file() and p.name != "info.json")
            if not files:
                raise VidError(
                    ErrorCode.UPSTREAM,
                    f"yt-dlp wrote no caption file for {self._subject(ref)} ({key}).",
                    hint="Retry once; if it fails again, use mode=stt to transcribe the audio instead.",
                )
            ext = files[0].suffix.lstrip(".").lower()
            text = files[0].read_bytes()
            return parse_subtitles(text, ext=ext, source=self._subject(ref)), ext
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _entry_ref(self, entry: Any, local_ok: bool) -> VideoRef | None:
        """A list entry as a video reference; entries that are lists, or unreadable, are skipped."""
        if not isinstance(entry, dict):
            return None
        candidates = [entry.get("url"), entry.get("webpage_url"), entry.get("original_url")]
        if entry.get("ie_key") == "Youtube" and isinstance(entry.get("id"), str):
            candidates.append(entry["id"])
        for candidate in candidates:
            if not isinstance(candidate, str) or not candidate.strip():
                continue
            url, fragment = urldefrag(candidate.strip())
            if not fragment.startswith(_SMUGGLE):
                url = candidate.strip()
            try:
                item = parse_input(url, public=self._public)
            except VidError:
                continue
            if is_list(item) or item.platform == "upload" or (item.platform == "local" and not local_ok):
                continue  # a remote feed never names files on this machine
            return item
        return None
