"""What only the sqlite-vec index has: its tables in the library's file, its two exact ways to
search within videos, and the ``sqlite3`` it loads the extension with."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from vid2context.models import EmbeddingSpace
from vid2context.search.vectors import VectorRecord
from vid2context.search.windows import WindowRef
from vid2context.storage.sqlite import SQLiteDatabase, SQLiteStorage
from vid2context.storage.sqlite_vec import SQLiteVectorIndex, extension_driver, open_vector_index, vec_table

pytestmark = pytest.mark.anyio

SPACE = EmbeddingSpace(model="test/model", dim=8, pooling="cls")


def record(video: int, i: int, rng: random.Random) -> VectorRecord:
    video_id = f"youtube:video{video:06d}"
    window = WindowRef(
        id=f"{video_id}@{i}-{i}",
        video_id=video_id,
        start_sec=i,
        end_sec=i + 1,
        first_segment=i,
        last_segment=i,
    )
    return VectorRecord(window, [rng.uniform(-1, 1) for _ in range(SPACE.dim)])


async def test_searching_within_videos_agrees_whichever_way_it_is_done(tmp_path: Path) -> None:
    driver = extension_driver()
    assert driver is not None
    database = SQLiteDatabase(tmp_path / "vid2context.db", driver=driver)
    scans, knn = SQLiteVectorIndex(database), SQLiteVectorIndex(database, scan_limit=0)
    rng = random.Random(5)
    await scans.upsert(SPACE, [record(v, i, rng) for v in range(40) for i in range(25)])
    try:
        for trial in range(10):
            query = [rng.uniform(-1, 1) for _ in range(SPACE.dim)]
            within = [f"youtube:video{v:06d}" for v in rng.sample(range(45), 6)]
            by_scan = await scans.query(SPACE, query, top_k=20, video_ids=within)
            by_knn = await knn.query(SPACE, query, top_k=20, video_ids=within)
            assert [h.id for h in by_scan] == [h.id for h in by_knn], trial
            assert [h.score for h in by_scan] == pytest.approx([h.score for h in by_knn], abs=1e-5)
            assert {h.video_id for h in by_scan} <= set(within)
    finally:
        await database.close()


async def test_each_space_is_a_vec0_table_in_the_library_file(tmp_path: Path) -> None:
    path = tmp_path / "vid2context.db"
    library = SQLiteStorage(path)
    index = open_vector_index(path)
    assert index is not None
    rng = random.Random(1)
    other = EmbeddingSpace(model="test/other", dim=8, pooling="cls")
    await index.upsert(SPACE, [record(1, 0, rng)])
    await index.upsert(other, [record(1, 0, rng)])
    await index.close()
    assert await library.list_videos() is not None  # the library's own sqlite3 reads the file as before
    await library.close()
    conn = sqlite3.connect(path)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {vec_table(SPACE), vec_table(other)} <= tables and vec_table(SPACE) != vec_table(other)
    spaces = conn.execute("SELECT key, tag, model, dim, pooling FROM vector_spaces ORDER BY key").fetchall()
    assert spaces == [
        (SPACE.key, SPACE.tag, SPACE.model, 8, "cls"),
        (other.key, other.tag, other.model, 8, "cls"),
    ]
    assert conn.execute("SELECT COUNT(*) FROM vector_windows").fetchone()[0] == 2
    conn.close()


def test_the_extension_loads_with_this_pythons_sqlite3_or_pysqlite3() -> None:
    driver = extension_driver()
    assert driver is not None, "neither sqlite3 nor pysqlite3 can load extensions here"
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        assert driver is sqlite3
    else:
        assert driver.__name__ == "pysqlite3.dbapi2"


async def test_an_index_needs_connections_that_loaded_sqlite_vec(tmp_path: Path) -> None:
    database = SQLiteDatabase(tmp_path / "plain.db", driver=sqlite3)
    try:
        if database.vector_available:
            pytest.skip("this Python's sqlite3 loads extensions: there is nothing to refuse")
        with pytest.raises(ValueError):
            SQLiteVectorIndex(database)
    finally:
        await database.close()


async def test_a_library_indexed_before_spaces_had_poolings_stays_readable(tmp_path: Path) -> None:
    """A file written by the index before migration 0005: its space (key ``model|dim``) cannot be
    searched any more (its pooling is unknown) and is left out of ``spaces``, but its windows are
    counted in the ledger the migration fills, and deleting the video still removes them."""
    import shutil

    from vid2context.storage.sqlite import apply_migrations, find_migrations

    old = tmp_path / "migrations-0004"
    old.mkdir()
    for path in sorted(find_migrations().glob("000[1-4]_*.sql")):
        shutil.copy(path, old / path.name)
    path = tmp_path / "vid2context.db"
    driver = extension_driver()
    assert driver is not None
    conn = driver.connect(path)
    conn.row_factory = driver.Row
    assert apply_migrations(conn, old)[-1] == "0004_vector_windows.sql"
    conn.enable_load_extension(True)
    import sqlite_vec

    sqlite_vec.load(conn)
    conn.execute(
        "INSERT INTO vector_spaces (key, tag, model, dim) VALUES ('test/model|8', 'legacy1', 'test/model', 8)"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE vec_windows_legacy1 USING vec0(embedding float[8] distance_metric=cosine, video_id text)"
    )
    conn.execute(
        "INSERT INTO vector_windows (id, space, window_id, video_id, start_sec, end_sec, first_segment, last_segment) "
        "VALUES (1, 'test/model|8', 'youtube:old@0-0', 'youtube:old', 0, 1, 0, 0)"
    )
    conn.execute(
        "INSERT INTO vec_windows_legacy1 (rowid, embedding, video_id) VALUES (1, ?, 'youtube:old')",
        (b"\0\0\x80?" * 8,),
    )
    conn.commit()
    conn.close()
    library = SQLiteStorage(path)  # applies 0005
    index = open_vector_index(path)
    assert index is not None
    try:
        assert await index.spaces() == []
        await index.upsert(SPACE, [record(1, 0, random.Random(2))])
        assert [count.space for count in await index.spaces()] == [SPACE]
        assert await index.delete_video("youtube:old") == 1
    finally:
        await index.close()
        await library.close()
