"""What only the SQLite store promises: a killed writer loses nothing it reported saved and leaves
no half-saved video; readers keep a consistent snapshot while a writer writes; migrations run once,
each all or nothing; and its BM25 ranks exactly like the memory store's.

The writer is a real process running ``SQLiteStorage`` (this file, run as a script), killed with
SIGKILL right after it reports a save, so the next save is in flight. The test waits for lines on
the writer's stdout, never for time to pass.
"""

from __future__ import annotations

import asyncio
import random
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.storage.memory import MemoryStorage
from vid2context.storage.sqlite import (
    SQLiteDatabase,
    SQLiteStorage,
    _statements,
    find_migrations,
    open_local_stores,
)

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
]

ROOT = Path(__file__).resolve().parents[1]


def segment_count(n: int, version: int) -> int:
    return 1500 + 400 * version + n


def big_context(n: int, version: int) -> VideoContext:
    """Video ``n`` as saved by writer ``version``: its segment count and marker tell them apart."""
    rng = random.Random(n * 1000 + version)
    segments = [
        Segment(start_sec=i * 3.0, end_sec=i * 3.0 + 2.9, text=" ".join(rng.choice(WORDS) for _ in range(16)))
        for i in range(segment_count(n, version))
    ]
    segments[-1] = Segment(
        start_sec=segments[-1].start_sec, end_sec=segments[-1].end_sec, text=f"marker{n}v{version}"
    )
    video_id = f"youtube:durable{n:03d}"
    return VideoContext(
        id=video_id,
        metadata=VideoMetadata(id=video_id, platform="youtube", title=f"Durable {n} v{version}"),
        transcript=Transcript(
            language="en", origin="asr", timing="segment-approx", producer="test", segments=segments
        ),
        fetched_at=f"2026-01-01T00:00:{version:02d}Z",
    )


class Writer:
    """This file run as a script: saves ``count`` videos of ``version``, printing ``saved N`` after
    each, and stalls inside save ``stall_at`` (see ``_write``)."""

    def __init__(self, path: Path, count: int, version: int, stall_at: int = -1) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(path), str(count), str(version), str(stall_at)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self._watchdog = threading.Timer(120, self.proc.kill)  # a hung writer fails the test, not the run
        self._watchdog.start()

    def wait_for(self, line: str) -> None:
        assert self.proc.stdout is not None
        for got in self.proc.stdout:
            if got.strip() == line:
                return
        raise AssertionError(f"writer exited ({self.proc.wait()}) before printing {line!r}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.finish()

    def finish(self) -> int:
        code = self.proc.wait()
        self._watchdog.cancel()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return code


def uncommitted_wal_frames(path: Path) -> int:
    """Frames of the current WAL generation written after its last commit frame (WAL file format:
    a 32-byte header with the page size and salts, then 24-byte frame headers, each followed by a
    page; a frame of the current generation carries the header's salts, a commit frame a nonzero
    database size)."""
    data = path.with_name(path.name + "-wal").read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    offset, frames, last_commit = 32, 0, 0
    while offset + 24 + page_size <= len(data) and data[offset + 8 : offset + 16] == salts:
        frames += 1
        if struct.unpack(">I", data[offset + 4 : offset + 8])[0]:
            last_commit = frames
        offset += 24 + page_size
    return frames - last_commit


def video_versions(path: Path, count: int) -> dict[int, int | None]:
    """For each video, the one version it holds completely (row, every segment, every segment in
    the search index), or ``None`` when nothing of it is there; fails on anything in between."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # The index against its content, entry by entry (rank 1: check the external content too).
        conn.execute("INSERT INTO segments_fts (segments_fts, rank) VALUES ('integrity-check', 1)")
        # Every segment is in the index once, and nothing else is: each holds a WORD or a marker.
        any_word = (
            " OR ".join(WORDS)
            + " OR "
            + " OR ".join(f"marker{n}v{v}" for n in range(count) for v in range(1, 4))
        )
        indexed = conn.execute(
            "SELECT COUNT(*) FROM segments_fts WHERE segments_fts MATCH ?", (any_word,)
        ).fetchone()
        assert indexed == conn.execute("SELECT COUNT(*) FROM segments").fetchone()
        versions: dict[int, int | None] = {}
        for n in range(count):
            video_id = f"youtube:durable{n:03d}"
            row = conn.execute("SELECT title FROM videos WHERE id = ?", (video_id,)).fetchone()
            segments = conn.execute(
                "SELECT COUNT(*) FROM segments WHERE video_id = ?", (video_id,)
            ).fetchone()[0]
            if row is None:
                assert segments == 0, f"video {n}: segments without a row"
                versions[n] = None
                continue
            version = int(row[0].rsplit("v", 1)[1])
            assert segments == segment_count(n, version), f"video {n} v{version}: {segments} segments"
            markers = conn.execute(
                "SELECT s.video_id, s.text FROM segments_fts JOIN segments AS s ON s.id = segments_fts.rowid "
                "WHERE segments_fts MATCH ?",
                (" OR ".join(f"marker{n}v{v}" for v in range(1, 4)),),
            ).fetchall()
            assert markers == [(video_id, f"marker{n}v{version}")]
            versions[n] = version
        return versions
    finally:
        conn.close()


@pytest.mark.slow
def test_a_killed_writer_leaves_whole_videos_or_none(tmp_path: Path) -> None:
    path = tmp_path / "vid2context.db"
    count = 12

    writer = Writer(path, count, version=1, stall_at=5)
    writer.wait_for("stalled 5")
    assert uncommitted_wal_frames(path) > 0  # half a save is on disk
    writer.kill()
    versions = video_versions(path, count)
    assert versions == {n: 1 if n < 5 else None for n in range(count)}

    writer = Writer(path, count, version=2, stall_at=3)  # a replace, killed halfway
    writer.wait_for("stalled 3")
    writer.kill()
    after = video_versions(path, count)
    assert after == {n: 2 if n < 3 else 1 if n < 5 else None for n in range(count)}

    writer = Writer(path, count, version=2)  # killed wherever it happens to be
    writer.wait_for("saved 7")
    writer.kill()
    after = video_versions(path, count)
    assert all(after[n] == 2 for n in range(8)), after
    assert all(after[n] in (versions[n], 2) for n in range(8, count)), (versions, after)

    async def check() -> None:
        store = SQLiteStorage(path)
        try:
            for n, version in after.items():
                got = await store.get_context(f"youtube:durable{n:03d}")
                assert got == (None if version is None else big_context(n, version))
            hits = await store.search("marker3v2")
            assert [h.video_id for h in hits] == ["youtube:durable003"]
            await store.put_context(big_context(count - 1, 3))  # and it takes new writes
        finally:
            await store.close()

    asyncio.run(check())
    assert video_versions(path, count)[count - 1] == 3


@pytest.mark.slow
def test_readers_keep_a_snapshot_while_a_writer_writes(tmp_path: Path) -> None:
    path = tmp_path / "vid2context.db"
    SQLiteDatabase(path)._close()  # create the schema before anyone reads
    writer = Writer(path, 10, version=1)
    first = sqlite3.connect(path, timeout=30, isolation_level=None)
    second = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        writer.wait_for("saved 2")
        first.execute("BEGIN")
        seen = first.execute("SELECT COUNT(*) FROM videos").fetchone()[0]
        segments = first.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
        assert seen >= 3
        writer.wait_for("saved 6")  # four or more commits later
        # The open read transaction still sees exactly what it saw, segments included.
        assert first.execute("SELECT COUNT(*) FROM videos").fetchone()[0] == seen
        assert first.execute("SELECT COUNT(*) FROM segments").fetchone()[0] == segments
        # A new one sees the commits; both read while the writer goes on.
        assert second.execute("SELECT COUNT(*) FROM videos").fetchone()[0] >= 7
        first.execute("COMMIT")
        assert first.execute("SELECT COUNT(*) FROM videos").fetchone()[0] >= 7
        assert writer.finish() == 0
    finally:
        first.close()
        second.close()
        if writer.proc.poll() is None:
            writer.kill()
    assert set(video_versions(path, 10).values()) == {1}


def test_readers_do_not_wait_for_the_writer(tmp_path: Path) -> None:
    """Reads go to their own connections: they answer while a write transaction is open."""

    async def scenario() -> None:
        store = SQLiteStorage(tmp_path / "vid2context.db", readers=2)
        try:
            await store.put_context(big_context(1, 1))
            entered, release = threading.Event(), threading.Event()

            def slow_write(conn: sqlite3.Connection) -> None:
                conn.execute("DELETE FROM videos WHERE id = 'nothing'")
                entered.set()
                assert release.wait(30)

            write = asyncio.ensure_future(store.database.write(slow_write))
            assert await asyncio.to_thread(entered.wait, 30)
            reads = await asyncio.gather(
                store.get_context("youtube:durable001"), store.list_videos(), store.search("marker1v1")
            )
            assert reads[0] == big_context(1, 1) and len(reads[1].items) == 1 and len(reads[2]) == 1
            assert not write.done()
            release.set()
            await write
        finally:
            await store.close()

    asyncio.run(scenario())


MIGRATIONS = sorted(path.name for path in find_migrations().glob("*.sql"))


def test_migrations_run_once_and_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "vid2context.db"
    database = SQLiteDatabase(path)
    assert database.applied == MIGRATIONS and MIGRATIONS[:2] == ["0001_init.sql", "0002_collection_names.sql"]
    assert isinstance(database.vector_available, bool)
    conn = database._writer
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    database._close()
    again = SQLiteDatabase(path)
    assert again.applied == []
    names = again._writer.execute("SELECT name FROM _vid2context_migrations").fetchall()
    assert [row[0] for row in names] == MIGRATIONS
    again._close()


def test_a_failing_migration_is_rolled_back_whole(tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    for source in find_migrations().glob("*.sql"):
        (migrations / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    (migrations / "9999_broken.sql").write_text(
        "CREATE TABLE half (x TEXT); -- a ; in a comment\nINSERT INTO half VALUES ('a;b');\nINSERT INTO nowhere VALUES (1);\n",
        encoding="utf-8",
    )
    path = tmp_path / "vid2context.db"
    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        SQLiteDatabase(path, migrations=migrations)
    conn = sqlite3.connect(path)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "videos" in tables and "half" not in tables
    assert [row[0] for row in conn.execute("SELECT name FROM _vid2context_migrations")] == MIGRATIONS
    conn.close()


def test_statements_split_where_sqlite_would() -> None:
    script = "CREATE TABLE a (x TEXT DEFAULT ';');\n-- comment; with semicolon\nINSERT INTO a VALUES ('1;2'); /* ; */\n"
    assert _statements(script) == [
        "CREATE TABLE a (x TEXT DEFAULT ';');",
        "-- comment; with semicolon\nINSERT INTO a VALUES ('1;2');",
    ]


def test_the_migrations_are_found_beside_the_package() -> None:
    assert find_migrations() == ROOT / "migrations"


def test_local_stores_live_under_home_and_share_one_file(tmp_path: Path) -> None:
    async def scenario() -> None:
        stores = open_local_stores(tmp_path / "home")
        try:
            await stores.kv.put("k", "v")
            await stores.blobs.put_blob("uploads/a", b"a")
            await stores.storage.put_context(big_context(1, 1))
        finally:
            await stores.storage.close()
        assert (tmp_path / "home" / "vid2context.db").is_file()
        assert len(list((tmp_path / "home" / "blobs").iterdir())) == 1
        reopened = open_local_stores(tmp_path / "home")
        try:
            assert await reopened.kv.get("k") == "v"
            assert (await reopened.blobs.get_blob("uploads/a")).data == b"a"  # type: ignore[union-attr]
            assert await reopened.storage.get_context("youtube:durable001") == big_context(1, 1)
        finally:
            await reopened.storage.close()

    asyncio.run(scenario())


def test_sqlite_ranks_exactly_like_the_memory_store(tmp_path: Path) -> None:
    """Both compute FTS5's bm25, so scores agree to float precision and orders are identical."""
    rng = random.Random(5)

    def context(n: int) -> VideoContext:
        texts = [" ".join(rng.choice(WORDS[:8]) for _ in range(rng.randint(3, 20))) for _ in range(60)]
        return VideoContext(
            id=f"youtube:rank{n}",
            metadata=VideoMetadata(id=f"youtube:rank{n}", platform="youtube", title=f"R{n}"),
            transcript=Transcript(
                language="en", origin="asr", timing="segment-approx", producer="test",
                segments=[Segment(start_sec=i, end_sec=i + 1, text=t) for i, t in enumerate(texts)],
            ),
        )  # fmt: skip

    async def scenario() -> None:
        memory, sqlite = MemoryStorage(), SQLiteStorage(tmp_path / "rank.db")
        try:
            for n in range(20):
                c = context(n)
                await memory.put_context(c)
                await sqlite.put_context(c)
            for query in (
                "alpha",
                "alpha beta",
                '"gamma delta"',
                "eta -theta",
                "zeta zeta",
                '"alpha alpha" beta',
            ):
                ours = await memory.search(query, limit=50)
                theirs = await sqlite.search(query, limit=50)
                assert [(h.video_id, h.start_sec) for h in ours] == [
                    (h.video_id, h.start_sec) for h in theirs
                ], query
                assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], rel=1e-9), query
        finally:
            await sqlite.close()

    asyncio.run(scenario())


async def _write(path: str, count: int, version: int, stall_at: int) -> None:
    """Save ``count`` videos; inside save ``stall_at``, two thirds through its statements (its
    segments written, its FTS rows under way), print ``stalled N`` and hold the transaction open
    until killed."""
    store = SQLiteStorage(path)
    saving = -1
    progress = 0

    def on_progress() -> int:
        nonlocal progress
        if saving == stall_at:
            progress += 1
            if progress == 100:  # a save runs about 150 rounds of 1,000 SQLite instructions
                print(f"stalled {stall_at}", flush=True)
                threading.Event().wait()
        return 0

    def setup(conn: sqlite3.Connection) -> None:
        # A small page cache makes the save spill pages into the WAL before it commits, so the
        # kill leaves uncommitted frames behind for recovery to ignore.
        conn.execute("PRAGMA cache_size = 20")
        conn.set_progress_handler(on_progress, 1000)

    await store.database.write(setup)
    contexts = [big_context(n, version) for n in range(count)]
    for n, context in enumerate(contexts):
        saving = n
        await store.put_context(context)
        print(f"saved {n}", flush=True)
    await store.close()


if __name__ == "__main__":
    asyncio.run(_write(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))


def test_collections_made_before_names_were_unique_migrate_and_stay_usable(tmp_path: Path) -> None:
    """A file with twin names (made by a version without the rule) opens: the migration fills every
    name key without failing, lookups list the twins, and the rule holds from then on."""
    from .test_storage_conformance import (
        LEGACY_TWINS_SQL,
        check_legacy_twins,
    )  # (this file also runs as a script)

    first_only = tmp_path / "migrations"
    first_only.mkdir()
    (first_only / "0001_init.sql").write_text(
        (find_migrations() / "0001_init.sql").read_text(encoding="utf-8"), encoding="utf-8"
    )
    path = tmp_path / "vid2context.db"
    old = SQLiteDatabase(path, migrations=first_only)
    for statement in LEGACY_TWINS_SQL:
        old._writer.execute(statement)
    old._close()

    async def scenario() -> None:
        store = SQLiteStorage(path)
        try:
            assert store.database.applied == MIGRATIONS[1:]
            await check_legacy_twins(store)
        finally:
            await store.close()

    asyncio.run(scenario())


def test_libraries_saved_before_stemming_are_found_by_stems(tmp_path: Path) -> None:
    """A file made by a version without ``segments_stem`` opens: the migration builds the stemmed
    index from the saved segments, and both indexes stay in step with ``segments`` afterwards
    (FTS5's own integrity check compares each index with the rows)."""
    from .test_storage_conformance import check_legacy_search, legacy_video_sql  # (also a script)

    before = tmp_path / "migrations"
    before.mkdir()
    for name in ("0001_init.sql", "0002_collection_names.sql"):
        (before / name).write_text((find_migrations() / name).read_text(encoding="utf-8"), encoding="utf-8")
    path = tmp_path / "vid2context.db"
    old = SQLiteDatabase(path, migrations=before)
    old._writer.execute("BEGIN")
    for statement, params in legacy_video_sql():
        old._writer.execute(statement, params)
    old._writer.execute("COMMIT")
    old._close()

    async def scenario() -> None:
        store = SQLiteStorage(path)
        try:
            assert "0003_keyword_stems.sql" in store.database.applied
            await check_legacy_search(store)
            for index in ("segments_fts", "segments_stem"):
                store.database._writer.execute(f"INSERT INTO {index} ({index}) VALUES ('integrity-check')")
        finally:
            await store.close()

    asyncio.run(scenario())
