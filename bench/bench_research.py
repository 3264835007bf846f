"""Research over ten hour-long videos: what ranking the transcripts read for a request costs.

``research`` searches a video the read took from (or saved to) the library in the library's own
index, and any other (an upload, a failed save) in an index made for the request
(``MemoryStorage``, the same keyword plan), which each call pays to build. This measures both on
``bench_storage``'s transcripts (600 segments of about 16 words, one hour each, a Zipf
vocabulary), ten videos saved in a memory runtime (so reading them is a cache hit):

- ``research_<query>``: the whole core (read from the library, keyword side, fusion, narrowing,
  context) for a rare word (one video), a mid-frequency word, a two-word phrase and a common word;
- ``unsaved_<query>``: the ranking step alone (``rank_excerpts``) for the same ten transcripts as
  if none were in the library, so through the request's own index;
- ``index_only``: building that index for the ten transcripts, the part that grows with length;
- ``library_search_<query>``: the library's own keyword search over the ten videos
  (``Storage.search`` with their ids), the reference: what ``/search`` pays.

Each is p50/p95 ms wall and CPU (this process). ``tokens``: the excerpts as ``research_videos``
returns them (default context, five a video) against the ten whole transcripts as
``get_transcript`` text: the reduction factor an agent gets by researching instead of reading.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from vid2context.answers.research import ResearchRequest, check_research, rank_excerpts, research
from vid2context.ctx import Ctx
from vid2context.formats.blocks import segments_of
from vid2context.mcp.tools.research import render_research
from vid2context.models import VideoContext
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings
from vid2context.storage.memory import MemoryStorage
from vid2context.timecode import format_timestamp
from vid2context.tokens import estimate_tokens

from .bench_storage import _context, _pool

VIDEOS = 10
REPEAT = 15


def _video(n: int, pool: list[str], rng: random.Random) -> VideoContext:
    """``bench_storage``'s transcript under a YouTube id an input can name (11 characters)."""
    context = _context(n, pool, rng)
    native = f"Bench{n:06d}"
    metadata = msgspec.structs.replace(context.metadata, id=native)
    return msgspec.structs.replace(context, id=f"youtube:{native}", metadata=metadata)


async def _timed(work: Callable[[], Awaitable[Any]], repeat: int = REPEAT) -> dict[str, float]:
    await work()  # warm up
    wall, cpu = [], []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        await work()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    wall.sort()
    cpu.sort()
    at95 = max(0, int(len(wall) * 0.95) - 1)
    return {
        "p50_ms": round(statistics.median(wall), 2),
        "p95_ms": round(wall[at95], 2),
        "cpu_p50_ms": round(statistics.median(cpu), 2),
        "cpu_p95_ms": round(cpu[at95], 2),
    }


async def _run() -> dict[str, Any]:
    rng = random.Random(54)
    pool = _pool(rng)
    contexts = [_video(n, pool, rng) for n in range(VIDEOS)]
    runtime = build_runtime(load_settings({"VID2CONTEXT_ACCESS_LOG": "0"}))
    try:
        for context in contexts:
            await runtime.storage.put_context(context)
        ids = [context.id for context in contexts]
        words = [w for c in contexts for s in segments_of(c) for w in s.text.split()]
        counts: dict[str, int] = {}
        for word in words:
            counts[word] = counts.get(word, 0) + 1
        ranked = sorted(counts, key=lambda w: -counts[w])
        first = segments_of(contexts[3])[100].text.split()
        queries = {
            "rare": "uniq7",
            "mid": ranked[len(ranked) // 20],
            "phrase": f'"{first[0]} {first[1]}"',
            "common": ranked[0],
        }
        figures: dict[str, Any] = {"videos": VIDEOS, "hours": VIDEOS, "queries": queries}
        for name, query in queries.items():
            asked = ResearchRequest(urls=ids, query=query)
            figures[f"research_{name}"] = await _timed(lambda a=asked: research(runtime, a))

        unsaved = [msgspec.structs.replace(c, attempts=[]) for c in contexts]
        for name in ("mid", "common"):
            checked = check_research(ResearchRequest(urls=ids, query=queries[name]))
            figures[f"unsaved_{name}"] = await _timed(
                lambda c=checked: rank_excerpts(runtime, unsaved, c, Ctx())
            )

        async def index_only() -> None:
            index = MemoryStorage()
            for context in contexts:
                await index.put_context(context)

        figures["index_only"] = await _timed(index_only)
        for name in ("mid", "common"):
            query = queries[name]
            figures[f"library_search_{name}"] = await _timed(
                lambda q=query: runtime.storage.search(q, video_ids=ids, limit=50)
            )
        result = await research(runtime, ResearchRequest(urls=ids, query=queries["mid"]))
        fenced, ours = render_research(result)
        excerpts = estimate_tokens("\n".join([fenced, *ours]))
        whole = sum(
            estimate_tokens("\n".join(f"[{format_timestamp(s.start_sec)}] {s.text}" for s in segments_of(c)))
            for c in contexts
        )
        figures["tokens"] = {
            "excerpts": excerpts,
            "whole_transcripts": whole,
            "reduction": round(whole / max(1, excerpts), 1),
            "excerpt_count": sum(len(v.excerpts) for v in result.results),
        }
        mid = figures["research_mid"]["cpu_p50_ms"]
        figures["research_over_library_search_mid_cpu"] = round(
            mid / max(0.001, figures["library_search_mid"]["cpu_p50_ms"]), 1
        )
        return figures
    finally:
        await runtime.aclose()


def run() -> dict[str, Any]:
    return asyncio.run(_run())
