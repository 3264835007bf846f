"""Subtitle files (WebVTT and SubRip) to segments: pure, no I/O.

yt-dlp hands us ``.vtt`` (and sometimes ``.srt``) files, and a local video often has a ``.srt`` or
``.vtt`` beside it or inside it. Both formats are cue lists::

    WEBVTT                                   1
                                             00:00:01,000 --> 00:00:04,000
    00:00:01.000 --> 00:00:04.000 line:0     Hello <i>there</i>
    <v Anna>Hello <c.yellow>there</c>

The parsers are lenient, as players are: a byte-order mark, CRLF or CR line ends, a missing
``WEBVTT`` header or SRT counter, cue settings, one-digit hours, ``.`` or ``,`` before the
milliseconds and ``NOTE``/``STYLE``/``REGION`` blocks are all accepted. A WebVTT voice tag
``<v Name>`` becomes the segment's speaker. YouTube's automatic WebVTT repeats the previous line
at the top of each cue (a rolling two-line window with ``<00:00:01.234>`` word timings): when a
file has word timings, lines repeated from the cue before are dropped, so every word appears once.

Cue text comes out as written: only each format's own markup is removed, then its character
references are decoded, once.

- WebVTT: the cue span tags (``c``, ``i``, ``b``, ``u``, ``ruby``, ``rt``, ``v``, ``lang``, with
  classes and annotations), timestamp tags ``<00:00:01.000>``, and ``<font>``, which files
  converted from SRT carry. The spec has ``<`` and ``&`` written as ``&lt;`` and ``&amp;``, so
  ``&lt;div&gt;`` is the text ``<div>``. Other tag-like text is kept: a conforming file has none
  (the spec would drop such a tag unseen), but writers that do not escape exist (ffmpeg's WebVTT
  output is one), and in their files ``a < b > c`` and ``<div>`` are words.
- SubRip: ``<b>``, ``<i>``, ``<u>``, ``<s>``, ``<font>`` (any case), ASS ``{\\an8}`` overrides and
  the ``<v Name>`` of files converted from WebVTT. SubRip has no escaping of its own: ``<`` and
  ``>`` are written bare (YouTube's ``.srt`` downloads do), and other tag-like text is kept.
  Character references are decoded nonetheless, as VLC does, because files from HTML-minded
  tools write ``&amp;`` for ``&``; the price is that a cue spelling out an entity (``&amp;lt;``)
  loses a level, which is why SRT is not our faithful export (WebVTT and JSON are).

Blocks that are not cues are skipped, cues without text are dropped, an end before its start
becomes the start. Only a file over ``MAX_CAPTION_CHARS`` is an error (``too-large``); a file with
no cue at all gives ``[]`` and the caller decides what that means.

``parse_subtitles`` picks the parser from the extension or the text; json3 and timedtext XML go to
``captions.parse_captions``.
"""

from __future__ import annotations

import html
import re

from ..errors import ErrorCode, VidError
from ..models import Segment
from .captions import MAX_CAPTION_CHARS, parse_captions

__all__ = ["SUBTITLE_EXTENSIONS", "parse_srt", "parse_subtitles", "parse_vtt"]

SUBTITLE_EXTENSIONS = ("vtt", "srt", "json3", "srv3", "srv2", "srv1")
"""Formats ``parse_subtitles`` reads, by file extension."""

_TIME = r"(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[.,](\d{1,3}))?"
_TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}(?:\s+.*)?$")
_WEBVTT_TAG = re.compile(
    r"</?(?:c|i|b|u|ruby|rt|v|lang|font)(?:\.[^\s<>.]*)*(?:[ \t\f][^<>]*)?>"
    r"|<(?:\d+:)?\d{1,2}:\d{2}[.,]\d{3}>",
    re.IGNORECASE,
)
_SUBRIP_TAG = re.compile(r"</?(?:b|i|u|s|font|v)(?:[ \t.][^<>]*)?/?>", re.IGNORECASE)
_ASS_OVERRIDE = re.compile(r"\{\\[^}]*\}")
_VOICE = re.compile(r"<v(?:\.[^\s>]*)?\s+([^>]+)>")
_WORD_TIMING = re.compile(r"<\d{1,2}:\d{2}:\d{2}[.,]\d{3}>|<\d{1,2}:\d{2}[.,]\d{3}>")


def _seconds(hours: str | None, minutes: str, seconds: str, millis: str | None) -> float:
    fraction = int(millis.ljust(3, "0")) / 1000 if millis else 0.0
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + fraction


def _lines(text: str | bytes) -> list[str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if len(text) > MAX_CAPTION_CHARS:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"The subtitle file is {len(text):,} characters long; the limit is {MAX_CAPTION_CHARS:,}.",
            hint="Use a smaller subtitle file, or transcribe the audio with mode=stt.",
        )
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _clean(lines: list[str], *, vtt: bool) -> tuple[str, str | None]:
    """The cue's text on one line, without its format's markup, and the speaker of its first voice tag."""
    raw = "\n".join(lines)
    voice = _VOICE.search(raw)
    speaker = " ".join(html.unescape(voice.group(1)).split()) if voice else None
    text = _WEBVTT_TAG.sub("", raw) if vtt else _ASS_OVERRIDE.sub("", _SUBRIP_TAG.sub("", raw))
    text = html.unescape(text).replace("\u200e", "").replace("\u200f", "")
    return " ".join(text.split()), speaker or None


def _cues(lines: list[str], *, vtt: bool) -> list[tuple[float, float, list[str]]]:
    """(start, end, text lines) for every timing line, whatever block structure surrounds it.

    A WebVTT cue ends at an empty line (YouTube's cues start with a line holding one space); an SRT
    cue also ends at a line of spaces, which hand-made files often have.
    """
    cues: list[tuple[float, float, list[str]]] = []
    index = 0
    count = len(lines)
    while index < count:
        match = _TIMING.match(lines[index])
        index += 1
        if match is None:
            continue
        groups = match.groups()
        start = _seconds(*groups[:4])
        end = max(start, _seconds(*groups[4:]))
        body: list[str] = []
        while index < count and (lines[index] if vtt else lines[index].strip()):
            line = lines[index]
            if _TIMING.match(line):  # the next cue with no blank line before it: no text lost
                break
            if line.strip().isdigit() and index + 1 < count and _TIMING.match(lines[index + 1]):
                break  # the next SRT cue's counter
            body.append(line)
            index += 1
        cues.append((start, end, body))
    return cues


def _segments(cues: list[tuple[float, float, list[str]]], *, vtt: bool, rolling: bool) -> list[Segment]:
    segments: list[Segment] = []
    previous: list[str] = []
    for start, end, body in cues:
        lines = [line for line in body if line.strip()]
        if rolling:
            plain = [" ".join(html.unescape(_WEBVTT_TAG.sub("", line)).split()) for line in lines]
            shown = plain
            while plain and previous and plain[0] in previous:  # the rolling window's repeated line
                plain = plain[1:]
                lines = lines[1:]
            previous = shown
        text, speaker = _clean(lines, vtt=vtt)
        if not text:
            continue
        segments.append(Segment(start_sec=round(start, 3), end_sec=round(end, 3), text=text, speaker=speaker))
    return segments


def parse_vtt(text: str | bytes) -> list[Segment]:
    """Segments from a WebVTT file (``NOTE``, ``STYLE`` and ``REGION`` blocks skipped)."""
    kept: list[str] = []
    skipping = False
    block_start = True
    for line in _lines(text):
        if not line.strip():
            skipping, block_start = False, True
            kept.append(line)
            continue
        if block_start:
            stripped = line.strip()
            skipping = stripped.startswith(("NOTE", "STYLE", "REGION")) and "-->" not in stripped
            block_start = False
        if not skipping:
            kept.append(line)
    rolling = any(_WORD_TIMING.search(line) for line in kept)
    return _segments(_cues(kept, vtt=True), vtt=True, rolling=rolling)


def parse_srt(text: str | bytes) -> list[Segment]:
    """Segments from a SubRip file; the counters are ignored (players ignore them too)."""
    return _segments(_cues(_lines(text), vtt=False), vtt=False, rolling=False)


def parse_subtitles(text: str | bytes, *, ext: str | None = None, source: str = "the video") -> list[Segment]:
    """Segments from any format we read, chosen by ``ext`` (``vtt``, ``srt``, ``json3``, ``srv3``...)
    or, without one, by the text itself."""
    kind = (ext or "").lower().lstrip(".")
    if kind in ("json3", "srv1", "srv2", "srv3", "xml", "ttml"):
        return parse_captions(text, source=source)
    if kind == "srt":
        return parse_srt(text)
    if kind == "vtt":
        return parse_vtt(text)
    head = (text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text)[:64]
    head = head.lstrip("\ufeff \t\r\n")
    if head.startswith(("{", "<")):
        return parse_captions(text, source=source)
    return parse_vtt(text) if head.startswith("WEBVTT") else parse_srt(text)
