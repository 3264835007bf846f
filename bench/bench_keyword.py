"""Keyword search on a big library, before and after stems and bounded ranking (issue #13 item 4).

The library is ``bench_storage``'s: 10,000 one-hour transcripts of 600 segments (6 M segments,
10,000 hours of speech), sentences over a Zipf vocabulary, one unique word per transcript. It
takes minutes to build, so it is kept in ``bench/results/keyword-library-<key>.db``, the key a
hash of everything that shapes it (size, the generator's source, the migrations of the searched
tables, those naming ``segments``; other migrations are applied when it opens): delete the file or
change any of them and it is built again.

Each query class is timed twice on that one database, in the same run, query by query:

- ``before``: main's ranking, ``bm25()`` over every match of ``segments_fts`` (``MAIN_SEARCH_SQL``,
  copied from ``storage/common.py`` as it was), through the same reader pool;
- ``after``: ``SQLiteStorage.search``, exact words then stems, each ranked over a bounded window.

Classes: rare words (one transcript), stems whose exact form is absent, two mid-frequency words,
two-word phrases from the sentences, common words (about 3.5% of segments), very common words
(``the``: 80%), two common words, exclusions, and searches within one video and within 20. Each reports p50/p95 ms wall and CPU (this
process, reader threads included: the figure that survives a loaded machine), the ratio of the
p50s, and ``same_top10``: how often both rank the same ten segments first (for rare queries it
should be all of them; a common word is ranked among its newest matches, so there it is not).
``size`` is the database and each index in MB, per hour of speech.

``BENCH_KEYWORD_N`` sets the number of transcripts (default 10000; 300 gives a quick run).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import random
import sqlite3
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from vid2context.search.query import fts_expression, parse_query
from vid2context.storage.sqlite import SQLiteStorage, find_migrations

from . import bench_storage
from .bench_storage import _COMMON, SEGMENT_SEC, SEGMENTS, _context, _pool, _vocabulary

RESULTS = Path(__file__).resolve().parent / "results"

MAIN_SEARCH_SQL = (
    "SELECT s.video_id, s.start_sec, s.end_sec, s.text, -f.rank_bm25 AS score, v.title, s.id FROM ("
    "SELECT rowid, bm25(segments_fts) AS rank_bm25 FROM segments_fts "
    "WHERE segments_fts MATCH ? ORDER BY rank_bm25, rowid LIMIT ?"
    ") AS f JOIN segments AS s ON s.id = f.rowid JOIN videos AS v ON v.id = s.video_id "
    "ORDER BY f.rank_bm25, f.rowid"
)
"""Main's search before this change (``common.search_sql(within=False)``), for the reference."""
MAIN_WITHIN_SQL = MAIN_SEARCH_SQL.replace(
    "MATCH ? ORDER BY", "MATCH ? AND video_id IN (SELECT value FROM json_each(?)) ORDER BY"
)
"""The same within some videos (``search_sql(within=True)``)."""

BEFORE_CAP = {
    "very_common": 8,
    "common_word": 24,
    "common_pair": 24,
    "stemmed": 24,
    "exclusion": 24,
    "within_20_videos": 16,
}
"""The reference takes seconds on the commonest words: time fewer of its queries there."""


def _library_key(n: int) -> str:
    digest = hashlib.sha256()
    digest.update(f"n={n} segments={SEGMENTS} seed=11".encode())
    digest.update(inspect.getsource(bench_storage).encode())
    for path in sorted(find_migrations().glob("*.sql")):
        text = path.read_bytes()
        if b"segments" in text:  # what shapes the searched tables; others apply when it opens
            digest.update(path.name.encode() + text)
    return digest.hexdigest()[:12]


async def _build(path: Path, n: int) -> dict[str, float]:
    """The library, saved one ``put_context`` at a time, exactly as ``bench_storage`` saves it."""
    partial = path.with_suffix(".partial")
    for stale in path.parent.glob(partial.name + "*"):
        stale.unlink()
    store = SQLiteStorage(partial)
    rng = random.Random(11)
    pool = _pool(rng)
    started = time.perf_counter()
    try:
        for i in range(n):
            await store.put_context(_context(i, pool, rng))
    finally:
        await store.close()
    seconds = time.perf_counter() - started
    conn = sqlite3.connect(partial)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    partial.replace(path)
    return {"seconds": round(seconds, 1), "segments_per_s": round(n * SEGMENTS / seconds)}


WITHIN = {"within_one_video": 1, "within_20_videos": 20}
"""Classes searched within that many videos (picked at random, the same ones every run)."""


def _queries(n: int) -> dict[str, list[str]]:
    rng = random.Random(29)
    pool = _pool(random.Random(11))
    vocabulary = _vocabulary(random.Random(11))
    mid = vocabulary[len(_COMMON) : len(_COMMON) + 400]
    return {
        "rare_word": [f"uniq{rng.randrange(n)}" for _ in range(200)],
        "stemmed": ["models", "systems", "thinking", "peoples", "times", "makes", "datas", "firsts"],
        "two_words": [f"{rng.choice(mid)} {rng.choice(mid)}" for _ in range(200)],
        "phrase": [f'"{" ".join(rng.choice(pool).split()[2:4])}"' for _ in range(200)],
        "common_word": ["data", "model", "system", "people", "time", "think", "going", "really"],
        "very_common": ["the", "of", "and", "to"],
        "common_pair": ["data model", "people think", "the system", "time of", "really going", "model data"],
        "exclusion": ["data -model", "people -the", "system -data -model", "uniq7 -the", "time -going"],
        "within_one_video": ["the", "data", "people think", '"of the"', "models"],
        "within_20_videos": ["the", "data", "people think", '"of the"', "models"],
    }


async def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, float, Any]:
    started, started_cpu = time.perf_counter(), time.process_time()
    result = await call()
    return (time.perf_counter() - started) * 1000, (time.process_time() - started_cpu) * 1000, result


def _percentiles(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.95))], 2),
    }


def _figures(wall: list[float], cpu: list[float]) -> dict[str, object]:
    return {
        **_percentiles(wall),
        "cpu": _percentiles(cpu),
        "samples": len(wall),
    }


async def _measure(store: SQLiteStorage, queries: dict[str, list[str]], n: int) -> dict[str, object]:
    rng = random.Random(31)
    within = {kind: [f"youtube:bench{i:07d}" for i in rng.sample(range(n), k)] for kind, k in WITHIN.items()}

    async def before(query: str, video_ids: list[str] | None) -> list[tuple[str, float]]:
        match = fts_expression(*parse_query(query))  # main's expression: the same quoting
        if video_ids is None:
            sql, params = MAIN_SEARCH_SQL, (match, 10)
        else:
            sql, params = MAIN_WITHIN_SQL, (match, json.dumps(video_ids), 10)
        rows = await store.database.read(lambda conn: conn.execute(sql, params).fetchall())
        return [(row["video_id"], row["start_sec"]) for row in rows]

    async def after(query: str, video_ids: list[str] | None) -> list[tuple[str, float]]:
        return [(h.video_id, h.start_sec) for h in await store.search(query, limit=10, video_ids=video_ids)]

    for kind in queries:  # warm the page cache for both paths
        await after(queries[kind][0], within.get(kind))
    figures: dict[str, object] = {}
    for kind, texts in queries.items():
        repeats = max(1, 40 // len(texts))
        plan = [q for q in texts for _ in range(repeats)]
        cap = BEFORE_CAP.get(kind, len(plan))
        samples: dict[str, tuple[list[float], list[float]]] = {"before": ([], []), "after": ([], [])}
        same = 0
        compared = 0
        for i, query in enumerate(plan):
            ids = within.get(kind)
            wall, cpu, new = await _timed(lambda q=query, v=ids: after(q, v))
            samples["after"][0].append(wall)
            samples["after"][1].append(cpu)
            if i < cap:
                wall, cpu, old = await _timed(lambda q=query, v=ids: before(q, v))
                samples["before"][0].append(wall)
                samples["before"][1].append(cpu)
                compared += 1
                same += old == new
        entry = {side: _figures(*samples[side]) for side in ("before", "after")}
        entry["p50_ratio"] = round(entry["before"]["p50_ms"] / max(entry["after"]["p50_ms"], 1e-3), 1)
        entry["cpu_p50_ratio"] = round(
            entry["before"]["cpu"]["p50_ms"] / max(entry["after"]["cpu"]["p50_ms"], 1e-3), 1
        )
        entry["same_top10"] = round(same / compared, 2)
        entry["example"] = texts[0]
        figures[kind] = entry
    return figures


def _sizes(path: Path, n: int) -> dict[str, object]:
    hours = n * SEGMENTS * SEGMENT_SEC / 3600
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    except sqlite3.OperationalError:  # built without dbstat
        rows = []
    finally:
        conn.close()

    def group(prefix: str) -> int:
        return sum(size for name, size in rows if name.startswith(prefix))

    total = path.stat().st_size
    parts = {
        "segments_fts": group("segments_fts"),
        "segments_stem": group("segments_stem"),
        "segments": sum(size for name, size in rows if name == "segments" or name.startswith("sqlite_autoindex_segments")),
    }  # fmt: skip
    return {
        "database_mb": round(total / 1e6, 1),
        "hours_of_speech": round(hours, 1),
        "mb_per_hour": round(total / 1e6 / hours, 3),
        "index_mb_per_hour": {name: round(size / 1e6 / hours, 3) for name, size in parts.items()},
    }


async def _run(n: int) -> dict[str, object]:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"keyword-library-{_library_key(n)}.db"
    build: dict[str, object] = {"cached": path.is_file()}
    if not path.is_file():
        build.update(await _build(path, n))
    store = SQLiteStorage(path)
    try:
        figures = await _measure(store, _queries(n), n)
    finally:
        await store.close()
    return {
        "transcripts": n,
        "segments": n * SEGMENTS,
        "library": {"file": path.name, **build},
        "search_limit_10": figures,
        "size": _sizes(path, n),
        "sqlite": sqlite3.sqlite_version,
    }


def run() -> dict[str, object]:
    return asyncio.run(_run(int(os.environ.get("BENCH_KEYWORD_N", "10000"))))
