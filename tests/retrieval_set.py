"""A small labelled retrieval set: five talks and 36 queries, each query with the one passage that
answers it, for recall@5 of keyword, vector and hybrid search (``tests/test_search_quality.py``).

Each talk has five chapters; each chapter states four facts in plain sentences, between which a
speaker rambles (seeded filler speech, as captions of real talks have it), so a chapter is one
window of about 250 words and a fact one segment of it. Beside them are distractors (``distractors``): generated talks on the same subjects (an e-bike
review with a kickstand chapter, a sourdough talk, hours of talk about batteries) that answer
nothing, some 250 windows that a search must not prefer. A hit answers a query when it points
into the fact's video and its range covers the fact's segment: the segment itself for a keyword
hit, the window for a vector hit (the range an agent reads next).

The queries come in three kinds, a dozen each:

- ``words``: the fact's own distinctive words ("kickstand degrees"), which keyword search finds;
- ``meaning``: the same question in other words ("how far does the stand tilt"), which only a
  model finds;
- ``mixed``: a distinctive word and a paraphrase ("banneton overnight rest").
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from vid2context.models import Chapter, Segment, Transcript, VideoContext, VideoMetadata

__all__ = ["QUERIES", "TALKS", "Query", "Talk", "distractors", "talks"]

_FILLER = (
    "so yeah anyway what I wanted to say is that it really depends and honestly you get used to it "
    "after a while like most things but let me just say it was a bit of a journey to get here and "
    "we will come back to that later on because there is a lot to unpack okay moving on"
).split()


@dataclass(frozen=True)
class Talk:
    native: str
    title: str
    channel: str
    chapters: tuple[tuple[str, tuple[str, ...]], ...]


TALKS: tuple[Talk, ...] = (
    Talk(
        "EbikeTalk01",
        "Folding e-bike, a year on",
        "Two Wheels",
        (
            (
                "Frame",
                (
                    "the frame is welded aluminium and weighs eleven kilos without the battery",
                    "the hinge latch has a safety catch you press with your thumb",
                    "folded it fits in the boot of a small hatchback",
                    "the paint chipped near the seat post after a few months",
                ),
            ),
            (
                "Kickstand",
                (
                    "the kickstand bends to 165 degrees so the bike leans safely on a slope",
                    "its foot is rubber so it does not scratch the floor at home",
                    "on gravel it sinks a little unless you use the wide plate",
                    "you can swap it for a double leg version from the maker",
                ),
            ),
            (
                "Motor",
                (
                    "the rear hub motor is rated at two hundred and fifty watts",
                    "torque sensing makes it feel like your own legs only stronger",
                    "on steep hills it whines a bit but never gave up",
                    "the display shows five levels of assistance",
                ),
            ),
            (
                "Battery",
                (
                    "range was about sixty kilometres on the middle setting",
                    "a full charge takes four and a half hours from empty",
                    "in winter the range dropped by roughly a third",
                    "the battery locks into the frame with a small key",
                ),
            ),
            (
                "Verdict",
                (
                    "at nine hundred euros it undercuts most rivals",
                    "the warranty covers the motor for two years",
                    "I would buy it again for a commute under twenty kilometres",
                    "skip it if you need to carry heavy shopping",
                ),
            ),
        ),
    ),
    Talk(
        "SourdoughT1",
        "Sourdough for beginners",
        "Crumb Club",
        (
            (
                "Starter",
                (
                    "feed the starter equal weights of flour and water every morning",
                    "a healthy starter doubles within six hours at room temperature",
                    "if it smells like nail polish it is hungry",
                    "keep a spare spoonful in the fridge as a backup",
                ),
            ),
            (
                "Mixing",
                (
                    "mix the flour and water first and leave it for an hour before adding salt",
                    "that resting step is called autolyse",
                    "use seventy five percent water to flour for an easy dough",
                    "add the salt with a splash of water and squeeze it through",
                ),
            ),
            (
                "Folding",
                (
                    "do four sets of stretch and folds half an hour apart",
                    "wet hands stop the dough from sticking to your fingers",
                    "by the last fold the dough should feel smooth and airy",
                    "a clear container lets you watch it rise",
                ),
            ),
            (
                "Shaping",
                (
                    "shape a tight ball and drop it seam side up into a banneton",
                    "dust the basket with rice flour so nothing sticks",
                    "proof it overnight in the fridge for about twelve hours",
                    "cold dough is much easier to score with a razor",
                ),
            ),
            (
                "Baking",
                (
                    "bake in a preheated cast iron pot at two hundred and fifty degrees",
                    "keep the lid on for the first twenty minutes to trap steam",
                    "take the lid off and bake another twenty five minutes until dark",
                    "wait an hour before slicing or the crumb turns gummy",
                ),
            ),
        ),
    ),
    Talk(
        "DbIndexTalk",
        "Why your queries are slow",
        "Data Talks",
        (
            (
                "Scans",
                (
                    "without an index the engine reads every row of the table",
                    "a full table scan of ten million rows took four seconds",
                    "the query planner explains its choice if you ask it",
                    "small tables are often faster to scan anyway",
                ),
            ),
            (
                "B-trees",
                (
                    "an index is a b-tree sorted by the indexed columns",
                    "a lookup walks from the root to a leaf in a few page reads",
                    "the same query dropped to two milliseconds with the index",
                    "every insert must also update each index",
                ),
            ),
            (
                "Composite",
                (
                    "a composite index on city then age serves filters on city alone",
                    "it cannot help a filter on age alone",
                    "put the column you test for equality first",
                    "a covering index holds every column the query needs",
                ),
            ),
            (
                "Costs",
                (
                    "each extra index made writes about ten percent slower",
                    "indexes also take disk space, here almost half the table size",
                    "drop the indexes nobody uses, the statistics show which",
                    "rebuild a bloated index during a quiet hour",
                ),
            ),
            (
                "Advice",
                (
                    "measure with real data before adding anything",
                    "log the slow queries and fix the worst one first",
                    "caching helps reads but hides the real problem",
                    "denormalise only when the numbers demand it",
                ),
            ),
        ),
    ),
    Talk(
        "JapanRail01",
        "Two weeks on Japanese trains",
        "Slow Travel",
        (
            (
                "Pass",
                (
                    "the seven day rail pass now costs about fifty thousand yen",
                    "it covers most shinkansen lines but not the fastest nozomi trains",
                    "you activate it at a ticket office with your passport",
                    "for two cities a pair of single tickets was cheaper",
                ),
            ),
            (
                "Shinkansen",
                (
                    "the bullet train from tokyo to kyoto takes just over two hours",
                    "reserve a seat on the right side to see mount fuji",
                    "oversized luggage needs a reservation in advance",
                    "the trains left to the second every single time",
                ),
            ),
            (
                "Local lines",
                (
                    "local trains in the countryside come once an hour",
                    "you pay with an ic card by tapping in and out",
                    "some rural stations have no staff at all",
                    "the view along the coast line was the highlight",
                ),
            ),
            (
                "Etiquette",
                (
                    "people queue in lines painted on the platform",
                    "talking on the phone in the carriage is frowned upon",
                    "eating is fine on long distance trains but not on commuter trains",
                    "take your rubbish with you because bins are rare",
                ),
            ),
            (
                "Tips",
                (
                    "buy an ekiben lunch box at the station before boarding",
                    "night buses are a cheap alternative for long trips",
                    "coin lockers at big stations fit a carry on bag",
                    "avoid the morning rush between eight and nine",
                ),
            ),
        ),
    ),
    Talk(
        "SolarHome01",
        "Our home solar install",
        "Off Grid Family",
        (
            (
                "Panels",
                (
                    "we put sixteen panels on the south facing roof",
                    "together they peak at six and a half kilowatts",
                    "the installers finished the roof work in two days",
                    "a little shade from the chimney costs us in the afternoon",
                ),
            ),
            (
                "Inverter",
                (
                    "the hybrid inverter turns the panels' direct current into household power",
                    "it hums quietly in the garage next to the fuse box",
                    "an app shows the production minute by minute",
                    "the inverter needed a firmware update in the first week",
                ),
            ),
            (
                "Battery",
                (
                    "the battery bank stores thirteen kilowatt hours",
                    "that runs the house from sunset until breakfast",
                    "during a power cut it switched over in a fraction of a second",
                    "the battery alone was a third of the total price",
                ),
            ),
            (
                "Money",
                (
                    "the whole system cost eighteen thousand dollars after the rebate",
                    "our power bill fell by about eighty percent",
                    "we expect it to pay for itself in nine years",
                    "selling surplus power to the grid pays very little now",
                ),
            ),
            (
                "Lessons",
                (
                    "get three quotes because prices varied by a third",
                    "check that the roof will last as long as the panels",
                    "winter production is a quarter of summer here",
                    "clean the panels once a year with plain water",
                ),
            ),
        ),
    ),
)


@dataclass(frozen=True)
class Query:
    text: str
    kind: str
    """``words``, ``meaning`` or ``mixed``."""
    video: str
    """The native id of the talk holding the answer."""
    fact: str
    """The fact's sentence, exactly as the talk says it."""


def _q(text: str, kind: str, video: str, fact: str) -> Query:
    return Query(text, kind, video, fact)


E, S, D, J, H = "EbikeTalk01", "SourdoughT1", "DbIndexTalk", "JapanRail01", "SolarHome01"
QUERIES: tuple[Query, ...] = (
    # the fact's own words
    _q(
        "kickstand 165 degrees",
        "words",
        E,
        "the kickstand bends to 165 degrees so the bike leans safely on a slope",
    ),
    _q("hub motor watts", "words", E, "the rear hub motor is rated at two hundred and fifty watts"),
    _q("battery locks key", "words", E, "the battery locks into the frame with a small key"),
    _q("autolyse", "words", S, "that resting step is called autolyse"),
    _q("banneton", "words", S, "shape a tight ball and drop it seam side up into a banneton"),
    _q("cast iron pot", "words", S, "bake in a preheated cast iron pot at two hundred and fifty degrees"),
    _q("full table scan", "words", D, "a full table scan of ten million rows took four seconds"),
    _q("covering index", "words", D, "a covering index holds every column the query needs"),
    _q("composite index city", "words", D, "a composite index on city then age serves filters on city alone"),
    _q("ekiben", "words", J, "buy an ekiben lunch box at the station before boarding"),
    _q("nozomi", "words", J, "it covers most shinkansen lines but not the fastest nozomi trains"),
    _q(
        "hybrid inverter",
        "words",
        H,
        "the hybrid inverter turns the panels' direct current into household power",
    ),
    # the same questions in other words
    _q(
        "how far does the stand tilt",
        "meaning",
        E,
        "the kickstand bends to 165 degrees so the bike leans safely on a slope",
    ),
    _q(
        "how long until the bike is fully recharged",
        "meaning",
        E,
        "a full charge takes four and a half hours from empty",
    ),
    _q(
        "does cold weather reduce how far I can ride",
        "meaning",
        E,
        "in winter the range dropped by roughly a third",
    ),
    _q("my culture smells like acetone", "meaning", S, "if it smells like nail polish it is hungry"),
    _q("when can I cut the loaf", "meaning", S, "wait an hour before slicing or the crumb turns gummy"),
    _q(
        "leave the dough to rise in the refrigerator",
        "meaning",
        S,
        "proof it overnight in the fridge for about twelve hours",
    ),
    _q(
        "why are my lookups so slow without help",
        "meaning",
        D,
        "without an index the engine reads every row of the table",
    ),
    _q("do more indexes hurt inserts", "meaning", D, "each extra index made writes about ten percent slower"),
    _q(
        "how long is the bullet train ride between the capitals",
        "meaning",
        J,
        "the bullet train from tokyo to kyoto takes just over two hours",
    ),
    _q(
        "can you make phone calls on board",
        "meaning",
        J,
        "talking on the phone in the carriage is frowned upon",
    ),
    _q(
        "how much energy can the house store overnight",
        "meaning",
        H,
        "the battery bank stores thirteen kilowatt hours",
    ),
    _q(
        "what happened when the electricity went out",
        "meaning",
        H,
        "during a power cut it switched over in a fraction of a second",
    ),
    # a distinctive word with a paraphrase
    _q("banneton overnight rest", "mixed", S, "proof it overnight in the fridge for about twelve hours"),
    _q("starter doubling time", "mixed", S, "a healthy starter doubles within six hours at room temperature"),
    _q("kickstand on loose ground", "mixed", E, "on gravel it sinks a little unless you use the wide plate"),
    _q("warranty on the engine", "mixed", E, "the warranty covers the motor for two years"),
    _q("b-tree lookup speed", "mixed", D, "the same query dropped to two milliseconds with the index"),
    _q("unused indexes wasting space", "mixed", D, "drop the indexes nobody uses, the statistics show which"),
    _q("rail pass price", "mixed", J, "the seven day rail pass now costs about fifty thousand yen"),
    _q("shinkansen view of the mountain", "mixed", J, "reserve a seat on the right side to see mount fuji"),
    _q("ic card paying on rural trains", "mixed", J, "you pay with an ic card by tapping in and out"),
    _q("solar payback years", "mixed", H, "we expect it to pay for itself in nine years"),
    _q("inverter noise in the garage", "mixed", H, "it hums quietly in the garage next to the fuse box"),
    _q("panels cleaning routine", "mixed", H, "clean the panels once a year with plain water"),
)


def _talk(talk: Talk, seed: int) -> VideoContext:
    rng = random.Random(seed)
    segments: list[Segment] = []
    chapters: list[Chapter] = []
    t = 0.0

    def say(text: str) -> None:
        nonlocal t
        length = round(rng.uniform(3, 5), 3)
        segments.append(Segment(start_sec=round(t, 3), end_sec=round(t + length, 3), text=text))
        t += length

    for title, facts in talk.chapters:
        chapters.append(Chapter(title=title, start_sec=round(t, 3)))
        for fact in facts:
            for _ in range(rng.randint(3, 4)):
                say(" ".join(rng.choice(_FILLER) for _ in range(rng.randint(7, 12))))
            say(fact)
    return VideoContext(
        id=f"youtube:{talk.native}",
        metadata=VideoMetadata(
            id=talk.native,
            platform="youtube",
            title=talk.title,
            url=f"https://www.youtube.com/watch?v={talk.native}",
            channel=talk.channel,
            duration_sec=round(t, 3),
            published_at=f"2026-0{1 + seed % 9}-1{seed % 10}",
            chapters=chapters,
        ),
        transcript=Transcript(
            language="en", origin="captions-manual", timing="caption", producer="test", segments=segments
        ),
        fetched_at="2026-11-01T00:00:00Z",
    )


def talks() -> list[VideoContext]:
    """The five talks as saved videos."""
    return [_talk(talk, seed) for seed, talk in enumerate(TALKS, 1)]


def distractors() -> list[VideoContext]:
    """Videos that answer none of the queries but share their subjects' words: the generated
    e-bike review and sourdough talk (``talks.py``: each topic's own words in filler speech, its
    kickstand chapter included) and three hour-long talks about batteries and charging."""
    from .talks import bike_review, sourdough, three_hour_talk

    return [
        bike_review(),
        sourdough(),
        *(three_hour_talk(f"Distract{n:03d}", minutes=60, seed=100 + n) for n in range(3)),
    ]
