"""The D1 library at size, through Miniflare: 1,000 one-hour transcripts of 600 segments each.

The same synthetic library and figures as ``bench_storage.py`` (SQLite), saved through
``CloudflareStorage`` into Miniflare's D1 (workerd's SQLite, the Durable Object that backs D1
locally) by the test harness (``tests/miniflare``):

- insert throughput (transcripts/s and segments/s), one ``put_context`` (one ``DB.batch``) each;
- p50/p99 ms of ``get_context`` by a random id, of a library page (``list_videos`` limit 50 at a
  random cursor), and of keyword searches (a rare word, two words, a phrase, a common word);
- the database size D1 reports (``meta.size_after``) per hour of speech.

Every binding call crosses HTTP to the harness on 127.0.0.1, which a deployed Worker does not pay;
``binding_round_trip`` (a ``SELECT 1``) measures that floor so it can be subtracted. Production D1
adds its own network hop instead (a Worker to the database's location).

``BENCH_D1_N`` sets the number of transcripts (default 1000; 50 gives a quick run).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vid2context.storage.cloudflare import CloudflareStorage
from vid2context.storage.common import encode_cursor

from .bench_storage import _COMMON, SEGMENT_SEC, SEGMENTS, _context, _pool, _timed, _vocabulary

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # the harness lives in tests/, beside this package
    sys.path.insert(0, str(_ROOT))

from tests.miniflare_harness import apply_migrations, start_harness  # noqa: E402


async def _run(directory: Path, n: int) -> dict[str, object]:
    harness = start_harness(persist=directory)
    env = harness.new_env(keepalive=True)
    try:
        await apply_migrations(env.DB)
        store = CloudflareStorage(env.DB, bucket=env.BUCKET)
        rng = random.Random(11)
        pool = _pool(rng)

        round_trip = await _timed([lambda: env.DB.prepare("SELECT 1").all()], 300)

        elapsed = 0.0  # saving only, not building the contexts
        for i in range(n):
            context = _context(i, pool, rng)
            started = time.perf_counter()
            await store.put_context(context)
            elapsed += time.perf_counter() - started
        insert = {
            "transcripts": n,
            "segments": n * SEGMENTS,
            "seconds": round(elapsed, 2),
            "transcripts_per_s": round(n / elapsed, 1),
            "segments_per_s": round(n * SEGMENTS / elapsed),
        }

        ids = [f"youtube:bench{rng.randrange(n):07d}" for _ in range(1000)]
        get = await _timed([lambda i=i: store.get_context(i) for i in ids], 1000)
        cursors = [encode_cursor(rng.randint(1, n)) for _ in range(1000)]
        page = await _timed([lambda c=c: store.list_videos(limit=50, cursor=c) for c in cursors], 1000)

        vocabulary = _vocabulary(random.Random(11))
        mid = vocabulary[len(_COMMON) : len(_COMMON) + 400]  # mid-frequency words
        searches = {
            "rare_word": ([f"uniq{rng.randrange(n)}" for _ in range(200)], 200),
            "two_words": ([f"{rng.choice(mid)} {rng.choice(mid)}" for _ in range(200)], 200),
            "phrase": ([f'"{" ".join(rng.choice(pool).split()[2:4])}"' for _ in range(100)], 100),
            "common_word": (["data", "model", "system", "people"], 12),
        }
        search: dict[str, Any] = {}
        for kind, (queries, repeat) in searches.items():
            search[kind] = await _timed([lambda q=q: store.search(q, limit=10) for q in queries], repeat)
            search[kind]["example"] = queries[0]

        size = (await env.DB.prepare("SELECT 1").run()).meta.size_after
    finally:
        await env.aclose()
        harness.stop()

    hours = n * SEGMENTS * SEGMENT_SEC / 3600
    return {
        "insert": insert,
        "get_context": get,
        "library_page_50": page,
        "search_limit_10": search,
        "binding_round_trip": round_trip,
        "size": {
            "database_mb": round(size / 1e6, 1),
            "hours_of_speech": round(hours, 1),
            "mb_per_hour": round(size / 1e6 / hours, 3),
        },
        "miniflare": "4.20260426.0",
    }


def run() -> dict[str, object]:
    n = int(os.environ.get("BENCH_D1_N", "1000"))
    with tempfile.TemporaryDirectory(prefix="vid2context-bench-d1-") as directory:
        return asyncio.run(_run(Path(directory), n))
