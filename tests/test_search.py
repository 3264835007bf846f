"""``GET /api/v1/search`` on every runtime (memory, SQLite with sqlite-vec, the Worker over
Miniflare with the Vectorize stand-in): the contract's shape, fusion, narrowing, filters, deletion,
and ``meta`` for each state of the vector side. The real offline model embeds (on the Worker too:
the index is Vectorize, the vectors the model's); the Worker's own AI binding is tried over the
Workers AI stand-in, with its reranker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from vid2context import library as library_api
from vid2context.api import create_app
from vid2context.models import EmbeddingSpace, SearchHit
from vid2context.runtime import Runtime
from vid2context.search.embedders.openai_compat import OpenAICompatibleEmbedder
from vid2context.search.engine import RRF_K, fuse
from vid2context.search.indexing import index_video
from vid2context.search.vectors import VectorHit

from .cloudflare_bindings import WorkersAi
from .fake_embeddings import FakeEmbeddings
from .retrieval_set import talks
from .runtimes import ON_EVERY_RUNTIME, Runtimes, serve
from .test_indexing import QUIET, model_runtime

pytestmark = pytest.mark.anyio

API = "/api/v1/search"
BIKE, BREAD, DB = "youtube:EbikeTalk01", "youtube:SourdoughT1", "youtube:DbIndexTalk"


async def library(runtimes: Runtimes, model_dir: Path, environ: dict[str, str] | None = None) -> Runtime:
    """A runtime with the five talks saved and indexed by the test model."""
    runtime = await model_runtime(runtimes, model_dir, environ)
    for talk in talks():
        await runtime.storage.put_context(talk)
        assert (await index_video(runtime, talk)).outcome == "ok"
    return runtime


async def get(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await client.get(API, params=params)
    assert response.status_code == 200, response.text
    return response.json()


@ON_EVERY_RUNTIME
async def test_a_hybrid_search_answers_the_contracts_shape(runtimes: Runtimes, embed_model_dir: Path) -> None:
    runtime = await library(runtimes, embed_model_dir)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        body = await get(client, q="kickstand degrees")
    hits, meta = body["hits"], body["meta"]
    top = hits[0]
    assert top["videoId"] == BIKE and "kickstand bends to 165 degrees" in top["text"]
    assert top["snippet"].count("**") >= 4 and "**kickstand**" in top["snippet"]
    assert top["url"] == f"https://www.youtube.com/watch?v=EbikeTalk01&t={int(top['startSec'])}s"
    assert top["chapterTitle"] == "Kickstand" and top["channel"] == "Two Wheels"
    assert top["title"] == "Folding e-bike, a year on"
    assert set(top["sources"]) == {"keyword", "vector"} and top["ranks"]["keyword"] == 1
    assert top["windowStartSec"] <= top["startSec"] <= top["windowEndSec"]
    assert top["score"] == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + top["ranks"]["vector"]))
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert meta["mode"] == "hybrid" and meta["sides"] == ["keyword", "vector"]
    assert meta["vector"] == "ok" and meta["vectorReason"] is None
    assert meta["embedding"] == {"model": runtime.embed[0].model_id, "dim": 384, "pooling": "mean"}
    assert meta["index"] == runtime.vectors.id and meta["videos"] == 5 and meta["indexed"] == 5
    assert meta["fusion"] == "rrf" and meta["fusionK"] == 60 and meta["rerank"] == "off"
    assert set(meta["timings"]) == {"keywordMs", "embedMs", "vectorMs", "rerankMs", "totalMs"}


@ON_EVERY_RUNTIME
async def test_the_modes_run_their_sides_and_vector_finds_what_keywords_cannot(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await library(runtimes, embed_model_dir)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        keyword = await get(client, q="how far does the stand tilt", mode="keyword")
        vector = await get(client, q="how far does the stand tilt", mode="vector")
        hybrid = await get(client, q="how far does the stand tilt")
    assert keyword["hits"] == [] and keyword["meta"]["sides"] == ["keyword"]
    assert keyword["meta"]["vector"] == "off" and "mode=keyword" in keyword["meta"]["vectorReason"]
    assert vector["meta"]["sides"] == ["vector"] and vector["meta"]["keyword"] == "off"
    for body in (vector, hybrid):
        top = body["hits"][0]
        assert top["videoId"] == BIKE and top["sources"] == ["vector"], body["hits"][:2]
        assert "kickstand bends to 165 degrees" in top["text"]  # narrowed: "stand" is in "kickstand"
        assert top["windowStartSec"] < top["startSec"] < top["windowEndSec"]


@ON_EVERY_RUNTIME
async def test_filters_and_scopes(runtimes: Runtimes, embed_model_dir: Path) -> None:
    runtime = await library(runtimes, embed_model_dir)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        collection = await library_api.create_collection(runtime, "Kitchen")
        await library_api.add_to_collection(runtime, collection.id, [BREAD])
        scoped = await get(client, q="temperature", collectionId="Kitchen")
        only = await get(client, q="battery", videoIds=f"{BIKE},{DB}")
        channel = await get(client, q="battery", channel="off grid family")
        origin = await get(client, q="battery", origin="asr")
        dated = await get(client, q="battery", publishedAfter="2026-05-01", publishedBefore="2026-05-31")
    assert scoped["hits"] and {h["videoId"] for h in scoped["hits"]} == {BREAD}
    assert scoped["meta"]["videos"] == 1
    assert only["hits"] and {h["videoId"] for h in only["hits"]} <= {BIKE, DB} and only["meta"]["videos"] == 2
    assert channel["hits"] and {h["videoId"] for h in channel["hits"]} == {"youtube:SolarHome01"}
    assert origin["hits"] == [] and origin["meta"]["videos"] == 0
    assert dated["meta"]["videos"] == 1  # JapanRail01, published 2026-05-14
    assert {h["videoId"] for h in dated["hits"]} <= {"youtube:JapanRail01"}


@ON_EVERY_RUNTIME
async def test_exclusions_and_phrases_hold_on_both_sides(runtimes: Runtimes, embed_model_dir: Path) -> None:
    runtime = await library(runtimes, embed_model_dir)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        plain = await get(client, q="battery charge")
        without = await get(client, q="battery charge -winter -kilowatt")
        phrase = await get(client, q='"full charge"', mode="keyword")
    assert plain["hits"] and without["hits"]
    for hit in without["hits"]:
        assert "winter" not in hit["text"].lower() and "kilowatt" not in hit["text"].lower()
    assert [h["text"] for h in phrase["hits"]] == ["a full charge takes four and a half hours from empty"]


@ON_EVERY_RUNTIME
async def test_deleting_a_video_removes_its_hits_from_both_sides(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await library(runtimes, embed_model_dir)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        before = await get(client, q="kickstand")
        assert any(h["videoId"] == BIKE for h in before["hits"])
        assert (await client.delete(f"/api/v1/library/{BIKE}")).status_code == 204
        after = await get(client, q="kickstand")
        meaning = await get(client, q="how far does the stand tilt", mode="vector")
    assert all(h["videoId"] != BIKE for h in after["hits"] + meaning["hits"])
    assert after["meta"]["videos"] == 4 and after["meta"]["vector"] == "ok"


@ON_EVERY_RUNTIME
async def test_a_video_not_indexed_makes_the_vector_side_partial(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await library(runtimes, embed_model_dir)
    late = talks()[0]
    late = msgspec.structs.replace(
        late, id="youtube:LateVideo01", metadata=msgspec.structs.replace(late.metadata, id="LateVideo01")
    )
    await runtime.storage.put_context(late)  # saved, not embedded
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        body = await get(client, q="kickstand")
        within = await get(client, q="kickstand", videoIds="youtube:LateVideo01")
    meta = body["meta"]
    assert meta["vector"] == "partial" and meta["videos"] == 6 and meta["indexed"] == 5
    assert "1 of the 6 videos" in meta["vectorReason"] and "/api/v1/jobs" in meta["vectorHint"]
    assert any(h["videoId"] == "youtube:LateVideo01" for h in body["hits"])  # by keyword
    assert within["meta"]["vector"] == "partial" and within["meta"]["sides"] == ["keyword"]
    assert within["hits"] and all(h["sources"] == ["keyword"] for h in within["hits"])


async def test_no_embedding_rung_is_disabled_and_keyword_answers(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    for talk in talks():
        await runtime.storage.put_context(talk)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        body = await get(client, q="kickstand")
        refused = await client.get(API, params={"q": "kickstand", "mode": "vector"})
    meta = body["meta"]
    assert body["hits"] and meta["vector"] == "disabled" and meta["sides"] == ["keyword"]
    assert "No embedding rung" in meta["vectorReason"] and "/api/v1/models?kind=embed" in meta["vectorHint"]
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "no-provider"


async def test_a_failing_embedder_is_failed_with_the_reason_and_keyword_answers(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    with FakeEmbeddings(key="k") as fake:
        runtime = await runtimes.build(QUIET)
        runtime.embed = [OpenAICompatibleEmbedder(runtime.http, url=fake.url + "/v1", key="k", dim=384)]
        runtime.embed_plan.retries = 0
        for talk in talks():
            await runtime.storage.put_context(talk)
            assert (await index_video(runtime, talk)).outcome == "ok"
        fake.fail_next(503)
        async with serve(create_app(runtime, owns_runtime=False)) as client:
            body = await get(client, q="kickstand")
            fake.fail_next(503)
            refused = await client.get(API, params={"q": "kickstand", "mode": "vector"})
    meta = body["meta"]
    assert body["hits"] and meta["vector"] == "failed" and meta["sides"] == ["keyword"]
    assert meta["vectorReason"] and [(a["stage"], a["outcome"]) for a in meta["attempts"]] == [
        ("embed", "error")
    ]
    assert refused.status_code == 502 and refused.json()["error"]["code"] == "upstream"


async def test_the_worker_without_vectors_is_keyword_only_and_says_so(
    runtimes: Runtimes, miniflare: Any
) -> None:
    from vid2context.runtime import build_worker_runtime

    from .miniflare_harness import apply_migrations

    miniflare.reset()
    env = miniflare.new_env(vars=QUIET)
    await apply_migrations(env.DB)
    runtime = build_worker_runtime(env)
    try:
        assert runtime.vectors is None
        await runtime.storage.put_context(talks()[0])
        async with serve(create_app(runtime, owns_runtime=False)) as client:
            body = await get(client, q="kickstand")
            health = (await client.get("/api/v1/health")).json()["search"]
    finally:
        await runtime.aclose()
        await env.aclose()
    assert body["hits"] and body["meta"]["vector"] == "off" and body["meta"]["sides"] == ["keyword"]
    assert "VECTORS" in body["meta"]["vectorReason"] and "VECTORS" in body["meta"]["vectorHint"]
    assert health["state"] == "off"


@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_on_the_worker_the_ai_binding_embeds_indexes_and_reranks(runtimes: Runtimes) -> None:
    """Workers AI through the binding, over the stand-in that answers as Cloudflare documents:
    bge-small embeds at save (cls pooling, batches of at most 100), Vectorize holds the windows,
    bge-reranker-base reorders the top hits."""
    with FakeEmbeddings() as fake:
        runtime = await runtimes.build(QUIET, ai=WorkersAi(fake.url))
        for talk in talks():
            await runtime.storage.put_context(talk)
            assert (await index_video(runtime, talk)).outcome == "ok"
        async with serve(create_app(runtime, owns_runtime=False)) as client:
            body = await get(client, q="battery range winter", rerank="1", limit="5")
    meta = body["meta"]
    assert meta["embedding"] == msgspec.to_builtins(
        EmbeddingSpace(model="BAAI/bge-small-en-v1.5", dim=384, pooling="cls")
    )
    assert meta["index"] == "vectorize" and meta["vector"] == "ok" and meta["sides"] == ["keyword", "vector"]
    assert meta["rerank"] == "ok" and meta["reranker"] == "rerank/cloudflare/@cf/baai/bge-reranker-base"
    embeds = [r for r in fake.answered if r.path.endswith("bge-small-en-v1.5")]
    assert embeds and all(len(r.texts) <= 100 and r.body["pooling"] == "cls" for r in embeds)
    (reranked,) = [r for r in fake.answered if r.path.endswith("bge-reranker-base")]
    assert reranked.body["query"] == "battery range winter" and 1 <= len(reranked.body["contexts"]) <= 20
    hits = body["hits"]
    assert [h["ranks"]["rerank"] for h in hits] == [1, 2, 3, 4, 5]
    assert [h["rerankScore"] for h in hits] == sorted((h["rerankScore"] for h in hits), reverse=True)
    assert hits[0]["text"] == "in winter the range dropped by roughly a third"  # holds all three words


async def test_rerank_without_a_rung_is_disabled_and_keeps_the_fused_order(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await library(runtimes, embed_model_dir)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        plain = await get(client, q="battery")
        asked = await get(client, q="battery", rerank="1")
    assert asked["meta"]["rerank"] == "disabled" and "No reranking rung" in asked["meta"]["rerankReason"]
    assert [h["text"] for h in asked["hits"]] == [h["text"] for h in plain["hits"]]


async def test_rerank_through_the_rest_rung_and_a_failing_one(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    with FakeEmbeddings(key="cf-token") as fake:
        runtime = await library(
            runtimes,
            embed_model_dir,
            {
                "CLOUDFLARE_ACCOUNT_ID": "acct",
                "CLOUDFLARE_API_TOKEN": "cf-token",
                "CLOUDFLARE_BASE_URL": fake.url + "/client/v4",
            },
        )
        runtime.embed = [runtime.embed[0]]  # the test model embeds; Workers AI only reranks here
        async with serve(create_app(runtime, owns_runtime=False)) as client:
            body = await get(client, q="battery range winter", rerank="1")
            fake.fail_next(500)
            failed = await get(client, q="battery range winter", rerank="1")
    assert (
        body["meta"]["rerank"] == "ok"
        and body["hits"][0]["text"] == "in winter the range dropped by roughly a third"
    )
    assert failed["meta"]["rerank"] == "failed" and failed["meta"]["rerankReason"]
    assert [a["stage"] for a in failed["meta"]["attempts"] if a["outcome"] == "error"] == ["rerank"]
    assert failed["hits"] and all(h["rerankScore"] is None for h in failed["hits"])


def _window(video: str, first: int, last: int, start: float, end: float) -> VectorHit:
    return VectorHit(
        id=f"{video}@{first}-{last}",
        video_id=video,
        start_sec=start,
        end_sec=end,
        first_segment=first,
        last_segment=last,
        score=0.5,
    )


def test_fusion_merges_a_keyword_segment_into_the_window_that_holds_it() -> None:
    keyword = [
        SearchHit(video_id="v:a", start_sec=12.0, end_sec=14.0, text="x", score=3.0),
        SearchHit(video_id="v:b", start_sec=1.0, end_sec=2.0, text="y", score=2.0),
        SearchHit(video_id="v:a", start_sec=13.0, end_sec=15.0, text="z", score=1.0),
    ]
    vector = [_window("v:c", 0, 9, 0, 90), _window("v:a", 10, 19, 10, 100)]
    fused = fuse(keyword, vector)
    assert [(e.video_id, e.keyword_rank, e.vector_rank) for e in fused] == [
        ("v:a", 1, 2),  # found by both: 1/61 + 1/62
        ("v:c", None, 1),
        ("v:b", 2, None),
    ]  # the third keyword hit is inside the same window, which the first stands for


async def test_the_local_reranker_without_its_model_is_no_provider_and_hands_over() -> None:
    """No cross-encoder ships in a package the tests can install offline, so the local rung is
    tried only for its refusal: a model fastembed does not know (no download is attempted) is
    ``no-provider``, which the ladder records and hands over from."""
    from vid2context.ctx import Ctx
    from vid2context.errors import ErrorCode, VidError
    from vid2context.search.rerank_local import LocalReranker
    from vid2context.search.rerankers import rerank_texts

    local = LocalReranker(model="vid2context/no-such-cross-encoder")
    assert local.enabled and local.tier == "local"
    attempts: list[Any] = []
    with pytest.raises(VidError) as caught:
        await rerank_texts([local], "kickstand", ["the kickstand bends"], Ctx(), attempts)
    assert caught.value.code is ErrorCode.NO_PROVIDER and "VID2CONTEXT_RERANK_MODEL" in (
        caught.value.hint or ""
    )
    assert [(a.id, a.outcome, a.reason) for a in attempts] == [(local.id, "error", "no-provider")]
