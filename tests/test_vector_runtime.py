"""The vector index in each runtime, and deleting a video deleting its vectors on every one."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from vid2context import library
from vid2context.api import create_app
from vid2context.errors import ErrorCode, VidError
from vid2context.models import EmbeddingSpace, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.runtime import Runtime, build_local_runtime, build_worker_runtime
from vid2context.search.vectors import VectorRecord
from vid2context.search.vectors_memory import MemoryVectorIndex
from vid2context.search.windows import make_windows
from vid2context.storage.sqlite_vec import SQLiteVectorIndex
from vid2context.storage.vectorize import VectorizeIndex

from .miniflare_harness import MiniflareHarness, apply_migrations
from .runtimes import ON_EVERY_RUNTIME, VECTOR_DIMENSIONS, Runtimes
from .vectorize_standin import VectorizeStandin

pytestmark = pytest.mark.anyio

SPACE = EmbeddingSpace(model="BAAI/bge-small-en-v1.5", dim=VECTOR_DIMENSIONS, pooling="cls")
KEPT, DOOMED = "youtube:F1xioXWb8CY", "youtube:GJLlxj_dtq8"


def talk(video_id: str) -> VideoContext:
    words = "the kickstand bends to one hundred sixty five degrees and folds flat".split()
    segments = [
        Segment(start_sec=i * 4.0, end_sec=i * 4.0 + 3.5, text=" ".join(words * 3)) for i in range(60)
    ]
    return VideoContext(
        id=video_id,
        metadata=VideoMetadata(id=video_id, platform="youtube", title="A stand"),
        transcript=Transcript(
            language="en", origin="captions-manual", timing="caption", producer="test", segments=segments
        ),
        fetched_at="2026-11-01T00:00:00Z",
    )


def direction(n: int) -> list[float]:
    values = [0.0] * VECTOR_DIMENSIONS
    values[n % VECTOR_DIMENSIONS] = 1.0
    values[(n + 1) % VECTOR_DIMENSIONS] = 0.5
    return values


async def index_video(runtime: Runtime, video_id: str, offset: int) -> int:
    assert runtime.vectors is not None
    await runtime.storage.put_context(talk(video_id))
    windows = make_windows(talk(video_id))
    records = [VectorRecord(w, direction(offset + n)) for n, w in enumerate(windows)]
    await runtime.vectors.upsert(SPACE, records)
    await runtime.vectors.upsert(
        EmbeddingSpace(model="other/model", dim=VECTOR_DIMENSIONS, pooling="cls"), records
    )
    return len(windows)


@ON_EVERY_RUNTIME
async def test_deleting_a_video_deletes_its_vectors(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"})
    expected = {"memory": MemoryVectorIndex, "sqlite": SQLiteVectorIndex, "worker": VectorizeIndex}
    assert isinstance(runtime.vectors, expected[runtimes.kind])
    kept = await index_video(runtime, KEPT, 0)
    assert await index_video(runtime, DOOMED, 100) > 1
    app = create_app(runtime)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        response = await http.delete(f"/api/v1/library/{DOOMED}")
    assert response.status_code == 204
    for space in (SPACE, EmbeddingSpace(model="other/model", dim=VECTOR_DIMENSIONS, pooling="cls")):
        assert await runtime.vectors.window_ids(space, DOOMED) == []
        assert len(await runtime.vectors.window_ids(space, KEPT)) == kept
        hits = await runtime.vectors.query(space, direction(100), top_k=100)
        assert hits and {h.video_id for h in hits} == {KEPT}
    assert await runtime.storage.get_context(DOOMED) is None


async def test_vectors_of_a_video_not_in_the_library_go_too() -> None:
    """An orphan (the library's row went first, by some older path) is cleaned by a delete."""
    from vid2context.runtime import build_runtime
    from vid2context.settings import load_settings

    runtime = build_runtime(load_settings({}))
    try:
        windows = make_windows(talk(DOOMED))
        await runtime.vectors.upsert(SPACE, [VectorRecord(w, direction(n)) for n, w in enumerate(windows)])
        with pytest.raises(VidError) as missing:
            await library.delete_video(runtime, DOOMED)
        assert missing.value.code is ErrorCode.NOT_FOUND
        assert await runtime.vectors.window_ids(SPACE, DOOMED) == []
    finally:
        await runtime.aclose()


async def test_the_local_runtime_keeps_vectors_in_the_library_file(tmp_path: Path) -> None:
    runtime = build_local_runtime({"VID2CONTEXT_HOME": str(tmp_path)})
    try:
        assert isinstance(runtime.vectors, SQLiteVectorIndex)
        assert runtime.vectors.database.path == runtime.storage.database.path  # type: ignore[attr-defined]
        await index_video(runtime, KEPT, 0)
    finally:
        await runtime.aclose()
    again = build_local_runtime({"VID2CONTEXT_HOME": str(tmp_path)})
    try:
        assert again.vectors is not None
        assert len(await again.vectors.window_ids(SPACE, KEPT)) == len(make_windows(talk(KEPT)))
    finally:
        await again.aclose()


async def test_a_worker_without_vectors_has_no_vector_index(miniflare: MiniflareHarness) -> None:
    miniflare.reset()
    bare = miniflare.new_env()
    bound = miniflare.new_env(vectors=VectorizeStandin(dimensions=VECTOR_DIMENSIONS))
    await apply_migrations(bare.DB)
    without, with_vectors = build_worker_runtime(bare), build_worker_runtime(bound)
    try:
        assert without.vectors is None
        assert isinstance(with_vectors.vectors, VectorizeIndex)
        await without.storage.put_context(talk(DOOMED))
        await library.delete_video(without, DOOMED)  # no index: the delete still works
        assert await without.storage.get_context(DOOMED) is None
    finally:
        for runtime in (without, with_vectors):
            await runtime.aclose()
        await bare.aclose()
        await bound.aclose()
