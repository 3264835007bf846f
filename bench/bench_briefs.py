"""Our own cost of a brief or an extraction before the first upstream byte, and what it sends.

A 10-video collection of hour-long talks (``tests/talks.three_hour_talk``, 60 minutes each, about
12k tokens apiece) is saved in a SQLite library (the local runtime's stores, keyword search only:
no embedder is set). A language-model rung is configured but never called: what is timed is what
happens before a request would go out, the same work ``build_brief`` and ``extract`` do first
(``scope.prepare``: the pick, the source budget, ``grounding.ground``; then the system turn with
its fenced sources), for a brief with a question (the search path), a brief without one (passages
spread through every video), and an extraction with the ``products`` template. Then the checks
after the answer: a 20-claim brief through ``citations`` (``briefs._verify``), and a 50-product
answer through the schema validator.

Figures: median/p90 wall and CPU ms of each, and the tokens of the sources sent against the
collection's whole transcripts (the reduction factor).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.talks import three_hour_talk  # noqa: E402 - the tests' synthetic talks

from vid2context import library  # noqa: E402
from vid2context.answers.briefs import _SHAPE, _verify, instructions  # noqa: E402
from vid2context.answers.extract import _instructions as extract_instructions  # noqa: E402
from vid2context.answers.extract import check_spec  # noqa: E402
from vid2context.answers.json_schema import problems  # noqa: E402
from vid2context.answers.llm.base import LlmOptions  # noqa: E402
from vid2context.answers.scope import Scope, prepare  # noqa: E402
from vid2context.answers.templates import brief_template  # noqa: E402
from vid2context.ctx import Ctx  # noqa: E402
from vid2context.runtime import build_runtime  # noqa: E402
from vid2context.settings import load_settings  # noqa: E402
from vid2context.storage.sqlite import open_local_stores  # noqa: E402
from vid2context.tokens import estimate_tokens  # noqa: E402

from .timing import measure  # noqa: E402

VIDEOS = 10
MINUTES = 60


def _runtime(home: Path) -> Any:
    stores = open_local_stores(home)
    settings = load_settings(
        {
            "VID2CONTEXT_HOME": str(home),
            "VID2CONTEXT_LLM_URL": "http://127.0.0.1:9/v1",  # configured, never called
            "VID2CONTEXT_LLM_MODEL": "bench",
            "VID2CONTEXT_LLM_CONTEXT_TOKENS": "32768",
        }
    )
    return build_runtime(
        settings, storage=stores.storage, kv=stores.kv, blobs=stores.blobs, http=httpx.AsyncClient()
    )


def run() -> dict[str, object]:
    return asyncio.run(_run())


async def _run() -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        runtime = _runtime(Path(tmp))
        talks = [three_hour_talk(f"BenchTalk{i:02d}", minutes=MINUTES, seed=i) for i in range(VIDEOS)]
        for talk in talks:
            await runtime.storage.put_context(talk)
        collection = await library.create_collection(runtime, "bench talks")
        await library.add_to_collection(runtime, collection.id, [t.id for t in talks])
        whole = sum(estimate_tokens(s.text) for t in talks for s in t.transcript.segments)
        template = brief_template(None)
        spec = check_spec("products", None)
        figures: dict[str, object] = {"videos": VIDEOS, "minutes_each": MINUTES, "whole_tokens": whole}

        async def brief_before(scope: Scope) -> tuple[str, Any]:
            options = LlmOptions(max_tokens=2000, temperature=0.2)
            _, grounding, _ = await prepare(
                runtime, scope, options=options, prompt=template.asks + " " + _SHAPE, ctx=Ctx(timeout=60)
            )
            return instructions(grounding, template), grounding

        async def extract_before(scope: Scope) -> tuple[str, Any]:
            options = LlmOptions(max_tokens=3000, temperature=0.0)
            schema = json.dumps(spec.schema, separators=(",", ":"))
            _, grounding, _ = await prepare(
                runtime, scope, options=options, prompt=spec.asks + " " + schema, ctx=Ctx(timeout=60)
            )
            return extract_instructions(grounding, spec), grounding

        cases = {
            "brief_question": (
                brief_before,
                Scope(collection_id=collection.id, question="battery after a winter"),
            ),
            "brief_spread": (brief_before, Scope(collection_id=collection.id)),
            "extract_products": (extract_before, Scope(collection_id=collection.id)),
        }
        for name, (before, scope) in cases.items():
            samples = await _measure_async(lambda b=before, s=scope: b(s))
            prompt, grounding = await before(scope)
            figures[name] = {
                **samples,
                "sources": len(grounding.sources),
                "source_tokens": grounding.source_tokens,
                "prompt_tokens": estimate_tokens(prompt),
                "left_out": grounding.left_out,
                "reduction": round(whole / max(1, grounding.source_tokens), 1),
            }
        _, grounding = await brief_before(cases["brief_spread"][1])
        numbers = [s.n for s in grounding.sources]
        answer = {
            "summary": "What the talks say [1][2].",
            "claims": [{"text": f"The cold matters more than the mileage [{n}][99]."} for n in numbers[:20]],
            "consensus": [{"text": f"The battery suffers in winter [{numbers[0]}][{numbers[-1]}]."}],
            "disagreement": [],
            "openQuestions": ["Does the software update help?"],
        }
        figures["verify_20_claims"] = measure(lambda: _verify(answer, grounding))
        data = {
            "products": [
                {"name": f"Bike {i}", "price": "$499", "pros": ["light"], "cons": ["stand"], "maker": None}
                for i in range(50)
            ]
        }
        figures["validate_50_products"] = measure(lambda: problems(spec.validator, data))
        await runtime.aclose()
        return figures


async def _measure_async(work: Any, repeat: int = 15, warmup: int = 2) -> dict[str, float]:
    """``timing.measure`` for a coroutine function, awaited on the running loop."""
    import statistics
    import time

    for _ in range(warmup):
        await work()
    wall, cpu = [], []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        await work()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    wall.sort()
    return {
        "median_ms": round(statistics.median(wall), 3),
        "p90_ms": round(wall[int(len(wall) * 0.9) - 1], 3),
        "cpu_median_ms": round(statistics.median(cpu), 3),
    }
