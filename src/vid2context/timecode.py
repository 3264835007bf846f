"""Time values in, ``[m:ss]`` citations and timestamp links out.

People and agents write times in many ways; every tool and route takes all of them, as the
Scribiz peer does: ``90``, ``90.5``, ``1:30``, ``01:02:05``, ``1h2m5s``, ``2m``, ``45s``,
``1h 2m 5s``, ``PT1H2M5S`` (ISO 8601, as YouTube's own metadata writes durations).
"""

from __future__ import annotations

import math
import re
from urllib.parse import urlencode

from .errors import ErrorCode, VidError

__all__ = ["SECONDS", "format_timestamp", "parse_time", "timestamp_pattern", "timestamp_url"]

_MAX_SECONDS = 7 * 24 * 3600.0  # a week: longer than any stream YouTube keeps
_UNITS = re.compile(r"^(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m)?(?:(?P<s>\d+(?:\.\d+)?)s?)?$")
_ISO = re.compile(r"^PT(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?$")
_CLOCK = re.compile(r"^(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d{2}(?:\.\d+)?)$")


def _bad(value: object, why: str) -> VidError:
    shown = str(value)
    if len(shown) > 40:
        shown = shown[:40] + "..."
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"Cannot read {shown!r} as a time: {why}.",
        hint="Give seconds (90), m:ss (1:30), h:mm:ss (1:02:05) or units (1h2m5s).",
    )


def parse_time(value: str | float) -> float:
    """Seconds from any accepted time form; ``bad-request`` for anything else.

    Negative, NaN and absurdly large values are refused rather than clamped: a wrong time
    silently moved to the start of a video would give a wrong citation.
    """
    if isinstance(value, bool):
        raise _bad(value, "expected a time, not a boolean")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = value.strip().lower().replace(" ", "")
        if not text:
            raise _bad(value, "it is empty")
        if len(text) > 32:
            raise _bad(value, "it is too long")
        seconds = _parse_text(text, value)
    if math.isnan(seconds) or math.isinf(seconds):
        raise _bad(value, "it is not a finite number")
    if seconds < 0:
        raise _bad(value, "times cannot be negative")
    if seconds > _MAX_SECONDS:
        raise _bad(value, "it is longer than any video")
    return seconds


def _parse_text(text: str, original: str) -> float:
    try:
        return float(text) if re.fullmatch(r"\d+(?:\.\d+)?", text) else _parse_form(text, original)
    except ValueError as exc:  # pragma: no cover - the regexes only admit numbers
        raise _bad(original, "not a number") from exc


def _parse_form(text: str, original: str) -> float:
    if match := _CLOCK.match(text):
        hours = int(match["h"] or 0)
        minutes = int(match["m"])
        seconds = float(match["s"])
        if seconds >= 60 or (match["h"] is not None and minutes >= 60):
            raise _bad(original, "minutes and seconds must be below 60")
        return hours * 3600 + minutes * 60 + seconds
    if (match := _ISO.match(text.upper())) and text.upper() != "PT":
        return _from_units(match)
    if (match := _UNITS.match(text)) and any(match.groupdict().values()):
        return _from_units(match)
    raise _bad(original, "unknown form")


def _from_units(match: re.Match[str]) -> float:
    return float(match["h"] or 0) * 3600 + float(match["m"] or 0) * 60 + float(match["s"] or 0)


def format_timestamp(seconds: float) -> str:
    """``m:ss`` under an hour, ``h:mm:ss`` from there on; fractions are dropped, never rounded up,
    so a citation never points past the moment it names."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


SECONDS = "<seconds>"
"""The placeholder a link pattern has for the whole seconds of a moment."""


def timestamp_url(platform: str, native_id: str, url: str | None, seconds: float) -> str | None:
    """A link that opens the video at ``seconds``, or ``None`` where the platform has no such link.

    YouTube gets its canonical watch URL with ``t=<s>s``; other web pages get a ``#t=`` media
    fragment, which HTML5 players honour for direct media and which is harmless elsewhere. Local
    files and uploads have no shareable link.
    """
    return _link(platform, native_id, url, str(max(0, int(seconds))))


def timestamp_pattern(platform: str, native_id: str, url: str | None) -> str | None:
    """The link of every moment at once, with ``SECONDS`` where the whole seconds go:
    ``https://www.youtube.com/watch?v=<id>&t=<seconds>s``. A header states it once, so a
    ``[m:ss]`` anywhere in a result can be linked without a URL on every line; ``None`` where
    ``timestamp_url`` has no link."""
    return _link(platform, native_id, url, SECONDS)


def _link(platform: str, native_id: str, url: str | None, seconds: str) -> str | None:
    if platform == "youtube":
        return f"https://www.youtube.com/watch?{urlencode({'v': native_id})}&t={seconds}s"
    if platform == "web" and url and url.startswith(("http://", "https://")):
        base = url.split("#", 1)[0]
        return f"{base}#t={seconds}"
    return None
