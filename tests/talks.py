"""Long talks built in the tests, to be saved in a runtime's library before a tool reads them.

``three_hour_talk()`` speaks at about 150 words a minute, the rate the contracts' "12k tokens per
hour" comes from: three hours come to about 36k tokens by ``estimate_tokens``, the size of the
defect that made MCP results page by default (issue #11 item 6).

``bike_review()`` and ``sourdough()`` are the two videos a comparison needs parts of (issue #12
item 5): eight chapters each, every chapter's own words said only in it, and the parts that
matter in the middle (the kickstand, chapter 4; the baking, chapter 5). ``topic_talk()`` builds
any such talk; ``chapters=False`` leaves the chapters out so the outline falls back to time
sections.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import msgspec

from vid2context.models import Chapter, Segment, Transcript, VideoContext, VideoMetadata

SAVED_AT = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT00:00:00Z")
"""When the fixtures were saved: yesterday, whenever the tests run. A fixed date went stale: past
30 days, every reading tool adds its "saved copy ... days old" line, and the token costs the
tests measure grew by it (``tests/test_mcp_costs.py`` failed from 2026-12-02 on). Tests of that
line set their own date."""

__all__ = [
    "BIKE",
    "BIKE_TOPICS",
    "BREAD",
    "BREAD_TOPICS",
    "THREE_HOURS",
    "bike_review",
    "sourdough",
    "three_hour_talk",
    "topic_talk",
    "with_speech",
]

THREE_HOURS = "ThreeHours1"
BIKE = "BikeReview1"
BREAD = "Sourdough01"

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
        fetched_at=SAVED_AT,
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


_FILLER = (
    "so what we noticed over the weeks is that it really depends on how you use it and honestly "
    "most people will be fine with it but there are a few things worth knowing before you decide "
    "because the details add up once you live with something every single day"
).split()

BIKE_TOPICS: list[tuple[str, list[str]]] = [
    ("Unboxing", ["box", "charger", "manual", "packaging"]),
    ("Frame and fold", ["hinge", "latch", "frame", "folded"]),
    ("Motor and battery", ["motor", "battery", "range", "torque"]),
    ("Gears", ["gears", "shifter", "chain", "derailleur"]),
    ("The kickstand", ["kickstand", "stand", "tilt", "lean"]),
    ("Brakes", ["brakes", "rotor", "pads", "lever"]),
    ("Ride comfort", ["saddle", "tyres", "bumps", "suspension"]),
    ("Verdict", ["price", "recommend", "warranty", "value"]),
]
BREAD_TOPICS: list[tuple[str, list[str]]] = [
    ("Intro", ["bread", "loaf", "recipe", "kitchen"]),
    ("The starter", ["starter", "jar", "feed", "bubbly"]),
    ("Mixing", ["flour", "water", "salt", "autolyse"]),
    ("Stretch and fold", ["stretch", "gluten", "dough", "bowl"]),
    ("Shaping", ["shape", "banneton", "tension", "seam"]),
    ("Baking", ["oven", "baking", "crust", "steam"]),
    ("Cooling", ["cool", "rack", "slice", "wait"]),
    ("Tasting", ["crumb", "taste", "sour", "chewy"]),
]


def topic_talk(
    native: str,
    title: str,
    topics: list[tuple[str, list[str]]],
    *,
    seconds: tuple[float, float] = (50.0, 110.0),
    chapters: bool = True,
    seed: int = 12,
) -> VideoContext:
    """A talk of one chapter per topic, each ``seconds`` long (drawn in that range): a segment
    every 3 to 5 s of filler speech in which the topic's own words come up, and no other topic's."""
    rng = random.Random(seed)
    segments = []
    chapter_list = []
    t = 0.0
    for name, words in topics:
        chapter_list.append(Chapter(title=name, start_sec=round(t, 3)))
        end = t + rng.uniform(*seconds)
        while t < end:
            length = rng.uniform(3, 5)
            spoken = [rng.choice(_FILLER) for _ in range(rng.randint(7, 13))]
            for _ in range(rng.randint(1, 2)):
                spoken[rng.randrange(len(spoken))] = rng.choice(words)
            text = " ".join(spoken)
            if rng.random() < 0.4:
                text = text.capitalize() + "."
            segments.append(Segment(start_sec=round(t, 3), end_sec=round(t + length, 3), text=text))
            t += length
    return VideoContext(
        id=f"youtube:{native}",
        metadata=VideoMetadata(
            id=native,
            platform="youtube",
            title=title,
            url=f"https://www.youtube.com/watch?v={native}",
            channel="Test Channel",
            duration_sec=round(t, 3),
            chapters=chapter_list if chapters else [],
        ),
        transcript=Transcript(
            language="en", origin="captions-manual", timing="caption", producer="test", segments=segments
        ),
        fetched_at=SAVED_AT,
    )


def bike_review(*, chapters: bool = True) -> VideoContext:
    return topic_talk(BIKE, "Folding e-bike, six months on", BIKE_TOPICS, chapters=chapters, seed=12)


def sourdough(*, chapters: bool = True) -> VideoContext:
    return topic_talk(BREAD, "Sourdough at home", BREAD_TOPICS, chapters=chapters, seed=13)
