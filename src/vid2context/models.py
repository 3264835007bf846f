"""Every public shape, defined once.

The REST API, the MCP ``outputSchema``, the stored rows and the OpenAPI document all come from
these Structs, so a field renamed here is renamed everywhere. On the wire names are camelCase
(``durationSec``); in Python they are snake_case (``duration_sec``).

Schema evolution: every field added after a shape is first stored gets a default, so rows
written by an older version still decode. ``None`` and empty defaults are left out of the JSON
(``omit_defaults``) to keep what an agent reads short.

This module imports nothing from the project (it is a leaf, like Starlette's ``types.py``).
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "Attempt",
    "AttemptOutcome",
    "CaptionTrack",
    "Chapter",
    "Comment",
    "Kind",
    "Mode",
    "Origin",
    "Platform",
    "Segment",
    "Stage",
    "Thumbnail",
    "Timing",
    "Transcript",
    "VideoContext",
    "VideoMetadata",
    "VideoRef",
    "VideoSummary",
]


class Base(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    """Wire conventions shared by every shape."""


Platform = Literal["youtube", "web", "local", "upload"]
"""Where a video lives: YouTube (InnerTube), any other page yt-dlp understands, a file, an upload."""

Kind = Literal["video", "playlist", "channel"]

Mode = Literal["auto", "captions", "stt", "video"]
"""How to get a transcript: ``auto`` tries captions then speech-to-text; the others force one side."""

Origin = Literal["captions-manual", "captions-auto", "captions-translated", "asr", "sidecar", "embedded"]
"""Where the words came from: uploaded captions, the platform's automatic captions, a platform
translation, our own speech-to-text (``asr``), a subtitle file next to a local video or a subtitle
stream inside it."""

Timing = Literal["word", "caption", "segment-approx"]
"""How precise the timestamps are: per word, per caption cue, or approximate segment bounds."""

Stage = Literal["input", "cache", "metadata", "captions", "stt", "items", "comments", "save"]

AttemptOutcome = Literal["ok", "error", "skipped"]


class VideoRef(Base):
    """A parsed input: what to fetch, before anything is fetched.

    ``id`` is ``platform:nativeId`` (``youtube:jNQXAC9IVRw``) and is the key in storage.
    ``start_sec`` keeps a ``t=`` from the input and ``list_id`` the ``list=`` of a watch URL, so a
    caller can honour them without parsing the URL again.
    """

    id: str
    platform: Platform
    kind: Kind
    native_id: str
    url: str | None = None
    start_sec: float | None = None
    list_id: str | None = None


class Thumbnail(Base):
    url: str
    width: int | None = None
    height: int | None = None


class Chapter(Base):
    title: str
    start_sec: float
    end_sec: float | None = None


class VideoMetadata(Base):
    id: str
    platform: Platform
    title: str
    url: str | None = None
    channel: str | None = None
    channel_id: str | None = None
    duration_sec: float | None = None
    published_at: str | None = None
    description: str | None = None
    thumbnails: list[Thumbnail] = []
    tags: list[str] = []
    view_count: int | None = None
    language: str | None = None
    is_live: bool = False
    chapters: list[Chapter] = []


class Segment(Base):
    start_sec: float
    end_sec: float
    text: str
    speaker: str | None = None


class Transcript(Base):
    language: str | None
    origin: Origin
    timing: Timing
    producer: str
    """Which rung made it, e.g. ``youtube/innertube`` or ``stt/groq/whisper-large-v3-turbo``."""
    segments: list[Segment]
    note: str | None = None
    """Why this track was chosen (requested language, manual over auto, ...)."""


class CaptionTrack(Base):
    """A caption track the platform offers, as listed before any is downloaded."""

    language: str
    name: str
    kind: Literal["manual", "auto"]
    translatable: bool = False


class Comment(Base):
    id: str
    text: str
    author: str | None = None
    like_count: int | None = None
    published_at: str | None = None
    parent_id: str | None = None


class Attempt(Base):
    """One rung of a ladder, tried or skipped: what ran, how it ended, how long it took."""

    id: str
    stage: Stage
    outcome: AttemptOutcome
    reason: str | None = None
    """The error code when ``outcome`` is ``error``, or why the rung was skipped."""
    detail: str | None = None
    ms: int = 0


class VideoContext(Base):
    id: str
    metadata: VideoMetadata
    transcript: Transcript | None = None
    comments: list[Comment] | None = None
    attempts: list[Attempt] = []
    fetched_at: str = ""


class VideoSummary(Base):
    """A saved video in a list: enough to choose what to read, without the transcript."""

    id: str
    title: str
    platform: Platform
    url: str | None = None
    channel: str | None = None
    duration_sec: float | None = None
    published_at: str | None = None
    origin: Origin | None = None
    language: str | None = None
    tokens: int = 0
    fetched_at: str = ""
