"""Every embedding rung against one contract, and each hosted rung against its service's failures.

The contract (``search/embedders/base.py``), checked on every rung through ``embed_batches``, the
runner all of them are called through: one unit vector per text in the texts' order, of the
rung's dimension, the same vectors for the same texts (within a tolerance: no test compares one
CPU's floats with another's), batches no larger than the rung takes, and a space that names the
rung's model and pooling. The rungs:

- ``local``: fastembed on the real all-MiniLM-L6-v2 test model (``tests/embed_model.py``);
- ``workers-ai``: the REST API over httpx, against the stand-in (``tests/fake_embeddings.py``);
- ``binding``: the Worker's ``AI`` binding (``tests/cloudflare_bindings.WorkersAi`` through
  ``storage/cloudflare.CloudflareAi``, as the Worker's runtime wraps it), backed by the stand-in;
- ``openai``: an OpenAI-compatible endpoint, against the stand-in.

Failures are the services' own, served over real HTTP: 401, 413, 429 with ``Retry-After``, 5xx,
bodies that are not what the API documents, vectors of the wrong size; retries are seen through
the plan's ``sleep`` (nothing waits).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.models import EmbeddingSpace
from vid2context.search.embedders.base import Embedder, EmbedPlan, embed_batches, space_of
from vid2context.search.embedders.fastembed_local import FastEmbedder
from vid2context.search.embedders.openai_compat import OpenAICompatibleEmbedder
from vid2context.search.embedders.workers_ai import (
    MAX_BATCH,
    WorkersAIBindingEmbedder,
    WorkersAIEmbedder,
)
from vid2context.storage.cloudflare import CloudflareAi

from .cloudflare_bindings import WorkersAi
from .fake_embeddings import FakeEmbeddings

pytestmark = pytest.mark.anyio

KEY = "sk-test-embeddings-0123456789"
ACCOUNT = "acct-0123"
RUNGS = ("local", "workers-ai", "binding", "openai")
SENTENCES = [
    "how far does the stand tilt back",
    "the kickstand bends to one hundred sixty five degrees",
    "we ordered pizza after the keynote",
    "the battery lasts ten hours on a charge",
]


class Waits:
    """The plan's ``sleep``: records each wait instead of waiting."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)


def dot(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture
def fake() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings(key=KEY) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def make_rung(kind: str, fake: FakeEmbeddings, http: httpx.AsyncClient, model_dir: Path | None) -> Embedder:
    if kind == "local":
        assert model_dir is not None
        return FastEmbedder(folder=str(model_dir), pooling="mean", max_batch=3)
    if kind == "workers-ai":
        return WorkersAIEmbedder(http, account_id=ACCOUNT, api_token=KEY, base_url=fake.url + "/client/v4")
    if kind == "binding":
        fake.key = None  # the binding carries no key: the Worker's own account pays
        return WorkersAIBindingEmbedder(CloudflareAi(WorkersAi(fake.url, account=ACCOUNT)))
    return OpenAICompatibleEmbedder(
        http, url=fake.url + "/v1", model="nomic-embed-text", key=KEY, max_batch=3
    )


@pytest.fixture(params=RUNGS)
def rung(request: pytest.FixtureRequest, fake: FakeEmbeddings, http: httpx.AsyncClient) -> Embedder:
    model_dir = request.getfixturevalue("embed_model_dir") if request.param == "local" else None
    return make_rung(request.param, fake, http, model_dir)


# --- the contract -------------------------------------------------------------------------------


async def test_every_rung_answers_unit_vectors_in_order_of_its_space(rung: Embedder) -> None:
    assert isinstance(rung, Embedder) and rung.enabled
    assert rung.id.startswith(f"embed/{rung.service}/")
    made = await embed_batches(rung, SENTENCES, Ctx(timeout=60), EmbedPlan())
    assert made.producer == rung.id
    assert made.space == space_of(rung) == EmbeddingSpace(model=rung.model_id, dim=384, pooling=rung.pooling)
    assert len(made.vectors) == len(SENTENCES)
    for vector in made.vectors:
        assert len(vector) == 384 and all(math.isfinite(x) for x in vector)
        assert math.isclose(dot(vector, vector), 1.0, abs_tol=1e-6)
    # The same texts give the same vectors, whatever else shares their batch and in whatever order.
    alone = await embed_batches(rung, [SENTENCES[2]], Ctx(timeout=60), EmbedPlan())
    backwards = await embed_batches(rung, SENTENCES[::-1], Ctx(timeout=60), EmbedPlan())
    assert dot(alone.vectors[0], made.vectors[2]) > 0.9999
    for one, other in zip(made.vectors, backwards.vectors[::-1], strict=True):
        assert dot(one, other) > 0.9999
    # Different texts do not.
    assert dot(made.vectors[0], made.vectors[3]) < 0.9


async def test_every_rung_is_sent_batches_it_takes(rung: Embedder, fake: FakeEmbeddings) -> None:
    texts = [f"window {i} about gears and chains number {i}" for i in range(2 * rung.max_batch + 1)]
    made = await embed_batches(rung, texts, Ctx(timeout=120), EmbedPlan())
    assert len(made.vectors) == len(texts)
    if rung.service != "fastembed":
        sizes = [len(r.texts) for r in fake.answered]
        assert sizes == [rung.max_batch, rung.max_batch, 1]
    # A smaller plan batch is honoured, never a larger one.
    fake.requests.clear()
    await embed_batches(rung, texts[:5], Ctx(timeout=60), EmbedPlan(batch=2))
    if rung.service != "fastembed":
        assert [len(r.texts) for r in fake.answered] == [2, 2, 1]


@pytest.mark.parametrize(
    ("texts", "code"),
    [
        ([], ErrorCode.BAD_REQUEST),
        (["fine", "  "], ErrorCode.BAD_REQUEST),
        (["x" * 100_001], ErrorCode.TOO_LARGE),
    ],
    ids=["nothing", "blank", "huge"],
)
async def test_bad_texts_are_refused_before_anything_is_sent(
    rung: Embedder, fake: FakeEmbeddings, texts: list[str], code: ErrorCode
) -> None:
    with pytest.raises(VidError) as caught:
        await embed_batches(rung, texts, Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is code and caught.value.hint
    assert fake.requests == []


async def test_a_canceled_call_sends_nothing(rung: Embedder, fake: FakeEmbeddings) -> None:
    ctx = Ctx(timeout=10)
    ctx.abort()
    with pytest.raises(VidError) as caught:
        await embed_batches(rung, SENTENCES, ctx, EmbedPlan())
    assert caught.value.code is ErrorCode.CANCELED and fake.requests == []


# --- Workers AI -------------------------------------------------------------------------------


def rest(fake: FakeEmbeddings, http: httpx.AsyncClient, *, token: str = KEY) -> WorkersAIEmbedder:
    return WorkersAIEmbedder(http, account_id=ACCOUNT, api_token=token, base_url=fake.url + "/client/v4")


async def test_workers_ai_is_asked_for_cls_pooling_with_the_token(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    rung = rest(fake, http)
    assert (rung.model_id, rung.dim, rung.pooling) == ("BAAI/bge-small-en-v1.5", 384, "cls")
    await embed_batches(rung, SENTENCES[:2], Ctx(timeout=10), EmbedPlan())
    (request,) = fake.requests
    assert request.path == f"/client/v4/accounts/{ACCOUNT}/ai/run/@cf/baai/bge-small-en-v1.5"
    assert request.auth == f"Bearer {KEY}"
    assert request.body == {"text": SENTENCES[:2], "pooling": "cls"}


async def test_workers_ai_takes_at_most_100_texts_a_call(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    """The stand-in refuses 101 as the service does; the rung never sends them."""
    too_many = await http.post(
        f"{fake.url}/client/v4/accounts/{ACCOUNT}/ai/run/@cf/baai/bge-small-en-v1.5",
        json={"text": ["a"] * 101, "pooling": "cls"},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert too_many.status_code == 400 and too_many.json()["success"] is False
    fake.requests.clear()
    made = await embed_batches(rest(fake, http), [f"t{i}" for i in range(250)], Ctx(timeout=30), EmbedPlan())
    assert len(made.vectors) == 250
    assert [len(r.texts) for r in fake.requests] == [MAX_BATCH, MAX_BATCH, 50]


async def test_workers_ai_refused_token_names_both_settings(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    with pytest.raises(VidError) as caught:
        await embed_batches(rest(fake, http, token="wrong-token"), SENTENCES, Ctx(timeout=10), EmbedPlan())
    error = caught.value
    assert error.code is ErrorCode.AUTH
    assert "CLOUDFLARE_ACCOUNT_ID" in (error.hint or "") and "CLOUDFLARE_API_TOKEN" in (error.hint or "")
    assert "wrong-token" not in error.message + (error.hint or "") and len(fake.requests) == 1


async def test_workers_ai_vectors_of_mean_pooling_are_refused(http: httpx.AsyncClient) -> None:
    """An answer that says it pooled otherwise than asked would mix spaces: it is refused."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={"result": {"shape": [1, 384], "data": [[0.1] * 384], "pooling": "mean"}, "success": True},
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        rung = WorkersAIEmbedder(client, account_id=ACCOUNT, api_token=KEY, base_url="http://cf.test")
        with pytest.raises(VidError) as caught:
            await embed_batches(rung, ["one"], Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is ErrorCode.UPSTREAM and "'mean'" in caught.value.message


@pytest.mark.parametrize(
    "result",
    [
        {"shape": [2, 384], "data": [[0.1] * 384]},  # a shape that does not match the data
        {"shape": [1, 384], "data": [[0.1] * 383]},  # the wrong dimension
        {"data": [[0.0] * 384]},  # all zeros
        {"shape": [1, 384]},  # no data
    ],
    ids=["shape", "dimension", "zeros", "no-data"],
)
async def test_workers_ai_answers_that_break_the_schema_are_upstream_errors(
    http: httpx.AsyncClient, result: dict[str, Any]
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"result": result, "success": True, "errors": [], "messages": []})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        rung = WorkersAIEmbedder(client, account_id=ACCOUNT, api_token=KEY, base_url="http://cf.test")
        with pytest.raises(VidError) as caught:
            await embed_batches(rung, ["one"], Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is ErrorCode.UPSTREAM and caught.value.hint


async def test_workers_ai_retries_429_after_the_wait_it_asks_for(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    fake.fail_next(429, retry_after=7)
    fake.fail_next(503)
    waits = Waits()
    made = await embed_batches(rest(fake, http), SENTENCES, Ctx(timeout=60), EmbedPlan(sleep=waits))
    assert len(made.vectors) == 4
    assert [r.status for r in fake.requests] == [429, 503, 200]
    assert waits.seen[0] == 7.0 and len(waits.seen) == 2


async def test_workers_ai_that_stays_down_fails_with_upstream(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    fake.fail_next(500, count=10)
    waits = Waits()
    with pytest.raises(VidError) as caught:
        await embed_batches(rest(fake, http), SENTENCES, Ctx(timeout=60), EmbedPlan(retries=2, sleep=waits))
    assert caught.value.code is ErrorCode.UPSTREAM and len(fake.requests) == 3 and len(waits.seen) == 2
    assert "embedding" in (caught.value.hint or "")


async def test_workers_ai_garbled_answer_is_upstream(fake: FakeEmbeddings, http: httpx.AsyncClient) -> None:
    fake.garble_next()
    with pytest.raises(VidError) as caught:
        await embed_batches(rest(fake, http), SENTENCES, Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is ErrorCode.UPSTREAM and len(fake.requests) == 1


async def test_the_binding_failing_is_a_retryable_upstream_error(fake: FakeEmbeddings) -> None:
    fake.key = None
    fake.fail_next(500, count=2)
    waits = Waits()
    rung = WorkersAIBindingEmbedder(CloudflareAi(WorkersAi(fake.url, account=ACCOUNT)))
    made = await embed_batches(rung, SENTENCES, Ctx(timeout=30), EmbedPlan(sleep=waits))
    assert len(made.vectors) == 4 and len(waits.seen) == 2
    assert fake.requests[-1].body == {"text": SENTENCES, "pooling": "cls"}


async def test_the_binding_rung_without_a_binding_is_disabled_and_says_so() -> None:
    rung = WorkersAIBindingEmbedder(None)
    assert not rung.enabled and rung.requires == ("AI",)
    with pytest.raises(VidError) as caught:
        await embed_batches(rung, SENTENCES, Ctx(timeout=5), EmbedPlan())
    assert caught.value.code is ErrorCode.NO_PROVIDER and "AI" in (caught.value.hint or "")


# --- OpenAI-compatible ------------------------------------------------------------------------


def compatible(fake: FakeEmbeddings, http: httpx.AsyncClient, **options: Any) -> OpenAICompatibleEmbedder:
    settings: dict[str, Any] = {"url": fake.url + "/v1", "model": "nomic-embed-text", "key": KEY}
    settings.update(options)
    return OpenAICompatibleEmbedder(http, **settings)


async def test_openai_compatible_learns_its_dimension_and_restores_the_order(http: httpx.AsyncClient) -> None:
    with FakeEmbeddings(dim=768, reverse=True) as fake:
        rung = compatible(fake, http, key=None)
        assert rung.tier == "keyless" and rung.dim is None and space_of(rung) is None
        assert rung.id == "embed/self-hosted/nomic-embed-text" and rung.pooling == "server"
        made = await embed_batches(rung, SENTENCES, Ctx(timeout=10), EmbedPlan())
        assert rung.dim == 768 and made.space == EmbeddingSpace(
            model="nomic-embed-text", dim=768, pooling="server"
        )
        # Rows came back reversed; each vector is still its own text's.
        for text, vector in zip(SENTENCES, made.vectors, strict=True):
            alone = await embed_batches(rung, [text], Ctx(timeout=10), EmbedPlan())
            assert dot(alone.vectors[0], vector) > 0.9999
        assert fake.requests[0].body == {"model": "nomic-embed-text", "input": SENTENCES}
        assert fake.requests[0].auth is None


async def test_openai_compatible_holds_answers_to_the_configured_dimension(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    rung = compatible(fake, http, dim=768)  # the stand-in answers 384
    with pytest.raises(VidError) as caught:
        await embed_batches(rung, SENTENCES, Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is ErrorCode.UPSTREAM and "384" in caught.value.message
    assert "VID2CONTEXT_EMBED_DIM" in (caught.value.hint or "")


async def test_openai_compatible_refuses_a_dimension_that_changes(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    rung = compatible(fake, http)
    await embed_batches(rung, SENTENCES, Ctx(timeout=10), EmbedPlan())
    assert rung.dim == 384
    fake.dim = 512  # the server now serves another model under the same name
    with pytest.raises(VidError) as caught:
        await embed_batches(rung, SENTENCES, Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is ErrorCode.UPSTREAM and "512" in caught.value.message


async def test_openai_compatible_refused_key_names_the_setting(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    with pytest.raises(VidError) as caught:
        await embed_batches(compatible(fake, http, key="sk-wrong"), SENTENCES, Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is ErrorCode.AUTH and "VID2CONTEXT_EMBED_KEY" in (caught.value.hint or "")
    assert "sk-wrong" not in caught.value.message + (caught.value.hint or "")


async def test_openai_compatible_retries_429_and_5xx(fake: FakeEmbeddings, http: httpx.AsyncClient) -> None:
    fake.fail_next(429, retry_after=3)
    fake.fail_next(502)
    waits = Waits()
    made = await embed_batches(compatible(fake, http), SENTENCES, Ctx(timeout=30), EmbedPlan(sleep=waits))
    assert len(made.vectors) == 4 and waits.seen[0] == 3.0 and len(waits.seen) == 2


async def test_a_retry_after_past_the_plan_fails_the_rung_at_once(
    fake: FakeEmbeddings, http: httpx.AsyncClient
) -> None:
    fake.fail_next(429, retry_after=600)
    waits = Waits()
    with pytest.raises(VidError) as caught:
        await embed_batches(compatible(fake, http), SENTENCES, Ctx(timeout=30), EmbedPlan(sleep=waits))
    assert caught.value.code is ErrorCode.RATE_LIMITED and caught.value.retry_after == 600
    assert waits.seen == [] and len(fake.requests) == 1


async def test_a_batch_refused_as_too_large_is_split(http: httpx.AsyncClient) -> None:
    texts = [f"window number {i} " + "word " * 60 for i in range(8)]
    with FakeEmbeddings(key=KEY, max_body=1200) as fake:  # about two such texts a request
        rung = compatible(fake, http, max_batch=8)
        made = await embed_batches(rung, texts, Ctx(timeout=30), EmbedPlan())
        assert len(made.vectors) == 8
        assert 413 in {r.status for r in fake.requests}
        assert sum(len(r.texts) for r in fake.answered) == 8  # each text answered exactly once
        for text, vector in zip(texts, made.vectors, strict=True):
            alone = await embed_batches(rung, [text], Ctx(timeout=10), EmbedPlan())
            assert dot(alone.vectors[0], vector) > 0.9999
        with pytest.raises(VidError) as caught:
            await embed_batches(rung, ["word " * 400], Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is ErrorCode.TOO_LARGE and caught.value.hint


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b'{"data": [{"embedding": [0.1, 0.2], "index": 5}]}',  # an index that is no text's
        b'{"data": []}',  # no rows
        b'{"object": "list"}',  # no data at all
        b'{"data": [{"embedding": "AAAA", "index": 0}]}',  # base64, which was not asked for
    ],
    ids=["html", "index", "empty", "no-data", "base64"],
)
async def test_openai_compatible_answers_that_are_not_embeddings_are_upstream(body: bytes) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"Content-Type": "application/json"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        rung = OpenAICompatibleEmbedder(client, url="http://embed.test/v1", key=KEY)
        with pytest.raises(VidError) as caught:
            await embed_batches(rung, ["one"], Ctx(timeout=10), EmbedPlan())
    assert caught.value.code is ErrorCode.UPSTREAM and caught.value.hint


async def test_openai_compatible_timeouts_are_retried_then_reported() -> None:
    calls = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ReadTimeout("no answer", request=request)

    waits = Waits()
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        rung = OpenAICompatibleEmbedder(client, url="http://embed.test/v1", key=KEY)
        with pytest.raises(VidError) as caught:
            await embed_batches(rung, ["one"], Ctx(timeout=30), EmbedPlan(retries=2, sleep=waits))
    assert caught.value.code is ErrorCode.TIMEOUT and calls == 3 and len(waits.seen) == 2


async def test_openai_compatible_setup_decides_tier_and_what_it_needs(http: httpx.AsyncClient) -> None:
    unset = OpenAICompatibleEmbedder(http, url=None)
    assert not unset.enabled and unset.requires == ("VID2CONTEXT_EMBED_URL",)
    openai = OpenAICompatibleEmbedder(http, url=None, key=KEY)
    assert openai.enabled and openai.tier == "paid" and openai.id == "embed/openai/text-embedding-3-small"
    assert openai.requires == ("VID2CONTEXT_EMBED_KEY",)
    keyless = OpenAICompatibleEmbedder(http, url="http://127.0.0.1:11434/v1", keyless_allowed=False)
    assert not keyless.enabled and keyless.tier == "keyless"
    full = OpenAICompatibleEmbedder(http, url="http://127.0.0.1:11434/v1/embeddings/", key=KEY)
    assert full._url == "http://127.0.0.1:11434/v1/embeddings"
