"""Videos for the duplicate tests and the benchmark, spoken from real text.

No recorded caption file here is long enough to shingle (the YouTube answers carry three or
four lines), so the speech is real prose of another kind: the topics of the Python language
reference that ship with every CPython (``pydoc_data.topics``), said at 2.5 words a second in
segments of ten words, as captions come. They are good hard cases: the ``for`` and ``while``
topics are two talks on one subject (loops) that share whole sentences about ``break``,
``continue`` and ``else``, yet are different talks.

- ``talk(native, topic)``: one topic as a video.
- ``reupload(native, of)``: the same words with a spoken 30 s intro before them (every time
  shifted by 30 s), as a channel that re-uploads with a new opening.
- ``clip(native, of, start, end)``: the part said from ``start`` to ``end``, its times from 0.
"""

from __future__ import annotations

import pydoc_data.topics

from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata

__all__ = ["INTRO", "TOPICS", "clip", "reupload", "segments_of", "talk", "video"]

TOPICS: dict[str, str] = pydoc_data.topics.topics
WORDS_PER_SECOND = 2.5
INTRO = (
    "Hi everyone and welcome back to the channel. Before we start, a quick word: this one was "
    "uploaded before and got taken down, so here it is again in full. If you are new here, "
    "subscribe, and tell me in the comments what you want covered next. Right, let us begin."
)
"""About 30 s of speech at 2.5 words a second."""


def segments_of(text: str, start: float = 0.0, per: int = 10) -> list[Segment]:
    """``text`` said from ``start``: a segment of ``per`` words at ``WORDS_PER_SECOND``; marks
    that are no words (the reference's ``=====`` underlines) are not said."""
    words = [word for word in text.split() if any(char.isalnum() for char in word)]
    out: list[Segment] = []
    at = start
    for first in range(0, len(words), per):
        chunk = words[first : first + per]
        length = len(chunk) / WORDS_PER_SECOND
        out.append(Segment(start_sec=round(at, 3), end_sec=round(at + length, 3), text=" ".join(chunk)))
        at += length
    return out


def video(native: str, segments: list[Segment], title: str | None = None) -> VideoContext:
    """A saved YouTube video saying ``segments``."""
    end = segments[-1].end_sec if segments else 0.0
    return VideoContext(
        id=f"youtube:{native}",
        metadata=VideoMetadata(
            id=native,
            platform="youtube",
            title=title or native,
            url=f"https://www.youtube.com/watch?v={native}",
            channel="Test Channel",
            duration_sec=end,
        ),
        transcript=Transcript(
            language="en", origin="captions-manual", timing="caption", producer="test", segments=segments
        ),
        fetched_at="2026-11-01T00:00:00Z",
    )


def talk(native: str, topic: str) -> VideoContext:
    return video(native, segments_of(TOPICS[topic]), title=f"Python's {topic}")


def reupload(native: str, of: VideoContext, intro: str = INTRO) -> VideoContext:
    assert of.transcript is not None
    opening = segments_of(intro)
    shift = 30.0
    assert opening[-1].end_sec <= shift
    moved = [
        Segment(start_sec=round(s.start_sec + shift, 3), end_sec=round(s.end_sec + shift, 3), text=s.text)
        for s in of.transcript.segments
    ]
    return video(native, opening + moved, title=f"{of.metadata.title} (reupload)")


def clip(native: str, of: VideoContext, start: float, end: float) -> VideoContext:
    assert of.transcript is not None
    kept = [
        Segment(start_sec=round(s.start_sec - start, 3), end_sec=round(s.end_sec - start, 3), text=s.text)
        for s in of.transcript.segments
        if start <= s.start_sec and s.end_sec <= end
    ]
    return video(native, kept, title=f"{of.metadata.title} (clip)")
