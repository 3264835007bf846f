"""The SQL of ``vector_spaces``, ``vector_windows`` and ``vector_videos`` (``migrations/0004`` and
``0005``), which
the SQLite vector index and the Vectorize index's record in D1 both run, with its row mapping.

Portable (no I/O). Positional ``?`` parameters only, and rows go in as one JSON parameter read with
``json_each``, so a statement stays within D1's 100 parameters whatever the number of rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..models import EmbeddingSpace
from ..search.windows import WindowRef

__all__ = [
    "SQL_DELETE_LEDGER",
    "SQL_DELETE_VIDEO",
    "SQL_DELETE_WINDOWS",
    "SQL_INDEXED",
    "SQL_LEDGER_VIDEO",
    "SQL_LEDGER_VIDEOS",
    "SQL_SPACES",
    "SQL_INSERT_SPACE",
    "SQL_ROWS_OF_VIDEO",
    "SQL_UPSERT_WINDOWS",
    "SQL_WINDOWS",
    "SQL_WINDOW_IDS",
    "json_ids",
    "json_rows",
    "space_from_row",
    "space_params",
    "window_from_row",
    "window_row",
]

_COLUMNS = (
    "window_id", "video_id", "start_sec", "end_sec", "first_segment", "last_segment", "part",
    "chapter_index", "chapter_title",
)  # fmt: skip

SQL_INSERT_SPACE = (
    "INSERT INTO vector_spaces (key, tag, model, dim, pooling, created_at) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (key) DO NOTHING"
)
"""Parameters: ``space_params(space)`` and the time of its first write."""

SQL_SPACES = (
    "SELECT s.model, s.dim, s.pooling, COUNT(v.video_id) AS videos, COALESCE(SUM(v.windows), 0) AS windows "
    "FROM vector_spaces AS s LEFT JOIN vector_videos AS v ON v.space = s.key WHERE s.pooling <> '' "
    "GROUP BY s.key ORDER BY videos DESC, s.created_at, s.key"
)
"""Every space that can be searched (spaces from before poolings were recorded cannot), with the
videos and windows its ledger holds, most videos first."""

SQL_LEDGER_VIDEO = (
    "INSERT INTO vector_videos (space, video_id, windows, indexed_at) "
    "VALUES (?, ?, (SELECT COUNT(*) FROM vector_windows WHERE space = ? AND video_id = ?), ?) "
    "ON CONFLICT (space, video_id) DO UPDATE SET windows = excluded.windows, indexed_at = excluded.indexed_at"
)
"""Parameters: the space's key, the video id, the key and id again, the time. After a video's
windows were replaced: its row, with 0 windows when it has none."""

SQL_LEDGER_VIDEOS = (
    "INSERT INTO vector_videos (space, video_id, windows, indexed_at) "
    "SELECT space, video_id, COUNT(*), ? FROM vector_windows "
    "WHERE space = ? AND video_id IN (SELECT value FROM json_each(?)) GROUP BY video_id "
    "ON CONFLICT (space, video_id) DO UPDATE SET windows = excluded.windows, indexed_at = excluded.indexed_at"
)
"""Parameters: the time, the space's key, the video ids as JSON. After windows were upserted."""

SQL_INDEXED = (
    "SELECT video_id FROM vector_videos WHERE space = ? AND video_id IN (SELECT value FROM json_each(?))"
)
SQL_DELETE_LEDGER = "DELETE FROM vector_videos WHERE video_id = ?"

SQL_UPSERT_WINDOWS = (
    f"INSERT INTO vector_windows (space, {', '.join(_COLUMNS)}) SELECT ?, "
    + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(_COLUMNS)))
    + " FROM json_each(?) WHERE true ORDER BY key ON CONFLICT (space, window_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:])
)
"""Parameters: the space's key, a JSON list of ``window_row()``. A replaced window keeps its ``id``."""

_SELECT = f"SELECT id, {', '.join(_COLUMNS)} FROM vector_windows"

SQL_WINDOWS = f"{_SELECT} WHERE space = ? AND window_id IN (SELECT value FROM json_each(?))"
"""Parameters: the space's key, the window ids as a JSON list."""

SQL_WINDOW_IDS = "SELECT window_id FROM vector_windows WHERE space = ? AND video_id = ? ORDER BY window_id"

SQL_ROWS_OF_VIDEO = (
    "SELECT w.id, w.window_id, w.space, s.tag FROM vector_windows AS w "
    "JOIN vector_spaces AS s ON s.key = w.space WHERE w.video_id = ? ORDER BY w.space, w.window_id"
)
"""A video's windows in every space, with each space's tag."""

SQL_DELETE_WINDOWS = (
    "DELETE FROM vector_windows WHERE space = ? AND window_id IN (SELECT value FROM json_each(?))"
)
SQL_DELETE_VIDEO = "DELETE FROM vector_windows WHERE video_id = ?"

_encode = msgspec.json.Encoder().encode


def window_row(window: WindowRef) -> tuple[Any, ...]:
    """One row of ``SQL_UPSERT_WINDOWS``'s JSON list."""
    return tuple(getattr(window, "id" if column == "window_id" else column) for column in _COLUMNS)


def json_rows(windows: list[WindowRef]) -> str:
    """``window_row()`` of each, as the JSON text ``json_each(?)`` reads."""
    return _encode([window_row(window) for window in windows]).decode()


def json_ids(ids: list[str]) -> str:
    """Ids as the JSON text ``json_each(?)`` reads."""
    return _encode(ids).decode()


def window_from_row(row: Mapping[str, Any]) -> WindowRef:
    """A ``WindowRef`` from a row of ``SQL_WINDOWS`` (``sqlite3.Row`` or a D1 result dict, whose
    numbers may be ints where the column is REAL)."""

    def optional_int(value: Any) -> int | None:
        return None if value is None else int(value)

    return WindowRef(
        id=row["window_id"],
        video_id=row["video_id"],
        start_sec=float(row["start_sec"]),
        end_sec=float(row["end_sec"]),
        first_segment=int(row["first_segment"]),
        last_segment=int(row["last_segment"]),
        part=optional_int(row["part"]),
        chapter_index=optional_int(row["chapter_index"]),
        chapter_title=row["chapter_title"],
    )


def space_params(space: EmbeddingSpace) -> tuple[str, str, str, int, str]:
    """The first parameters of ``SQL_INSERT_SPACE``: key, tag, model, dim, pooling."""
    return (space.key, space.tag, space.model, space.dim, space.pooling)


def space_from_row(row: Mapping[str, Any]) -> EmbeddingSpace:
    """The space of a ``SQL_SPACES`` row."""
    return EmbeddingSpace(model=row["model"], dim=int(row["dim"]), pooling=row["pooling"])
