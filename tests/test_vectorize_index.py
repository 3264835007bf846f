"""What only the Vectorize index has (``storage/vectorize.py``), and the stand-in's own rules.

The index runs on Miniflare's real D1 (its record of what Vectorize holds) and on
``tests/vectorize_standin.py``, which refuses what Vectorize documents it refuses.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from vid2context.errors import ErrorCode, VidError
from vid2context.models import EmbeddingSpace
from vid2context.search.vectors import VectorRecord
from vid2context.search.windows import WindowRef
from vid2context.storage.vectorize import MAX_FILTER_BYTES, VIDEO_PROPERTY, VectorizeIndex

from .cloudflare_bindings import CloudflareEnv, JsException
from .miniflare_harness import MiniflareHarness, apply_migrations
from .vectorize_standin import VectorizeStandin

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SPACE = EmbeddingSpace(model="@cf/baai/bge-small-en-v1.5", dim=4, pooling="cls")


@pytest.fixture
async def env(miniflare: MiniflareHarness) -> AsyncIterator[CloudflareEnv]:
    miniflare.reset()
    env = miniflare.new_env()
    await apply_migrations(env.DB)
    try:
        yield env
    finally:
        await env.aclose()


def standin(**options: Any) -> VectorizeStandin:
    index = VectorizeStandin(dimensions=4, **options)
    index.create_metadata_index(VIDEO_PROPERTY, "string")
    return index


def window(video: str, i: int) -> WindowRef:
    return WindowRef(
        id=f"{video}@{i}-{i}", video_id=video, start_sec=i, end_sec=i + 1, first_segment=i, last_segment=i
    )


class Wrapped:
    """The binding as the workers SDK's wrapper presents it: Python values out, not JS proxies."""

    def __init__(self, inner: VectorizeStandin) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            result = await method(*args, **kwargs)
            return result.to_py() if hasattr(result, "to_py") else result

        return call


async def test_a_space_of_another_dimension_is_no_provider_with_the_command(env: CloudflareEnv) -> None:
    index = VectorizeIndex(standin(), env.DB)
    wide = EmbeddingSpace(model="@cf/baai/bge-base-en-v1.5", dim=768, pooling="cls")
    for attempt in (
        index.upsert(wide, [VectorRecord(window("youtube:a", 0), [1.0] * 768)]),
        index.query(wide, [1.0] * 768),
    ):
        with pytest.raises(VidError) as refused:
            await attempt
        assert refused.value.code is ErrorCode.NO_PROVIDER
        assert "4 dimensions" in refused.value.message
        assert "wrangler vectorize create NAME --dimensions=768 --metric=cosine" in (refused.value.hint or "")
    assert await index.window_ids(wide, "youtube:a") == []


@pytest.mark.parametrize("wrapped", [False, True], ids=["raw", "wrapped"])
async def test_writes_go_in_batches_of_1000_into_the_spaces_namespace(
    env: CloudflareEnv, wrapped: bool
) -> None:
    vectors = standin()
    index = VectorizeIndex(Wrapped(vectors) if wrapped else vectors, env.DB)
    records = [VectorRecord(window("youtube:a", i), [1, i, 0, 0]) for i in range(2500)]
    await index.upsert(SPACE, records)
    assert [n for call, n in vectors.calls if call == "upsert"] == [1000, 1000, 500]
    (stored,) = (await vectors.getByIds([f"{SPACE.tag}:youtube:a@7-7"])).to_py()
    assert stored["namespace"] == SPACE.tag and len(stored["id"].encode()) <= 64
    assert (
        stored["metadata"][VIDEO_PROPERTY] == "youtube:a"
        and stored["metadata"]["windowId"] == "youtube:a@7-7"
    )
    assert stored["metadata"]["model"] == SPACE.model and None not in stored["metadata"].values()
    hits = await index.query(SPACE, [1, 7, 0, 0], top_k=500)
    assert len(hits) == 100 and hits[0].id == "youtube:a@7-7"
    assert all(n <= 100 for call, n in vectors.calls if call == "query")
    assert await index.delete_video("youtube:a") == 2500
    assert [n for call, n in vectors.calls if call == "deleteByIds"] == [1000, 1000, 500]
    assert (await vectors.describe()).vectorCount == 0


async def test_nothing_waits_for_vectorize_to_apply_a_write(env: CloudflareEnv) -> None:
    vectors = standin(deferred=True)
    index = VectorizeIndex(vectors, env.DB)
    await index.upsert(SPACE, [VectorRecord(window("youtube:a", i), [1, i, 0, 0]) for i in range(3)])
    assert await index.window_ids(SPACE, "youtube:a") == [f"youtube:a@{i}-{i}" for i in range(3)]
    assert await index.query(SPACE, [1, 0, 0, 0]) == []  # not applied yet: found nothing, no error
    vectors.process()
    assert len(await index.query(SPACE, [1, 0, 0, 0])) == 3
    await index.replace_video(SPACE, "youtube:a", [VectorRecord(window("youtube:a", 9), [0, 0, 1, 0])])
    assert await index.window_ids(SPACE, "youtube:a") == ["youtube:a@9-9"]
    # Vectorize still holds the old windows and not the new one: the old ones are not reported.
    assert await index.query(SPACE, [1, 0, 0, 0]) == []
    vectors.process(1)  # the upsert applied, the delete still queued
    assert [h.id for h in await index.query(SPACE, [1, 0, 0, 0])] == ["youtube:a@9-9"]
    vectors.process()
    assert vectors.pending == 0 and (await vectors.describe()).vectorCount == 1


async def test_many_videos_are_searched_in_filters_under_2048_bytes(env: CloudflareEnv) -> None:
    vectors = standin()
    index = VectorizeIndex(vectors, env.DB)
    videos = [f"youtube:video{i:05d}x" for i in range(300)]
    await index.upsert(SPACE, [VectorRecord(window(v, 0), [1, n / 300, 0, 0]) for n, v in enumerate(videos)])
    wanted = videos[::2]
    hits = await index.query(SPACE, [1, 1, 0, 0], top_k=100, video_ids=wanted)
    assert len(hits) == 100 and {h.video_id for h in hits} <= set(wanted)
    assert [h.video_id for h in hits[:3]] == [videos[298], videos[296], videos[294]]
    assert sum(1 for call, _ in vectors.calls if call == "query") > 1


async def test_a_metadata_index_made_after_the_writes_filters_nothing(env: CloudflareEnv) -> None:
    """Why the deploy guide makes the videoId index before the first write."""
    vectors = VectorizeStandin(dimensions=4)
    index = VectorizeIndex(vectors, env.DB)
    await index.upsert(SPACE, [VectorRecord(window("youtube:a", 0), [1, 0, 0, 0])])
    vectors.create_metadata_index(VIDEO_PROPERTY, "string")
    assert await index.query(SPACE, [1, 0, 0, 0], video_ids=["youtube:a"]) == []
    assert len(await index.query(SPACE, [1, 0, 0, 0])) == 1
    await index.upsert(SPACE, [VectorRecord(window("youtube:a", 0), [1, 0, 0, 0])])  # re-upserted: indexed
    assert len(await index.query(SPACE, [1, 0, 0, 0], video_ids=["youtube:a"])) == 1


# --- the stand-in keeps Vectorize's documented limits ---------------------------------------------------


def vector(i: int | str, *values: float, **fields: Any) -> dict[str, Any]:
    return {"id": str(i), "values": list(values or (1.0, 0.0, 0.0, 0.0)), **fields}


async def refused(call: Any, words: str) -> None:
    with pytest.raises(JsException) as error:
        await call
    assert words in error.value.message


async def test_standin_limits_on_writes() -> None:
    index = VectorizeStandin(dimensions=4)
    await refused(index.upsert([vector(i) for i in range(1001)]), "1000")
    await refused(index.upsert([vector("x" * 65)]), "64 bytes")
    await refused(index.upsert([vector(1, 1.0, 0.0)]), "expected 4 dimensions")
    await refused(index.upsert([vector(1, metadata={"a.b": 1})]), "metadata key")
    await refused(index.upsert([vector(1, metadata={"$a": 1})]), "metadata key")
    await refused(index.upsert([vector(1, metadata={"t": "x" * 11000})]), "10240")
    await refused(index.upsert([vector(1, namespace="n" * 65)]), "namespace")
    await refused(index.upsert([]), "no vectors")
    assert (await index.describe()).vectorCount == 0
    await index.insert([vector(1, 1.0, 0.0, 0.0, 0.0)])
    await index.insert([vector(1, 0.0, 1.0, 0.0, 0.0), vector(2)])  # insert skips an id that exists
    (one,) = (await index.getByIds(["1"])).to_py()
    assert one["values"] == [1.0, 0.0, 0.0, 0.0]
    await index.upsert([vector(1, 0.0, 1.0, 0.0, 0.0, namespace="b")])  # ids are index-wide
    assert [v["namespace"] for v in (await index.getByIds(["1"])).to_py()] == ["b"]
    assert (await index.describe()).vectorCount == 2


async def test_standin_limits_on_queries() -> None:
    index = VectorizeStandin(dimensions=4)
    index.create_metadata_index("k", "string")
    await index.upsert(
        [vector(i, 1.0, i, 0.0, 0.0, metadata={"k": "v" * 70 if i else "w"}) for i in range(30)]
    )
    query = [1.0, 0.0, 0.0, 0.0]
    assert (await index.query(query)).count == 5  # topK defaults to 5
    assert (await index.query(query, {"topK": 100})).count == 30
    await refused(index.query(query, {"topK": 101}), "between 1 and 100")
    await refused(index.query(query, {"topK": 21, "returnMetadata": "all"}), "between 1 and 20")
    await refused(index.query(query, {"topK": 21, "returnValues": True}), "between 1 and 20")
    assert (await index.query(query, {"topK": 20, "returnMetadata": "all"})).count == 20
    await refused(index.query(query, {"filter": {}}), "non-empty")
    await refused(index.query(query, {"filter": {"k": {"$regex": "v"}}}), "unsupported")
    big = {"k": {"$in": ["v" * 60] * 40}}
    assert len(json.dumps(big, separators=(",", ":"))) >= MAX_FILTER_BYTES
    await refused(index.query(query, {"filter": big}), "2048")
    await refused(index.query([1.0], {}), "expected 4 dimensions")
    # Only the first 64 bytes of an indexed string count.
    assert (await index.query(query, {"topK": 100, "filter": {"k": "v" * 70}})).count == 0
    assert (await index.query(query, {"topK": 100, "filter": {"k": "v" * 64}})).count == 29
    assert (await index.query(query, {"topK": 100, "filter": {"k": {"$in": ["w", "z"]}}})).count == 1
    assert (await index.query(query, {"topK": 100, "filter": {"unindexed": "w"}})).count == 0
    first = (await index.query(query, topK=1, returnMetadata="indexed")).matches[0]
    assert first.id == "0" and first.metadata.to_py() == {"k": "w"} and first.score == pytest.approx(1.0)


async def test_standin_defers_writes_until_processed() -> None:
    index = VectorizeStandin(dimensions=4, deferred=True)
    mutation = await index.upsert([vector(1)])
    assert mutation.mutationId and (await index.query([1.0, 0.0, 0.0, 0.0])).count == 0
    await index.deleteByIds(["1"])
    assert index.process(1) == 1 and (await index.query([1.0, 0.0, 0.0, 0.0])).count == 1
    assert index.process() == 1 and (await index.query([1.0, 0.0, 0.0, 0.0])).count == 0
    assert (await index.describe()).processedUpToMutation == "mutation-000002"
