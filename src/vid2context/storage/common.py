"""Pure helpers every storage backend shares: cursors, limits, and the SQL (with its row mapping)
that SQLite and D1 both run.

Portable (no I/O): the memory, SQLite and Cloudflare backends import these so that a cursor or a
limit means the same thing on each of them. The keyword query language is ``search/query.py``,
and keyword search itself, the same on every backend, is ``keyword.py``.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import ErrorCode, VidError, per_surface, steps
from ..models import Collection, VideoContext, VideoSummary, VisualItem

__all__ = [
    "COLLECTION_COLUMNS",
    "MAX_BLOB_KEY_BYTES",
    "MAX_LIMIT",
    "ON_SCREEN_IDX",
    "on_screen_passage",
    "SQL_DELETE_SEGMENTS",
    "SQL_DELETE_SEGMENTS_FTS",
    "SQL_DELETE_SEGMENTS_STEM",
    "SQL_COLLECTIONS_NAMED",
    "SQL_COLLECTION_SELECT",
    "SQL_COUNT_VIDEOS",
    "SQL_DELETE_VIDEO",
    "SQL_GET_CONTEXT",
    "SQL_INSERT_SEGMENT",
    "SQL_INSERT_SEGMENTS_FTS",
    "SQL_INSERT_SEGMENTS_STEM",
    "SQL_LIST_VIDEOS",
    "SQL_NAME_HOLDERS",
    "SQL_NEXT_SEQ",
    "SQL_PUT_COLLECTION",
    "SQL_SUMMARIES",
    "SQL_UPSERT_VIDEO",
    "SUMMARY_COLUMNS",
    "check_blob_key",
    "check_limit",
    "collection_from_row",
    "collection_params",
    "decode_cursor",
    "encode_cursor",
    "json_list",
    "name_key",
    "name_taken",
    "put_collection_params",
    "searchable_rows",
    "segment_params",
    "summary_from_row",
    "video_params",
]

MAX_LIMIT = 200
"""The most rows one page or one search answer holds; larger limits are clamped to it."""
MAX_BLOB_KEY_BYTES = 1024
"""R2's limit on a key, applied everywhere so a key that works locally works at the edge."""

_CURSOR_PREFIX = "v1:"
_MAX_SEQ = 2**63 - 1
_SEQ = re.compile(r"[1-9][0-9]{0,18}")


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


# --- pages ----------------------------------------------------------------------------------------


def encode_cursor(seq: int) -> str:
    """The opaque cursor for "rows older than ``seq``": urlsafe base64 of ``v1:<seq>``, unpadded."""
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The sequence number inside ``cursor``; ``bad-request`` for anything ``encode_cursor`` did not
    make (the re-encoded value must match exactly, so padded or altered cursors fail too)."""
    error = _bad(
        "The cursor is not valid.", "Pass back the nextCursor of a previous page unchanged, or omit it."
    )
    if not isinstance(cursor, str) or not 0 < len(cursor) <= 64:
        raise error
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        raise error from None
    digits = text.removeprefix(_CURSOR_PREFIX)
    if not text.startswith(_CURSOR_PREFIX) or not _SEQ.fullmatch(digits) or int(digits) > _MAX_SEQ:
        raise error
    if encode_cursor(int(digits)) != cursor:
        raise error
    return int(digits)


def check_limit(limit: int, maximum: int = MAX_LIMIT) -> int:
    """``limit`` clamped to ``maximum``; ``bad-request`` when it is not a positive whole number."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise _bad(
            f"limit must be a whole number from 1 to {maximum}.", f"Use a limit between 1 and {maximum}."
        )
    return min(limit, maximum)


def check_blob_key(key: str) -> str:
    """``key`` when every backend can hold it; ``bad-request`` when empty, too long or holding NUL."""
    try:
        size = len(key.encode()) if isinstance(key, str) else 0
    except UnicodeEncodeError:  # a lone surrogate
        size = 0
    if not 0 < size <= MAX_BLOB_KEY_BYTES or "\x00" in key:
        raise _bad(
            "The blob key is empty, too long or holds a NUL character.",
            f"Use a key of 1 to {MAX_BLOB_KEY_BYTES} bytes.",
        )
    return key


# --- rows and SQL shared by SQLite and D1 (tables in migrations/) ---------------------
#
# Positional ``?`` parameters only (D1 has no named ones), at most 100 per statement (D1's limit).

SUMMARY_COLUMNS = (
    "id", "title", "platform", "url", "channel", "duration_sec", "published_at", "origin", "language",
    "tokens", "fetched_at",
)  # fmt: skip
"""``videos`` columns that hold the ``VideoSummary`` fields, in this order."""

SQL_LIST_VIDEOS = (
    f"SELECT seq, {', '.join(SUMMARY_COLUMNS)} FROM videos WHERE seq < ? ORDER BY seq DESC LIMIT ?"
)
"""Parameters: the cursor's seq (``2**63 - 1`` for the first page), ``limit + 1``."""

SQL_GET_CONTEXT = "SELECT context, blob_key FROM videos WHERE id = ?"

SQL_NEXT_SEQ = (
    "UPDATE sequences SET value = value + 1 "
    "WHERE name = 'videos' AND NOT EXISTS (SELECT 1 FROM videos WHERE id = ?)"
)
"""First statement of a save: takes a new seq only when the video is not saved yet."""

SQL_UPSERT_VIDEO = (
    f"INSERT INTO videos ({', '.join(SUMMARY_COLUMNS)}, updated_at, context, blob_key, seq) "
    f"VALUES ({', '.join('?' * (len(SUMMARY_COLUMNS) + 3))}, (SELECT value FROM sequences WHERE name = 'videos')) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*SUMMARY_COLUMNS[1:], "updated_at", "context", "blob_key"))
)
"""Parameters: ``video_params()``. A replaced video keeps its seq, so its place in the list."""

SQL_DELETE_SEGMENTS_FTS = (
    "DELETE FROM segments_fts WHERE rowid IN (SELECT id FROM segments WHERE video_id = ?)"
)
SQL_DELETE_SEGMENTS_STEM = (
    "DELETE FROM segments_stem WHERE rowid IN (SELECT id FROM segments WHERE video_id = ?)"
)
SQL_DELETE_SEGMENTS = "DELETE FROM segments WHERE video_id = ?"
SQL_INSERT_SEGMENT = "INSERT INTO segments (video_id, idx, start_sec, end_sec, text) VALUES (?, ?, ?, ?, ?)"
"""Parameters: each of ``segment_params()``; D1 can take up to 20 rows per statement."""
SQL_INSERT_SEGMENTS_FTS = "INSERT INTO segments_fts (rowid, text, video_id, idx) SELECT id, text, video_id, idx FROM segments WHERE video_id = ?"
SQL_INSERT_SEGMENTS_STEM = "INSERT INTO segments_stem (rowid, text, video_id) SELECT id, text, video_id FROM segments WHERE video_id = ?"
SQL_DELETE_VIDEO = "DELETE FROM videos WHERE id = ?"
"""A save is, in one transaction: NEXT_SEQ, UPSERT_VIDEO, DELETE_SEGMENTS_FTS, DELETE_SEGMENTS_STEM,
DELETE_SEGMENTS, INSERT_SEGMENT for each segment, INSERT_SEGMENTS_FTS, INSERT_SEGMENTS_STEM. A
delete: DELETE_SEGMENTS_FTS, DELETE_SEGMENTS_STEM, DELETE_SEGMENTS, DELETE_VIDEO (the indexes
first: FTS5 reads the text it unindexes from ``segments``)."""


SQL_SUMMARIES = (
    f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM videos WHERE id IN (SELECT value FROM json_each(?))"
)
"""Parameter: the ids as a JSON list (one parameter however many ids); order the rows in code."""

SQL_COUNT_VIDEOS = "SELECT COUNT(*) AS n FROM videos"


def json_list(values: list[str]) -> str:
    """A list of strings as the JSON text ``json_each(?)`` reads."""
    return _json_text(values)


def video_params(
    summary: VideoSummary, *, updated_at: str, context_json: str | None, blob_key: str | None
) -> tuple:
    """Parameters of ``SQL_UPSERT_VIDEO``."""
    return (*(getattr(summary, c) for c in SUMMARY_COLUMNS), updated_at, context_json, blob_key)


ON_SCREEN_IDX = 1_000_000_000
"""``segments.idx`` from which a row is a stretch of on-screen text, not a transcript segment:
keyword search finds both through the same indexes, and a hit's ``kind`` comes from its ``idx``.
Saved after the transcript, so a video's rows stay one rowid range in ``idx`` order."""


def on_screen_passage(item: VisualItem) -> str:
    """A stretch of on-screen text as one passage: its lines joined by `` / ``, blank ones left out
    (what keyword search indexes and what the vector index embeds)."""
    return " / ".join(line for line in item.text.splitlines() if line.strip())


def searchable_rows(context: VideoContext) -> list[tuple[int, float, float, str]]:
    """``(idx, start_sec, end_sec, text)`` of every passage keyword search finds: the transcript's
    segments, then the on-screen stretches (lines joined by `` / ``) from ``ON_SCREEN_IDX``."""
    segments = context.transcript.segments if context.transcript else []
    rows = [(i, s.start_sec, s.end_sec, s.text) for i, s in enumerate(segments)]
    for j, item in enumerate(context.visual or []):
        text = on_screen_passage(item)
        if text:
            rows.append((ON_SCREEN_IDX + j, item.start_sec, item.end_sec, text))
    return rows


def segment_params(context: VideoContext) -> list[tuple]:
    """Parameters of ``SQL_INSERT_SEGMENT``, one tuple per searchable row."""
    return [(context.id, *row) for row in searchable_rows(context)]


def summary_from_row(row: Mapping[str, Any]) -> VideoSummary:
    """A ``VideoSummary`` from a ``videos`` row (``sqlite3.Row`` or a D1 result dict)."""
    return VideoSummary(**{c: row[c] for c in SUMMARY_COLUMNS})


_COLLECTION_JSON = {"sources", "schedule"}
_COLLECTION_COLUMNS = ("id", "name", "description", "sources", "schedule", "created_at", "updated_at")
_COLLECTION_WIRE = {f.name: f.encode_name for f in msgspec.structs.fields(Collection)}

COLLECTION_COLUMNS = (*_COLLECTION_COLUMNS, "extra")
"""``collections`` columns, in the order of ``collection_params()``. ``extra`` holds, as JSON, any
``Collection`` field added after the table was made, so a new field needs no migration."""


# --- collection names ------------------------------------------------------------------------------

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def name_key(name: str) -> str:
    """How collection names compare: trimmed, ASCII letters in either case alike, every other
    character as it is. SQL's ``lower(trim(name))`` gives the same key for a stored (trimmed) name,
    so the migration that filled ``collections.name_key`` and this function agree on every backend
    (D1 and SQLite have no Unicode case folding without ICU)."""
    return name.strip().translate(_ASCII_LOWER)


def name_taken(name: str, ids: list[str]) -> VidError:
    """The error for a name another collection holds; the hint names it by id."""
    message = f"A collection named {name[:80]!r} exists already; collection names are unique."
    if not ids:  # it went away in between: nothing to point at
        return VidError(
            ErrorCode.BAD_REQUEST,
            message,
            hint=steps("Choose another name, or repeat the call ({collections} lists the names taken)."),
        )
    first = ids[0]
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"{message[:-1]} (it is {', '.join(ids[:5])}).",
        hint=per_surface(
            rest=f"Use {first} (GET /api/v1/collections/{first}), or choose another name.",
            mcp=f"Use {first} (get_collection and add_to_collection take it), or choose another name.",
        ),
    )


SQL_COLLECTION_SELECT = (
    f"SELECT {', '.join('c.' + c for c in COLLECTION_COLUMNS)}, "
    "(SELECT COUNT(*) FROM collection_items AS i WHERE i.collection_id = c.id AND i.state = 'saved') AS video_count "
    "FROM collections AS c"
)
"""Collection rows with ``video_count``; add ``WHERE`` and ``ORDER BY``."""
SQL_COLLECTIONS_NAMED = f"{SQL_COLLECTION_SELECT} WHERE c.name_key = ? ORDER BY c.created_at, c.id"
"""Parameter: ``name_key(name)``."""
SQL_PUT_COLLECTION = (
    f"INSERT INTO collections ({', '.join(COLLECTION_COLUMNS)}, name_key) "
    f"SELECT {', '.join('?' * (len(COLLECTION_COLUMNS) + 1))} "
    "WHERE NOT EXISTS (SELECT 1 FROM collections WHERE name_key = ? AND id <> ?) "
    "OR EXISTS (SELECT 1 FROM collections WHERE id = ? AND name = ?) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*COLLECTION_COLUMNS[1:], "name_key"))
)
"""Create or replace a collection unless another one holds its name (one statement, so the check
and the write cannot be split by a concurrent writer); no row changes when the name is taken. A
collection that already has exactly this name keeps it: twins made before names were unique can
still be saved, and renaming one of them away resolves the clash. Parameters:
``put_collection_params``. (``INSERT ... SELECT`` needs its ``WHERE`` before ``ON CONFLICT``.)"""
SQL_NAME_HOLDERS = "SELECT id FROM collections WHERE name_key = ? AND id <> ? ORDER BY created_at, id"
"""The other collections with this name: parameters ``name_key(name)``, the id being saved."""


def put_collection_params(collection: Collection) -> tuple:
    """Parameters of ``SQL_PUT_COLLECTION``."""
    key = name_key(collection.name)
    return (*collection_params(collection), key, key, collection.id, collection.id, collection.name)


def collection_params(collection: Collection) -> tuple:
    wire = msgspec.to_builtins(collection)
    wire.pop(_COLLECTION_WIRE["video_count"], None)
    values = []
    for column in _COLLECTION_COLUMNS:
        value = wire.pop(_COLLECTION_WIRE[column])
        values.append(_json_text(value) if column in _COLLECTION_JSON and value is not None else value)
    return (*values, _json_text(wire))


def collection_from_row(row: Mapping[str, Any], video_count: int = 0) -> Collection:
    wire = msgspec.json.decode(row["extra"] or "{}")
    for column in _COLLECTION_COLUMNS:
        value = row[column]
        wire[_COLLECTION_WIRE[column]] = (
            msgspec.json.decode(value) if column in _COLLECTION_JSON and value else value
        )
    wire[_COLLECTION_WIRE["video_count"]] = video_count
    return msgspec.convert(wire, Collection)


def _json_text(value: Any) -> str:
    return msgspec.json.encode(value).decode()
