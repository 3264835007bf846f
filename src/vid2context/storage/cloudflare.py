"""The edge stores: the library in D1, small values in KV, bytes and large transcripts in R2.

The only module besides ``worker/`` that touches Cloudflare bindings, and only through the binding
objects it is given (``env.DB``, ``env.KV``, ``env.BUCKET``; ``env.AI`` for Workers AI). It imports
``pyodide``/``js`` lazily, inside ``_to_js``, so it loads under CPython too: the tests drive it
against Miniflare's real D1, KV and R2 through look-alike bindings (``tests/cloudflare_bindings.py``).

Same schema and SQL as the SQLite store (``migrations/``, ``common.py``), with what D1 and the
Pyodide boundary require:

- Every write is one ``DB.batch`` (one transaction): a save is all there or not at all.
- Python ``None`` crosses into JavaScript as ``undefined``, which ``bind()`` rejects, so a ``None``
  parameter becomes the literal ``NULL`` in the statement text instead (``_inline_nulls``). Ints
  beyond 2**53 would become BigInts, so none is ever bound.
- D1 allows 100 bound parameters and 100 KB per statement: rows go in as one JSON parameter read
  with ``json_each``, in chunks of at most ``_CHUNK_BYTES``.
- Results arrive as JS proxies; ``_py`` turns them into dicts and lists at this boundary, and row
  numbers may be ints where the column is REAL, so summaries and hits are normalised to floats.
- A context whose JSON exceeds ``INLINE_CONTEXT_BYTES`` (D1 rows top out at 2 MB) goes to R2 as
  ``contexts/<id>.json`` and the row keeps only its ``blob_key``; without a bucket it is refused
  with ``too-large``. The blob is written before the row and deleted after it, so a row never
  names a missing blob.
- KV refuses a TTL under 60 seconds: shorter ones are raised to 60 (``KV_MIN_TTL``).
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from ..errors import ErrorCode, VidError
from ..models import Collection, CollectionItem, Page, SearchHit, VideoContext, VideoSummary
from ..search.query import parse_query
from . import common, keyword
from .base import Blob, summarize
from .common import check_blob_key, check_limit, decode_cursor, encode_cursor

__all__ = [
    "INLINE_CONTEXT_BYTES",
    "KV_MIN_TTL",
    "CloudflareAi",
    "CloudflareKv",
    "CloudflareStorage",
    "D1Sql",
    "R2Blobs",
]

INLINE_CONTEXT_BYTES = 500_000
"""Contexts whose JSON is larger than this are kept in R2, not in the D1 row."""
KV_MIN_TTL = 60
"""Cloudflare KV's shortest ``expirationTtl``, in seconds."""

_CHUNK_BYTES = 60_000
"""JSON bound to one statement: keeps each statement, parameters included, well under 100 KB."""
_MAX_VALUE_BYTES = 1_900_000
"""Below D1's 2 MB limit on one string value."""
_MAX_SAFE_INTEGER = 2**53 - 1
_BLOB_PREFIX = "contexts/"

_encode = msgspec.json.Encoder().encode
_decode_context = msgspec.json.Decoder(VideoContext).decode


# --- the JavaScript boundary -----------------------------------------------------------------------


@functools.cache
def _js_converter() -> Callable[[Any], Any] | None:
    try:
        from js import Object  # type: ignore[import-not-found]
        from pyodide.ffi import to_js  # type: ignore[import-not-found]
    except ImportError:  # CPython (tests, tools): the bindings there take Python values
        return None
    return functools.partial(to_js, dict_converter=Object.fromEntries)


def _to_js(value: Any) -> Any:
    """``value`` as JavaScript needs it: bytes as a ``Uint8Array``, dicts as objects, lists as
    arrays (Pyodide would otherwise pass proxies that bindings cannot read)."""
    convert = _js_converter()
    return value if convert is None else convert(value)


def _is_null(value: Any) -> bool:
    return value is None or type(value).__name__ in ("JsNull", "JsUndefined")


def _py(value: Any) -> Any:
    """A binding's result as plain Python: dicts, lists, ``None`` for null and undefined."""
    if _is_null(value):
        return None
    to_py = getattr(value, "to_py", None)
    return value if to_py is None else to_py()


_SQL_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\?", re.DOTALL)


def _inline_nulls(sql: str, params: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """Replace each ``?`` whose parameter is ``None`` by ``NULL`` (see the module docstring)."""
    if all(p is not None for p in params):
        return sql, params
    position = iter(params)

    def substitute(match: re.Match[str]) -> str:
        if match.group() != "?":
            return match.group()  # a string, quoted name or comment
        return "NULL" if next(position) is None else "?"

    return _SQL_TOKEN.sub(substitute, sql), tuple(p for p in params if p is not None)


class _D1:
    """``env.DB`` with Python in and out."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def statement(self, sql: str, params: Iterable[Any] = ()) -> Any:
        sql, bound = _inline_nulls(sql, tuple(params))
        prepared = self.db.prepare(sql)
        return prepared.bind(*bound) if bound else prepared

    async def all(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return _py(await self.statement(sql, params).all())["results"]

    async def first(self, sql: str, params: Iterable[Any] = ()) -> dict[str, Any] | None:
        return _py(await self.statement(sql, params).first())

    async def batch(self, statements: list[Any]) -> list[dict[str, Any]]:
        """Run ``statements`` in one transaction; each result is ``{"results", "meta", ...}``."""
        return _py(await self.db.batch(_to_js(statements)))


def _json_chunks(rows: Iterable[bytes]) -> list[str]:
    """JSON arrays of the encoded ``rows``, each at most ``_CHUNK_BYTES`` unless one row is larger."""
    chunks: list[str] = []
    current: list[bytes] = []
    size = 2
    for row in rows:
        if len(row) > _MAX_VALUE_BYTES:
            raise VidError(
                ErrorCode.TOO_LARGE,
                "One transcript segment is larger than Cloudflare D1 can store in a row.",
                hint="Tell the user this transcript cannot be saved in D1 (one segment is too large); do not retry.",
            )
        if current and size + len(row) + 1 > _CHUNK_BYTES:
            chunks.append(b"[" + b",".join(current) + b"]")
            current, size = [], 2
        current.append(row)
        size += len(row) + 1
    if current:
        chunks.append(b"[" + b",".join(current) + b"]")
    return [chunk.decode() for chunk in chunks]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _summary(row: dict[str, Any]) -> VideoSummary:
    row = {**row, "duration_sec": _float(row["duration_sec"]), "tokens": int(row["tokens"])}
    return common.summary_from_row(row)


def _not_found(collection_id: str) -> VidError:
    return VidError(
        ErrorCode.NOT_FOUND,
        f"There is no collection {collection_id!r}.",
        hint="List collections to see their ids, or create this one first.",
    )


_SQL_INSERT_SEGMENTS = (
    "INSERT INTO segments (video_id, idx, start_sec, end_sec, text) SELECT ?, json_extract(value, '$[0]'), "
    "json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]') "
    "FROM json_each(?) ORDER BY key"
)
"""Parameters: the video id, a JSON list of ``[idx, start_sec, end_sec, text]``."""
_SQL_BLOB_KEY = "SELECT blob_key FROM videos WHERE id = ?"
_SQL_LIBRARY_VERSION = "SELECT version FROM library_version WHERE id = 1"
_SQL_COLLECTION_SELECT = common.SQL_COLLECTION_SELECT
_SQL_COLLECTION_EXISTS = "SELECT 1 AS found FROM collections WHERE id = ?"
_SQL_ITEMS_UPSERT = (
    "INSERT INTO collection_items (collection_id, video_id, state, input, added_at) SELECT ?, "
    "json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), "
    "json_extract(value, '$[3]') FROM json_each(?) WHERE true ORDER BY key "
    "ON CONFLICT (collection_id, video_id) DO UPDATE SET state = excluded.state, "
    "input = COALESCE(excluded.input, collection_items.input)"
)  # the first add keeps its date and, unless a new one is given, its input
_SQL_ITEMS = "SELECT video_id, state, input, added_at FROM collection_items WHERE collection_id = ? ORDER BY added_at, rowid"


class CloudflareStorage:
    """``Storage`` on D1 (``db``), with R2 (``bucket``) for contexts too large for a row."""

    id = "cloudflare"

    def __init__(self, db: Any, *, bucket: Any = None, inline_limit: int = INLINE_CONTEXT_BYTES) -> None:
        self._d1 = _D1(db)
        self._bucket = bucket
        self._inline_limit = inline_limit

    # --- videos -------------------------------------------------------------------------------

    async def library_version(self) -> int | None:
        """``LibraryVersioned``: the row every write to ``videos`` bumps (its triggers)."""
        row = await self._d1.first(_SQL_LIBRARY_VERSION)
        return None if row is None else int(row["version"])

    async def get_context(self, video_id: str) -> VideoContext | None:
        row = await self._d1.first(common.SQL_GET_CONTEXT, (video_id,))
        if row is None:
            return None
        if row["context"] is not None:
            return _decode_context(row["context"])
        blob = None if self._bucket is None else await R2Blobs(self._bucket).get_blob(row["blob_key"])
        # A row whose blob is gone reads as not saved, so the pipeline fetches and saves it again.
        return None if blob is None else _decode_context(blob.data)

    async def put_context(self, context: VideoContext) -> None:
        raw = _encode(context)
        context_json: str | None = raw.decode()
        blob_key = None
        if len(raw) > self._inline_limit:
            if self._bucket is None:
                raise VidError(
                    ErrorCode.TOO_LARGE,
                    f"This video's context is {len(raw) // 1000:,} kB, more than D1 keeps in a row "
                    f"({self._inline_limit // 1000:,} kB), and no R2 bucket is bound.",
                    hint="Tell the user to bind an R2 bucket as BUCKET in wrangler.toml, which keeps large "
                    "transcripts; do not retry until then.",
                )
            blob_key = check_blob_key(f"{_BLOB_PREFIX}{context.id}.json")
            await R2Blobs(self._bucket).put_blob(blob_key, raw, content_type="application/json")
            context_json = None
        summary = summarize(context)
        rows = (_encode(row) for row in common.searchable_rows(context))
        d1 = self._d1
        results = await d1.batch(
            [
                d1.statement(_SQL_BLOB_KEY, (context.id,)),
                d1.statement(common.SQL_NEXT_SEQ, (context.id,)),
                d1.statement(
                    common.SQL_UPSERT_VIDEO,
                    common.video_params(
                        summary, updated_at=_now(), context_json=context_json, blob_key=blob_key
                    ),
                ),
                d1.statement(common.SQL_DELETE_SEGMENTS_FTS, (context.id,)),
                d1.statement(common.SQL_DELETE_SEGMENTS_STEM, (context.id,)),
                d1.statement(common.SQL_DELETE_SEGMENTS, (context.id,)),
                *(d1.statement(_SQL_INSERT_SEGMENTS, (context.id, chunk)) for chunk in _json_chunks(rows)),
                d1.statement(common.SQL_INSERT_SEGMENTS_FTS, (context.id,)),
                d1.statement(common.SQL_INSERT_SEGMENTS_STEM, (context.id,)),
            ]
        )
        old = results[0]["results"]
        old_key = old[0]["blob_key"] if old else None
        if old_key and old_key != blob_key and self._bucket is not None:
            await R2Blobs(self._bucket).delete_blob(old_key)

    async def delete_context(self, video_id: str) -> bool:
        d1 = self._d1
        results = await d1.batch(
            [
                d1.statement(_SQL_BLOB_KEY, (video_id,)),
                d1.statement(common.SQL_DELETE_SEGMENTS_FTS, (video_id,)),
                d1.statement(common.SQL_DELETE_SEGMENTS_STEM, (video_id,)),
                d1.statement(common.SQL_DELETE_SEGMENTS, (video_id,)),
                d1.statement(common.SQL_DELETE_VIDEO, (video_id,)),
            ]
        )
        old = results[0]["results"]
        if old and old[0]["blob_key"] and self._bucket is not None:
            await R2Blobs(self._bucket).delete_blob(old[0]["blob_key"])
        return bool(results[-1]["meta"]["changes"])

    async def list_videos(self, *, limit: int = 50, cursor: str | None = None) -> Page[VideoSummary]:
        limit = check_limit(limit)
        # No seq ever reaches 2**53, and a larger int would cross into JavaScript as a BigInt.
        before = _MAX_SAFE_INTEGER if cursor is None else min(decode_cursor(cursor), _MAX_SAFE_INTEGER)
        rows = await self._d1.all(common.SQL_LIST_VIDEOS, (before, limit + 1))
        items = [_summary(row) for row in rows[:limit]]
        next_cursor = encode_cursor(int(rows[limit - 1]["seq"])) if len(rows) > limit else None
        return Page(items=items, next_cursor=next_cursor)

    async def get_summaries(self, video_ids: list[str]) -> list[VideoSummary]:
        wanted = list(dict.fromkeys(video_ids))
        if not wanted:
            return []
        rows = await self._d1.all(common.SQL_SUMMARIES, (common.json_list(wanted),))
        found = {row["id"]: _summary(row) for row in rows}
        return [found[video_id] for video_id in wanted if video_id in found]

    async def count_videos(self) -> int:
        row = await self._d1.first(common.SQL_COUNT_VIDEOS)
        return int(row["n"]) if row else 0

    async def search(
        self, query: str, *, video_ids: list[str] | None = None, limit: int = 10
    ) -> list[SearchHit]:
        parsed = parse_query(query)
        limit = check_limit(limit)
        if video_ids is not None and not video_ids:
            return []
        within = None if video_ids is None else common.json_list(list(dict.fromkeys(video_ids)))
        d1 = self._d1

        async def answer(requests: list[keyword.Request]) -> list[object]:  # one round trip a round
            statements = [d1.statement(*st) for st in keyword.sql_statements(requests, within)]
            results = await d1.batch(statements)
            return keyword.sql_answers(requests, [result["results"] for result in results])

        try:
            return await keyword.drive_async(
                keyword.plan(parsed, limit=limit, within=within is not None), answer
            )
        except Exception as exc:  # pyodide's JsException; the expressions are built to be valid
            if "fts5" not in str(exc):
                raise
            raise keyword.invalid_query() from None

    # --- collections ----------------------------------------------------------------------------

    async def put_collection(self, collection: Collection) -> None:
        d1 = self._d1
        written, holders = await d1.batch(  # one transaction: the holders are those that blocked it
            [
                d1.statement(common.SQL_PUT_COLLECTION, common.put_collection_params(collection)),
                d1.statement(common.SQL_NAME_HOLDERS, (common.name_key(collection.name), collection.id)),
            ]
        )
        if not written["meta"]["changes"]:
            raise common.name_taken(collection.name, [row["id"] for row in holders["results"]])

    async def get_collection(self, collection_id: str) -> Collection | None:
        row = await self._d1.first(f"{_SQL_COLLECTION_SELECT} WHERE c.id = ?", (collection_id,))
        return None if row is None else common.collection_from_row(row, int(row["video_count"]))

    async def list_collections(self) -> list[Collection]:
        rows = await self._d1.all(f"{_SQL_COLLECTION_SELECT} ORDER BY c.updated_at DESC, c.id")
        return [common.collection_from_row(row, int(row["video_count"])) for row in rows]

    async def find_collections(self, name: str) -> list[Collection]:
        rows = await self._d1.all(common.SQL_COLLECTIONS_NAMED, (common.name_key(name),))
        return [common.collection_from_row(row, int(row["video_count"])) for row in rows]

    async def delete_collection(self, collection_id: str) -> bool:
        d1 = self._d1
        results = await d1.batch(
            [
                d1.statement("DELETE FROM collection_items WHERE collection_id = ?", (collection_id,)),
                d1.statement("DELETE FROM collections WHERE id = ?", (collection_id,)),
            ]
        )
        return bool(results[-1]["meta"]["changes"])

    async def put_items(self, collection_id: str, items: list[CollectionItem]) -> None:
        d1 = self._d1
        if await d1.first(_SQL_COLLECTION_EXISTS, (collection_id,)) is None:
            raise _not_found(collection_id)
        if not items:
            return
        rows = (_encode((i.video_id, i.state, i.input, i.added_at)) for i in items)
        statements = [d1.statement(_SQL_ITEMS_UPSERT, (collection_id, chunk)) for chunk in _json_chunks(rows)]
        try:
            await d1.batch(statements)
        except Exception as exc:  # the collection was deleted in between: D1 enforces foreign keys
            if "FOREIGN KEY constraint failed" not in str(exc):
                raise
            raise _not_found(collection_id) from None

    async def list_items(self, collection_id: str) -> list[CollectionItem]:
        d1 = self._d1
        exists, items = await d1.batch(  # one snapshot
            [
                d1.statement(_SQL_COLLECTION_EXISTS, (collection_id,)),
                d1.statement(_SQL_ITEMS, (collection_id,)),
            ]
        )
        if not exists["results"]:
            raise _not_found(collection_id)
        return [
            CollectionItem(video_id=r["video_id"], state=r["state"], input=r["input"], added_at=r["added_at"])
            for r in items["results"]
        ]

    async def close(self) -> None:
        """Nothing to release: the bindings belong to the Worker."""


class D1Sql:
    """``auth.store_sql.Sql`` on ``env.DB``: the OAuth server's tables in the library's D1."""

    def __init__(self, db: Any) -> None:
        self._d1 = _D1(db)

    async def rows(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return await self._d1.all(sql, params)

    async def run(self, sql: str, params: Iterable[Any] = ()) -> int:
        result = _py(await self._d1.statement(sql, params).run())
        return int((result.get("meta") or {}).get("changes") or 0)


class CloudflareKv:
    """``KvStore`` on a KV namespace (``env.KV``).

    KV is eventually consistent across locations and refuses TTLs under 60 seconds: a shorter
    ``ttl`` is raised to ``KV_MIN_TTL``. The expiry is also kept in the key's metadata so ``incr``
    can rewrite a counter without extending its life. ``incr`` is serialised per key within this
    object (one isolate); across isolates it is read-modify-write, as the protocol allows.
    """

    def __init__(self, kv: Any, *, clock: Callable[[], float] = time.time) -> None:
        self._kv = kv
        self._clock = clock
        self._locks: dict[str, list[Any]] = {}  # key -> [lock, tasks using it]

    async def get(self, key: str) -> str | None:
        return _py(await self._kv.get(key))

    async def put(self, key: str, value: str, *, ttl: int | None = None) -> None:
        await self._put(key, value, None if ttl is None else int(self._clock()) + max(int(ttl), KV_MIN_TTL))

    async def _put(self, key: str, value: str, expiration: int | None) -> None:
        if expiration is None:
            await self._kv.put(key, value)
            return
        # KV refuses expirations less than 60 s ahead *by its own clock*. A relative TTL keeps
        # that rule whatever the skew between this isolate's clock and KV's; a counter closer to
        # its end than the minimum lives on for the minimum.
        ttl = max(expiration - int(self._clock()), KV_MIN_TTL)
        expiration = max(expiration, int(self._clock()) + KV_MIN_TTL)
        await self._kv.put(key, value, expirationTtl=ttl, metadata=_to_js({"expiration": expiration}))

    async def delete(self, key: str) -> None:
        await self._kv.delete(key)

    async def incr(self, key: str, amount: int = 1, *, ttl: int | None = None) -> int:
        entry = self._locks.setdefault(key, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                return await self._incr(key, amount, ttl)
        finally:
            entry[1] -= 1
            if not entry[1]:
                del self._locks[key]

    async def _incr(self, key: str, amount: int, ttl: int | None) -> int:
        found = _py(await self._kv.getWithMetadata(key)) or {}
        if found.get("value") is None:
            value = amount
            expiration = None if ttl is None else int(self._clock()) + max(int(ttl), KV_MIN_TTL)
        else:
            value = int(found["value"]) + amount
            expiration = (found.get("metadata") or {}).get("expiration")
        await self._put(key, str(value), None if expiration is None else int(expiration))
        return value


class R2Blobs:
    """``BlobStore`` on an R2 bucket (``env.BUCKET``)."""

    def __init__(self, bucket: Any) -> None:
        self._bucket = bucket

    async def put_blob(
        self, key: str, data: bytes, *, content_type: str = "application/octet-stream"
    ) -> None:
        await self._bucket.put(
            check_blob_key(key), _to_js(bytes(data)), httpMetadata=_to_js({"contentType": content_type})
        )

    async def get_blob(self, key: str) -> Blob | None:
        found = await self._bucket.get(key)
        if _is_null(found):
            return None
        buffer = await found.arrayBuffer()
        data = buffer.to_bytes() if hasattr(buffer, "to_bytes") else bytes(buffer)
        content_type = getattr(found.httpMetadata, "contentType", None) or "application/octet-stream"
        return Blob(data=data, content_type=content_type)

    async def delete_blob(self, key: str) -> bool:
        if _is_null(await self._bucket.head(key)):
            return False
        await self._bucket.delete(key)
        return True

    async def list_blobs(self, prefix: str = "") -> list[str]:
        keys: list[str] = []
        cursor = None
        while True:
            options = {"prefix": prefix} if cursor is None else {"prefix": prefix, "cursor": cursor}
            listed = await self._bucket.list(**options)
            keys.extend(o.key for o in listed.objects)
            if not listed.truncated:
                return sorted(keys)
            cursor = listed.cursor


class CloudflareAi:
    """``env.AI`` with Python in and out, as ``providers/whisper_workers_ai.AiBinding`` expects.

    A Python dict handed to a JavaScript function arrives as a proxy whose fields the AI binding
    cannot read, so the inputs go through ``_to_js``; the answer comes back as plain Python.
    """

    def __init__(self, ai: Any) -> None:
        self._ai = ai

    async def run(self, model: str, inputs: dict[str, Any]) -> Any:
        return _py(await self._ai.run(model, _to_js(inputs)))

    async def stream(self, model: str, inputs: dict[str, Any]) -> AsyncIterator[bytes]:
        """``run`` with ``stream: true``: the binding answers a ``ReadableStream`` of server-sent
        events, read here chunk by chunk (``getReader``; each chunk a ``Uint8Array``) as bytes.
        The reader is released when the caller stops early, which cancels the stream."""
        stream = await self._ai.run(model, _to_js({**inputs, "stream": True}))
        reader = stream.getReader()
        finished = False
        try:
            while True:
                chunk = await reader.read()
                if chunk.done:
                    finished = True
                    return
                value = chunk.value
                yield value.to_bytes() if hasattr(value, "to_bytes") else bytes(value)
        finally:
            if not finished:
                try:
                    await reader.cancel()
                except Exception:  # noqa: BLE001  a stream that already failed cannot be canceled
                    pass
