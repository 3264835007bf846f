"""``VectorIndex`` in dicts: for tests, and the reference the conformance suite holds the others to.

Exact: every query scores every vector of the space, in pure Python. Vectors are kept normalised,
so a score is one dot product; writes are visible at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..models import EmbeddingSpace
from .vectors import (
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
from .windows import WindowRef

__all__ = ["MemoryVectorIndex"]


def _unit(values: list[float]) -> tuple[float, ...]:
    norm = math.sqrt(math.fsum(v * v for v in values))
    return tuple(v / norm for v in values)


class MemoryVectorIndex:
    id = "memory"

    def __init__(self) -> None:
        self._spaces: dict[EmbeddingSpace, dict[str, tuple[WindowRef, tuple[float, ...]]]] = {}
        self._indexed: dict[EmbeddingSpace, set[str]] = {}

    async def upsert(self, space: EmbeddingSpace, records: Sequence[VectorRecord]) -> None:
        checked = check_records(space, records)
        held = self._spaces.setdefault(space, {}) if checked else self._spaces.get(space, {})
        for window, vector in checked:
            held[window.id] = (window, _unit(vector))
        if checked:
            self._indexed.setdefault(space, set()).update(window.video_id for window, _ in checked)

    async def replace_video(
        self, space: EmbeddingSpace, video_id: str, records: Sequence[VectorRecord]
    ) -> None:
        checked = check_records(space, records, video_id=video_id)
        await self.upsert(space, [VectorRecord(window, vector) for window, vector in checked])
        keep = {window.id for window, _ in checked}
        held = self._spaces.get(space, {})
        for window_id in [i for i, (w, _) in held.items() if w.video_id == video_id and i not in keep]:
            del held[window_id]
        self._spaces.setdefault(space, held)
        self._indexed.setdefault(space, set()).add(video_id)

    async def spaces(self) -> list[SpaceCount]:
        counts = [
            SpaceCount(space, len(self._indexed.get(space, ())), len(held))
            for space, held in self._spaces.items()
        ]
        return sorted(counts, key=lambda c: -c.videos)

    async def indexed(self, space: EmbeddingSpace, video_ids: Sequence[str]) -> set[str]:
        return self._indexed.get(space, set()) & set(video_ids)

    async def query(
        self,
        space: EmbeddingSpace,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        video_ids: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        check_space(space)
        query = _unit(check_vector(space, vector))
        top_k = check_top_k(top_k)
        within = check_video_ids(video_ids)
        allowed = None if within is None else set(within)
        scored = []
        for window_id, (window, values) in self._spaces.get(space, {}).items():
            if allowed is not None and window.video_id not in allowed:
                continue
            score = math.fsum(a * b for a, b in zip(query, values, strict=True))
            scored.append((-score, window_id, window))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [hit(window, -negated) for negated, _, window in scored[:top_k]]

    async def window_ids(self, space: EmbeddingSpace, video_id: str) -> list[str]:
        held = self._spaces.get(space, {})
        return sorted(i for i, (window, _) in held.items() if window.video_id == video_id)

    async def delete_video(self, video_id: str) -> int:
        removed = 0
        for held in self._spaces.values():
            doomed = [i for i, (window, _) in held.items() if window.video_id == video_id]
            for window_id in doomed:
                del held[window_id]
            removed += len(doomed)
        for videos in self._indexed.values():
            videos.discard(video_id)
        return removed

    async def close(self) -> None:
        self._spaces.clear()
        self._indexed.clear()
