"""``VectorIndex`` on sqlite-vec, in the library's own SQLite file. Local only (``sqlite3``, threads).

- One ``vec0`` table per embedding space, ``vec_windows_<tag>`` (``EmbeddingSpace.tag``), made at the
  space's first write: ``embedding float[dim] distance_metric=cosine`` and ``video_id`` as a
  metadata column. A query within a few videos scores only their windows (``SCAN_LIMIT``); within
  many, the KNN scan filters by ``video_id``. Vectors of two models never share a table. D1 cannot load sqlite-vec, so these tables are made here, not in
  ``migrations/``.
- Where each window is lives in ``vector_windows`` (``migrations/0004_vector_windows.sql``, the
  SQL in ``vector_rows.py``, shared with the Vectorize index's record in D1); a vector's rowid in
  its ``vec0`` table is its row's ``id`` there.
- Exact: ``vec0`` compares the query with every vector of the space (float32), so there is nothing
  approximate to tune. ``bench/bench_vectors.py`` has the figures, and those of int8 and binary
  quantisation, which this index does not use.
- A write is one transaction, visible to the next query.

Loading an extension needs a ``sqlite3`` built to allow it. Many Pythons are not (pyenv's and
python.org's builds, for instance), so the index opens its own connections to the same file with
``pysqlite3`` (a build of the same module, with its own SQLite, from the ``local`` extra) when this
Python's ``sqlite3`` cannot load extensions; WAL lets both sets of connections share the file.
``open_vector_index`` answers ``None`` when neither can load sqlite-vec: the runtime then has no
vector index and keyword search goes on alone.
"""

from __future__ import annotations

import os
import sqlite3
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
from . import vector_rows
from .sqlite import SQLiteDatabase, _load_vector_extension

__all__ = ["SCAN_LIMIT", "SQLiteVectorIndex", "extension_driver", "open_vector_index", "vec_table"]


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
    """Parameters: the query blob, the space's key, the video ids as JSON, the limit."""
    return (
        f"SELECT w.*, vec_distance_cosine(v.embedding, ?) AS distance FROM vector_windows AS w "
        f"CROSS JOIN {table} AS v ON v.rowid = w.id "  # CROSS: the windows first, by their index
        "WHERE w.space = ? AND w.video_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY distance, w.window_id LIMIT ?"
    )


def _blob(vector: list[float]) -> bytes:
    return array("f", vector).tobytes()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SQLiteVectorIndex:
    """``VectorIndex`` on ``database``, whose connections have sqlite-vec loaded."""

    id = "sqlite-vec"

    def __init__(self, database: SQLiteDatabase, *, scan_limit: int = SCAN_LIMIT) -> None:
        if not database.vector_available:
            raise ValueError("the database's connections did not load sqlite-vec")
        self.database = database
        self.scan_limit = scan_limit

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
                conn.executemany(
                    f"DELETE FROM {vec_table(space)} WHERE rowid = ?", [(r["id"],) for r in stale]
                )
                conn.executemany("DELETE FROM vector_windows WHERE id = ?", [(r["id"],) for r in stale])
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

    async def delete_video(self, video_id: str) -> int:
        def work(conn: sqlite3.Connection) -> int:
            rows = conn.execute(vector_rows.SQL_ROWS_OF_VIDEO, (video_id,)).fetchall()
            by_table: dict[str, list[tuple[int]]] = defaultdict(list)
            for row in rows:
                by_table[f"vec_windows_{row['tag']}"].append((row["id"],))
            for table, rowids in by_table.items():
                conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", rowids)
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
        table = vec_table(space)
        videos = None if within is None else vector_rows.json_ids(within)

        def work(conn: sqlite3.Connection) -> list[VectorHit]:
            if not self._exists(conn, space):
                return []
            if videos is None:
                rows = conn.execute(_knn_sql(table, ""), (blob, top_k)).fetchall()
            else:
                count = conn.execute(_SQL_COUNT, (space.key, videos)).fetchone()[0]
                if not count:
                    return []
                if count <= self.scan_limit:
                    rows = conn.execute(_scan_sql(table), (blob, space.key, videos, top_k)).fetchall()
                else:
                    rows = conn.execute(_knn_sql(table, _WITHIN), (blob, top_k, videos)).fetchall()
            return [hit(vector_rows.window_from_row(row), 1.0 - row["distance"]) for row in rows]

        return await self.database.read(work)

    async def window_ids(self, space: EmbeddingSpace, video_id: str) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            return [row[0] for row in conn.execute(vector_rows.SQL_WINDOW_IDS, (space.key, video_id))]

        return await self.database.read(work)

    async def spaces(self) -> list[SpaceCount]:
        def work(conn: sqlite3.Connection) -> list[SpaceCount]:
            rows = conn.execute(vector_rows.SQL_SPACES).fetchall()
            return [
                SpaceCount(vector_rows.space_from_row(r), int(r["videos"]), int(r["windows"])) for r in rows
            ]

        return await self.database.read(work)

    async def indexed(self, space: EmbeddingSpace, video_ids: Sequence[str]) -> set[str]:
        ids = vector_rows.json_ids(list(dict.fromkeys(video_ids)))

        def work(conn: sqlite3.Connection) -> set[str]:
            return {row[0] for row in conn.execute(vector_rows.SQL_INDEXED, (space.key, ids))}

        return await self.database.read(work)

    @staticmethod
    def _exists(conn: sqlite3.Connection, space: EmbeddingSpace) -> bool:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (vec_table(space),)
        )
        return found.fetchone() is not None

    async def close(self) -> None:
        await self.database.close()
