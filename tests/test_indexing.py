"""Saving a video embeds its windows; a backfill indexes a library saved before; failures never
lose a save. On every runtime, with the real offline test model (all-MiniLM-L6-v2, mean pooling)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from vid2context.api import create_app
from vid2context.errors import ErrorCode
from vid2context.models import EmbeddingSpace, Segment
from vid2context.pipeline import get_context
from vid2context.runtime import Runtime
from vid2context.search.embedders.fastembed_local import FastEmbedder
from vid2context.search.embedders.openai_compat import OpenAICompatibleEmbedder
from vid2context.search.embedders.rungs import ordered
from vid2context.search.indexing import FAILURE_KEY, choose_space, index_video
from vid2context.search.windows import make_windows

from .fake_embeddings import FakeEmbeddings
from .runtimes import ON_EVERY_RUNTIME, Runtimes, serve
from .talks import bike_review, sourdough, three_hour_talk
from .youtube_replay import httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

VIDEO = "GJLlxj_dtq8"
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}


def with_model(runtime: Runtime, model_dir: Path) -> Runtime:
    """``runtime`` with the offline test model first in its embedding ladder."""
    runtime.embed = ordered([FastEmbedder(folder=str(model_dir), pooling="mean"), *runtime.embed])
    return runtime


async def model_runtime(
    runtimes: Runtimes, model_dir: Path, environ: dict[str, str] | None = None
) -> Runtime:
    return with_model(await runtimes.build({**QUIET, **(environ or {})}), model_dir)


def space_of_model(runtime: Runtime) -> EmbeddingSpace:
    rung = runtime.embed[0]
    return EmbeddingSpace(model=rung.model_id, dim=384, pooling="mean")


@ON_EVERY_RUNTIME
async def test_saving_a_video_embeds_its_windows(
    runtimes: Runtimes, embed_model_dir: Path, httpx_mock: Any
) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    runtime = await model_runtime(runtimes, embed_model_dir)
    context = await get_context(runtime, VIDEO)
    embedded = [a for a in context.attempts if a.stage == "embed"]
    assert [(a.id, a.outcome) for a in embedded] == [(runtime.embed[0].id, "ok")]
    space = space_of_model(runtime)
    assert runtime.vectors is not None
    assert await runtime.vectors.window_ids(space, context.id) == sorted(w.id for w in make_windows(context))
    assert await runtime.vectors.indexed(space, [context.id]) == {context.id}
    again = await get_context(runtime, VIDEO)  # from the library: nothing embedded again
    assert [a.stage for a in again.attempts] == ["cache"]


@ON_EVERY_RUNTIME
async def test_replacing_a_transcript_replaces_its_vectors(runtimes: Runtimes, embed_model_dir: Path) -> None:
    runtime = await model_runtime(runtimes, embed_model_dir)
    talk = bike_review()
    await runtime.storage.put_context(talk)
    assert (await index_video(runtime, talk)).outcome == "ok"
    space = space_of_model(runtime)
    assert runtime.vectors is not None
    before = await runtime.vectors.window_ids(space, talk.id)
    assert len(before) > 3
    assert talk.transcript is not None
    shorter = msgspec.structs.replace(
        talk, transcript=msgspec.structs.replace(talk.transcript, segments=talk.transcript.segments[:5])
    )
    await runtime.storage.put_context(shorter)
    done = await index_video(runtime, shorter)
    assert done.outcome == "ok" and done.windows == 1
    assert await runtime.vectors.window_ids(space, talk.id) == [w.id for w in make_windows(shorter)]
    empty = msgspec.structs.replace(talk, transcript=msgspec.structs.replace(talk.transcript, segments=[]))
    assert (await index_video(runtime, empty)).outcome == "ok"
    assert await runtime.vectors.window_ids(space, talk.id) == []
    assert await runtime.vectors.indexed(space, [talk.id]) == {talk.id}  # nothing to embed: indexed


async def test_an_embedding_failure_never_fails_the_save(runtimes: Runtimes, httpx_mock: Any) -> None:
    """The save stands, keyword search finds the video, the answer records the failed rung, and
    health shows the failure (and that the library is only partly indexed)."""
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    with FakeEmbeddings(key="k") as fake:
        runtime = await runtimes.build(QUIET)
        runtime.embed = [OpenAICompatibleEmbedder(runtime.http, url=fake.url + "/v1", key="k", dim=384)]
        runtime.embed_plan.retries = 0
        await runtime.storage.put_context(sourdough())
        fake.fail_next(503)
        context = await get_context(runtime, VIDEO)
    assert await runtime.storage.get_context(context.id) is not None
    failed = [(a.stage, a.outcome, a.reason) for a in context.attempts if a.stage == "embed"]
    assert failed == [("embed", "error", "upstream")]
    assert await runtime.kv.get(FAILURE_KEY) is not None
    async with serve(create_app(runtime)) as client:
        health = (await client.get("/api/v1/health")).json()["search"]
    assert health["state"] == "partial" and health["videos"] == 2 and health["indexed"] == 0
    assert health["lastFailure"]["videoId"] == context.id and health["lastFailure"]["code"] == "upstream"
    assert "/api/v1/jobs" in health["hint"]


@ON_EVERY_RUNTIME
async def test_the_index_job_backfills_a_library_and_a_second_run_skips_it(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await model_runtime(runtimes, embed_model_dir)
    talks = [bike_review(), sourdough(), three_hour_talk("ShortTalk01", minutes=10)]
    for talk in talks:  # saved straight to the library, as before embeddings were set up
        await runtime.storage.put_context(talk)
    space = space_of_model(runtime)
    assert (await choose_space(runtime)).space == space
    async with serve(create_app(runtime)) as client:
        submitted = await client.post("/api/v1/jobs", json={"kind": "index", "input": "library"})
        assert submitted.status_code == 202, submitted.text
        job = await runtime.jobs.wait(runtime, submitted.json()["id"])
        assert job.status == "succeeded", job
        first = msgspec.to_builtins(job.result)
        assert first["indexed"] == 3 and first["skipped"] == 0 and first["failed"] == []
        assert first["space"] == msgspec.to_builtins(space) and first["total"] == 3
        health = (await client.get("/api/v1/health")).json()["search"]
        assert health["state"] == "ok" and health["indexed"] == 3 and health["videos"] == 3
        again = await client.post("/api/v1/jobs", json={"kind": "index", "input": "library"})
        job = await runtime.jobs.wait(runtime, again.json()["id"])
        second = msgspec.to_builtins(job.result)
        assert second["indexed"] == 0 and second["skipped"] == 3 and second["windows"] == 0
        events = [event async for event in await runtime.jobs.events(runtime, job.id) if event is not None]
        assert runtime.vectors is not None
        for talk in talks:
            assert await runtime.vectors.window_ids(space, talk.id) == sorted(
                w.id for w in make_windows(talk)
            )
    items = [e.data for e in events if e.event == "item"]
    assert {item["id"] for item in items} == {t.id for t in talks}
    assert {item["outcome"] for item in items} == {"skipped"}


async def test_a_backfill_takes_up_a_video_whose_windows_changed(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await model_runtime(runtimes, embed_model_dir)
    talk = bike_review()
    await runtime.storage.put_context(talk)
    assert (await index_video(runtime, talk)).outcome == "ok"
    assert talk.transcript is not None
    longer = msgspec.structs.replace(
        talk,
        transcript=msgspec.structs.replace(
            talk.transcript,
            segments=[
                *talk.transcript.segments,
                Segment(start_sec=9000, end_sec=9004, text="and one more thing"),
            ],
        ),
    )
    await runtime.storage.put_context(longer)  # saved without indexing
    assert (await index_video(runtime, longer, skip_indexed=True)).outcome == "ok"
    assert (await index_video(runtime, longer, skip_indexed=True)).outcome == "skipped"


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ({"ids": []}, "bad-request"),
        ([], "bad-request"),
        (["  "], "bad-request"),
        ("everything", "bad-request"),
        (42, "bad-request"),
    ],
)
async def test_the_index_job_refuses_what_it_cannot_take(runtimes: Runtimes, value: Any, code: str) -> None:
    runtime = await runtimes.build(QUIET)
    async with serve(create_app(runtime)) as client:
        response = await client.post("/api/v1/jobs", json={"kind": "index", "input": value})
        options = await client.post(
            "/api/v1/jobs", json={"kind": "index", "input": "library", "options": {"x": 1}}
        )
    assert response.status_code == 400 and response.json()["error"]["code"] == code
    assert response.json()["error"]["hint"]
    assert options.status_code == 400 and "x" in options.json()["error"]["message"]


async def test_without_an_embedding_rung_the_index_job_fails_with_the_reason(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    await runtime.storage.put_context(bike_review())
    async with serve(create_app(runtime)) as client:
        submitted = await client.post("/api/v1/jobs", json={"kind": "index", "input": "library"})
        job = await runtime.jobs.wait(runtime, submitted.json()["id"])
    assert job.status == "failed" and job.error is not None
    assert job.error.code == ErrorCode.NO_PROVIDER.value and "embedding" in job.error.message
