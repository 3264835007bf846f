"""The word-pair index (``storage/keyword_pairs.py``) answers exactly what FTS5 answers: for
phrases joining a common word, with exclusions, by stems, after saves and deletes; a library
written without it (another process's older code) is noticed, searched by FTS5 alone, and
indexed again. Integrity is FTS5's own check of the contentless table."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from pathlib import Path

import msgspec
import pytest

from vid2context.models import SearchHit, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.search.query import parse_query
from vid2context.storage import common, keyword, keyword_pairs
from vid2context.storage.sqlite import SQLiteStorage

WORDS = ["kickstand", "kickstands", "bend", "bends", "bending", "café", "naïve", "e-mail", "zorp"]
COMMON = ["the", "of", "and", "to", "it", "is", "a", "was"]
QUERIES = [
    '"the kickstand"',
    '"kickstands the"',
    '"bends to"',
    '"the bending of"',
    '"of the"',
    '"café the"',
    '"the kickstand" -zorp',
    '"it is" bends',
    '"the zorp" "a kickstand"',
    '"was naïve"',
    '"e-mail to"',
    '"the kickstand bends"',
]


def _context(v: int, rng: random.Random) -> VideoContext:
    weights = [1.0] * len(WORDS) + [4.0] * len(COMMON)
    segments = [
        Segment(
            start_sec=i,
            end_sec=i + 1,
            text=", ".join(
                " ".join(rng.choices(WORDS + COMMON, weights, k=rng.randint(1, 8))) for _ in range(2)
            ),
        )
        for i in range(60)
    ]
    return VideoContext(
        id=f"youtube:kp{v:02d}",
        metadata=VideoMetadata(id=f"youtube:kp{v:02d}", platform="youtube", title=f"P{v}"),
        transcript=Transcript(
            language="en", origin="asr", timing="segment-approx", producer="test", segments=segments
        ),
    )


def _fts5_only(store: SQLiteStorage, query: str, limit: int) -> list[SearchHit]:
    """The same plan answered by FTS5 alone (as before the pair index, and as D1 answers it)."""

    def work(conn: sqlite3.Connection) -> list[SearchHit]:
        def answer(requests: list[keyword.Request]) -> list[object]:
            rows = [conn.execute(*st).fetchall() for st in keyword.sql_statements(requests, None)]
            return keyword.sql_answers(requests, rows)

        return keyword.drive(keyword.plan(parse_query(query), limit=limit, within=False), answer)

    return store.database._read(work)  # noqa: SLF001


def _ready(store: SQLiteStorage) -> bool:
    return store.database._read(keyword_pairs.is_ready)  # noqa: SLF001


def _integrity(store: SQLiteStorage) -> None:
    store.database.setup(
        lambda conn: conn.execute("INSERT INTO segment_pairs (segment_pairs) VALUES ('integrity-check')")
    )


@pytest.fixture
def store(tmp_path: Path):
    async def make() -> SQLiteStorage:
        store = SQLiteStorage(tmp_path / "pairs.db")
        rng = random.Random(7)
        for v in range(12):
            await store.put_context(_context(v, rng))
        return store

    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(make())
    yield loop, store
    loop.run_until_complete(store.close())
    loop.close()


def _same(loop: asyncio.AbstractEventLoop, store: SQLiteStorage) -> None:
    for query in QUERIES:
        for limit in (3, 50):
            assert loop.run_until_complete(store.search(query, limit=limit)) == _fts5_only(
                store, query, limit
            )


def test_a_new_library_is_indexed_as_it_is_saved_and_answers_as_fts5(store) -> None:
    loop, db = store
    assert _ready(db)
    request = keyword.Window(False, (("the", "kickstand"),), ())
    assert db.database._read(lambda conn: keyword_pairs.answer(conn, request)) is not None  # noqa: SLF001
    _same(loop, db)
    _integrity(db)


def test_saving_again_and_deleting_keep_the_index_in_step(store) -> None:
    loop, db = store
    rng = random.Random(8)
    loop.run_until_complete(db.put_context(_context(3, rng)))  # saved again: new segments
    assert loop.run_until_complete(db.delete_context("youtube:kp05"))
    assert _ready(db)
    _same(loop, db)
    _integrity(db)


def test_segments_written_without_the_index_are_noticed_and_indexed_again(store) -> None:
    loop, db = store
    context = _context(40, random.Random(9))

    def old_code_save(conn: sqlite3.Connection) -> None:  # a process that does not know the index
        conn.execute(
            "INSERT INTO videos (id, seq, title, platform, context) VALUES (?, 999, 'old', 'youtube', ?)",
            (context.id, msgspec.json.encode(context).decode()),
        )
        conn.executemany(common.SQL_INSERT_SEGMENT, common.segment_params(context))
        conn.execute(common.SQL_INSERT_SEGMENTS_FTS, (context.id,))
        conn.execute(common.SQL_INSERT_SEGMENTS_STEM, (context.id,))

    db.database.setup(old_code_save)
    assert not _ready(db)
    _same(loop, db)  # FTS5 alone meanwhile
    loop.run_until_complete(db.build_pairs())
    assert _ready(db)
    assert any(
        h.video_id == context.id for h in loop.run_until_complete(db.search('"the kickstand"', limit=100))
    )
    _same(loop, db)
    _integrity(db)


def test_an_existing_library_is_filled_in_chunks_and_searched_by_fts5_until_then(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    db = SQLiteStorage(tmp_path / "old.db")
    rng = random.Random(10)
    for v in range(6):
        loop.run_until_complete(db.put_context(_context(v, rng)))
    db.database.setup(
        lambda conn: (
            conn.execute("DROP TABLE segment_pairs"),
            conn.execute("DROP TABLE segment_pairs_state"),
            keyword_pairs.ensure(conn),
        )
    )  # as a library saved before the index: the state waits for the backfill
    assert not _ready(db)
    _same(loop, db)
    loop.run_until_complete(db.build_pairs(chunk=50))  # several chunks
    assert _ready(db)
    _same(loop, db)
    _integrity(db)
    loop.run_until_complete(db.close())
    loop.close()


def test_windows_of_several_phrases_read_forwards_answer_as_fts5_backwards(store) -> None:
    """``keyword_ascending``: a window of ANDed phrases read forwards when it is small, backwards
    when it holds more than ``keyword.WINDOW`` matches; the same hits either way."""
    from vid2context.storage import keyword_ascending

    loop, db = store
    many = VideoContext(
        id="youtube:kpmany",
        metadata=VideoMetadata(id="youtube:kpmany", platform="youtube", title="Many"),
        transcript=Transcript(
            language="en",
            origin="asr",
            timing="segment-approx",
            producer="test",
            segments=[
                Segment(start_sec=i, end_sec=i + 1, text=f"alpha beta {'gamma' if i % 3 else 'gammas'} {i}")
                for i in range(keyword.WINDOW + 200)
            ],
        ),
    )
    loop.run_until_complete(db.put_context(many))
    small = keyword.Window(False, (("kickstand",), ("bends",)), ())
    big = keyword.Window(False, (("alpha",), ("beta",)), ())
    rows = db.database._read(lambda conn: keyword_ascending.answer(conn, small))  # noqa: SLF001
    assert rows and [r[0] for r in rows] == sorted((r[0] for r in rows), reverse=True)
    assert db.database._read(lambda conn: keyword_ascending.answer(conn, big)) is None  # noqa: SLF001
    for query in ("kickstand bends", "alpha beta", "alpha gammas", "alpha -gammas", '"the kickstand" bends'):
        for limit in (3, 50):
            assert loop.run_until_complete(db.search(query, limit=limit)) == _fts5_only(db, query, limit)
