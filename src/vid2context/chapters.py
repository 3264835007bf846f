"""Chapters from what a platform publishes: its own chapter markers, or the uploader's description.

Pure functions, no I/O. Two sources, in the order a reader trusts them:

- **Markers** the platform renders (YouTube's ``macroMarkersListItemRenderer`` in the watch page's
  engagement panels, or ``chapterRenderer`` in the player bar's ``markersMap``). They are taken as
  YouTube drew them: sorted, de-duplicated, clipped to the duration.
- **Description timestamps** (``0:00 Intro`` lines), accepted only under YouTube's own rule: the
  first at 0:00, at least three, strictly ascending, each chapter at least 10 seconds long. A list
  that breaks the rule is ignored as a whole, as YouTube ignores it, rather than half-used.

``choose_chapters`` applies the preference: the uploader's markers, then the description, then
YouTube's automatic "key moments". Every list leaves here with ``end_sec`` filled from the next
chapter's start, the last one from the duration when it is known.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any

from .models import Chapter
from .providers.youtube_pages import text_of

__all__ = [
    "MIN_CHAPTERS",
    "MIN_CHAPTER_SEC",
    "chapters_from_description",
    "chapters_from_markers",
    "choose_chapters",
    "fill_ends",
]

MIN_CHAPTERS = 3
MIN_CHAPTER_SEC = 10.0
_MAX_TITLE = 200

# A timestamp at the start of a line, after optional bullets or an opening bracket:
# "0:00 Intro", "- 00:00 - Intro", "[1:02:05] Part 3", "(0:00) Intro", "1. 0:00 Intro" is not one.
_DASHES = "-\u2013\u2014"  # hyphen, en dash, em dash
_LINE = re.compile(
    r"^[\s\-*\u2022\u00b7\u25b6\u25ba>|]*[(\[]?(?P<ts>(?:\d{1,2}:)?\d{1,2}:\d{2})[)\]]?"
    r"(?=\s|$|[" + _DASHES + r":|.,)])(?P<rest>.*)$"
)
_TITLE_TRIM = " \t" + _DASHES + ":|\u2022\u00b7.,)]"
_CLOCK = re.compile(r"^(?:(?P<h>\d{1,2}):)?(?P<m>\d{1,2}):(?P<s>\d{2})$")


def _clock_seconds(text: str) -> float | None:
    match = _CLOCK.match(text.strip())
    if match is None:
        return None
    hours = int(match["h"] or 0)
    minutes = int(match["m"])
    seconds = int(match["s"])
    if seconds >= 60 or (match["h"] is not None and minutes >= 60):
        return None
    return float(hours * 3600 + minutes * 60 + seconds)


def _clean_title(title: str) -> str:
    title = " ".join(title.split()).strip(_TITLE_TRIM).strip()
    return title[:_MAX_TITLE]


def fill_ends(chapters: list[Chapter], duration_sec: float | None = None) -> list[Chapter]:
    """Each chapter ends where the next starts; the last at ``duration_sec`` (or open when unknown)."""
    filled: list[Chapter] = []
    for index, chapter in enumerate(chapters):
        if index + 1 < len(chapters):
            end: float | None = chapters[index + 1].start_sec
        else:
            end = duration_sec if duration_sec and duration_sec > chapter.start_sec else None
        filled.append(Chapter(title=chapter.title, start_sec=chapter.start_sec, end_sec=end))
    return filled


def _marker_start(marker: Mapping[str, Any]) -> float | None:
    if "timeRangeStartMillis" in marker:  # chapterRenderer
        try:
            millis = float(marker["timeRangeStartMillis"])
        except (TypeError, ValueError):
            return None
        return millis / 1000.0
    endpoint = marker.get("onTap", {})
    endpoint = endpoint.get("watchEndpoint", {}) if isinstance(endpoint, Mapping) else {}
    start = endpoint.get("startTimeSeconds") if isinstance(endpoint, Mapping) else None
    if isinstance(start, (int, float)) and not isinstance(start, bool):
        return float(start)
    return _clock_seconds(text_of(marker.get("timeDescription")))


def chapters_from_markers(
    markers: Iterable[Mapping[str, Any]], duration_sec: float | None = None
) -> list[Chapter]:
    """Chapters from YouTube's marker objects.

    Each item is a ``macroMarkersListItemRenderer`` or a ``chapterRenderer`` dict, bare or wrapped
    in its key. Markers without a readable time or title, at negative times, past the duration or
    repeating an earlier start are dropped; the rest are sorted by start.
    """
    by_start: dict[float, Chapter] = {}
    for item in markers:
        if not isinstance(item, Mapping):
            continue
        marker = item.get("macroMarkersListItemRenderer") or item.get("chapterRenderer") or item
        if not isinstance(marker, Mapping):
            continue
        start = _marker_start(marker)
        title = _clean_title(text_of(marker.get("title")))
        if start is None or not title or math.isnan(start) or start < 0:
            continue
        if duration_sec and start >= duration_sec:
            continue
        by_start.setdefault(round(start, 3), Chapter(title=title, start_sec=round(start, 3)))
    return fill_ends(sorted(by_start.values(), key=lambda c: c.start_sec), duration_sec)


def chapters_from_description(description: str | None, duration_sec: float | None = None) -> list[Chapter]:
    """Chapters from ``0:00 Intro`` lines, or ``[]`` when the lines break YouTube's rule.

    The list starts at the first line stamped 0:00; every later stamped line belongs to it. It
    counts only when it has at least ``MIN_CHAPTERS`` entries, strictly ascending, each at least
    ``MIN_CHAPTER_SEC`` long (the last one too, when the duration is known) and none past the end.
    """
    if not description:
        return []
    found: list[Chapter] = []
    started = False
    for line in description.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        start = _clock_seconds(match["ts"])
        if start is None:
            continue
        if not started:
            if start != 0:
                continue
            started = True
        title = _clean_title(match["rest"]) or f"Chapter {len(found) + 1}"
        found.append(Chapter(title=title, start_sec=start))
    if len(found) < MIN_CHAPTERS:
        return []
    starts = [c.start_sec for c in found]
    if duration_sec and (starts[-1] >= duration_sec or duration_sec - starts[-1] < MIN_CHAPTER_SEC):
        return []
    for before, after in pairwise(starts):
        if after - before < MIN_CHAPTER_SEC:  # also refuses a list that is not ascending
            return []
    return fill_ends(found, duration_sec)


def choose_chapters(
    *,
    creator_markers: Iterable[Mapping[str, Any]] = (),
    description: str | None = None,
    auto_markers: Iterable[Mapping[str, Any]] = (),
    duration_sec: float | None = None,
) -> list[Chapter]:
    """The uploader's markers, else valid description timestamps, else YouTube's automatic ones."""
    return (
        chapters_from_markers(creator_markers, duration_sec)
        or chapters_from_description(description, duration_sec)
        or chapters_from_markers(auto_markers, duration_sec)
    )
