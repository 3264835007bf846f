"""Text read from many frames, merged into stretches: one ``VisualItem`` per slide, not per frame.

A slide held for a minute is sampled several times, and OCR reads it a little differently each
time (a stray mark, a word split). Consecutive frames whose words mostly agree (Jaccard of their
word sets at or above ``SAME_TEXT``) are one stretch, which keeps the fullest reading: a build
slide that gains a bullet keeps the version with it. A frame with no text ends the stretch before
it. The same slide shown again later is a new stretch, at its own time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..models import VisualItem

__all__ = ["SAME_TEXT", "FrameText", "clean_text", "merge_frames"]

SAME_TEXT = 0.6
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class FrameText:
    """What one frame, taken at ``time_sec``, says; ``text`` is empty when nothing was read."""

    time_sec: float
    text: str


def clean_text(raw: str) -> str:
    """OCR lines with their spacing tidied; lines without a letter or digit (rules, bullets, noise
    from a photo) are dropped."""
    lines = (" ".join(line.split()) for line in raw.splitlines())
    return "\n".join(line for line in lines if sum(ch.isalnum() for ch in line) >= 2)


def _words(text: str) -> frozenset[str]:
    return frozenset(word.lower() for word in _WORD.findall(text))


def _same(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return False
    return len(a & b) / len(a | b) >= SAME_TEXT


def merge_frames(frames: list[FrameText], *, end_sec: float | None) -> list[VisualItem]:
    """Stretches of the same text, in time order. A stretch ends where the next different frame
    starts; the last one at ``end_sec`` (the video's length), else at its last frame."""
    items: list[VisualItem] = []
    current: tuple[float, float, str, frozenset[str]] | None = None  # start, last seen, text, words

    def close(until: float) -> None:
        if current is not None:
            start, _, text, _ = current
            items.append(
                VisualItem(start_sec=start, end_sec=max(until, start), kind="on_screen_text", text=text)
            )

    for frame in sorted(frames, key=lambda f: f.time_sec):
        text = clean_text(frame.text)
        words = _words(text)
        if current is not None and _same(current[3], words):
            start, _, kept, kept_words = current
            fuller = len(words) > len(kept_words)
            current = (start, frame.time_sec, text if fuller else kept, words if fuller else kept_words)
            continue
        close(frame.time_sec)
        current = (frame.time_sec, frame.time_sec, text, words) if words else None
    if current is not None:
        close(end_sec if end_sec is not None and end_sec > current[1] else current[1])
    return [
        VisualItem(start_sec=round(i.start_sec, 3), end_sec=round(i.end_sec, 3), kind=i.kind, text=i.text)
        for i in items
    ]
