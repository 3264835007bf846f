"""The timedtext XML / srv3 fast path as it was before issue #17's second pass (commit 58fec16).

Kept for two readers only, never imported by ``src``: ``bench_formats`` times it against the
current parser in the same run (before and after on the same bytes and the same load), and
``tests/test_captions_equivalence.py`` holds the current parser to what it answered. Only what
that pass changed is copied (the word-tag removal inside the bodies, the formatting-tag pass
before the one-pass decode, the cue count); everything it left alone is imported.
"""

from __future__ import annotations

import re

from vid2context.models import Segment
from vid2context.providers.captions import (
    _BOTH_LAYERS,
    _CLASSIC_CUE,
    _HOSTILE,
    _ROOT_ENDS,
    _SEP,
    _SRV3_CUE,
    _WHITESPACE_BUT_SPACE,
    _XML_TAG,
    MAX_CAPTION_CHARS,
    _bad,
    _html_text,
    _NotXml,
    _parse_tree,
    _segments_in_ms,
    _xml_unescape,
)

__all__ = ["parse_before"]

_SRV3_WORD = re.compile(r'<s(?: [a-z]+="[0-9]*+")*+>')
_TOKEN = re.compile(
    r"(&(?:amp;(?:amp|lt|gt|quot|apos|#39|#x27|#10);|gt;|quot;|apos;|#39;|#x27;|#34;|#x22;|#10;))"
)
_ESCAPED_FORMATTING = re.compile(
    r"""&lt;/?(?i:b|i|u|font)(?: [A-Za-z]+=(?:&quot;[^&<>"\x00]*&quot;|"[^&<>"\x00]*"))*/?(?:&gt;|>)"""
)
_LONGEST_TOKEN = max(map(len, _BOTH_LAYERS))


def _drop_formatting(match: re.Match[str]) -> str:
    start = match.start()
    before = match.string[max(0, start - _LONGEST_TOKEN) : start]
    amp = before.rfind("&")
    return match.group(0) if amp >= 0 and ";" not in before[amp:] else ""


def _xml_then_html(raw: str) -> str:
    if "&" not in raw:
        return raw
    text = _ESCAPED_FORMATTING.sub(_drop_formatting, raw) if "&lt;" in raw else raw
    if "&lt;" not in text:
        parts = _TOKEN.split(text)
        if len(parts) // 2 == text.count("&"):
            parts[1::2] = list(map(_BOTH_LAYERS.__getitem__, parts[1::2]))
            return "".join(parts)
    return _html_text(_xml_unescape(raw))


def _clean_xml(raws: list[str]) -> list[str]:
    if not raws:
        return []
    joined = _SEP.join(raws)
    if "<" in joined:
        joined = _SRV3_WORD.sub("", joined.replace("</s>", ""))
        if "<" in joined:
            joined = _XML_TAG.sub("", joined)
        if "<" in joined:
            raise _NotXml("a < that starts no tag")
    joined = _xml_then_html(joined)
    if "  " not in joined and not any(char in joined for char in _WHITESPACE_BUT_SPACE):
        return list(map(str.strip, joined.split(_SEP)))
    joined = " ".join(joined.split())
    return [text.strip() for text in joined.split(_SEP)]


def _parse_fast(text: str) -> list[Segment] | None:
    if _SEP in text or not text.rstrip().endswith(_ROOT_ENDS):
        return None
    if "!" in text and "<!" in text:
        return None
    if "<text " in text:
        pattern, tag, seconds = _CLASSIC_CUE, "<text ", True
    elif "<p " in text:
        pattern, tag, seconds = _SRV3_CUE, "<p ", False
    else:
        return None
    parts = pattern.split(text)
    starts, durations, bodies = parts[1::4], parts[2::4], parts[3::4]
    if (tag in "".join(parts[::4])) if seconds else (text.count(tag) != len(starts)):
        return None
    if None in bodies or None in durations:  # the same two checks, written once
        bodies = [body or "" for body in bodies]
        durations = [duration or "0" for duration in durations]
    try:
        texts = _clean_xml(bodies)
    except _NotXml:
        return None
    segments = _segments_in_ms(starts, durations, texts, seconds=seconds)
    if segments is not None:
        return segments
    scale = 1.0 if seconds else 1000.0
    segments = []
    try:
        for start, duration, cue in zip(starts, durations, texts, strict=True):
            if cue:
                begin = float(start) / scale
                end = begin + float(duration) / scale
                segments.append(Segment(start_sec=round(begin, 3), end_sec=round(end, 3), text=cue))
    except ValueError:
        return None
    return segments


def parse_before(text: str | bytes, *, source: str = "the video") -> list[Segment]:
    """``parse_timedtext_xml`` as it was (its strict path is today's, which did not change)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if len(text) > MAX_CAPTION_CHARS:
        raise _bad(source, "the file is too large")
    if "!" in text and _HOSTILE.search(text):
        raise _bad(source, "it declares a DOCTYPE or entities, which a caption file never needs")
    fast = _parse_fast(text)
    return fast if fast is not None else _parse_tree(text, source)
