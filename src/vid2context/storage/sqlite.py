"""The local stores: one SQLite file (library, collections, KV) and blob files beside it.

Local only: this module imports ``sqlite3``, threads and the filesystem, so the Worker never
imports it (``build_local_runtime`` does, lazily).

- One file (``$VID2CONTEXT_HOME/vid2context.db``) in WAL mode, ``synchronous=NORMAL`` (a committed
  save survives the process being killed; only a power cut can lose the last few), foreign keys
  on, a busy timeout so a second process waits instead of failing.
- ``migrations/*.sql``, the files D1 applies too, run at open in name order, each in one
  transaction, recorded in ``_vid2context_migrations``.
- Nothing blocks the event loop: writes run on one dedicated thread with its own connection (one
  writer, as SQLite wants), reads on a small pool of reader threads, each with its own connection,
  so readers proceed while a write is in progress.
- ``sqlite-vec`` is loaded when it is installed and this Python can load extensions;
  ``vector_available`` says whether it did. Keyword search never needs it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import queue
import secrets
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple, TypeVar

import msgspec

from ..errors import ErrorCode, VidError
from ..models import (
    Collection,
    CollectionItem,
    Page,
    SearchHit,
    Segment,
    VideoContext,
    VideoMetadata,
    VideoSummary,
)
from ..search.query import parse_query
from . import common, keyword, keyword_ascending, keyword_pairs
from .base import Blob, summarize
from .common import check_blob_key, check_limit, decode_cursor, encode_cursor
from .sqlite_held import open_held

__all__ = [
    "DEFAULT_FILE",
    "FileBlobs",
    "LocalStores",
    "SQLiteDatabase",
    "SQLiteKv",
    "SQLiteSql",
    "SQLiteStorage",
    "apply_migrations",
    "find_migrations",
    "open_local_stores",
]

DEFAULT_FILE = "vid2context.db"
T = TypeVar("T")

_encode = msgspec.json.Encoder().encode
_decode_context = msgspec.json.Decoder(VideoContext).decode


class _Card(msgspec.Struct, rename="camel"):
    id: str
    metadata: VideoMetadata


_decode_card = msgspec.json.Decoder(_Card).decode
_SQL_CARDS = "SELECT id, context FROM videos WHERE id IN (SELECT value FROM json_each(?))"
_SQL_PASSAGE = "SELECT idx, start_sec, end_sec, text FROM segments WHERE video_id = ? AND idx BETWEEN ? AND ? ORDER BY idx"


def _card(text: str) -> VideoContext:
    card = _decode_card(text)
    return VideoContext(id=card.id, metadata=card.metadata)


_FIRST_PAGE = 2**63 - 1


def find_migrations() -> Path:
    """``migrations/`` inside the installed package (the wheel ships it as ``vid2context/migrations``),
    else the first one found walking up from this file (the source checkout)."""
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "migrations"
        if (candidate / "0001_init.sql").is_file():
            return candidate
    raise FileNotFoundError("vid2context's migrations/ directory was not found beside the package")


def _statements(script: str) -> list[str]:
    """``script`` split into complete statements (semicolons inside strings and comments kept)."""
    statements, start = [], 0
    for end, char in enumerate(script):
        if char == ";" and sqlite3.complete_statement(script[start : end + 1]):
            statements.append(script[start : end + 1].strip())
            start = end + 1
    return statements


def apply_migrations(conn: sqlite3.Connection, directory: Path) -> list[str]:
    """Apply the files of ``directory`` not applied yet, in name order, each in one transaction;
    return their names. Safe when several processes open the same file at once."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _vid2context_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    applied = []
    for path in sorted(directory.glob("*.sql")):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT 1 FROM _vid2context_migrations WHERE name = ?", (path.name,)).fetchone():
                conn.execute("ROLLBACK")
                continue
            for statement in _statements(path.read_text(encoding="utf-8")):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO _vid2context_migrations (name, applied_at) VALUES (?, ?)", (path.name, _now())
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        applied.append(path.name)
    return applied


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load_vector_extension(conn: sqlite3.Connection) -> bool:
    if not hasattr(conn, "enable_load_extension"):  # Python built without extension loading
        return False
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
        return True
    except Exception:  # noqa: BLE001  not installed, or the build refuses: keyword search still works
        return False


class SQLiteDatabase:
    """One SQLite file: a writer connection on its own thread and ``readers`` reader connections.

    Opening is synchronous (it creates the file and applies migrations): do it at start-up.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        readers: int = 4,
        migrations: Path | None = None,
        driver: ModuleType | None = None,
    ) -> None:
        self.driver = driver or sqlite3
        """The DB-API module connections are made with: ``sqlite3``, or a build of it that can load
        extensions where this Python's cannot (``storage/sqlite_vec.py``)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = self._connect()
        try:
            self._writer.execute("PRAGMA journal_mode=WAL")
            self.applied = apply_migrations(self._writer, migrations or find_migrations())
        except BaseException:
            self._writer.close()
            raise
        self.vector_available = _load_vector_extension(self._writer)
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._connections = [self._writer]
        for _ in range(readers):
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            _load_vector_extension(conn)
            self._connections.append(conn)
            self._readers.put(conn)
        self._held = open_held(self.driver, self.path)
        if self._held is None:
            self._version = self._connect()
            self._version.execute("PRAGMA busy_timeout=0")  # asked on the event loop: never wait
            self._connections.append(self._version)
        self._write_pool = ThreadPoolExecutor(1, thread_name_prefix="vid2context-db-write")
        self._read_pool = ThreadPoolExecutor(readers, thread_name_prefix="vid2context-db-read")

    def _connect(self) -> sqlite3.Connection:
        conn = self.driver.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        conn.row_factory = self.driver.Row
        for pragma in ("synchronous=NORMAL", "foreign_keys=ON", "busy_timeout=30000"):
            conn.execute(f"PRAGMA {pragma}")
        return conn

    def data_version(self) -> int | None:
        """``PRAGMA data_version`` on a connection of its own that never writes, so it changes
        with every commit of any other connection to the file: this process's writer, another
        process's (a CLI push, another server worker). A few µs: in WAL mode it reads the shared
        index's header. ``None`` when the file is busy (a checkpoint resetting the log) or closed:
        with a busy timeout of 0 it never waits on the event loop.

        Not read from a map of the ``-shm`` file of our own, though that would keep the GIL
        (``sqlite3`` lets go of it around the pragma): opening and closing any descriptor of that
        file drops every POSIX lock this process holds on it, SQLite's among them, and the next
        process to open the file then takes itself for the first and truncates it under the
        others (a writer died of SIGBUS in a test when that was tried).

        Stepped through ``sqlite_held`` where it can be (the driver's own SQLite, keeping the GIL:
        ``sqlite3`` lets go of it, and under load the loop then waits for granian's threads to
        give it back), else through ``sqlite3``: the same answers either way."""
        if self._held is not None:
            return self._held()
        try:
            return self._version.execute("PRAGMA data_version").fetchone()[0]
        except self.driver.Error:
            return None

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on a reader connection, in one read transaction (a consistent snapshot)."""
        return await asyncio.get_running_loop().run_in_executor(self._read_pool, self._read, work)

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the writer connection in one transaction: all of it is saved or none."""
        return await asyncio.get_running_loop().run_in_executor(self._write_pool, self._write, work)

    def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._readers.get()
        try:
            conn.execute("BEGIN")
            return work(conn)
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._readers.put(conn)

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = work(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    def setup(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the writer connection in one transaction, now (start-up only: it waits
        on the calling thread)."""
        return self._write_pool.submit(self._write, work).result()

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._write_pool.shutdown(wait=True)
        self._read_pool.shutdown(wait=True)
        if self._held is not None:
            self._held.close()
        for conn in self._connections:
            conn.close()


def _not_found(collection_id: str) -> VidError:
    return VidError(
        ErrorCode.NOT_FOUND,
        f"There is no collection {collection_id!r}.",
        hint="List collections to see their ids, or create this one first.",
    )


_COLLECTION_SELECT = common.SQL_COLLECTION_SELECT
_ITEM_UPSERT = (
    "INSERT INTO collection_items (collection_id, video_id, state, input, added_at) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (collection_id, video_id) DO UPDATE SET state = excluded.state, "
    "input = COALESCE(excluded.input, collection_items.input)"
)  # the first add keeps its date and, unless a new one is given, its input


class SQLiteStorage:
    """``Storage`` on one SQLite file (see the module docstring)."""

    id = "sqlite"

    def __init__(self, path: str | os.PathLike[str], *, readers: int = 4, pair_reads: bool = True) -> None:
        """``pair_reads=False`` searches by FTS5 alone (bench_search's reference); saves and
        deletes keep the word-pair index in step either way."""
        self.database = SQLiteDatabase(path, readers=readers)
        self.pair_reads = pair_reads
        self.vector_available = self.database.vector_available
        self.database.setup(_setup_pairs)
        self._pairs_backfill: asyncio.Task[None] | None = None
        self._pairs_unready = 0

    def data_version(self) -> int | None:
        """``Versioned``: any commit to the file, from any connection (``SQLiteDatabase``)."""
        return self.database.data_version()

    # --- videos -------------------------------------------------------------------------------

    async def get_context(self, video_id: str) -> VideoContext | None:
        def work(conn: sqlite3.Connection) -> VideoContext | None:
            row = conn.execute(common.SQL_GET_CONTEXT, (video_id,)).fetchone()
            return None if row is None else _decode_context(row["context"])

        return await self.database.read(work)

    async def get_cards(self, video_ids: list[str]) -> list[VideoContext | None]:
        """``CitingReads``: one read for all of them; the JSON's ``id`` and ``metadata`` come first,
        and the rest is skipped, not decoded (a quarter of the work of a whole video)."""
        wanted = list(dict.fromkeys(video_ids))

        def work(conn: sqlite3.Connection) -> dict[str, VideoContext]:
            rows = conn.execute(_SQL_CARDS, (common.json_list(wanted),)).fetchall()
            return {row[0]: _card(row[1]) for row in rows}

        found = await self.database.read(work) if wanted else {}
        return [found.get(video_id) for video_id in video_ids]

    async def get_passages(self, spans: list[tuple[str, int, int]]) -> list[list[Segment] | None]:
        """``CitingReads``: every span in one read (an index range of ``segments`` each)."""

        def work(conn: sqlite3.Connection) -> list[list[Segment] | None]:
            out: list[list[Segment] | None] = []
            for video_id, first, last in spans:
                rows = conn.execute(_SQL_PASSAGE, (video_id, first, last)).fetchall()
                if not rows or rows[-1][0] != last:
                    out.append(None)
                    continue
                out.append([Segment(start_sec=r[1], end_sec=r[2], text=r[3]) for r in rows])
            return out

        return await self.database.read(work) if spans else []

    async def put_context(self, context: VideoContext) -> None:
        def work(conn: sqlite3.Connection) -> None:
            summary = summarize(context)
            params = common.video_params(
                summary, updated_at=_now(), context_json=_encode(context).decode(), blob_key=None
            )
            conn.execute(common.SQL_NEXT_SEQ, (context.id,))
            conn.execute(common.SQL_UPSERT_VIDEO, params)
            conn.execute(common.SQL_DELETE_SEGMENTS_FTS, (context.id,))
            conn.execute(common.SQL_DELETE_SEGMENTS_STEM, (context.id,))
            keyword_pairs.write_delete(conn, context.id)
            conn.execute(common.SQL_DELETE_SEGMENTS, (context.id,))
            before = keyword_pairs.seq_before(conn)
            conn.executemany(common.SQL_INSERT_SEGMENT, common.segment_params(context))
            conn.execute(common.SQL_INSERT_SEGMENTS_FTS, (context.id,))
            conn.execute(common.SQL_INSERT_SEGMENTS_STEM, (context.id,))
            keyword_pairs.write_insert(conn, context.id, before)

        await self.database.write(work)

    async def delete_context(self, video_id: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            conn.execute(common.SQL_DELETE_SEGMENTS_FTS, (video_id,))
            conn.execute(common.SQL_DELETE_SEGMENTS_STEM, (video_id,))
            keyword_pairs.write_delete(conn, video_id)
            conn.execute(common.SQL_DELETE_SEGMENTS, (video_id,))
            return conn.execute(common.SQL_DELETE_VIDEO, (video_id,)).rowcount > 0

        return await self.database.write(work)

    async def list_videos(self, *, limit: int = 50, cursor: str | None = None) -> Page[VideoSummary]:
        limit = check_limit(limit)
        before = _FIRST_PAGE if cursor is None else decode_cursor(cursor)

        def work(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            return conn.execute(common.SQL_LIST_VIDEOS, (before, limit + 1)).fetchall()

        rows = await self.database.read(work)
        items = [common.summary_from_row(row) for row in rows[:limit]]
        next_cursor = encode_cursor(rows[limit - 1]["seq"]) if len(rows) > limit else None
        return Page(items=items, next_cursor=next_cursor)

    async def get_summaries(self, video_ids: list[str]) -> list[VideoSummary]:
        wanted = list(dict.fromkeys(video_ids))

        def work(conn: sqlite3.Connection) -> dict[str, VideoSummary]:
            rows = conn.execute(common.SQL_SUMMARIES, (common.json_list(wanted),))
            return {row["id"]: common.summary_from_row(row) for row in rows}

        found = await self.database.read(work) if wanted else {}
        return [found[video_id] for video_id in wanted if video_id in found]

    async def count_videos(self) -> int:
        return await self.database.read(lambda conn: conn.execute(common.SQL_COUNT_VIDEOS).fetchone()[0])

    async def search(
        self, query: str, *, video_ids: list[str] | None = None, limit: int = 10
    ) -> list[SearchHit]:
        parsed = parse_query(query)
        limit = check_limit(limit)
        if video_ids is not None and not video_ids:
            return []
        within = None if video_ids is None else common.json_list(list(dict.fromkeys(video_ids)))

        def work(conn: sqlite3.Connection) -> tuple[list[SearchHit], bool]:  # one read snapshot
            pairs = self.pair_reads and within is None and keyword_pairs.is_ready(conn)

            def answer(requests: list[keyword.Request]) -> list[object]:
                statements = keyword.sql_statements(requests, within, titled=False)
                results = []
                for request, statement in zip(requests, statements, strict=True):
                    rows = keyword_pairs.answer(conn, request) if pairs else None
                    if rows is None and within is None:
                        rows = keyword_ascending.answer(conn, request)
                    results.append(conn.execute(*statement).fetchall() if rows is None else rows)
                return keyword.sql_answers(requests, results, positional=True)

            plan = keyword.plan(parsed, limit=limit, within=within is not None, stems_later=True)
            hits = keyword.drive(plan, answer)
            named = common.json_list(list(dict.fromkeys(hit.video_id for hit in hits)))
            titles = dict(conn.execute(keyword.SQL_TITLES, (named,)).fetchall()) if hits else {}
            for hit in hits:
                hit.title = titles.get(hit.video_id)
            return hits, pairs or within is not None or not self.pair_reads

        try:
            hits, ready = await self.database.read(work)
            if not ready:
                self._pairs_unready += 1
                if self._pairs_unready >= 2:  # not from a one-off CLI search's first query
                    self.start_pairs_backfill()
            return hits
        except self.database.driver.OperationalError as exc:  # the expressions are built to be valid
            if "fts5" not in str(exc):
                raise
            raise keyword.invalid_query() from None

    def start_pairs_backfill(self) -> asyncio.Task[None]:
        """Fill the word-pair index (``keyword_pairs``) in the background, once; the task."""
        if self._pairs_backfill is None or self._pairs_backfill.done():
            self._pairs_backfill = asyncio.ensure_future(self.build_pairs())
        return self._pairs_backfill

    async def build_pairs(self, *, chunk: int = keyword_pairs.CHUNK) -> None:
        """Fill the word-pair index to the end, ``chunk`` segment ids per write transaction (other
        writes go between chunks); resumes where any process left it."""
        while not await self.database.write(lambda conn: keyword_pairs.backfill_chunk(conn, chunk)):
            pass

    # --- collections ----------------------------------------------------------------------------

    async def put_collection(self, collection: Collection) -> None:
        params = common.put_collection_params(collection)
        key = common.name_key(collection.name)

        def work(conn: sqlite3.Connection) -> list[str] | None:
            if conn.execute(common.SQL_PUT_COLLECTION, params).rowcount:
                return None
            return [row[0] for row in conn.execute(common.SQL_NAME_HOLDERS, (key, collection.id))]

        holders = await self.database.write(work)
        if holders is not None:
            raise common.name_taken(collection.name, holders)

    async def get_collection(self, collection_id: str) -> Collection | None:
        def work(conn: sqlite3.Connection) -> sqlite3.Row | None:
            return conn.execute(f"{_COLLECTION_SELECT} WHERE c.id = ?", (collection_id,)).fetchone()

        row = await self.database.read(work)
        return None if row is None else common.collection_from_row(row, row["video_count"])

    async def list_collections(self) -> list[Collection]:
        def work(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            return conn.execute(f"{_COLLECTION_SELECT} ORDER BY c.updated_at DESC, c.id").fetchall()

        return [common.collection_from_row(row, row["video_count"]) for row in await self.database.read(work)]

    async def find_collections(self, name: str) -> list[Collection]:
        def work(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            return conn.execute(common.SQL_COLLECTIONS_NAMED, (common.name_key(name),)).fetchall()

        return [common.collection_from_row(row, row["video_count"]) for row in await self.database.read(work)]

    async def delete_collection(self, collection_id: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM collection_items WHERE collection_id = ?", (collection_id,))
            return conn.execute("DELETE FROM collections WHERE id = ?", (collection_id,)).rowcount > 0

        return await self.database.write(work)

    async def put_items(self, collection_id: str, items: list[CollectionItem]) -> None:
        rows = [(collection_id, i.video_id, i.state, i.input, i.added_at) for i in items]

        def work(conn: sqlite3.Connection) -> None:
            if conn.execute("SELECT 1 FROM collections WHERE id = ?", (collection_id,)).fetchone() is None:
                raise _not_found(collection_id)
            conn.executemany(_ITEM_UPSERT, rows)

        await self.database.write(work)

    async def list_items(self, collection_id: str) -> list[CollectionItem]:
        def work(conn: sqlite3.Connection) -> list[CollectionItem]:
            if conn.execute("SELECT 1 FROM collections WHERE id = ?", (collection_id,)).fetchone() is None:
                raise _not_found(collection_id)
            rows = conn.execute(
                "SELECT video_id, state, input, added_at FROM collection_items WHERE collection_id = ? "
                "ORDER BY added_at, rowid",
                (collection_id,),
            )
            return [CollectionItem(video_id=r[0], state=r[1], input=r[2], added_at=r[3]) for r in rows]

        return await self.database.read(work)

    async def close(self) -> None:
        if self._pairs_backfill is not None and not self._pairs_backfill.done():
            self._pairs_backfill.cancel()  # the chunk under way commits or rolls back whole
        await self.database.close()


def _setup_pairs(conn: sqlite3.Connection) -> None:
    keyword_pairs.register(conn)
    keyword_pairs.ensure(conn)


class SQLiteKv:
    """``KvStore`` in the ``kv`` table of a database shared with ``SQLiteStorage``.

    ``clock`` gives Unix seconds (wall time, so expiry survives a restart); tests inject their own.
    """

    def __init__(self, database: SQLiteDatabase, *, clock: Callable[[], float] = time.time) -> None:
        self.database = database
        self._clock = clock

    async def get(self, key: str) -> str | None:
        now = self._clock()

        def work(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT value FROM kv WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)", (key, now)
            ).fetchone()
            return None if row is None else row[0]

        return await self.database.read(work)

    async def put(self, key: str, value: str, *, ttl: int | None = None) -> None:
        now = self._clock()
        expires = None if ttl is None else now + ttl

        def work(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM kv WHERE expires_at <= ?", (now,))
            conn.execute(
                "INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, value, expires),
            )

        await self.database.write(work)

    async def delete(self, key: str) -> None:
        await self.database.write(lambda conn: conn.execute("DELETE FROM kv WHERE key = ?", (key,)))

    async def incr(self, key: str, amount: int = 1, *, ttl: int | None = None) -> int:
        now = self._clock()

        def work(conn: sqlite3.Connection) -> int:
            conn.execute("DELETE FROM kv WHERE key = ? AND expires_at <= ?", (key, now))
            row = conn.execute("SELECT value, expires_at FROM kv WHERE key = ?", (key,)).fetchone()
            value = amount if row is None else int(row[0]) + amount
            expires = (None if ttl is None else now + ttl) if row is None else row[1]
            conn.execute(
                "INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, str(value), expires),
            )
            return value

        return await self.database.write(work)


class FileBlobs:
    """``BlobStore`` as files in ``directory``.

    A file is named by the SHA-256 of its key, so no key can name a path outside the directory,
    collide on a case-insensitive disk or exceed a name limit. It starts with one JSON line
    (``{"key": ..., "contentType": ...}``) followed by the bytes, and is written to a temporary
    file first and renamed, so a reader sees the old blob or the new one, never half of one.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _file(self, key: str) -> Path:
        return self.directory / hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()

    async def put_blob(
        self, key: str, data: bytes, *, content_type: str = "application/octet-stream"
    ) -> None:
        header = msgspec.json.encode({"key": check_blob_key(key), "contentType": content_type}) + b"\n"
        await asyncio.to_thread(self._write, self._file(key), header, bytes(data))

    def _write(self, target: Path, header: bytes, data: bytes) -> None:
        temporary = self.directory / f".tmp-{secrets.token_hex(8)}"
        try:
            with temporary.open("wb") as handle:
                handle.write(header)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            temporary.replace(target)
        finally:
            temporary.unlink(missing_ok=True)

    async def get_blob(self, key: str) -> Blob | None:
        return await asyncio.to_thread(self._read, self._file(key), key)

    @staticmethod
    def _read(path: Path, key: str) -> Blob | None:
        try:
            with path.open("rb") as handle:
                header = msgspec.json.decode(handle.readline())
                data = handle.read()
        except FileNotFoundError:
            return None
        return Blob(data=data, content_type=header["contentType"]) if header["key"] == key else None

    async def delete_blob(self, key: str) -> bool:
        def work() -> bool:
            try:
                self._file(key).unlink()
            except FileNotFoundError:
                return False
            return True

        return await asyncio.to_thread(work)

    async def list_blobs(self, prefix: str = "") -> list[str]:
        def work() -> list[str]:
            keys = []
            for path in self.directory.iterdir():
                if path.name.startswith("."):
                    continue
                try:
                    with path.open("rb") as handle:
                        key = msgspec.json.decode(handle.readline())["key"]
                except (FileNotFoundError, msgspec.DecodeError, KeyError, TypeError):
                    continue  # deleted meanwhile, or not one of ours
                if key.startswith(prefix):
                    keys.append(key)
            return sorted(keys)

        return await asyncio.to_thread(work)


class SQLiteSql:
    """``auth.store_sql.Sql`` on the library's database: the OAuth server's tables live in the
    same file, changed on the writer thread, read on the readers."""

    def __init__(self, database: SQLiteDatabase) -> None:
        self.database = database

    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return await self.database.read(lambda conn: [dict(row) for row in conn.execute(sql, params)])

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return await self.database.write(lambda conn: conn.execute(sql, params).rowcount)


class LocalStores(NamedTuple):
    storage: SQLiteStorage
    kv: SQLiteKv
    blobs: FileBlobs


def open_local_stores(home: str | os.PathLike[str]) -> LocalStores:
    """The three local stores under ``home`` (``$VID2CONTEXT_HOME``): ``vid2context.db`` and
    ``blobs/``. Closing the storage closes the KV store too (they share the database)."""
    root = Path(home).expanduser()
    storage = SQLiteStorage(root / DEFAULT_FILE)
    return LocalStores(storage=storage, kv=SQLiteKv(storage.database), blobs=FileBlobs(root / "blobs"))
