"""Long talks built in the tests, to be saved in a runtime's library before a tool reads them.

``three_hour_talk()`` speaks at about 150 words a minute, the rate the contracts' "12k tokens per
hour" comes from: three hours come to about 36k tokens by ``estimate_tokens``, the size of the
defect that made MCP results page by default (issue #11 item 6).
"""

from __future__ import annotations

import random

import msgspec

from vid2context.models import Chapter, Segment, Transcript, VideoContext, VideoMetadata

__all__ = ["THREE_HOURS", "three_hour_talk", "with_speech"]

THREE_HOURS = "ThreeHours1"

_WORDS = (
    "so the next thing we looked at was how the battery holds up after a full winter of short "
    "trips and it turns out that the cold matters far more than the mileage which surprised most "
    "of the owners we spoke to because the dealer had told them something else entirely about the "
    "charging system the alternator and the software update that came out last spring"
).split()


def three_hour_talk(native: str = THREE_HOURS, *, minutes: int = 180, seed: int = 36) -> VideoContext:
    """A talk of ``minutes``: a segment every 3 to 5 s of 7 to 13 words, sentences, chapters every
    fifteen minutes, now and then a pause."""
    rng = random.Random(seed)
    segments = []
    t = 0.0
    end = minutes * 60.0
    while t < end:
        length = rng.uniform(3, 5)
        words = [rng.choice(_WORDS) for _ in range(rng.randint(7, 13))]
        text = " ".join(words)
        if rng.random() < 0.4:
            text = text.capitalize() + "."
        segments.append(Segment(start_sec=round(t, 3), end_sec=round(t + length, 3), text=text))
        t += length + (rng.uniform(1, 3) if rng.random() < 0.05 else 0)
    chapters = [Chapter(title=f"Part {i + 1}", start_sec=i * 900.0) for i in range(minutes // 15)]
    return VideoContext(
        id=f"youtube:{native}",
        metadata=VideoMetadata(
            id=native,
            platform="youtube",
            title=f"A three-hour talk ({native})",
            url=f"https://www.youtube.com/watch?v={native}",
            channel="Test Channel",
            duration_sec=end,
            chapters=chapters,
        ),
        transcript=Transcript(
            language="en", origin="captions-manual", timing="caption", producer="test", segments=segments
        ),
        fetched_at="2026-11-01T00:00:00Z",
    )


def with_speech(context: VideoContext, *, seed: int = 9) -> VideoContext:
    """A recorded video (its real title, channel, chapters and duration) speaking at the same rate
    over its whole length, in place of its recording's stand-in transcript (the recorded YouTube
    answers carry three made-up lines for any video)."""
    duration = context.metadata.duration_sec or 0.0
    talk = three_hour_talk("Speech00001", minutes=int(duration // 60) + 1, seed=seed)
    assert talk.transcript is not None and context.transcript is not None
    spoken = [seg for seg in talk.transcript.segments if seg.start_sec < duration]
    return msgspec.structs.replace(
        context, transcript=msgspec.structs.replace(context.transcript, segments=spoken), attempts=[]
    )
