"""Keyword search is one algorithm on every backend: the memory store and SQLite, given the same
library and any query, answer the same hits in the same order with the same scores, or the same
``bad-request``; nothing else ever escapes (no ``sqlite3.OperationalError``, no FTS5 message).

The library is big enough that common words pass ``WINDOW`` matches (so the bounded ranking and
the estimated document frequencies are exercised) and holds several forms of each stem. Queries
come from hypothesis: words of the library, their other forms, quotes, exclusions and every kind
of FTS5 syntax and odd character, derandomized so a failure repeats. D1 runs the same SQL as
SQLite; the conformance suite (``test_storage_cloudflare.py``) covers it, hostile queries included.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vid2context.errors import ErrorCode, VidError
from vid2context.models import SearchHit, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.search.query import parse_query
from vid2context.storage import keyword
from vid2context.storage.keyword import WINDOW
from vid2context.storage.memory import MemoryStorage
from vid2context.storage.sqlite import SQLiteStorage

FORMS = [
    ["bake", "baked", "baking", "bakes", "baker"],
    ["cat", "cats"],
    ["rate", "rates", "rating", "rated"],
    ["limit", "limits", "limited", "limiting"],
    ["kickstand", "kickstands"],
    ["connect", "connected", "connection", "connections"],
    ["happy", "happiness", "happily"],
]
COMMON = ["the", "a", "of", "and", "to", "it", "is"]
WORDS = (
    [w for forms in FORMS for w in forms] + COMMON + ["café", "naïve", "e-mail", "3.14", "NEAR", "AND", "NOT"]
)
VIDEOS, SEGMENTS = 30, 100

FUZZ = settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _library() -> list[VideoContext]:
    rng = random.Random(13)
    weights = [1.0] * (len(WORDS) - len(COMMON) - 7) + [30.0] * len(COMMON) + [1.0] * 7
    contexts = []
    for v in range(VIDEOS):
        segments = [
            Segment(
                start_sec=i, end_sec=i + 1, text=" ".join(rng.choices(WORDS, weights, k=rng.randint(1, 14)))
            )
            for i in range(SEGMENTS)
        ]
        contexts.append(
            VideoContext(
                id=f"youtube:kw{v:02d}",
                metadata=VideoMetadata(id=f"youtube:kw{v:02d}", platform="youtube", title=f"K{v}"),
                transcript=Transcript(
                    language="en", origin="asr", timing="segment-approx", producer="test", segments=segments
                ),
            )
        )
    return contexts


class _Stores:
    def __init__(self, path: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.memory = MemoryStorage()
        self.sqlite = SQLiteStorage(path)
        for context in _library():
            self.run(self.memory.put_context(context))
            self.run(self.sqlite.put_context(context))
        # A replaced and a deleted video leave gaps in the rowids, as a real library has.
        for store in (self.memory, self.sqlite):
            self.run(store.put_context(_library()[3]))
            self.run(store.delete_context("youtube:kw07"))

    def run(self, awaitable):  # type: ignore[no-untyped-def]
        return self.loop.run_until_complete(awaitable)

    def close(self) -> None:
        self.run(self.sqlite.close())
        self.loop.close()


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Stores]:
    stores = _Stores(tmp_path_factory.mktemp("keyword") / "vid2context.db")
    yield stores
    stores.close()


def _answer(stores: _Stores, store: object, query: str, **options: object) -> list[SearchHit] | VidError:
    try:
        return stores.run(store.search(query, **options))  # type: ignore[attr-defined]
    except VidError as error:
        assert error.code is ErrorCode.BAD_REQUEST and error.hint, error
        assert "fts5" not in error.message.lower()
        return error


def _same(stores: _Stores, query: str, **options: object) -> list[SearchHit] | VidError:
    ours = _answer(stores, stores.memory, query, **options)
    theirs = _answer(stores, stores.sqlite, query, **options)
    if isinstance(ours, VidError) or isinstance(theirs, VidError):
        assert isinstance(ours, VidError) and isinstance(theirs, VidError), (query, ours, theirs)
        assert (ours.message, ours.hint) == (theirs.message, theirs.hint)
        return ours
    key = [(h.video_id, h.start_sec, h.text, h.stemmed, h.highlights, h.title) for h in ours]
    assert key == [(h.video_id, h.start_sec, h.text, h.stemmed, h.highlights, h.title) for h in theirs], query
    assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], rel=1e-9), query
    return ours


def test_the_library_passes_the_window(stores: _Stores) -> None:
    conn = sqlite3.connect(stores.sqlite.database.path)
    try:
        (the,) = conn.execute("SELECT count(*) FROM segments_fts WHERE segments_fts MATCH 'the'").fetchone()
    finally:
        conn.close()
    assert the > WINDOW  # so the common-word path runs below


@pytest.mark.parametrize(
    "query",
    [
        "the", "the of", '"of the"', "bake", "baking", "bakes -the", "cats", '"happy cat"', "rated limits",
        "connection -connected", "kickstands the", "a -a", "NEAR AND NOT", "café naive", "e-mail",
        "the -bake -cat -rate", "happiness", "limit limit LIMIT", '"the the"',
    ],
)  # fmt: skip
@pytest.mark.parametrize("limit", [1, 10, 200])
def test_memory_and_sqlite_answer_alike(stores: _Stores, query: str, limit: int) -> None:
    hits = _same(stores, query, limit=limit)
    assert not isinstance(hits, VidError)
    assert len(hits) <= limit
    # Exclusions go by stems: "connected" shares "connection"'s stem, so nothing is left.
    assert bool(hits) is (query not in ("connection -connected", "a -a"))
    exact = [h for h in hits if not h.stemmed]
    assert hits[: len(exact)] == exact  # exact hits come first


def test_within_videos_memory_and_sqlite_answer_alike(stores: _Stores) -> None:
    for video_ids in (["youtube:kw01"], ["youtube:kw02", "youtube:kw29", "youtube:kw07", "nope"]):
        for query in ("the", "baking", '"of the" -cat', "kickstands"):
            hits = _same(stores, query, video_ids=video_ids, limit=50)
            assert not isinstance(hits, VidError)
            assert {h.video_id for h in hits} <= set(video_ids)


_PIECES = st.sampled_from(
    WORDS
    + [w.upper() for w in WORDS[:6]]
    + ["-", '"', "*", "^", ":", "(", ")", "NEAR(", "text:", "video_id:", "OR"]
)
_QUERIES = st.lists(
    st.one_of(
        _PIECES, st.builds(lambda w: "-" + w, _PIECES), st.builds(lambda a, b: f'"{a} {b}"', _PIECES, _PIECES)
    ),
    max_size=6,
).map(" ".join)


@FUZZ
@given(_QUERIES, st.integers(min_value=1, max_value=30))
@example('"', 10)
@example("-the", 10)
@example('"the the the', 5)
def test_any_query_of_library_words_answers_alike(stores: _Stores, query: str, limit: int) -> None:
    _same(stores, query, limit=limit)


@FUZZ
@given(st.text(max_size=40))
@example("\x00")
@example("\ud800\udfff")
@example("NEAR(\x00, 3)")
def test_any_text_at_all_answers_alike_and_never_crashes(stores: _Stores, query: str) -> None:
    _same(stores, query)


def test_the_stemmed_window_is_asked_for_only_when_stems_can_add_rows() -> None:
    """The second round (the stemmed window) runs when the exact hits fall short and some phrase
    has rows only its stems match; equal counts below the window mean the stems add nothing."""
    store = MemoryStorage()
    context = _library()[0]
    texts = ["a kickstand", "two kickstands", "the cat", "one cat only"]
    segments = [Segment(start_sec=i, end_sec=i + 1, text=t) for i, t in enumerate(texts)]
    asyncio.run(
        store.put_context(
            msgspec.structs.replace(
                context, transcript=msgspec.structs.replace(context.transcript, segments=segments)
            )
        )
    )  # type: ignore[arg-type]

    def rounds(query: str, limit: int = 10) -> int:
        asked = []

        def answer(requests: list[keyword.Request]) -> list[object]:
            asked.append(requests)
            return [store._answer(request, None) for request in requests]

        keyword.drive(keyword.plan(parse_query(query), limit=limit, within=False), answer)
        return len(asked)

    assert rounds("kickstand") == 2  # one exact hit, and "kickstands" only by its stem
    assert rounds("kickstand", limit=1) == 1  # the exact hit fills the answer
    assert rounds("cat") == 1  # no other form of "cat" is saved
    assert rounds("cat -kickstands") == 1
