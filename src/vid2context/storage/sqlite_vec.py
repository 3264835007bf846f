"""``VectorIndex`` on sqlite-vec, in the library's own SQLite file. Local only (``sqlite3``, threads).

- One ``vec0`` table per embedding space, ``vec_windows_<tag>`` (``EmbeddingSpace.tag``), made at the
  space's first write: ``embedding float[dim] distance_metric=cosine`` and ``video_id`` as a
  metadata column. A query within a few videos scores only their windows (``SCAN_LIMIT``); within
  many, the KNN scan filters by ``video_id``. Vectors of two models never share a table. D1 cannot load sqlite-vec, so these tables are made here, not in
  ``migrations/``.
- Where each window is lives in ``vector_windows`` (``migrations/0004_vector_windows.sql``, the
  SQL in ``vector_rows.py``, shared with the Vectorize index's record in D1); a vector's rowid in
  its ``vec0`` table is its row's ``id`` there.
- Small spaces are searched exactly: ``vec0`` compares the query with every vector (float32).
- A space of more than ``PREFILTER_ABOVE`` vectors also has its prefilter: a bit table,
  ``vec_bits_<tag>`` (``embedding bit[dim]``, ``vec_quantize_binary`` of each vector, same
  rowids, 1/32 of the size, in ``PARTS`` partitions), and a plain table of the same float32
  vectors, ``vec_floats_<tag>`` (a rowid and a blob), both kept in step by every write and
  delete. A query over the whole space takes the best ``top_k x OVERSAMPLE`` by Hamming
  distance and re-scores just those exactly in float32, read from the plain table: one b-tree
  lookup each, where ``vec0`` reads a vector out of its 1,024-vector chunk blob (some 0.17 ms a
  vector at 400,000, so 25 ms for 150, against 1 ms from the plain table). The Hamming
  distances come from an in-memory copy of the bit table with numpy (``sqlite_vec_bits.py``:
  about 5 ms for 400,000), or from vec0's KNN over the bit table while that copy is missing or
  older than the last write (some 25 ms). ``bench/bench_vectors.py`` and
  ``bench/bench_search.py`` have the figures against the exact scan, which stays the reference.
  A query within videos stays exact: few windows are scored one by one (from the plain table
  when there is one), many through the float KNN with its filter. ``oversample=0`` makes every
  query exact.
- The prefilter is made lazily, in one write transaction: by the write that takes a space past
  the threshold, or, for a library saved before this index had one (or had only its bit
  table), in the background after its first query (logged, with the time it took: a minute or
  two for 400,000 vectors on two shared cores, during which other writes wait and reads go on).
  Until it is there, queries scan exactly; start-up never waits for it. A space that shrinks
  below the threshold keeps it.
- A write is one transaction, visible to the next query.

Loading an extension needs a ``sqlite3`` built to allow it. Many Pythons are not (pyenv's and
python.org's builds, for instance), so the index opens its own connections to the same file with
``pysqlite3`` (a build of the same module, with its own SQLite, from the ``local`` extra) when this
Python's ``sqlite3`` cannot load extensions; WAL lets both sets of connections share the file.
``open_vector_index`` answers ``None`` when neither can load sqlite-vec: the runtime then has no
vector index and keyword search goes on alone.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import time
from array import array
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from types import ModuleType

from ..models import EmbeddingSpace
from ..search.vectors import (
    MAX_BATCH,
    SpaceCount,
    VectorHit,
    VectorRecord,
    check_records,
    check_space,
    check_top_k,
    check_vector,
    check_video_ids,
    hit,
)
from ..search.windows import WindowRef
from . import sqlite_vec_bits, vector_rows
from .sqlite import SQLiteDatabase, _load_vector_extension

__all__ = [
    "OVERSAMPLE",
    "PREFILTER_ABOVE",
    "SCAN_LIMIT",
    "SQLiteVectorIndex",
    "bits_table",
    "extension_driver",
    "floats_table",
    "open_vector_index",
    "vec_table",
]

log = logging.getLogger(__name__)


def extension_driver() -> ModuleType | None:
    """A DB-API module whose connections can load extensions: ``sqlite3`` when this Python's can,
    else ``pysqlite3``'s when it is installed, else ``None``."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        from pysqlite3 import dbapi2
    except ImportError:
        return None
    return dbapi2 if hasattr(dbapi2.Connection, "enable_load_extension") else None


def open_vector_index(path: str | os.PathLike[str], *, readers: int = 2) -> SQLiteVectorIndex | None:
    """The vector index in the SQLite file at ``path`` (the library's), or ``None`` when sqlite-vec
    is not installed or no ``sqlite3`` here can load it."""
    driver = extension_driver()
    if driver is None:
        return None
    probe = driver.connect(":memory:")
    try:
        if not _load_vector_extension(probe):
            return None
    finally:
        probe.close()
    return SQLiteVectorIndex(SQLiteDatabase(path, readers=readers, driver=driver))


def vec_table(space: EmbeddingSpace) -> str:
    """The ``vec0`` table of ``space`` (its tag is ``[a-z2-7]`` only, so it needs no quoting)."""
    return f"vec_windows_{space.tag}"


def bits_table(space: EmbeddingSpace) -> str:
    """The bit table of ``space``, the prefilter of its ``vec0`` table (same rowids)."""
    return f"vec_bits_{space.tag}"


def floats_table(space: EmbeddingSpace) -> str:
    """The plain table of ``space``'s float32 vectors that the prefilter re-scores from."""
    return f"vec_floats_{space.tag}"


PREFILTER_ABOVE = 20_000
"""A space of more vectors than this gets its bit table and is searched through it. Below it the
exact scan is quick (about 11 ms for 20,000 vectors, 220 ms for 400,000, on two shared cores:
``bench/bench_vectors.py``), and it is exact."""

OVERSAMPLE = 3
"""Candidates the bit table gives for each hit wanted, re-scored in float32. vec0 picks its top k
in time that grows with k (about 0.7 ms per candidate at 400,000 vectors), so candidates cost
more to find than to re-score. With the test model on the labelled set (``tests/test_vector_prefilter.py``),
3 keeps every query's top hit and 0.79 of its top ten (2: 0.71, 4: 0.85); on bench_vectors' clustered vectors
the top ten are exact."""

PARTS = 8
"""The bit table's parts (``rowid % PARTS``, a vec0 partition key), each searched for its own
best: vec0 picks a top k in time proportional to vectors x k, so eight searches for an eighth
of the k (twice that, for safety) each take about a third of the time of one (``bench/bench_vectors.py``)."""

SCAN_LIMIT = 50_000
"""A query within videos holding at most this many windows scores just those, found by
``vector_windows``' index, one rowid lookup each: far quicker than ``vec0``'s KNN with its
``video_id`` filter, which reads the filter column of every vector of the space
(``bench/bench_vectors.py``). Above it, the KNN scan with the filter wins. Both are exact."""

_WITHIN = " AND video_id IN (SELECT value FROM json_each(?))"
_SQL_COUNT = (
    "SELECT COUNT(*) FROM vector_windows WHERE space = ? AND video_id IN (SELECT value FROM json_each(?))"
)


def _knn_sql(table: str, restrict: str) -> str:
    """Parameters: the query blob, k, then (with ``_WITHIN``) the video ids as JSON."""
    return (
        f"SELECT w.*, k.distance FROM (SELECT rowid, distance FROM {table} "
        f"WHERE embedding MATCH ? AND k = ?{restrict}) AS k "
        "JOIN vector_windows AS w ON w.id = k.rowid ORDER BY k.distance, w.window_id"
    )


def _scan_sql(table: str) -> str:
    """Parameters: the query blob, the space's key, the video ids as JSON, the limit.

    ``table`` is the vec0 table or the plain one (both keyed by the window's rowid)."""
    return (
        f"SELECT w.*, vec_distance_cosine(v.embedding, ?) AS distance FROM vector_windows AS w "
        f"CROSS JOIN {table} AS v ON v.rowid = w.id "  # CROSS: the windows first, by their index
        "WHERE w.space = ? AND w.video_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY distance, w.window_id LIMIT ?"
    )


def _prefilter_sql(floats: str, bits: str) -> str:
    """Parameters: the query blob, each part's candidates, all the candidates, k.

    Each of the ``PARTS`` parts gives its best by Hamming distance (twice its share, so the
    best overall are nearly always among them), the best of those are re-scored in float32
    from the plain table ``floats``."""
    parts = " UNION ALL ".join(
        f"SELECT * FROM (SELECT rowid, distance FROM {bits} "
        f"WHERE embedding MATCH vec_quantize_binary(?1) AND k = ?2 AND part = {part})"
        for part in range(PARTS)
    )
    return (
        f"SELECT w.*, vec_distance_cosine(v.embedding, ?1) AS distance "
        f"FROM (SELECT rowid FROM ({parts}) ORDER BY distance LIMIT ?3) AS c "
        f"CROSS JOIN {floats} AS v ON v.rowid = c.rowid CROSS JOIN vector_windows AS w ON w.id = c.rowid "
        "ORDER BY distance, w.window_id LIMIT ?4"
    )


def _rescore_sql(floats: str) -> str:
    """Parameters: the query blob, the candidates' rowids as JSON, k. One lookup per candidate
    (``rowid IN (...)`` would scan)."""
    return (
        f"SELECT w.*, vec_distance_cosine(v.embedding, ?1) AS distance FROM json_each(?2) AS c "
        f"CROSS JOIN {floats} AS v ON v.rowid = c.value CROSS JOIN vector_windows AS w ON w.id = c.value "
        "ORDER BY distance, w.window_id LIMIT ?3"
    )


_SQL_SPACE_SIZE = "SELECT COALESCE(SUM(windows), 0) FROM vector_videos WHERE space = ?"


def _blob(vector: list[float]) -> bytes:
    return array("f", vector).tobytes()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SQLiteVectorIndex:
    """``VectorIndex`` on ``database``, whose connections have sqlite-vec loaded."""

    id = "sqlite-vec"

    def __init__(
        self,
        database: SQLiteDatabase,
        *,
        scan_limit: int = SCAN_LIMIT,
        prefilter_above: int = PREFILTER_ABOVE,
        oversample: int = OVERSAMPLE,
        in_memory: bool = True,
    ) -> None:
        if not database.vector_available:
            raise ValueError("the database's connections did not load sqlite-vec")
        if oversample < 0:
            raise ValueError("oversample must be 0 (every query exact) or more")
        self.database = database
        self.scan_limit = scan_limit
        self.prefilter_above = prefilter_above
        self.oversample = oversample
        self.in_memory = in_memory and sqlite_vec_bits.available()
        """Whether the prefilter's Hamming distances come from an in-memory copy of the bit table
        (numpy), else always from vec0's KNN."""
        self._checked: set[str] = set()  # spaces whose prefilter this process has seen to
        self._backfills: dict[str, asyncio.Task[int]] = {}
        self._copies: dict[str, sqlite_vec_bits.BitCopy] = {}
        self._loading: dict[str, asyncio.Task[None]] = {}
        self._stale: set[str] = set()  # spaces a query found without a current copy
        self._spaces: tuple[int, list[SpaceCount]] | None = None  # (data_version, answer)

    # --- writes ---------------------------------------------------------------------------------

    async def upsert(self, space: EmbeddingSpace, records: Sequence[VectorRecord]) -> None:
        checked = check_records(space, records)
        if not checked:
            return
        videos = vector_rows.json_ids(list(dict.fromkeys(window.video_id for window, _ in checked)))

        def work(conn: sqlite3.Connection) -> None:
            self._write(conn, space, checked)
            conn.execute(vector_rows.SQL_LEDGER_VIDEOS, (_now(), space.key, videos))

        await self.database.write(work)

    async def replace_video(
        self, space: EmbeddingSpace, video_id: str, records: Sequence[VectorRecord]
    ) -> None:
        checked = check_records(space, records, video_id=video_id)
        keep = {window.id for window, _ in checked}

        def work(conn: sqlite3.Connection) -> None:
            if checked:
                self._write(conn, space, checked)
            else:
                conn.execute(vector_rows.SQL_INSERT_SPACE, (*vector_rows.space_params(space), _now()))
            if self._exists(conn, space):
                rows = conn.execute(vector_rows.SQL_ROWS_OF_VIDEO, (video_id,)).fetchall()
                stale = [row for row in rows if row["space"] == space.key and row["window_id"] not in keep]
                for table in (vec_table(space), bits_table(space), floats_table(space)):
                    if _table_exists(conn, table):
                        conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(r["id"],) for r in stale])
                conn.executemany("DELETE FROM vector_windows WHERE id = ?", [(r["id"],) for r in stale])
                sqlite_vec_bits.bump(conn, space.key)
            conn.execute(vector_rows.SQL_LEDGER_VIDEO, (space.key, video_id, space.key, video_id, _now()))

        await self.database.write(work)

    def _write(
        self, conn: sqlite3.Connection, space: EmbeddingSpace, checked: list[tuple[WindowRef, list[float]]]
    ) -> None:
        table = vec_table(space)
        conn.execute(vector_rows.SQL_INSERT_SPACE, (*vector_rows.space_params(space), _now()))
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
            f"embedding float[{space.dim}] distance_metric=cosine, video_id text)"
        )
        bits = _table_exists(conn, bits_table(space))
        floats = _table_exists(conn, floats_table(space))
        for start in range(0, len(checked), MAX_BATCH):
            chunk = checked[start : start + MAX_BATCH]
            windows = [window for window, _ in chunk]
            conn.execute(vector_rows.SQL_UPSERT_WINDOWS, (space.key, vector_rows.json_rows(windows)))
            ids_json = vector_rows.json_ids([window.id for window in windows])
            rowids = {
                r["window_id"]: r["id"] for r in conn.execute(vector_rows.SQL_WINDOWS, (space.key, ids_json))
            }
            rows = [(rowids[window.id], _blob(vector), window.video_id) for window, vector in chunk]
            conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(row[0],) for row in rows])
            conn.executemany(f"INSERT INTO {table} (rowid, embedding, video_id) VALUES (?, ?, ?)", rows)
            pairs = [(row[0], row[1]) for row in rows]
            if bits:
                bit_table = bits_table(space)
                conn.executemany(f"DELETE FROM {bit_table} WHERE rowid = ?", [(rowid,) for rowid, _ in pairs])
                conn.executemany(
                    f"INSERT INTO {bit_table} (rowid, part, embedding) "
                    f"VALUES (?1, ?1 % {PARTS}, vec_quantize_binary(?2))",
                    pairs,
                )
            if floats:
                conn.executemany(
                    f"INSERT OR REPLACE INTO {floats_table(space)} (id, embedding) VALUES (?, ?)", pairs
                )
        if not (bits and floats):
            self._fill_prefilter_if_due(conn, space, extra=len(checked))
        sqlite_vec_bits.bump(conn, space.key)

    def _fill_prefilter_if_due(
        self, conn: sqlite3.Connection, space: EmbeddingSpace, *, extra: int = 0
    ) -> int:
        """Make and fill the prefilter's tables of ``space`` that are missing, when it holds more
        than ``prefilter_above`` vectors or already has one of them (a library from before the
        plain table); the vectors written, else 0. In the caller's write transaction.

        The ledger is counted (``extra``: windows written in this transaction, which it does not
        hold yet), so this may make the tables a write early, never a query wrong."""
        table, bits, floats = vec_table(space), bits_table(space), floats_table(space)
        has_bits, has_floats = _table_exists(conn, bits), _table_exists(conn, floats)
        if has_bits and has_floats:
            return 0
        held = conn.execute(_SQL_SPACE_SIZE, (space.key,)).fetchone()[0]
        if not (has_bits or has_floats) and held + extra <= self.prefilter_above:
            return 0
        log.info(
            "vector index: making the prefilter of %s's %d vectors (about a minute per 250,000); "
            "searches stay exact and other writes wait until it is done",
            space.model, held + extra,
        )  # fmt: skip
        if has_bits and not has_floats:
            # A bit table from before the plain table may hold vectors written after it was made
            # without their part (vec0 took them as part NULL, which no query reads): made again.
            conn.execute(f"DROP TABLE {bits}")
            has_bits = False
        if not has_bits:
            conn.execute(
                f"CREATE VIRTUAL TABLE {bits} USING vec0(part integer partition key, embedding bit[{space.dim}])"
            )
            conn.execute(
                f"INSERT INTO {bits} (rowid, part, embedding) "
                f"SELECT rowid, rowid % {PARTS}, vec_quantize_binary(embedding) FROM {table}"
            )
        if not has_floats:
            conn.execute(f"CREATE TABLE {floats} (id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
            conn.execute(f"INSERT INTO {floats} (id, embedding) SELECT rowid, embedding FROM {table}")
        sqlite_vec_bits.bump(conn, space.key)
        return int(conn.execute(f"SELECT COUNT(*) FROM {floats}").fetchone()[0])

    async def build_prefilter(self, space: EmbeddingSpace) -> int:
        """Make the prefilter of ``space`` now if it is due (more than ``prefilter_above`` vectors,
        none yet, or only its bit table): the vectors it holds, 0 when there was nothing to do.
        One write transaction, which other writes wait for (a minute or two at 400,000 vectors);
        reads go on."""
        check_space(space)
        started = time.perf_counter()

        def work(conn: sqlite3.Connection) -> int:
            if not _table_exists(conn, vec_table(space)):
                return 0
            return self._fill_prefilter_if_due(conn, space)

        made = await self.database.write(work)
        if made:
            log.info(
                "vector index: the binary prefilter of %s holds its %d vectors (%.1f s)",
                space.model, made, time.perf_counter() - started,
            )  # fmt: skip
        return made

    def _backfill_later(self, space: EmbeddingSpace) -> None:
        """After a space's first query in this process: make its prefilter in the background if
        a library from before prefilters needs one (queries stay exact until it is there)."""
        if space.key in self._checked or not self.oversample:
            return
        self._checked.add(space.key)
        task = asyncio.get_running_loop().create_task(self.build_prefilter(space))
        self._backfills[space.key] = task
        task.add_done_callback(self._backfill_done)

    @staticmethod
    def _backfill_done(task: asyncio.Task[int]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.warning("vector index: the binary prefilter was not made: %s", task.exception())

    async def backfills(self) -> None:
        """Wait for the prefilters being made and the bit tables' copies being loaded in the
        background (tests, the bench, closing)."""
        for task in [*self._backfills.values(), *self._loading.values()]:
            if not task.done():
                await asyncio.wait([task])

    def _load_later(self, space: EmbeddingSpace) -> None:
        """Load a new in-memory copy of the space's bit table in the background (one at a time):
        the last query found the copy missing or older than the last write. Not after a
        process's first query, so that a one-off search (the CLI's) neither loads one nor waits
        at exit for a load it will not use; from its second query on, a process loads it."""
        if space.key not in self._stale:
            self._stale.add(space.key)
            return
        running = self._loading.get(space.key)
        if running is not None and not running.done():
            return
        bits = bits_table(space)

        async def load() -> None:
            started = time.perf_counter()
            copy = await self.database.read(lambda conn: sqlite_vec_bits.load(conn, bits, space.key))
            held = self._copies.get(space.key)
            if held is None or held.generation <= copy.generation:
                self._copies[space.key] = copy
            log.debug(
                "vector index: %d bit vectors of %s in memory (%.2f s)",
                len(copy.rowids), space.model, time.perf_counter() - started,
            )  # fmt: skip

        task = asyncio.get_running_loop().create_task(load())
        self._loading[space.key] = task
        task.add_done_callback(self._load_done)

    def in_memory_vectors(self, space: EmbeddingSpace) -> int:
        """Vectors of the space's bit table this index holds in memory (0: none copied yet)."""
        copy = self._copies.get(space.key)
        return 0 if copy is None else len(copy.rowids)

    @staticmethod
    def _load_done(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.warning("vector index: the bit table was not copied to memory: %s", task.exception())

    async def delete_video(self, video_id: str) -> int:
        def work(conn: sqlite3.Connection) -> int:
            rows = conn.execute(vector_rows.SQL_ROWS_OF_VIDEO, (video_id,)).fetchall()
            by_table: dict[str, list[tuple[int]]] = defaultdict(list)
            for row in rows:
                by_table[f"vec_windows_{row['tag']}"].append((row["id"],))
                by_table[f"vec_bits_{row['tag']}"].append((row["id"],))
                by_table[f"vec_floats_{row['tag']}"].append((row["id"],))
            for table, rowids in by_table.items():
                if _table_exists(conn, table):  # a prefilter only where the space passed the threshold
                    conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", rowids)
            for space_key in {row["space"] for row in rows}:
                sqlite_vec_bits.bump(conn, space_key)
            conn.execute(vector_rows.SQL_DELETE_VIDEO, (video_id,))
            conn.execute(vector_rows.SQL_DELETE_LEDGER, (video_id,))
            return len(rows)

        return await self.database.write(work)

    # --- reads ----------------------------------------------------------------------------------

    async def query(
        self,
        space: EmbeddingSpace,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        video_ids: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        check_space(space)
        blob = _blob(check_vector(space, vector))
        top_k = check_top_k(top_k)
        within = check_video_ids(video_ids)
        if within is not None and not within:
            return []
        table, bits, floats = vec_table(space), bits_table(space), floats_table(space)
        videos = None if within is None else vector_rows.json_ids(within)
        candidates = top_k * self.oversample
        per_part = -(-2 * candidates // PARTS)
        copy = self._copies.get(space.key) if self.in_memory else None

        def work(conn: sqlite3.Connection) -> tuple[list[VectorHit], bool]:
            if not self._exists(conn, space):
                return [], False
            stale = False
            has_floats = _table_exists(conn, floats)
            if videos is None and self.oversample and has_floats and _table_exists(conn, bits):
                if copy is not None and copy.generation == sqlite_vec_bits.generation(conn, space.key):
                    query_bits = conn.execute("SELECT vec_quantize_binary(?)", (blob,)).fetchone()[0]
                    nearest = sqlite_vec_bits.nearest(copy, query_bits, candidates)
                    rows = conn.execute(_rescore_sql(floats), (blob, json.dumps(nearest), top_k)).fetchall()
                else:
                    stale = self.in_memory
                    rows = conn.execute(
                        _prefilter_sql(floats, bits), (blob, per_part, candidates, top_k)
                    ).fetchall()
            elif videos is None:
                rows = conn.execute(_knn_sql(table, ""), (blob, top_k)).fetchall()
            else:
                count = conn.execute(_SQL_COUNT, (space.key, videos)).fetchone()[0]
                if not count:
                    return [], False
                if count <= self.scan_limit:
                    scanned = floats if has_floats else table
                    rows = conn.execute(_scan_sql(scanned), (blob, space.key, videos, top_k)).fetchall()
                else:
                    rows = conn.execute(_knn_sql(table, _WITHIN), (blob, top_k, videos)).fetchall()
            return [hit(vector_rows.window_from_row(row), 1.0 - row["distance"]) for row in rows], stale

        found, stale = await self.database.read(work)
        if stale:
            self._load_later(space)
        self._backfill_later(space)
        return found

    async def window_ids(self, space: EmbeddingSpace, video_id: str) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            return [row[0] for row in conn.execute(vector_rows.SQL_WINDOW_IDS, (space.key, video_id))]

        return await self.database.read(work)

    async def spaces(self) -> list[SpaceCount]:
        """Kept while nothing is written to the file (``SQLiteDatabase.data_version``): every
        search asks, and counting the ledger of 10,000 videos takes about 1.2 ms."""
        version = self.database.data_version()
        if version is not None and self._spaces is not None and self._spaces[0] == version:
            return list(self._spaces[1])

        def work(conn: sqlite3.Connection) -> list[SpaceCount]:
            rows = conn.execute(vector_rows.SQL_SPACES).fetchall()
            return [
                SpaceCount(vector_rows.space_from_row(r), int(r["videos"]), int(r["windows"])) for r in rows
            ]

        found = await self.database.read(work)
        if version is not None and self.database.data_version() == version:  # nothing written meanwhile
            self._spaces = (version, found)
        return list(found)

    async def indexed(self, space: EmbeddingSpace, video_ids: Sequence[str]) -> set[str]:
        ids = vector_rows.json_ids(list(dict.fromkeys(video_ids)))

        def work(conn: sqlite3.Connection) -> set[str]:
            return {row[0] for row in conn.execute(vector_rows.SQL_INDEXED, (space.key, ids))}

        return await self.database.read(work)

    @staticmethod
    def _exists(conn: sqlite3.Connection, space: EmbeddingSpace) -> bool:
        return _table_exists(conn, vec_table(space))

    async def close(self) -> None:
        await self.backfills()
        await self.database.close()


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None
