"""The D1 library at size, through Miniflare: 1,000 one-hour transcripts of 600 segments each.

The same synthetic library and figures as ``bench_storage.py`` (SQLite), by its own
``measure_library``: saved through ``CloudflareStorage`` into Miniflare's D1 (workerd's SQLite,
the Durable Object that backs D1 locally) by the test harness (``tests/miniflare``):

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
import sys
import tempfile
from pathlib import Path

from vid2context.storage.cloudflare import CloudflareStorage

from .bench_storage import measure_library, size_figures, timed

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
        round_trip = await timed([lambda: env.DB.prepare("SELECT 1").all()], 300)
        figures = await measure_library(store, n)
        size = (await env.DB.prepare("SELECT 1").run()).meta.size_after
    finally:
        await env.aclose()
        harness.stop()

    return {
        **figures,
        "binding_round_trip": round_trip,
        "size": size_figures(size, n),
        "miniflare": "4.20260426.0",
    }


def run() -> dict[str, object]:
    n = int(os.environ.get("BENCH_D1_N", "1000"))
    with tempfile.TemporaryDirectory(prefix="vid2context-bench-d1-") as directory:
        return asyncio.run(_run(Path(directory), n))
