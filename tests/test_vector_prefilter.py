"""The sqlite-vec index's binary prefilter: a space of more than ``prefilter_above`` vectors is
searched through its bit table (``vec_quantize_binary``) and the best ``top_k x oversample`` are
re-scored in float32. Run here with the threshold lowered, on the offline test model's real
vectors of the labelled retrieval set, beside the same vectors searched exactly."""

from __future__ import annotations

import math
import random
import sqlite3
from pathlib import Path

import pytest

from vid2context.ctx import Ctx
from vid2context.models import EmbeddingSpace
from vid2context.search.embedders.fastembed_local import FastEmbedder
from vid2context.search.vectors import VectorRecord
from vid2context.search.windows import make_windows
from vid2context.storage.sqlite import SQLiteDatabase
from vid2context.storage.sqlite_vec import SQLiteVectorIndex, bits_table, extension_driver

from .retrieval_set import QUERIES, distractors, talks

pytestmark = pytest.mark.anyio


class Library:
    """The retrieval set's windows and queries, embedded once by the test model."""

    def __init__(
        self, space: EmbeddingSpace, records: list[VectorRecord], queries: list[list[float]]
    ) -> None:
        self.space, self.records, self.queries = space, records, queries


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def library(embed_model_dir: Path) -> Library:
    rung = FastEmbedder(folder=str(embed_model_dir), pooling="mean")
    windows = [w for context in [*talks(), *distractors()] for w in make_windows(context)]
    vectors = await rung.embed([w.text for w in windows], Ctx())
    queries = await rung.embed([q.text for q in QUERIES], Ctx())
    space = EmbeddingSpace(model=rung.model_id, dim=384, pooling="mean")
    records = [VectorRecord(w, [float(x) for x in v]) for w, v in zip(windows, vectors, strict=True)]
    return Library(space, records, [[float(x) for x in q] for q in queries])


def index_at(path: Path, **options: int) -> SQLiteVectorIndex:
    driver = extension_driver()
    assert driver is not None
    return SQLiteVectorIndex(SQLiteDatabase(path, driver=driver), **options)


async def bit_rows(index: SQLiteVectorIndex, space: EmbeddingSpace) -> int | None:
    """Rows of the space's bit table, ``None`` when it has none."""

    def work(conn: sqlite3.Connection) -> int | None:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (bits_table(space),)).fetchone()
        if found is None:
            return None
        return int(conn.execute(f"SELECT COUNT(*) FROM {bits_table(space)}_rowids").fetchone()[0])

    return await index.database.read(work)


async def test_the_quantised_path_finds_the_exact_top_results(tmp_path: Path, library: Library) -> None:
    assert len(library.records) > 100  # a prefilter of 20 candidates for a top ten among them
    exact = index_at(tmp_path / "exact.db")
    quantised = index_at(tmp_path / "quantised.db", prefilter_above=50)
    try:
        for index in (exact, quantised):
            await index.upsert(library.space, library.records)
        assert await bit_rows(exact, library.space) is None  # below the default threshold
        assert await bit_rows(quantised, library.space) == len(library.records)
        top_ones, recall = 0, 0.0
        for vector in library.queries:
            truth = await exact.query(library.space, vector, top_k=10)
            every = {h.id: h.score for h in await exact.query(library.space, vector, top_k=100)}
            found = await quantised.query(library.space, vector, top_k=10)
            assert len(found) == 10
            for got in found:  # re-scored exactly: each hit's score is its exact one
                assert got.score == pytest.approx(every[got.id], abs=1e-5)
            assert [h.score for h in found] == sorted((h.score for h in found), reverse=True)
            top_ones += found[0].id == truth[0].id
            recall += len({h.id for h in found} & {h.id for h in truth}) / 10
        # Measured with the test model: the top hit of all 36 queries, 0.79 of the top ten (the
        # set's windows are close: filler speech); a query's margin for other CPUs' rounding.
        assert top_ones >= len(library.queries) - 1
        assert recall / len(library.queries) >= 0.7
    finally:
        await exact.close()
        await quantised.close()


async def test_writes_and_deletes_keep_the_bit_table_in_step(tmp_path: Path, library: Library) -> None:
    path = tmp_path / "vid2context.db"
    index = index_at(path, prefilter_above=50)
    space = library.space
    try:
        by_video: dict[str, list[VectorRecord]] = {}
        for record in library.records:
            by_video.setdefault(record.window.video_id, []).append(record)
        first, *rest = by_video
        await index.upsert(space, by_video[first])
        assert await bit_rows(index, space) is None  # not past the threshold yet
        for video in rest:
            await index.upsert(space, by_video[video])
        assert await bit_rows(index, space) == len(library.records)
        await index.replace_video(space, first, by_video[first][:2])
        assert await bit_rows(index, space) == len(library.records) - len(by_video[first]) + 2
        await index.delete_video(first)
        assert await bit_rows(index, space) == len(library.records) - len(by_video[first])
        gone = {r.window.id for r in by_video[first]}
        for vector in library.queries[:10]:
            assert not {h.id for h in await index.query(space, vector, top_k=20)} & gone
    finally:
        await index.close()


async def test_a_library_from_before_bit_tables_gets_one_after_its_first_query(
    tmp_path: Path, library: Library
) -> None:
    path = tmp_path / "vid2context.db"
    old = index_at(path)
    await old.upsert(library.space, library.records)
    truth = [await old.query(library.space, v, top_k=10) for v in library.queries[:5]]
    assert await bit_rows(old, library.space) is None
    await old.close()
    index = index_at(path, prefilter_above=50)
    try:
        first = await index.query(library.space, library.queries[0], top_k=10)
        assert [h.id for h in first] == [h.id for h in truth[0]]  # exact while the table is made
        await index.backfills()
        assert await bit_rows(index, library.space) == len(library.records)
        assert await index.build_prefilter(library.space) == 0  # made once
        for vector, expected in zip(library.queries[:5], truth, strict=True):
            found = await index.query(library.space, vector, top_k=10)
            assert found[0].id == expected[0].id
    finally:
        await index.close()


async def test_queries_within_videos_stay_exact(tmp_path: Path, library: Library) -> None:
    exact = index_at(tmp_path / "exact.db")
    quantised = index_at(tmp_path / "quantised.db", prefilter_above=0, scan_limit=0)
    try:
        for index in (exact, quantised):
            await index.upsert(library.space, library.records)
        videos = sorted({r.window.video_id for r in library.records})[:6]
        for vector in library.queries[:10]:
            truth = await exact.query(library.space, vector, top_k=20, video_ids=videos)
            found = await quantised.query(library.space, vector, top_k=20, video_ids=videos)
            assert [h.id for h in found] == [h.id for h in truth]
            assert {h.video_id for h in found} <= set(videos)
    finally:
        await exact.close()
        await quantised.close()


@pytest.mark.parametrize("in_memory", [True, False])
async def test_a_write_is_found_by_the_next_query_through_either_scan(
    tmp_path: Path, library: Library, in_memory: bool
) -> None:
    """The bit table's in-memory copy is not used once a write made it older (the query goes
    through vec0 and the copy is loaded again), and vectors written after the bit table was made
    are found through vec0's partitions too."""
    index = index_at(tmp_path / "vid2context.db", prefilter_above=50, in_memory=in_memory)
    space = library.space
    by_video: dict[str, list[VectorRecord]] = {}
    for record in library.records:
        by_video.setdefault(record.window.video_id, []).append(record)
    *first, last = by_video
    try:
        await index.upsert(space, [r for video in first for r in by_video[video]])
        await index.query(space, library.queries[0], top_k=10)
        await index.backfills()
        assert index.in_memory_vectors(space) == 0  # not after the first query: a one-off's
        await index.query(space, library.queries[0], top_k=10)
        await index.backfills()
        assert index.in_memory_vectors(space) == (len(library.records) - len(by_video[last])) * in_memory
        await index.upsert(space, by_video[last])
        for _step in range(2):  # right after the write, then once the copy is loaded again
            for record in by_video[last]:
                found = await index.query(space, record.vector, top_k=5)
                assert found[0].id == record.window.id
                assert found[0].score == pytest.approx(1.0, abs=1e-5)
            await index.backfills()
        assert index.in_memory_vectors(space) == len(library.records) * in_memory
        await index.delete_video(last)
        gone = {r.window.id for r in by_video[last]}
        for record in by_video[last]:
            assert not {h.id for h in await index.query(space, record.vector, top_k=20)} & gone
    finally:
        await index.close()


async def test_a_write_of_several_batches_past_the_threshold_keeps_every_table_in_step(
    tmp_path: Path, library: Library
) -> None:
    """One upsert of more than ``MAX_BATCH`` vectors is written a batch at a time: each batch goes
    to the vectors, the bit table and the plain table alike."""
    from vid2context.search.vectors import MAX_BATCH
    from vid2context.search.windows import WindowRef

    rng = random.Random(7)

    def record(i: int) -> VectorRecord:
        vector = [rng.gauss(0.0, 1.0) for _ in range(library.space.dim)]
        norm = math.sqrt(sum(x * x for x in vector))
        video = f"youtube:batch{i // 40:05d}"
        w = i % 40
        window = WindowRef(
            id=f"{video}@{w}", video_id=video, start_sec=w, end_sec=w + 1, first_segment=w, last_segment=w
        )
        return VectorRecord(window, [x / norm for x in vector])

    index = index_at(tmp_path / "vid2context.db", prefilter_above=50)
    first = [record(i) for i in range(100)]
    many = [record(i) for i in range(100, 100 + 2 * MAX_BATCH + 100)]
    try:
        await index.upsert(library.space, first)  # past the threshold: the prefilter is made
        await index.upsert(library.space, many)
        assert await bit_rows(index, library.space) == len(first) + len(many)
        for picked in (many[0], many[MAX_BATCH + 5], many[-1]):
            found = await index.query(library.space, picked.vector, top_k=3)
            assert found[0].id == picked.window.id
    finally:
        await index.close()
