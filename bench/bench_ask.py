"""Asking a 10-video collection: our own overhead before the first upstream byte, and what is sent.

Figures, each beside its reference measured in the same run:

- **overhead** p50/p95 ms (wall, and CPU of this process) of ``answers.ask.prepare``: the request
  checks, the rung pick, the retrieval (search core, keyword alone as on a server with no embedder,
  then hybrid with the offline test model) and the prompt assembly, everything done before a
  byte goes to the model. Target: p50 under 50 ms. Beside it, the time to the first streamed
  delta through the OpenAI-compatible stand-in (``tests/fake_llm.py`` on loopback), so the share
  of our part in what a caller waits for is read in one run.
- **context tokens** sent per answer (the sources block, and the whole prompt), against the
  whole transcripts of the collection: the reduction factor.

The collection: the five labelled talks and the five distractors of ``tests/retrieval_set.py``
(three of them hour-long), saved in a SQLite library in a temporary folder; the questions are the
set's 36 queries, each asked over the whole collection.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_llm import FakeLlm  # noqa: E402
from tests.retrieval_set import QUERIES, distractors, talks  # noqa: E402

from vid2context import library  # noqa: E402
from vid2context.answers.ask import Question, events, prepare  # noqa: E402
from vid2context.ctx import Ctx  # noqa: E402
from vid2context.runtime import Runtime, build_runtime  # noqa: E402
from vid2context.settings import load_settings  # noqa: E402
from vid2context.storage.sqlite import open_local_stores  # noqa: E402
from vid2context.tokens import estimate_tokens  # noqa: E402

ROUNDS = 5
"""Each question this many times (after one warm-up round)."""


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3)


def _runtime(home: Path, fake: FakeLlm) -> Runtime:
    stores = open_local_stores(home)
    settings = load_settings(
        {
            "VID2CONTEXT_HOME": str(home),
            "VID2CONTEXT_LLM_URL": fake.url + "/v1",
            "VID2CONTEXT_LLM_MODEL": "llama3.2",
            "VID2CONTEXT_LLM_CONTEXT_TOKENS": "32768",
        }
    )
    vectors = None
    try:
        from vid2context.storage.sqlite_vec import open_vector_index

        vectors = open_vector_index(stores.storage.database.path)
    except Exception:  # noqa: BLE001  hybrid is measured only where sqlite-vec loads
        vectors = None
    return build_runtime(settings, storage=stores.storage, kv=stores.kv, blobs=stores.blobs, vectors=vectors)


async def _overhead(runtime: Runtime, collection: str) -> dict[str, Any]:
    wall: list[float] = []
    cpu: list[float] = []
    sent: list[int] = []
    prompts: list[int] = []
    for round_ in range(ROUNDS + 1):
        for query in QUERIES:
            started, started_cpu = time.perf_counter(), time.process_time()
            prepared = await prepare(
                runtime, Question(question=query.text, collection=collection), Ctx(timeout=60)
            )
            if round_ == 0:
                continue  # warm-up: caches, the model's first call
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
            sent.append(prepared.grounding.source_tokens)
            prompts.append(prepared.prompt_tokens)
    return {
        "p50_ms": _pct(wall, 0.5),
        "p95_ms": _pct(wall, 0.95),
        "cpu_p50_ms": _pct(cpu, 0.5),
        "calls": len(wall),
        "source_tokens_median": statistics.median(sent),
        "prompt_tokens_median": statistics.median(prompts),
        "source_tokens_max": max(sent),
    }


async def _first_delta(runtime: Runtime, collection: str) -> dict[str, Any]:
    """Request start to the first streamed delta, through the stand-in."""
    wall: list[float] = []
    for query in QUERIES[:12]:
        ctx = Ctx(timeout=60)
        started = time.perf_counter()
        prepared = await prepare(runtime, Question(question=query.text, collection=collection), ctx)
        stream = events(runtime, prepared, ctx)
        async for event in stream:
            if event.name == "delta":
                wall.append((time.perf_counter() - started) * 1000)
                break
        await stream.aclose()
    return {"p50_ms": _pct(wall, 0.5), "calls": len(wall)}


async def _run() -> dict[str, Any]:
    videos = [*talks(), *distractors()]
    whole = sum(
        estimate_tokens(" ".join(s.text for s in v.transcript.segments))
        for v in videos
        if v.transcript is not None
    )
    figures: dict[str, Any] = {"videos": len(videos), "whole_transcript_tokens": whole}
    with FakeLlm() as fake, tempfile.TemporaryDirectory() as folder:
        runtime = _runtime(Path(folder) / "home", fake)
        try:
            for video in videos:
                await runtime.storage.put_context(video)
            made = await library.create_collection(runtime, "bench", None)
            await library.add_to_collection(runtime, made.id, [v.id for v in videos], ctx=Ctx(timeout=120))
            keyword = await _overhead(runtime, made.id)
            keyword["first_delta"] = await _first_delta(runtime, made.id)
            keyword["reduction_factor"] = round(whole / keyword["source_tokens_median"], 1)
            figures["keyword"] = keyword
            if runtime.vectors is not None:
                from tests.embed_model import model_dir
                from tests.test_indexing import with_model

                from vid2context.search.indexing import index_video

                with_model(runtime, model_dir())
                for video in videos:
                    await index_video(runtime, video)
                hybrid = await _overhead(runtime, made.id)
                hybrid["reduction_factor"] = round(whole / hybrid["source_tokens_median"], 1)
                figures["hybrid"] = hybrid
        finally:
            await runtime.aclose()
    figures["target"] = "overhead p50 < 50 ms"
    return figures


def run() -> dict[str, Any]:
    return asyncio.run(_run())


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
