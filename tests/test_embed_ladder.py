"""The embedding ladder on every runtime: its order, which rungs a library's space may use, the walk
down it, and what health, ``GET /api/v1/models?kind=embed`` and the MCP ``list_models`` tool show.

Runtimes of each kind (``tests/runtimes.py``): ``memory``, ``sqlite`` and ``worker`` (Miniflare's
D1, KV and R2, and the ``AI`` binding when given, backed by the stand-in of
``tests/fake_embeddings.py`` as the hosted rungs are).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from vid2context.api.app import create_app
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.mcp import create_mcp
from vid2context.models import EmbeddingSpace
from vid2context.runtime import Runtime
from vid2context.search.embedders.base import EmbedPlan
from vid2context.search.embedders.fastembed_local import FastEmbedder
from vid2context.search.embedders.ladder import embed_texts, pick_embedder
from vid2context.search.embedders.rungs import ordered

from .cloudflare_bindings import WorkersAi
from .fake_embeddings import FakeEmbeddings
from .runtimes import ON_EVERY_RUNTIME, ON_WORKER_TOO, Runtimes, serve

pytestmark = pytest.mark.anyio

KEY = "sk-embed-ladder-secret-0042"
TOKEN = "cf-token-secret-0042"
BGE = EmbeddingSpace(model="BAAI/bge-small-en-v1.5", dim=384, pooling="cls")
TEXTS = ["how far does the stand tilt back", "the kickstand bends to one hundred sixty five degrees"]


@pytest.fixture
def fake() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings() as server:
        yield server


def cloudflare_env(fake: FakeEmbeddings) -> dict[str, str]:
    return {
        "CLOUDFLARE_ACCOUNT_ID": "acct",
        "CLOUDFLARE_API_TOKEN": TOKEN,
        "CLOUDFLARE_BASE_URL": fake.url + "/client/v4",
    }


def openai_env(fake: FakeEmbeddings, **extra: str) -> dict[str, str]:
    return {
        "VID2CONTEXT_EMBED_URL": fake.url + "/v1",
        "VID2CONTEXT_EMBED_KEY": KEY,
        "VID2CONTEXT_EMBED_MODEL_ID": "nomic-embed-text",
        **extra,
    }


async def build(runtimes: Runtimes, environ: dict[str, str], fake: FakeEmbeddings) -> Runtime:
    """A runtime of the test's kind; on the Worker, with the AI binding on the stand-in."""
    ai = WorkersAi(fake.url) if runtimes.kind == "worker" else None
    runtime = await runtimes.build(environ, ai=ai)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    runtime.embed_plan = EmbedPlan(sleep=sleep)
    return runtime


def outcomes(attempts: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(a.id, a.outcome, a.reason) for a in attempts]


# --- order and choice -------------------------------------------------------------------------


@ON_EVERY_RUNTIME
async def test_the_ladder_lists_every_rung_in_tier_order(runtimes: Runtimes, fake: FakeEmbeddings) -> None:
    runtime = await build(runtimes, {}, fake)
    ids = [rung.id for rung in runtime.embed]
    assert ids == ["embed/cloudflare/@cf/baai/bge-small-en-v1.5", "embed/openai/text-embedding-3-small"]
    tiers = [rung.tier for rung in runtime.embed]
    assert tiers == ["free", "keyless"]
    enabled = [rung.enabled for rung in runtime.embed]
    # On the Worker the AI binding replaces the REST rung and is on; elsewhere nothing is set up.
    assert enabled == ([True, False] if runtimes.kind == "worker" else [False, False])
    if runtimes.kind == "worker":
        assert runtime.embed[0].requires == ("AI",)


def test_ordered_puts_local_first_and_keeps_order_within_a_tier(embed_model_dir: Path) -> None:
    from vid2context.search.embedders.openai_compat import OpenAICompatibleEmbedder
    from vid2context.search.embedders.workers_ai import WorkersAIBindingEmbedder

    local = FastEmbedder(folder=str(embed_model_dir))
    paid = OpenAICompatibleEmbedder(None, url="http://x.test/v1", key="k")  # type: ignore[arg-type]
    keyless = OpenAICompatibleEmbedder(None, url="http://y.test/v1")  # type: ignore[arg-type]
    free = WorkersAIBindingEmbedder(None)
    assert ordered([paid, keyless, free, local]) == [local, free, keyless, paid]


@ON_WORKER_TOO
async def test_nothing_set_up_turns_the_vector_side_off_with_the_reason(
    runtimes: Runtimes, fake: FakeEmbeddings
) -> None:
    runtime = await runtimes.build({})  # no binding on the Worker either
    pick = pick_embedder(runtime, BGE)
    assert pick.embedder is None and pick.rungs == []
    assert pick.reason is not None and pick.reason.code is ErrorCode.NO_PROVIDER
    assert "kind=embed" in (pick.reason.hint or "")
    assert [a.outcome for a in pick.attempts] == ["skipped", "skipped"]
    assert all(a.stage == "embed" and a.detail and a.detail.startswith("set ") for a in pick.attempts)
    with pytest.raises(VidError) as caught:
        await embed_texts(runtime, TEXTS, space=BGE)
    assert caught.value.code is ErrorCode.NO_PROVIDER and len(caught.value.attempts) == 2
    assert fake.requests == []


async def test_keyless_rungs_off_are_skipped_as_disabled(runtimes: Runtimes, fake: FakeEmbeddings) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_EMBED_URL": fake.url + "/v1", "VID2CONTEXT_KEYLESS": "0"})
    pick = pick_embedder(runtime)
    assert ("embed/self-hosted/text-embedding-3-small", "skipped", "disabled") in outcomes(pick.attempts)


@ON_EVERY_RUNTIME
async def test_a_library_of_bge_vectors_is_searched_with_bge_only(
    runtimes: Runtimes, fake: FakeEmbeddings
) -> None:
    runtime = await build(runtimes, {**cloudflare_env(fake), **openai_env(fake)}, fake)
    pick = pick_embedder(runtime, BGE)
    assert [rung.id for rung in pick.rungs] == ["embed/cloudflare/@cf/baai/bge-small-en-v1.5"]
    assert ("embed/self-hosted/nomic-embed-text", "skipped", "other-model") in outcomes(pick.attempts)
    made = await embed_texts(runtime, TEXTS, space=BGE)
    assert made.space == BGE and len(made.vectors) == 2
    (request,) = fake.requests
    assert "/ai/run/@cf/baai/bge-small-en-v1.5" in request.path
    assert request.body == {"text": TEXTS, "pooling": "cls"}
    # Nothing indexed yet: any enabled rung, the first one first.
    assert pick_embedder(runtime).embedder is runtime.embed[0]


@ON_WORKER_TOO
async def test_a_library_of_another_model_says_which_and_what_would_do(
    runtimes: Runtimes, fake: FakeEmbeddings
) -> None:
    runtime = await build(runtimes, cloudflare_env(fake), fake)
    other = EmbeddingSpace(model="nomic-embed-text", dim=768, pooling="server")
    pick = pick_embedder(runtime, other)
    assert pick.embedder is None and pick.reason is not None
    assert pick.reason.code is ErrorCode.NO_PROVIDER
    assert "nomic-embed-text" in pick.reason.message and "768" in pick.reason.message
    assert "BAAI/bge-small-en-v1.5" in (pick.reason.hint or "")
    detail = [a.detail for a in pick.attempts if a.reason == "other-model"]
    assert detail == ["makes BAAI/bge-small-en-v1.5|cls|384"]
    # The same model with the other pooling is another space too.
    assert pick_embedder(runtime, EmbeddingSpace(model=BGE.model, dim=384, pooling="mean")).embedder is None


async def test_local_and_workers_ai_bge_share_a_space_and_a_folder_does_not(
    runtimes: Runtimes, fake: FakeEmbeddings, embed_model_dir: Path
) -> None:
    runtime = await build(runtimes, cloudflare_env(fake), fake)
    runtime.embed = ordered([FastEmbedder(), *runtime.embed])  # the default model, not loaded here
    assert [rung.service for rung in pick_embedder(runtime, BGE).rungs] == ["fastembed", "cloudflare"]
    runtime.embed = ordered([FastEmbedder(folder=str(embed_model_dir), pooling="mean"), *runtime.embed[1:]])
    pick = pick_embedder(runtime, BGE)
    assert [rung.service for rung in pick.rungs] == ["cloudflare"]
    local = runtime.embed[0]
    assert (local.id, "skipped", "other-model") in outcomes(pick.attempts)
    mine = EmbeddingSpace(model=local.model_id, dim=384, pooling="mean")
    assert pick_embedder(runtime, mine).embedder is local


async def test_a_failing_rung_hands_over_to_the_next_of_the_same_space(
    runtimes: Runtimes, fake: FakeEmbeddings
) -> None:
    runtime = await build(runtimes, openai_env(fake), fake)
    # A second endpoint of the same model, behind the first in the ladder, whose key is refused.
    from vid2context.search.embedders.openai_compat import OpenAICompatibleEmbedder

    broken = OpenAICompatibleEmbedder(runtime.http, url=fake.url + "/v1", model="nomic-embed-text", key=KEY)
    fake.key = KEY
    runtime.embed = [broken, *runtime.embed]
    fake.fail_next(401)
    attempts: list[Any] = []
    made = await embed_texts(runtime, TEXTS, attempts=attempts)
    assert made.producer == "embed/self-hosted/nomic-embed-text" and len(made.vectors) == 2
    assert [(a.outcome, a.reason) for a in attempts if a.stage == "embed" and a.outcome != "skipped"] == [
        ("error", "auth"),
        ("ok", None),
    ]


async def test_every_rung_failing_differently_is_all_rungs_failed(
    runtimes: Runtimes, fake: FakeEmbeddings
) -> None:
    runtime = await build(runtimes, {**openai_env(fake)}, fake)
    from vid2context.search.embedders.openai_compat import OpenAICompatibleEmbedder

    second = OpenAICompatibleEmbedder(runtime.http, url=fake.url + "/v1", model="nomic-embed-text", key=KEY)
    runtime.embed = [*runtime.embed, second]
    runtime.embed_plan.retries = 0
    fake.key = KEY
    fake.fail_next(401)
    fake.fail_next(503)
    with pytest.raises(VidError) as caught:
        await embed_texts(runtime, TEXTS)
    assert caught.value.code is ErrorCode.ALL_RUNGS_FAILED
    assert [a.reason for a in caught.value.attempts if a.outcome == "error"] == ["auth", "upstream"]
    assert KEY not in caught.value.message + (caught.value.hint or "")


async def test_an_endpoint_of_unknown_dimension_is_held_to_the_library_s(
    runtimes: Runtimes, fake: FakeEmbeddings
) -> None:
    runtime = await build(runtimes, openai_env(fake), fake)  # the stand-in answers 384
    indexed = EmbeddingSpace(model="nomic-embed-text", dim=768, pooling="server")
    assert pick_embedder(runtime, indexed).embedder is runtime.embed[1]  # fits on model and pooling
    with pytest.raises(VidError) as caught:
        await embed_texts(runtime, TEXTS, space=indexed)
    assert caught.value.code is ErrorCode.UPSTREAM and "768" in caught.value.message
    assert ("embed/self-hosted/nomic-embed-text", "error", "upstream") in outcomes(caught.value.attempts)


async def test_bad_texts_are_refused_before_any_rung(runtimes: Runtimes, fake: FakeEmbeddings) -> None:
    runtime = await build(runtimes, openai_env(fake), fake)
    for texts in ([], ["ok", ""], [" \n"]):
        attempts: list[Any] = []
        with pytest.raises(VidError) as caught:
            await embed_texts(runtime, texts, attempts=attempts, ctx=Ctx(timeout=5))
        assert caught.value.code is ErrorCode.BAD_REQUEST and attempts == []
    assert fake.requests == []


# --- health, /models and list_models --------------------------------------------------------


@ON_EVERY_RUNTIME
async def test_health_and_models_show_every_embed_rung_and_never_a_value(
    runtimes: Runtimes, fake: FakeEmbeddings
) -> None:
    runtime = await build(
        runtimes, {**cloudflare_env(fake), **openai_env(fake, VID2CONTEXT_EMBED_DIM="768")}, fake
    )
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        health = await client.get("/api/v1/health")
        models = await client.get("/api/v1/models", params={"kind": "embed"})
        stt = await client.get("/api/v1/models", params={"kind": "stt"})
    assert health.status_code == models.status_code == stt.status_code == 200
    for body in (health.text, models.text):
        for secret in (KEY, TOKEN, fake.url):
            assert secret not in body
    embed = {p["id"]: p for p in health.json()["providers"] if p["kind"] == "embed"}
    assert list(embed) == ["embed-workers-ai", "embed-openai-compatible"]
    workers_ai = embed["embed-workers-ai"]["rungs"]
    assert workers_ai == [
        {
            "id": "embed/cloudflare/@cf/baai/bge-small-en-v1.5",
            "service": "cloudflare",
            "model": "@cf/baai/bge-small-en-v1.5",
            "tier": "free",
            "enabled": True,
            "requires": ["AI"]
            if runtimes.kind == "worker"
            else ["CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN"],
            "embedding": {"modelId": "BAAI/bge-small-en-v1.5", "dim": 384, "pooling": "cls"},
        }
    ]
    compatible = embed["embed-openai-compatible"]["rungs"][0]
    assert compatible["embedding"] == {"modelId": "nomic-embed-text", "dim": 768, "pooling": "server"}
    assert compatible["tier"] == "paid" and compatible["enabled"] is True
    stt_rungs = [r for p in health.json()["providers"] if p["kind"] == "stt" for r in p["rungs"]]
    assert stt_rungs and all("embedding" not in rung for rung in stt_rungs)
    listed = models.json()["models"]
    assert [(m["id"], m["kind"], m["tier"], m["enabled"]) for m in listed] == [
        ("embed/cloudflare/@cf/baai/bge-small-en-v1.5", "embed", "free", True),
        ("embed/self-hosted/nomic-embed-text", "embed", "paid", True),
    ]
    assert listed[0]["label"] == "bge-small-en-v1.5" and listed[0]["capabilities"] == ["embed", "batch:100"]
    assert listed[0]["embedding"] == {"modelId": "BAAI/bge-small-en-v1.5", "dim": 384, "pooling": "cls"}
    assert all(m["kind"] == "stt" and m["embedding"] is None for m in stt.json()["models"])


@ON_EVERY_RUNTIME
async def test_list_models_tool_shows_the_embed_rungs(runtimes: Runtimes, fake: FakeEmbeddings) -> None:
    runtime = await build(runtimes, openai_env(fake), fake)
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("list_models", {"kind": "embed"})
        everything = await client.call_tool("list_models", {})
    assert not result.is_error
    body = result.structured_content
    assert [m["id"] for m in body["models"]] == [
        "embed/cloudflare/@cf/baai/bge-small-en-v1.5",
        "embed/self-hosted/nomic-embed-text",
    ]
    assert body["models"][1]["embedding"] == {"modelId": "nomic-embed-text", "dim": None, "pooling": "server"}
    assert KEY not in str(body)
    kinds = [m["kind"] for m in everything.structured_content["models"]]
    assert "embed" in kinds and "stt" in kinds and kinds == sorted(kinds, key=["stt", "embed", "llm"].index)


async def test_the_local_runtime_lists_the_local_rung_first(
    tmp_path: Path, embed_model_dir: Path, fake: FakeEmbeddings
) -> None:
    from vid2context.runtime import build_local_runtime

    runtime = build_local_runtime(
        {
            "VID2CONTEXT_HOME": str(tmp_path),
            "VID2CONTEXT_EMBED_MODEL_DIR": str(embed_model_dir),
            "VID2CONTEXT_EMBED_POOLING": "mean",
        }
    )
    try:
        async with serve(create_app(runtime, owns_runtime=False)) as client:
            models = (await client.get("/api/v1/models", params={"kind": "embed"})).json()["models"]
            health = (await client.get("/api/v1/health")).json()
    finally:
        await runtime.aclose()
    assert models[0]["id"] == f"embed/fastembed/{embed_model_dir.name}"
    assert models[0]["tier"] == "local" and models[0]["enabled"] is True and models[0]["requires"] == []
    assert models[0]["embedding"]["modelId"].startswith("local:")
    assert models[0]["embedding"]["pooling"] == "mean" and models[0]["embedding"]["dim"] == 384
    assert [p["id"] for p in health["providers"] if p["kind"] == "embed"][0] == "embed-local"
    assert str(embed_model_dir) not in str(models) + str(health)
