"""Skip segments: SponsorBlock's ranges for a video, what they cover, and a transcript without them.

One core for ``GET /api/v1/skips``, ``skip=`` on the transcript route and the MCP tool
``get_skip_segments``. A transcript is never changed where it is stored: ``without_skips`` makes a
copy with the segments inside the ranges removed, so every other reader still gets every word.

Only ``skip`` and ``mute`` ranges count as covered or are removed: ``full`` marks a whole video
(its range is ``[0, 0]``), ``poi`` a single moment, ``chapter`` a named range of the video's own
content. A transcript segment goes when more than half of it lies inside the ranges (a zero-length
one when its moment does), so a line that only touches a sponsor read stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import Base, Segment, VideoContext
from ..pipeline import resolve_video
from ..runtime import Runtime
from ..timecode import format_timestamp, timestamp_url
from ..tokens import estimate_tokens
from .sponsorblock import ATTRIBUTION, CATEGORIES, RawSegment, fetch_segments

__all__ = [
    "DEFAULT_CATEGORIES",
    "MAX_CATEGORIES_CHARS",
    "SkipSegment",
    "Skips",
    "covered_sec",
    "find_skips",
    "parse_categories",
    "parse_skip",
    "with_shares",
    "without_skips",
]

DEFAULT_CATEGORIES: tuple[str, ...] = ("sponsor", "selfpromo", "interaction")
"""What ``skip=1`` and a call without categories mean: paid promotion, self-promotion and reminders
to like or subscribe, the three that are never what a video is about."""
MAX_CATEGORIES_CHARS = 400
_OFF = frozenset({"", "0", "false", "no"})
_ON = frozenset({"1", "true", "yes"})
_REMOVED = frozenset({"skip", "mute"})


class SkipSegment(Base, kw_only=True, omit_defaults=True):
    """One SponsorBlock segment, with its times as seconds, as ``m:ss`` and as a link."""

    category: str
    action_type: str
    start_sec: float
    end_sec: float
    start: str
    end: str
    url: str | None = None
    uuid: str = ""
    votes: int = 0
    locked: bool = False
    description: str | None = None
    """A chapter's name (``chapter`` segments only): text SponsorBlock's users wrote."""
    transcript_share: float | None = None
    """The share of the transcript's words (by tokens, 0 to 1) inside this segment, when the
    transcript was read (``get_skip_segments``)."""


class Skips(Base, kw_only=True, omit_defaults=True):
    """The segments of some categories, the seconds they cover together, and whose data it is."""

    video_id: str
    categories: list[str]
    segments: list[SkipSegment]
    covered_sec: float
    source: Literal["sponsorblock"]
    attribution: str
    """Where the data came from and its licence, as SponsorBlock's terms ask (CC BY-NC-SA 4.0)."""
    transcript_share: float | None = None
    """The share of the transcript's words the segments cover together, when it was read."""
    transcript_tokens: int | None = None
    """How many tokens the transcript has, when it was read."""


def parse_categories(raw: str | Sequence[str] | None, *, name: str = "categories") -> tuple[str, ...]:
    """Categories from a comma-separated string or a list, checked before anything is fetched;
    none given: ``DEFAULT_CATEGORIES``. ``name`` is the argument that carried them (for the hint)."""
    if raw is None:
        return DEFAULT_CATEGORIES
    joined = raw if isinstance(raw, str) else ",".join(str(item) for item in raw)
    if len(joined) > MAX_CATEGORIES_CHARS:
        raise _bad_categories(f"{name} is {len(joined)} characters long", name)
    asked = [part.strip().lower() for part in joined.split(",") if part.strip()]
    if not asked:
        return DEFAULT_CATEGORIES
    unknown = [part for part in asked if part not in CATEGORIES]
    if unknown:
        shown = ", ".join(repr(part[:40]) for part in unknown[:5])
        raise _bad_categories(
            f"SponsorBlock has no categor{'y' if len(unknown) == 1 else 'ies'} {shown}", name
        )
    return tuple(dict.fromkeys(asked))


def _bad_categories(what: str, name: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"{what}.",
        hint=f"Give {name} as any of {', '.join(CATEGORIES)} (comma-separated); leave it out for "
        f"{', '.join(DEFAULT_CATEGORIES)}.",
    )


def parse_skip(raw: str | None) -> tuple[str, ...] | None:
    """The transcript route's ``skip``: ``None`` (off, the whole transcript), ``1`` (the default
    categories) or the categories named."""
    if raw is None or raw.strip().lower() in _OFF:
        return None
    if raw.strip().lower() in _ON:
        return DEFAULT_CATEGORIES
    return parse_categories(raw, name="skip")


def video_id_of(runtime: Runtime, source: str) -> tuple[str, str | None]:
    """The YouTube id (and canonical URL) of ``source``, or why SponsorBlock cannot know it; no
    fetch."""
    ref = resolve_video(runtime, source, wanted="skip segments")
    if ref.platform != "youtube":
        raise VidError(
            ErrorCode.UNSUPPORTED_INPUT,
            f"SponsorBlock has segments for YouTube videos only, not for {ref.id[:120]}.",
            hint="Give a YouTube video's URL or id as url.",
        )
    return ref.native_id, ref.url


async def find_skips(runtime: Runtime, source: str, categories: Sequence[str], ctx: Ctx) -> Skips:
    """The segments of ``categories`` (checked, from ``parse_categories``) for the YouTube video
    ``source`` names, in time order."""
    video_id, url = video_id_of(runtime, source)
    settings = runtime.settings
    raw = await fetch_segments(runtime.http, runtime.kv, settings.sponsorblock_origin, video_id, ctx)
    wanted = set(categories)
    chosen = sorted((s for s in raw if s.category in wanted), key=lambda s: (s.segment[0], s.segment[1]))
    segments = [_segment(s, video_id, url) for s in chosen]
    return Skips(
        video_id=f"youtube:{video_id}",
        categories=list(categories),
        segments=segments,
        covered_sec=covered_sec(segments),
        source="sponsorblock",
        attribution=ATTRIBUTION,
    )


def _segment(raw: RawSegment, video_id: str, url: str | None) -> SkipSegment:
    start, end = raw.segment
    return SkipSegment(
        category=raw.category,
        action_type=raw.action_type,
        start_sec=round(start, 3),
        end_sec=round(end, 3),
        start=format_timestamp(start),
        end=format_timestamp(end),
        url=timestamp_url("youtube", video_id, url, start),
        uuid=raw.uuid[:80],
        votes=raw.votes,
        locked=bool(raw.locked),
        description=raw.description[:300] or None,
    )


def _ranges(segments: Sequence[SkipSegment]) -> list[tuple[float, float]]:
    """The removable ranges, merged where they overlap or touch, in order."""
    spans = sorted(
        (s.start_sec, s.end_sec) for s in segments if s.action_type in _REMOVED and s.end_sec > s.start_sec
    )
    merged: list[tuple[float, float]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def covered_sec(segments: Sequence[SkipSegment]) -> float:
    """Seconds the removable segments cover together (overlaps counted once)."""
    return round(sum(end - start for start, end in _ranges(segments)), 3)


def _inside(segment: Segment, ranges: Sequence[tuple[float, float]]) -> bool:
    """Whether more than half of ``segment`` lies inside ``ranges`` (its moment, when it has no length)."""
    start, end = segment.start_sec, max(segment.end_sec, segment.start_sec)
    if end == start:
        return any(low <= start < high for low, high in ranges)
    overlap = sum(max(0.0, min(end, high) - max(start, low)) for low, high in ranges)
    return overlap * 2 > end - start


def without_skips(context: VideoContext, skips: Skips) -> VideoContext:
    """A copy of ``context`` whose transcript lacks the segments inside the removable ranges; the
    note says what went. ``context`` itself is left as it is."""
    transcript = context.transcript
    ranges = _ranges(skips.segments)
    if transcript is None or not ranges:
        return context
    kept = [segment for segment in transcript.segments if not _inside(segment, ranges)]
    removed = len(transcript.segments) - len(kept)
    spans = ", ".join(f"{format_timestamp(a)}-{format_timestamp(b)}" for a, b in ranges[:20])
    note = f"SponsorBlock {'/'.join(skips.categories)} removed ({removed} segments: {spans})"
    if transcript.note:
        note = f"{transcript.note}; {note}"
    return msgspec.structs.replace(
        context, transcript=msgspec.structs.replace(transcript, segments=kept, note=note)
    )


def with_shares(skips: Skips, context: VideoContext) -> Skips:
    """``skips`` with the share of ``context``'s transcript (by tokens) that each segment, and all
    of them together, cover."""
    transcript = context.transcript
    segments = transcript.segments if transcript else []
    tokens = [estimate_tokens(segment.text) for segment in segments]
    total = sum(tokens)

    def share(ranges: list[tuple[float, float]]) -> float:
        if not total or not ranges:
            return 0.0
        inside = sum(
            count for segment, count in zip(segments, tokens, strict=True) if _inside(segment, ranges)
        )
        return round(inside / total, 4)

    shared = [
        msgspec.structs.replace(s, transcript_share=share(_ranges([s])) if s.action_type in _REMOVED else 0.0)
        for s in skips.segments
    ]
    return msgspec.structs.replace(
        skips, segments=shared, transcript_share=share(_ranges(skips.segments)), transcript_tokens=total
    )
