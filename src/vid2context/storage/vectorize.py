"""``VectorIndex`` on Cloudflare Vectorize (``env.VECTORS``), with what it holds recorded in D1.

Worker only, beside ``cloudflare.py`` (whose boundary helpers it uses): it calls the binding it is
given and nothing else of ``env``. How the protocol maps onto Vectorize:

- **One index, one dimension.** An index's dimension and metric are fixed when it is made
  (``wrangler vectorize create NAME --dimensions=384 --metric=cosine``): a space of another
  dimension is refused with ``no-provider`` and a hint naming the command.
- **Spaces are namespaces and id prefixes.** Each space writes into the namespace ``<tag>``
  (``EmbeddingSpace.tag``), so a query searches one model's vectors only. Vectorize ids are unique in
  the whole index, not per namespace, so each id is ``<tag>:<window id>``: 8 + at most 56 bytes,
  within the 64 allowed.
- **Filtering by video** uses the metadata property ``videoId``, which needs a metadata index
  created before the first write (``wrangler vectorize create-metadata-index NAME
  --property-name=videoId --type=string``). Only the first 64 bytes of an indexed string count, so
  ``videoId`` holds ``vectors.video_key(video_id)``: the id itself, or a digest of a longer one.
  A filter's JSON must stay under 2048 bytes, so many videos are searched in several queries of
  ``$in`` lists, whose matches are merged.
- **What it holds is recorded in D1** (``vector_windows``, ``migrations/0004``): Vectorize cannot
  list a video's vectors, and a write becomes queryable only seconds later. So the record is
  written before the vectors and cleared after they are deleted (the record always holds at least
  what Vectorize does); a video's vectors are deleted by the ids it lists; ``window_ids`` reads it,
  never Vectorize; and a query's matches are looked up in it (one D1 read) for where each window
  is, which drops any match whose window is no longer recorded: a deleted video never surfaces, even
  while Vectorize still holds its vectors. Queries ask for ids and scores only
  (``returnMetadata: "none"``), so ``topK`` may be 100.
- **Batches**: at most 1,000 vectors per ``upsert`` and ids per ``deleteByIds``; D1 rows in
  chunks of JSON, as ``cloudflare.py`` writes segments.
- Each vector's metadata also carries where its window is (``windowId``, ``video``, times,
  segments, chapter), for anyone reading the index without D1.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from ..errors import ErrorCode, VidError
from ..models import EmbeddingSpace
from ..search.vectors import (
    MAX_BATCH,
    MAX_TOP_K,
    SpaceCount,
    VectorHit,
    VectorRecord,
    check_records,
    check_space,
    check_top_k,
    check_vector,
    check_video_ids,
    hit,
    video_key,
)
from ..search.windows import WindowRef
from . import vector_rows
from .cloudflare import _D1, _json_chunks, _py, _to_js

__all__ = ["MAX_FILTER_BYTES", "VIDEO_PROPERTY", "VectorizeIndex"]

VIDEO_PROPERTY = "videoId"
"""The metadata property a query filters on; it needs a metadata index of type string."""
MAX_FILTER_BYTES = 2048
"""Vectorize's limit on a filter's compact JSON (it must be less than this)."""

_encode = msgspec.json.Encoder().encode


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _metadata(window: WindowRef, space: EmbeddingSpace) -> dict[str, Any]:
    """The vector's metadata: no ``None`` values (they would cross into JavaScript as undefined)."""
    fields: dict[str, Any] = {
        VIDEO_PROPERTY: video_key(window.video_id),
        "video": window.video_id,
        "windowId": window.id,
        "model": space.model,
        "startSec": window.start_sec,
        "endSec": window.end_sec,
        "firstSegment": window.first_segment,
        "lastSegment": window.last_segment,
    }
    if window.part is not None:
        fields["part"] = window.part
    if window.chapter_index is not None:
        fields["chapterIndex"] = window.chapter_index
    if window.chapter_title is not None:
        fields["chapterTitle"] = window.chapter_title
    return fields


def _filters(keys: list[str]) -> list[dict[str, Any]]:
    """``videoId`` filters covering ``keys``, each under Vectorize's size limit."""
    if len(keys) == 1:
        return [{VIDEO_PROPERTY: keys[0]}]
    filters: list[dict[str, Any]] = []
    current: list[str] = []
    for key in keys:
        candidate = {VIDEO_PROPERTY: {"$in": [*current, key]}}
        if current and len(_encode(candidate)) >= MAX_FILTER_BYTES:
            filters.append({VIDEO_PROPERTY: {"$in": current}})
            current = []
        current.append(key)
    filters.append({VIDEO_PROPERTY: {"$in": current}} if len(current) > 1 else {VIDEO_PROPERTY: current[0]})
    return filters


class VectorizeIndex:
    """``VectorIndex`` on a Vectorize binding (``vectors``), recording what it holds in D1 (``db``,
    the library's database, with ``migrations/`` applied)."""

    id = "vectorize"

    def __init__(self, vectors: Any, db: Any) -> None:
        self._index = vectors
        self._d1 = _D1(db)
        self._dimensions: int | None = None

    # --- writes ---------------------------------------------------------------------------------

    async def upsert(self, space: EmbeddingSpace, records: Sequence[VectorRecord]) -> None:
        checked = check_records(space, records)
        if checked:
            await self._require(space)
            await self._write(space, checked)
            videos = vector_rows.json_ids(list(dict.fromkeys(window.video_id for window, _ in checked)))
            await self._d1.batch(
                [self._d1.statement(vector_rows.SQL_LEDGER_VIDEOS, (_now(), space.key, videos))]
            )

    async def replace_video(
        self, space: EmbeddingSpace, video_id: str, records: Sequence[VectorRecord]
    ) -> None:
        checked = check_records(space, records, video_id=video_id)
        await self._require(space)
        keep = {window.id for window, _ in checked}
        old = await self.window_ids(space, video_id)
        if checked:
            await self._write(space, checked)
        stale = [window_id for window_id in old if window_id not in keep]
        if stale:
            await self._delete_vectors([f"{space.tag}:{window_id}" for window_id in stale])
        d1 = self._d1
        chunks = _json_chunks(_encode(window_id) for window_id in stale) if stale else []
        await d1.batch(
            [
                d1.statement(vector_rows.SQL_INSERT_SPACE, (*vector_rows.space_params(space), _now())),
                *(d1.statement(vector_rows.SQL_DELETE_WINDOWS, (space.key, chunk)) for chunk in chunks),
                d1.statement(
                    vector_rows.SQL_LEDGER_VIDEO, (space.key, video_id, space.key, video_id, _now())
                ),
            ]
        )

    async def _write(self, space: EmbeddingSpace, checked: list[tuple[WindowRef, list[float]]]) -> None:
        d1 = self._d1
        rows = (_encode(vector_rows.window_row(window)) for window, _ in checked)
        await d1.batch(
            [
                d1.statement(vector_rows.SQL_INSERT_SPACE, (*vector_rows.space_params(space), _now())),
                *(
                    d1.statement(vector_rows.SQL_UPSERT_WINDOWS, (space.key, chunk))
                    for chunk in _json_chunks(rows)
                ),
            ]
        )  # the record first: it must always hold at least what Vectorize does
        for start in range(0, len(checked), MAX_BATCH):
            vectors = [
                {
                    "id": f"{space.tag}:{window.id}",
                    "values": vector,
                    "namespace": space.tag,
                    "metadata": _metadata(window, space),
                }
                for window, vector in checked[start : start + MAX_BATCH]
            ]
            await self._index.upsert(_to_js(vectors))

    async def delete_video(self, video_id: str) -> int:
        rows = await self._d1.all(vector_rows.SQL_ROWS_OF_VIDEO, (video_id,))
        if not rows:
            await self._d1.batch([self._d1.statement(vector_rows.SQL_DELETE_LEDGER, (video_id,))])
            return 0
        await self._delete_vectors([f"{row['tag']}:{row['window_id']}" for row in rows])
        await self._d1.batch(
            [
                self._d1.statement(vector_rows.SQL_DELETE_VIDEO, (video_id,)),
                self._d1.statement(vector_rows.SQL_DELETE_LEDGER, (video_id,)),
            ]
        )
        return len(rows)

    async def _delete_vectors(self, ids: list[str]) -> None:
        for start in range(0, len(ids), MAX_BATCH):
            await self._index.deleteByIds(_to_js(ids[start : start + MAX_BATCH]))

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
        values = check_vector(space, vector)
        top_k = check_top_k(top_k)
        within = check_video_ids(video_ids)
        if within is not None and not within:
            return []
        await self._require(space)
        options: dict[str, Any] = {
            "topK": min(top_k, MAX_TOP_K),
            "namespace": space.tag,
            "returnMetadata": "none",
        }
        filters = [None] if within is None else _filters(list(dict.fromkeys(video_key(v) for v in within)))
        scores: dict[str, float] = {}
        for condition in filters:
            asked = options if condition is None else {**options, "filter": condition}
            found = _py(await self._index.query(_to_js(values), _to_js(asked))) or {}
            for match in found.get("matches") or []:
                vector_id = str(match["id"])
                if vector_id.startswith(f"{space.tag}:"):
                    scores[vector_id.removeprefix(f"{space.tag}:")] = float(match["score"])
        if not scores:
            return []
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        rows = await self._d1.all(
            vector_rows.SQL_WINDOWS, (space.key, vector_rows.json_ids([i for i, _ in best]))
        )
        recorded = {row["window_id"]: vector_rows.window_from_row(row) for row in rows}
        allowed = None if within is None else set(within)
        hits = []
        for window_id, score in best:
            window = recorded.get(window_id)
            if window is None or (allowed is not None and window.video_id not in allowed):
                continue  # deleted (Vectorize lags), or another video sharing a key prefix
            hits.append(hit(window, score))
        return hits[:top_k]

    async def window_ids(self, space: EmbeddingSpace, video_id: str) -> list[str]:
        rows = await self._d1.all(vector_rows.SQL_WINDOW_IDS, (space.key, video_id))
        return [row["window_id"] for row in rows]

    async def spaces(self) -> list[SpaceCount]:
        rows = await self._d1.all(vector_rows.SQL_SPACES, ())
        return [SpaceCount(vector_rows.space_from_row(r), int(r["videos"]), int(r["windows"])) for r in rows]

    async def indexed(self, space: EmbeddingSpace, video_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(video_ids))
        found: set[str] = set()
        for chunk in _json_chunks(_encode(video_id) for video_id in ids):
            rows = await self._d1.all(vector_rows.SQL_INDEXED, (space.key, chunk))
            found.update(row["video_id"] for row in rows)
        return found

    async def _require(self, space: EmbeddingSpace) -> None:
        """``no-provider`` unless the index holds vectors of ``space.dim`` dimensions."""
        if self._dimensions is None:
            info = _py(await self._index.describe()) or {}
            dimensions = info.get("dimensions") or (info.get("config") or {}).get("dimensions")
            self._dimensions = int(dimensions) if dimensions else None
        if self._dimensions is not None and self._dimensions != space.dim:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                f"The Vectorize index bound as VECTORS holds vectors of {self._dimensions} dimensions; "
                f"{space.model[:80]} makes vectors of {space.dim}.",
                hint=f"Tell the user to create an index with `wrangler vectorize create NAME "
                f"--dimensions={space.dim} --metric=cosine` (and its videoId metadata index) and bind it as "
                f"VECTORS, or to embed with a model of {self._dimensions} dimensions; do not retry until then.",
            )

    async def close(self) -> None:
        """Nothing to release: the bindings belong to the Worker."""
