"""The SQLite library at size: 10,000 one-hour transcripts of 600 segments each.

Figures:

- insert throughput (transcripts/s and segments/s), one ``put_context`` (one transaction) each;
- p50/p99 ms of ``get_context`` by a random id, of a library page (``list_videos`` limit 50 at a
  random cursor), and of keyword searches (a rare word, two words, a phrase, a common word);
- database size per hour of speech (each segment lasts 6 s, so 600 segments = 1 hour), with the
  share of each table and index when SQLite has ``dbstat``.

``BENCH_STORAGE_N`` sets the number of transcripts (default 10000; 200 gives a quick run).
Texts come from a pool of synthetic sentences over a Zipf-distributed vocabulary, so posting
lists have realistic lengths; one unique word per transcript makes a rare-word query.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.storage.base import Storage
from vid2context.storage.common import encode_cursor
from vid2context.storage.sqlite import SQLiteStorage

SEGMENTS = 600
SEGMENT_SEC = 6.0
POOL = 20_000

_COMMON = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "that",
    "is",
    "it",
    "you",
    "we",
    "for",
    "this",
    "on",
    "with",
    "so",
    "as",
    "be",
    "are",
    "but",
    "have",
    "at",
    "not",
    "what",
    "can",
    "all",
    "they",
    "there",
    "about",
    "if",
    "one",
    "like",
    "just",
    "do",
    "more",
    "when",
    "from",
    "or",
    "your",
    "which",
    "would",
    "how",
    "our",
    "an",
    "time",
    "data",
    "model",
    "system",
    "because",
    "really",
    "think",
    "going",
    "know",
    "people",
    "very",
    "some",
    "these",
    "then",
    "way",
    "get",
    "into",
    "first",
    "make",
]


def _vocabulary(rng: random.Random) -> list[str]:
    syllables = [
        "ka",
        "lo",
        "mi",
        "ne",
        "ru",
        "ta",
        "shi",
        "vo",
        "zen",
        "pra",
        "del",
        "tor",
        "ix",
        "um",
        "bel",
    ]
    words = set()
    while len(words) < 8_000:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return _COMMON + sorted(words)


def _pool(rng: random.Random) -> list[str]:
    """Sentences of about 16 words (speech at ~160 words a minute, 6 s a segment)."""
    vocabulary = _vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return [" ".join(rng.choices(vocabulary, weights, k=rng.randint(12, 20))) for _ in range(POOL)]


def _context(n: int, pool: list[str], rng: random.Random) -> VideoContext:
    texts = rng.choices(pool, k=SEGMENTS)
    texts[rng.randrange(SEGMENTS)] += f" uniq{n}"
    video_id = f"youtube:bench{n:07d}"
    segments = [
        Segment(start_sec=i * SEGMENT_SEC, end_sec=(i + 1) * SEGMENT_SEC, text=t) for i, t in enumerate(texts)
    ]
    return VideoContext(
        id=video_id,
        metadata=VideoMetadata(
            id=video_id, platform="youtube", title=f"Benchmark talk {n}", duration_sec=3600.0
        ),
        transcript=Transcript(
            language="en", origin="captions-auto", timing="caption", producer="bench", segments=segments
        ),
        fetched_at="2026-01-01T00:00:00Z",
    )


def _percentiles(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {
        "p50_ms": round(statistics.median(samples), 3),
        "p99_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.99))], 3),
        "samples": len(samples),
    }


async def timed(calls: list, repeat: int) -> dict[str, float]:  # type: ignore[type-arg]
    """p50/p99 ms of ``repeat`` awaited calls, taken in turn from ``calls``."""
    samples = []
    for i in range(repeat):
        started = time.perf_counter()
        await calls[i % len(calls)]()
        samples.append((time.perf_counter() - started) * 1000)
    return _percentiles(samples)


def _sizes(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            rows = conn.execute(
                "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
            ).fetchall()
        except sqlite3.OperationalError:  # built without dbstat
            rows = []
        return {name: size for name, size in rows}
    finally:
        conn.close()


async def measure_library(store: Storage, n: int) -> dict[str, object]:
    """Fill ``store`` with ``n`` synthetic transcripts and time it: the figures every storage bench shares.

    ``insert``, ``get_context``, ``library_page_50`` and ``search_limit_10``, from the same seeded
    library and queries whatever the store, so the SQLite and D1 benches compare like for like.
    """
    rng = random.Random(11)
    pool = _pool(rng)
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
    get = await timed([lambda i=i: store.get_context(i) for i in ids], 1000)
    cursors = [encode_cursor(rng.randint(1, n)) for _ in range(1000)]
    page = await timed([lambda c=c: store.list_videos(limit=50, cursor=c) for c in cursors], 1000)

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
        search[kind] = await timed([lambda q=q: store.search(q, limit=10) for q in queries], repeat)
        search[kind]["example"] = queries[0]
    return {"insert": insert, "get_context": get, "library_page_50": page, "search_limit_10": search}


def size_figures(size_bytes: int, n: int) -> dict[str, float]:
    """The database size, and per hour of speech (each transcript is one hour)."""
    hours = n * SEGMENTS * SEGMENT_SEC / 3600
    return {
        "database_mb": round(size_bytes / 1e6, 1),
        "hours_of_speech": round(hours, 1),
        "mb_per_hour": round(size_bytes / 1e6 / hours, 3),
    }


async def _run(directory: Path, n: int) -> dict[str, object]:
    path = directory / "vid2context.db"
    store = SQLiteStorage(path)
    try:
        figures = await measure_library(store, n)
    finally:
        await store.close()

    tables = _sizes(path)
    return {
        **figures,
        "size": {
            **size_figures(path.stat().st_size, n),
            "by_table_mb": {name: round(size / 1e6, 1) for name, size in list(tables.items())[:10]},
        },
        "vector_available": store.vector_available,
        "sqlite": sqlite3.sqlite_version,
    }


def run() -> dict[str, object]:
    n = int(os.environ.get("BENCH_STORAGE_N", "10000"))
    with tempfile.TemporaryDirectory(prefix="vid2context-bench-") as directory:
        return asyncio.run(_run(Path(directory), n))
