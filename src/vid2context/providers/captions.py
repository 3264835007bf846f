"""Caption files to segments, and which caption track to read: pure, no I/O.

Formats, sniffed from the text itself so a server that ignores ``fmt=`` still parses:

- **json3**: ``{"events": [{"tStartMs", "dDurationMs", "segs": [{"utf8": ...}]}]}``; events without
  ``segs`` (window definitions) and blank ``aAppend`` line breaks are skipped.
- **srv3**: ``<timedtext format="3"><body><p t="ms" d="ms"><s>word</s>...</p>``.
- **classic timedtext / srv1**: ``<transcript><text start="s" dur="s">...</text>``; srv2's
  ``<text t="ms" d="ms">`` too.

Text is stripped of markup, HTML-unescaped and whitespace-collapsed; empty cues are dropped.
``end_sec`` is ``start + duration`` as the file says (cues may overlap; never negative).

XML comes from the network, so a document carrying a DOCTYPE or an entity declaration is refused
before parsing (no billion laughs, no external entities), as is anything over ``MAX_CAPTION_CHARS``.
Every failure is a ``VidError`` with code ``upstream``: the platform sent something we cannot read.

``choose_track`` picks among listed tracks for a requested language (or the video's own), manual
before automatic, with a platform translation as the next best, and explains its choice.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

from ..errors import ErrorCode, VidError
from ..models import CaptionTrack, Segment

__all__ = [
    "MAX_CAPTION_CHARS",
    "TrackChoice",
    "choose_track",
    "clean_text",
    "parse_captions",
    "parse_json3",
    "parse_timedtext_xml",
    "same_language",
]

MAX_CAPTION_CHARS = 20_000_000
_TAG = re.compile(r"<[^>]*>")
_HOSTILE = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)


def _bad(source: str, why: str) -> VidError:
    return VidError(
        ErrorCode.UPSTREAM,
        f"Could not read the caption file for {source}: {why}.",
        hint="Retry later; if it persists, run vid2context locally (yt-dlp reads captions too) "
        "or use mode=stt.",
    )


def clean_text(raw: str) -> str:
    """Markup out, entities decoded, runs of whitespace (newlines included) made one space."""
    return " ".join(html.unescape(_TAG.sub("", raw)).split())


def _segment(start: float, duration: float, text: str) -> Segment | None:
    text = clean_text(text)
    if not text or math.isnan(start) or math.isinf(start):
        return None
    start = max(0.0, start)
    if math.isnan(duration) or math.isinf(duration) or duration < 0:
        duration = 0.0
    return Segment(start_sec=round(start, 3), end_sec=round(start + duration, 3), text=text)


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool):
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def parse_json3(data: str | bytes | Mapping[str, Any], *, source: str = "the video") -> list[Segment]:
    """Segments from YouTube's json3 caption format."""
    if not isinstance(data, Mapping):
        if len(data) > MAX_CAPTION_CHARS:
            raise _bad(source, "the file is too large")
        try:
            data = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise _bad(source, "it is not valid JSON") from exc
    events = data.get("events") if isinstance(data, Mapping) else None
    if not isinstance(events, list):
        raise _bad(source, "it has no events list")
    segments: list[Segment] = []
    for event in events:
        if not isinstance(event, Mapping) or not isinstance(event.get("segs"), list):
            continue
        text = "".join(str(seg.get("utf8", "")) for seg in event["segs"] if isinstance(seg, Mapping))
        start = _number(event.get("tStartMs"), math.nan) / 1000.0
        segment = _segment(start, _number(event.get("dDurationMs")) / 1000.0, text)
        if segment is not None:  # blank aAppend line breaks end here too
            segments.append(segment)
    return segments


def parse_timedtext_xml(text: str | bytes, *, source: str = "the video") -> list[Segment]:
    """Segments from srv3 (``<p t d>``, ms), srv2 (``<text t d>``, ms) or classic
    (``<text start dur>``, seconds)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if len(text) > MAX_CAPTION_CHARS:
        raise _bad(source, "the file is too large")
    if _HOSTILE.search(text):
        raise _bad(source, "it declares a DOCTYPE or entities, which a caption file never needs")
    try:
        root = ElementTree.fromstring(text.lstrip("\ufeff"))
    except ElementTree.ParseError as exc:
        raise _bad(source, f"malformed XML ({exc})") from exc
    segments: list[Segment] = []
    for element in root.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag not in ("p", "text"):
            continue
        attrs = element.attrib
        if "start" in attrs:
            start, duration = _number(attrs["start"], math.nan), _number(attrs.get("dur"))
        elif "t" in attrs:
            start, duration = _number(attrs["t"], math.nan) / 1000.0, _number(attrs.get("d")) / 1000.0
        else:
            continue
        segment = _segment(start, duration, "".join(element.itertext()))
        if segment is not None:
            segments.append(segment)
    return segments


def parse_captions(text: str | bytes, *, source: str = "the video") -> list[Segment]:
    """Segments from any supported format, recognised by its first character."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    head = text.lstrip("\ufeff \t\r\n")[:1]
    if head == "{":
        return parse_json3(text, source=source)
    if head == "<":
        return parse_timedtext_xml(text, source=source)
    if not head:
        raise _bad(source, "the file is empty")
    raise _bad(source, "it is neither json3 nor timedtext XML")


# --- which track -------------------------------------------------------------------------------


def _norm(code: str) -> str:
    return code.strip().replace("_", "-").lower()


def same_language(a: str, b: str, *, exact: bool) -> bool:
    """``exact``: the same code ignoring case; otherwise the same primary subtag (``pt`` ~ ``pt-BR``)."""
    a, b = _norm(a), _norm(b)
    return a == b if exact else a.split("-")[0] == b.split("-")[0]


@dataclass(frozen=True)
class TrackChoice:
    index: int
    """Position of the chosen source track in the list given to ``choose_track``."""
    translate_to: str | None
    """The platform's code to translate into, or ``None`` to read the track as it is."""
    note: str


def _label(track: CaptionTrack) -> str:
    kind = "auto-generated" if track.kind == "auto" else "manual"
    return f"{kind} {track.name or track.language} track ({track.language})"


def _find(tracks: Sequence[CaptionTrack], lang: str) -> int | None:
    """Manual before automatic; within each, the exact code before a primary-subtag match."""
    for kind in ("manual", "auto"):
        for exact in (True, False):
            for index, track in enumerate(tracks):
                if track.kind == kind and same_language(track.language, lang, exact=exact):
                    return index
    return None


def _reason(tracks: Sequence[CaptionTrack], index: int) -> str:
    track = tracks[index]
    if track.kind == "manual" and any(
        t.kind == "auto" and same_language(t.language, track.language, exact=False) for t in tracks
    ):
        return f"{_label(track)} chosen over the auto-generated one"
    if track.kind == "auto":
        return f"{_label(track)} chosen: no manual track in that language"
    return f"{_label(track)} chosen"


def _translation_source(tracks: Sequence[CaptionTrack], video_language: str | None) -> int | None:
    translatable = [i for i, t in enumerate(tracks) if t.translatable]
    if not translatable:
        return None
    if video_language:
        own = [i for i in translatable if same_language(tracks[i].language, video_language, exact=False)]
        for index in own:
            if tracks[index].kind == "manual":
                return index
        if own:
            return own[0]
    manual = [i for i in translatable if tracks[i].kind == "manual"]
    return (manual or translatable)[0]


def choose_track(
    tracks: Sequence[CaptionTrack],
    *,
    lang: str | None,
    video_language: str | None,
    translation_languages: Sequence[str] = (),
) -> TrackChoice | None:
    """The track to read, and why; ``None`` only when ``tracks`` is empty.

    With ``lang``: a track in that language (manual first), else a platform translation into it
    from a translatable track (the video's own language first), else the video's own track with a
    note saying ``lang`` was not available. Without ``lang``: the video's own language, manual
    first, else the first manual track, else the first one.
    """
    if not tracks:
        return None
    missing = ""
    if lang:
        index = _find(tracks, lang)
        if index is not None:
            return TrackChoice(index, None, f"requested {lang}: {_reason(tracks, index)}")
        target = next((code for code in translation_languages if same_language(code, lang, exact=True)), None)
        target = target or next(
            (code for code in translation_languages if same_language(code, lang, exact=False)), None
        )
        source = _translation_source(tracks, video_language)
        if target is not None and source is not None:
            note = f"no {lang} track; {_label(tracks[source])} translated to {target} by YouTube"
            return TrackChoice(source, target, note)
        missing = f"; requested {lang} not available (no track and no translation into it)"
    index = _find(tracks, video_language) if video_language else None
    if index is None:
        index = next((i for i, t in enumerate(tracks) if t.kind == "manual"), 0)
        return TrackChoice(index, None, f"{_label(tracks[index])} chosen{missing}")
    return TrackChoice(index, None, f"video language {video_language}: {_reason(tracks, index)}{missing}")
