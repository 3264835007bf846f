"""One contract suite for every ``VectorIndex``: memory (the reference), sqlite-vec and Vectorize.

Each test takes ``subject``, parametrised over ``BACKENDS``: the index, and ``settle()``, which
makes every write so far visible to ``query``. Only Vectorize needs it: its stand-in runs with
``deferred=True``, so its writes wait until ``settle()`` as the service's take seconds, and a
backend that read its own writes back would fail here. What must hold at once (``window_ids``,
and nothing refused being written) is asserted before ``settle()``.

Vectors are small and hand-made, so every order asserted is unambiguous and every score is
compared with a tolerance, never exactly (the backends compute in float32 or float64).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from vid2context.errors import ErrorCode, VidError
from vid2context.models import Chapter, EmbeddingSpace, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.search.vectors import MAX_TOP_K, SpaceCount, VectorIndex, VectorRecord
from vid2context.search.vectors_memory import MemoryVectorIndex
from vid2context.search.windows import MAX_WINDOW_ID_BYTES, WindowRef, make_windows
from vid2context.storage.sqlite import SQLiteStorage
from vid2context.storage.sqlite_vec import open_vector_index
from vid2context.storage.vectorize import VIDEO_PROPERTY, VectorizeIndex

from .miniflare_harness import MiniflareHarness, apply_migrations
from .vectorize_standin import VectorizeStandin

pytestmark = pytest.mark.anyio

DIM = 4
SPACE = EmbeddingSpace(model="test/model-a", dim=DIM, pooling="cls")
OTHER = EmbeddingSpace(model="test/model-b", dim=DIM, pooling="cls")
BACKENDS = ("memory", "sqlite-vec", "vectorize")


class Subject(NamedTuple):
    index: VectorIndex
    settle: Callable[[], None]


@pytest.fixture(params=BACKENDS)
async def subject(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Subject]:
    if request.param == "memory":
        index: VectorIndex = MemoryVectorIndex()
        yield Subject(index, lambda: None)
    elif request.param == "sqlite-vec":
        library = SQLiteStorage(tmp_path / "vid2context.db")  # the library's file, as locally
        found = open_vector_index(tmp_path / "vid2context.db")
        assert found is not None, "sqlite-vec could not be loaded (the local extra installs it and pysqlite3)"
        try:
            yield Subject(found, lambda: None)
        finally:
            await found.close()
            await library.close()
        return
    else:
        harness: MiniflareHarness = request.getfixturevalue("miniflare")
        harness.reset()
        env = harness.new_env()
        await apply_migrations(env.DB)
        standin = VectorizeStandin(dimensions=DIM, deferred=True)
        standin.create_metadata_index(VIDEO_PROPERTY, "string")
        index = VectorizeIndex(standin, env.DB)
        try:
            yield Subject(index, standin.process)
        finally:
            await index.close()
            await env.aclose()
        return
    await index.close()


def ref(video: str, first: int, last: int | None = None, **extra: object) -> WindowRef:
    last = first if last is None else last
    return WindowRef(
        id=f"{video}@{first}-{last}",
        video_id=video,
        start_sec=float(first * 10),
        end_sec=float(last * 10 + 10),
        first_segment=first,
        last_segment=last,
        **extra,  # type: ignore[arg-type]
    )


def rec(window: WindowRef, *vector: float) -> VectorRecord:
    return VectorRecord(window, list(vector))


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.id for h in hits]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


A, B, C = "youtube:aaaaaaaaaaa", "youtube:bbbbbbbbbbb", "youtube:ccccccccccc"


async def test_an_empty_index_finds_nothing(subject: Subject) -> None:
    index = subject.index
    assert await index.query(SPACE, [1, 0, 0, 0]) == []
    assert await index.query(SPACE, [1, 0, 0, 0], video_ids=[A]) == []
    assert await index.window_ids(SPACE, A) == []
    assert await index.delete_video(A) == 0
    await index.upsert(SPACE, [])  # nothing to write is not an error
    subject.settle()
    assert await index.query(SPACE, [1, 0, 0, 0]) == []


async def test_query_ranks_by_cosine_similarity(subject: Subject) -> None:
    vectors = {
        0: [1.0, 0.0, 0.0, 0.0],
        1: [3.0, 1.0, 0.0, 0.0],  # not unit length: cosine ignores it
        2: [1.0, 1.0, 1.0, 0.0],
        3: [0.0, 0.0, 1.0, 0.0],
        4: [-1.0, 0.0, 0.0, 0.0],
    }
    await subject.index.upsert(SPACE, [rec(ref(A, i), *v) for i, v in vectors.items()])
    subject.settle()
    query = [2.0, 0.0, 0.0, 0.0]
    hits = await subject.index.query(SPACE, query, top_k=5)
    assert ids(hits) == [f"{A}@{i}-{i}" for i in (0, 1, 2, 3, 4)]
    for found in hits:
        expected = cosine(query, vectors[found.first_segment])
        assert found.score == pytest.approx(expected, abs=1e-5)
    assert ids(await subject.index.query(SPACE, [0.0, 0.1, 1.0, 0.0], top_k=2)) == [f"{A}@3-3", f"{A}@2-2"]


async def test_a_hit_carries_where_its_window_is(subject: Subject) -> None:
    window = ref(A, 3, 7, part=None, chapter_index=2, chapter_title="Setting up — the «stand»")
    part = WindowRef(
        id=f"{A}@9.1", video_id=A, start_sec=90.5, end_sec=140.25, first_segment=9, last_segment=9, part=1
    )
    await subject.index.upsert(SPACE, [rec(window, 1, 0, 0, 0), rec(part, 0, 1, 0, 0)])
    subject.settle()
    first, second = await subject.index.query(SPACE, [1, 0.1, 0, 0], top_k=2)
    for found, expected in ((first, window), (second, part)):
        assert (found.id, found.video_id, found.first_segment, found.last_segment) == (
            expected.id, expected.video_id, expected.first_segment, expected.last_segment,
        )  # fmt: skip
        assert (found.part, found.chapter_index, found.chapter_title) == (
            expected.part, expected.chapter_index, expected.chapter_title,
        )  # fmt: skip
        assert found.start_sec == pytest.approx(expected.start_sec)
        assert found.end_sec == pytest.approx(expected.end_sec)


async def test_upsert_replaces_a_window_by_id(subject: Subject) -> None:
    index = subject.index
    await index.upsert(SPACE, [rec(ref(A, 0), 1, 0, 0, 0), rec(ref(A, 1), 0, 1, 0, 0)])
    subject.settle()
    await index.upsert(SPACE, [rec(ref(A, 0, chapter_index=4, chapter_title="Later"), 0, 0, 0, 1)])
    subject.settle()
    hits = await index.query(SPACE, [0, 0, 0, 1], top_k=10)
    assert ids(hits) == [f"{A}@0-0", f"{A}@1-1"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert (hits[0].chapter_index, hits[0].chapter_title) == (4, "Later")
    assert await index.window_ids(SPACE, A) == [f"{A}@0-0", f"{A}@1-1"]


async def test_upsert_is_idempotent(subject: Subject) -> None:
    records = [rec(ref(A, i), 1, i, 0, 0) for i in range(5)]
    await subject.index.upsert(SPACE, records)
    subject.settle()
    first = await subject.index.query(SPACE, [1, 2, 0, 0])
    await subject.index.upsert(SPACE, records)
    subject.settle()
    again = await subject.index.query(SPACE, [1, 2, 0, 0])
    assert ids(again) == ids(first) and len(again) == 5
    assert [h.score for h in again] == pytest.approx([h.score for h in first], abs=1e-6)
    assert await subject.index.window_ids(SPACE, A) == sorted(r.window.id for r in records)


async def test_the_last_of_duplicate_ids_in_one_call_wins(subject: Subject) -> None:
    await subject.index.upsert(SPACE, [rec(ref(A, 0), 1, 0, 0, 0), rec(ref(A, 0), 0, 1, 0, 0)])
    subject.settle()
    (only,) = await subject.index.query(SPACE, [0, 1, 0, 0])
    assert only.score == pytest.approx(1.0, abs=1e-5)


async def test_window_ids_see_a_write_at_once(subject: Subject) -> None:
    """Read-after-write where the protocol promises it, even while ``query`` lags (Vectorize)."""
    await subject.index.upsert(SPACE, [rec(ref(A, 2), 1, 0, 0, 0), rec(ref(A, 1), 0, 1, 0, 0)])
    assert await subject.index.window_ids(SPACE, A) == [f"{A}@1-1", f"{A}@2-2"]
    assert await subject.index.window_ids(SPACE, B) == []
    assert await subject.index.window_ids(OTHER, A) == []
    subject.settle()
    assert len(await subject.index.query(SPACE, [1, 1, 0, 0])) == 2


async def test_query_filters_by_video(subject: Subject) -> None:
    records = [rec(ref(video, i), 1, i * 0.1, n, 0) for n, video in enumerate((A, B, C)) for i in range(3)]
    await subject.index.upsert(SPACE, records)
    subject.settle()
    only_b = await subject.index.query(SPACE, [1, 0, 0, 0], top_k=10, video_ids=[B])
    assert {h.video_id for h in only_b} == {B} and len(only_b) == 3
    two = await subject.index.query(SPACE, [1, 0, 0, 0], top_k=10, video_ids=[C, A, C])
    assert {h.video_id for h in two} == {A, C} and len(two) == 6
    assert [h.video_id for h in two[:3]] == [A, A, A]  # A's windows are nearer [1, 0, 0, 0]
    assert await subject.index.query(SPACE, [1, 0, 0, 0], video_ids=[]) == []
    assert await subject.index.query(SPACE, [1, 0, 0, 0], video_ids=["youtube:nowhere"]) == []
    with pytest.raises(VidError) as refused:
        await subject.index.query(SPACE, [1, 0, 0, 0], video_ids=A)  # type: ignore[arg-type]
    assert refused.value.code is ErrorCode.BAD_REQUEST and refused.value.hint


async def test_filtering_works_for_video_ids_of_any_length(subject: Subject) -> None:
    """``upload:<sha256>`` is 71 bytes, more than an id or an indexed Vectorize string holds."""
    long_a, long_b = "upload:" + "a" * 64, "upload:" + "a" * 63 + "b"  # equal for their first 64 bytes
    windows = [w for video in (long_a, long_b) for w in make_windows(_talk(video, 3))]
    assert all(len(w.id.encode()) <= MAX_WINDOW_ID_BYTES for w in windows)
    assert len({w.id for w in windows}) == len(windows)
    await subject.index.upsert(
        SPACE, [rec(w, 1, 0.5 if w.video_id == long_a else 0.4, 0, 0) for w in windows]
    )
    subject.settle()
    hits = await subject.index.query(SPACE, [1, 0, 0, 0], top_k=50, video_ids=[long_b])
    assert hits and {h.video_id for h in hits} == {long_b}
    assert await subject.index.window_ids(SPACE, long_a) == sorted(
        w.id for w in windows if w.video_id == long_a
    )


async def test_top_k_is_clamped_and_checked(subject: Subject) -> None:
    records = [rec(ref(A, i), 1, i / 150, 0, 0) for i in range(150)]
    await subject.index.upsert(SPACE, records)
    subject.settle()
    assert len(await subject.index.query(SPACE, [1, 0, 0, 0], top_k=500)) == MAX_TOP_K
    three = await subject.index.query(SPACE, [1, 0, 0, 0], top_k=3)
    assert ids(three) == [f"{A}@{i}-{i}" for i in range(3)]
    for bad in (0, -1, True, 2.5):
        with pytest.raises(VidError) as refused:
            await subject.index.query(SPACE, [1, 0, 0, 0], top_k=bad)  # type: ignore[arg-type]
        assert refused.value.code is ErrorCode.BAD_REQUEST and refused.value.hint


async def test_window_ids_are_at_most_56_bytes_and_a_refused_call_writes_nothing(subject: Subject) -> None:
    longest = WindowRef(
        id="x" * MAX_WINDOW_ID_BYTES, video_id=A, start_sec=0, end_sec=1, first_segment=0, last_segment=0
    )
    await subject.index.upsert(SPACE, [rec(longest, 1, 0, 0, 0)])
    for bad_id in ("y" * (MAX_WINDOW_ID_BYTES + 1), "é" * 29, ""):
        bad = WindowRef(id=bad_id, video_id=A, start_sec=0, end_sec=1, first_segment=1, last_segment=1)
        with pytest.raises(VidError) as refused:
            await subject.index.upsert(SPACE, [rec(ref(A, 5), 0, 1, 0, 0), rec(bad, 0, 1, 0, 0)])
        assert refused.value.code is ErrorCode.BAD_REQUEST and "56" in refused.value.message
        assert refused.value.hint
    assert await subject.index.window_ids(SPACE, A) == [longest.id]
    subject.settle()
    assert ids(await subject.index.query(SPACE, [0, 1, 0, 0])) == [longest.id]


async def test_vectors_must_fit_their_space(subject: Subject) -> None:
    index = subject.index
    await index.upsert(SPACE, [rec(ref(A, 0), 1, 0, 0, 0)])
    cases = [
        [1, 0, 0],
        [1, 0, 0, 0, 0],
        [0, 0, 0, 0],
        [1, math.nan, 0, 0],
        [math.inf, 0, 0, 0],
        ["a", 0, 0, 0],
    ]
    for vector in cases:
        with pytest.raises(VidError) as on_write:
            await index.upsert(SPACE, [VectorRecord(ref(B, 0), vector)])  # type: ignore[arg-type]
        with pytest.raises(VidError) as on_query:
            await index.query(SPACE, vector)  # type: ignore[arg-type]
        for error in (on_write.value, on_query.value):
            assert error.code is ErrorCode.BAD_REQUEST and error.hint
    with pytest.raises(VidError) as mismatch:
        await index.query(SPACE, [1, 0, 0])
    assert "3 dimensions" in mismatch.value.message and "4" in mismatch.value.message
    assert await index.window_ids(SPACE, B) == []
    for space in (
        EmbeddingSpace(model="", dim=DIM, pooling="cls"),
        EmbeddingSpace(model="m", dim=0, pooling="cls"),
        EmbeddingSpace(model="m", dim=-4, pooling="cls"),
    ):
        with pytest.raises(VidError) as refused:
            await index.upsert(space, [rec(ref(B, 0), 1, 0, 0, 0)])
        assert refused.value.code is ErrorCode.BAD_REQUEST and refused.value.hint


async def test_two_models_never_mix(subject: Subject) -> None:
    """The same window ids in two spaces of the same dimension: each query sees its own space."""
    index = subject.index
    await index.upsert(SPACE, [rec(ref(A, 0), 1, 0, 0, 0), rec(ref(A, 1), 0, 1, 0, 0)])
    await index.upsert(
        OTHER, [rec(ref(A, 0), 0, 1, 0, 0), rec(ref(A, 1), 1, 0, 0, 0), rec(ref(A, 2), 0, 0, 1, 0)]
    )
    subject.settle()
    mine = await index.query(SPACE, [1, 0, 0, 0], top_k=10)
    theirs = await index.query(OTHER, [1, 0, 0, 0], top_k=10)
    assert ids(mine) == [f"{A}@0-0", f"{A}@1-1"]
    assert ids(theirs)[0] == f"{A}@1-1" and len(theirs) == 3
    assert mine[0].score == pytest.approx(1.0, abs=1e-5) and theirs[0].score == pytest.approx(1.0, abs=1e-5)
    assert await index.window_ids(SPACE, A) == [f"{A}@0-0", f"{A}@1-1"]
    assert len(await index.window_ids(OTHER, A)) == 3
    assert await index.query(EmbeddingSpace(model="test/model-c", dim=DIM, pooling="cls"), [1, 0, 0, 0]) == []


async def test_delete_video_removes_its_vectors_in_every_space(subject: Subject) -> None:
    index = subject.index
    await index.upsert(
        SPACE, [rec(ref(A, 0), 1, 0, 0, 0), rec(ref(A, 1), 1, 1, 0, 0), rec(ref(B, 0), 1, 0, 1, 0)]
    )
    await index.upsert(OTHER, [rec(ref(A, 0), 1, 0, 0, 0), rec(ref(B, 0), 1, 0, 0, 1)])
    subject.settle()
    assert await index.delete_video(A) == 3
    assert await index.window_ids(SPACE, A) == [] and await index.window_ids(OTHER, A) == []
    # Gone from query results at once, even before Vectorize has applied the delete.
    assert ids(await index.query(SPACE, [1, 0, 0, 0], top_k=10)) == [f"{B}@0-0"]
    subject.settle()
    assert ids(await index.query(OTHER, [1, 0, 0, 0], top_k=10)) == [f"{B}@0-0"]
    assert await index.query(SPACE, [1, 0, 0, 0], video_ids=[A]) == []
    assert await index.delete_video(A) == 0
    assert await index.window_ids(SPACE, B) == [f"{B}@0-0"]


async def test_replace_video_keeps_exactly_the_new_windows(subject: Subject) -> None:
    index = subject.index
    await index.upsert(SPACE, [rec(ref(A, i), 1, i, 0, 0) for i in range(3)] + [rec(ref(B, 0), 1, 0, 0, 0)])
    subject.settle()
    await index.replace_video(SPACE, A, [rec(ref(A, 1), 0, 0, 1, 0), rec(ref(A, 5), 0, 0, 1, 1)])
    assert await index.window_ids(SPACE, A) == [f"{A}@1-1", f"{A}@5-5"]
    subject.settle()
    hits = await index.query(SPACE, [0, 0, 1, 0], top_k=10)
    assert ids(hits)[:2] == [f"{A}@1-1", f"{A}@5-5"]
    assert {h.id for h in hits} == {f"{A}@1-1", f"{A}@5-5", f"{B}@0-0"}
    with pytest.raises(VidError) as refused:
        await index.replace_video(SPACE, A, [rec(ref(B, 3), 1, 0, 0, 0)])
    assert refused.value.code is ErrorCode.BAD_REQUEST and refused.value.hint
    await index.replace_video(SPACE, A, [])
    assert await index.window_ids(SPACE, A) == []
    subject.settle()
    assert ids(await index.query(SPACE, [1, 0, 0, 0], top_k=10)) == [f"{B}@0-0"]


async def test_a_big_batch_is_written_whole(subject: Subject) -> None:
    """2,345 vectors in one call: Vectorize takes 1,000 per upsert (its stand-in refuses more)."""
    records = [rec(ref(A if i % 2 else B, i), 1, (i % 97) / 97, (i % 89) / 89, i / 2345) for i in range(2345)]
    records.append(rec(ref(C, 0), 0, 0, 0, 1))
    await subject.index.upsert(SPACE, records)
    subject.settle()
    assert len(await subject.index.window_ids(SPACE, A)) == 1172
    assert len(await subject.index.window_ids(SPACE, B)) == 1173
    (nearest,) = await subject.index.query(SPACE, [0, 0, 0, 1], top_k=1)
    assert nearest.id == f"{C}@0-0"
    assert await subject.index.delete_video(B) == 1173
    subject.settle()
    assert {h.video_id for h in await subject.index.query(SPACE, [1, 0, 0, 0], top_k=100)} == {A}


async def test_equal_scores_go_in_window_id_order(subject: Subject) -> None:
    await subject.index.upsert(SPACE, [rec(ref(v, 0), 0, 1, 0, 0) for v in (C, A, B)])
    subject.settle()
    assert ids(await subject.index.query(SPACE, [0, 1, 0, 0])) == [f"{A}@0-0", f"{B}@0-0", f"{C}@0-0"]


async def test_windows_of_a_transcript_go_in_as_they_are(subject: Subject) -> None:
    windows = make_windows(_talk(A, 40))
    assert len(windows) > 2
    vectors = {w.id: [1.0, float(n), 0.0, 0.5] for n, w in enumerate(windows)}
    await subject.index.upsert(SPACE, [VectorRecord(w, vectors[w.id]) for w in windows])
    subject.settle()
    hits = await subject.index.query(SPACE, vectors[windows[1].id], top_k=1)
    assert ids(hits) == [windows[1].id] and not hasattr(hits[0], "text")
    assert (hits[0].chapter_index, hits[0].chapter_title) == (
        windows[1].chapter_index,
        windows[1].chapter_title,
    )


def _talk(video_id: str, segments: int) -> VideoContext:
    words = "the stand tilts back to one hundred sixty five degrees and folds flat for travel".split()
    return VideoContext(
        id=video_id,
        metadata=VideoMetadata(
            id=video_id,
            platform="youtube",
            title="A talk",
            chapters=[Chapter(title="Intro", start_sec=0), Chapter(title="Stand", start_sec=segments * 2.5)],
        ),
        transcript=Transcript(
            language="en",
            origin="captions-manual",
            timing="caption",
            producer="test",
            segments=[
                Segment(start_sec=i * 5.0, end_sec=i * 5.0 + 4.5, text=" ".join(words * 2))
                for i in range(segments)
            ],
        ),
    )


async def test_the_ledger_counts_indexed_videos_per_space_and_forgets_deleted_ones(subject: Subject) -> None:
    index = subject.index
    assert await index.spaces() == [] and await index.indexed(SPACE, [A, B]) == set()
    await index.replace_video(SPACE, A, [rec(ref(A, 0), 1, 0, 0, 0), rec(ref(A, 1), 0, 1, 0, 0)])
    await index.replace_video(SPACE, B, [])  # nothing to embed: indexed all the same
    await index.upsert(OTHER, [rec(ref(C, 0), 0, 0, 1, 0)])
    assert await index.indexed(SPACE, [A, B, C]) == {A, B}  # read-after-write: no settle
    assert await index.indexed(OTHER, [A, B, C]) == {C}
    assert await index.spaces() == [SpaceCount(SPACE, 2, 2), SpaceCount(OTHER, 1, 1)]
    await index.replace_video(SPACE, A, [rec(ref(A, 0), 1, 0, 0, 0)])
    assert (await index.spaces())[0] == SpaceCount(SPACE, 2, 1)
    await index.delete_video(A)
    await index.delete_video(B)
    assert await index.indexed(SPACE, [A, B]) == set()
    assert (await index.spaces())[0].space == OTHER


async def test_a_space_names_its_pooling_and_poolings_never_mix(subject: Subject) -> None:
    mean = EmbeddingSpace(model=SPACE.model, dim=DIM, pooling="mean")
    assert mean.key != SPACE.key and mean.tag != SPACE.tag
    await subject.index.upsert(SPACE, [rec(ref(A, 0), 1, 0, 0, 0)])
    await subject.index.upsert(mean, [rec(ref(B, 0), 1, 0, 0, 0)])
    subject.settle()
    assert ids(await subject.index.query(SPACE, [1, 0, 0, 0])) == [f"{A}@0-0"]
    assert ids(await subject.index.query(mean, [1, 0, 0, 0])) == [f"{B}@0-0"]
    with pytest.raises(VidError) as caught:
        await subject.index.query(EmbeddingSpace(model="m", dim=DIM, pooling="max"), [1, 0, 0, 0])  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.BAD_REQUEST
