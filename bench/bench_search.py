"""Search at size: 10,000 one-hour videos (6M segments) and their 400,000 windows, in one SQLite file.

Figures, each with its reference measured in the same run:

- **keyword** p50/p95 ms (wall, and CPU of this process) of ``search.engine.search`` with
  ``mode=keyword`` over a query mix of rare words, mid-frequency word pairs, phrases and common
  words, beside ``Storage.search`` alone on the same queries (the engine's cost is its scope,
  coverage and citing on top). Target: p95 under 20 ms.
- **hybrid** (no rerank) p50/p95 ms over the same mix, beside its parts: the query's embedding
  (the test model, one sentence, on the one-thread session a search uses and on the session of
  batches), ``VectorIndex.query`` alone, as the index is (Hamming
  distances from its in-memory copy of the bit table, float32 re-scoring from the plain
  table), with vec0's KNN over the bit table instead of the copy (what a query does while the
  copy is stale), as the index was before (vec0's KNN, re-scoring from the ``vec0`` table), and
  exact (``oversample=0``, float32 over all 400,000 vectors: the reference); the prefilter's
  recall of the exact top 10 and top 50; the index against its previous query alternately.
  Target: p95 under 50 ms.
- **the prefilter's backfill**: a cached library from before the prefilter's plain table gets
  it here (and its bit table again), through ``SQLiteVectorIndex.build_prefilter`` (what the
  index does after an old library's first query), timed, with the bytes it added; then the
  load of the bit table's in-memory copy.
- **indexing** throughput: windows a second (wall, CPU) through ``indexing.index_video`` (make
  the windows, embed them with the offline test model, write them to sqlite-vec) on hour-long
  transcripts, beside fastembed embedding the same texts directly (the model's own speed).
- **index size**: the SQLite file's bytes per hour of speech, the keyword library's (segments,
  FTS5) and the vectors' (``vec0`` table, ``vector_windows``, ``vector_videos``) apart.

The library is bench_storage's (its synthetic transcripts and Zipf vocabulary, ``_context``); the
vectors are bench_vectors' synthetic ones (clustered unit vectors, ``Data``), 40 windows a video
(15 segments each), written as the test model's space so that a real query embedding searches
them: the timings are real, the rankings are not (nothing relates these vectors to these words).
Building takes several minutes, so the database is kept in ``bench/results/`` under a name made of
its parameters (``BENCH_SEARCH_N``, default 10000 videos; the model; the migrations) and reused
while they are the same. ``BENCH_SEARCH_ONLY=latency`` measures only the keyword and hybrid
latencies (their A/B, their kinds, the query embedding and the vector top 50): the vector
index's other references, its recalls and indexing are left out, for iterating on search.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402
import numpy as np  # noqa: E402
from tests.embed_model import model_dir  # noqa: E402

from bench.bench_storage import _COMMON as COMMON  # noqa: E402
from bench.bench_storage import SEGMENT_SEC, SEGMENTS, _context, _pool, _vocabulary  # noqa: E402
from bench.bench_vectors import Data  # noqa: E402
from bench.timing import compare_async  # noqa: E402
from vid2context.models import EmbeddingSpace  # noqa: E402
from vid2context.runtime import build_runtime  # noqa: E402
from vid2context.search.contexts import ContextCache  # noqa: E402
from vid2context.search.embedders.fastembed_local import FastEmbedder  # noqa: E402
from vid2context.search.engine import SearchRequest, search  # noqa: E402
from vid2context.search.indexing import index_video  # noqa: E402
from vid2context.search.vectors import VectorRecord  # noqa: E402
from vid2context.search.windows import WindowRef  # noqa: E402
from vid2context.settings import load_settings  # noqa: E402
from vid2context.storage.sqlite import SQLiteStorage  # noqa: E402
from vid2context.storage.sqlite_vec import (  # noqa: E402
    SQLiteVectorIndex,
    _prefilter_sql,
    bits_table,
    open_vector_index,
    vec_table,
)

RESULTS = Path(__file__).resolve().parent / "results"
VERSION = 1  # bump when the data or the tables change
WINDOWS_PER_VIDEO = 40
SEGMENTS_PER_WINDOW = SEGMENTS // WINDOWS_PER_VIDEO
CHUNK = 10_000
REPEAT = {"rare_word": 60, "two_words": 60, "phrase": 40, "common_word": 20}
LATENCY_ONLY = os.environ.get("BENCH_SEARCH_ONLY", "") == "latency"


def _model() -> FastEmbedder:
    return FastEmbedder(folder=str(model_dir()), pooling="mean")


def _space(rung: FastEmbedder) -> EmbeddingSpace:
    return EmbeddingSpace(model=rung.model_id, dim=384, pooling="mean")


def _windows(start: int, count: int) -> list[WindowRef]:
    out = []
    for i in range(start, start + count):
        video, w = divmod(i, WINDOWS_PER_VIDEO)
        first = w * SEGMENTS_PER_WINDOW
        last = first + SEGMENTS_PER_WINDOW - 1
        out.append(
            WindowRef(
                id=f"youtube:bench{video:07d}@{first}-{last}",
                video_id=f"youtube:bench{video:07d}",
                start_sec=first * SEGMENT_SEC,
                end_sec=(last + 1) * SEGMENT_SEC,
                first_segment=first,
                last_segment=last,
            )
        )
    return out


def _migrations() -> str:
    """A digest of the migrations the library is built with: a new one builds a new library."""
    import hashlib

    from vid2context.storage.sqlite import find_migrations

    digest = hashlib.sha256()
    for path in sorted(find_migrations().glob("*.sql")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:8]


def _checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def _build(path: Path, n: int, space: EmbeddingSpace) -> dict[str, Any]:
    for stale in path.parent.glob(path.name + "*"):
        stale.unlink()
    store = SQLiteStorage(path)
    rng = random.Random(11)
    pool = _pool(rng)
    started = time.perf_counter()
    for i in range(n):
        await store.put_context(_context(i, pool, rng))
    library_s = time.perf_counter() - started
    await store.close()
    _checkpoint(path)  # the size of the keyword library alone
    keyword_bytes = _bytes(path)
    index = open_vector_index(path)
    assert index is not None, "sqlite-vec cannot be loaded here (install the local extra)"
    total = n * WINDOWS_PER_VIDEO
    data = Data()
    started = time.perf_counter()
    for chunk in range((total + CHUNK - 1) // CHUNK):
        vectors = data.chunk(chunk, total)
        windows = _windows(chunk * CHUNK, len(vectors))
        records = [VectorRecord(w, v.tolist()) for w, v in zip(windows, vectors, strict=True)]
        await index.upsert(space, records)
    vectors_s = time.perf_counter() - started
    await index.close()
    _checkpoint(path)
    return {
        "videos": n,
        "segments": n * SEGMENTS,
        "windows": total,
        "library_build_s": round(library_s, 1),
        "vectors_build_s": round(vectors_s, 1),
        "keyword_bytes": keyword_bytes,
        "total_bytes": _bytes(path),
    }


def _queries(n: int) -> dict[str, list[str]]:
    rng = random.Random(5)
    pool = _pool(random.Random(11))
    vocabulary = _vocabulary(random.Random(11))
    mid = vocabulary[len(COMMON) : len(COMMON) + 400]
    return {
        "rare_word": [f"uniq{rng.randrange(n)}" for _ in range(REPEAT["rare_word"])],
        "two_words": [f"{rng.choice(mid)} {rng.choice(mid)}" for _ in range(REPEAT["two_words"])],
        "phrase": [f'"{" ".join(rng.choice(pool).split()[2:4])}"' for _ in range(REPEAT["phrase"])],
        "common_word": [rng.choice(COMMON[:30]) for _ in range(REPEAT["common_word"])],
    }


def _stats(walls: list[float], cpus: list[float]) -> dict[str, float]:
    walls = sorted(walls)
    return {
        "p50_ms": round(statistics.median(walls), 2),
        "p95_ms": round(walls[max(0, int(round(len(walls) * 0.95)) - 1)], 2),
        "cpu_p50_ms": round(statistics.median(cpus), 2),
        "cpu_p95_ms": round(sorted(cpus)[max(0, int(round(len(cpus) * 0.95)) - 1)], 2),
        "samples": len(walls),
    }


async def _timed(calls: list[Any]) -> dict[str, float]:
    for call in calls[:2]:  # warm the caches the first call of each kind fills
        await call()
    walls, cpus = [], []
    for call in calls:
        started, started_cpu = time.perf_counter(), time.process_time()
        await call()
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - started_cpu) * 1000)
    return _stats(walls, cpus)


async def _measure(path: Path, n: int, rung: FastEmbedder) -> dict[str, Any]:
    settings = load_settings({"VID2CONTEXT_ACCESS_LOG": "0"})
    store = SQLiteStorage(path)
    index = open_vector_index(path)
    assert index is not None
    runtime = build_runtime(settings, storage=store, vectors=index)
    runtime.embed = [rung]
    space = _space(rung)
    figures: dict[str, Any] = {}
    exact = SQLiteVectorIndex(index.database, oversample=0)  # the reference: every vector scanned

    def pages(conn: Any) -> int:
        return (
            conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
        )

    before = await index.database.read(pages)
    started, started_cpu = time.perf_counter(), time.process_time()
    made = await index.build_prefilter(space)
    figures["prefilter_backfill"] = {
        "vectors": made,
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(time.process_time() - started_cpu, 1),
        "bytes_added": await index.database.read(pages) - before,
        "note": "0 vectors: the cached library already had its prefilter" if not made else "",
    }
    before = await store.database.read(pages)
    started, started_cpu = time.perf_counter(), time.process_time()
    await store.build_pairs()
    figures["keyword_pairs_backfill"] = {
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(time.process_time() - started_cpu, 1),
        "bytes_added": await store.database.read(pages) - before,
        "note": "the cached library already had it when ~0 s" if time.perf_counter() - started < 1 else "",
    }
    started, started_cpu = time.perf_counter(), time.process_time()
    for _ in range(2):  # the second query starts the copy's load
        await index.query(space, [1.0] + [0.0] * (space.dim - 1), top_k=10)
    await index.backfills()
    figures["in_memory_copy"] = {
        "vectors": index.in_memory_vectors(space),
        "bytes": index.in_memory_vectors(space) * space.dim // 8,
        "wall_s": round(time.perf_counter() - started, 2),
        "cpu_s": round(time.process_time() - started_cpu, 2),
    }
    vec0_knn = SQLiteVectorIndex(index.database, in_memory=False)
    # The reference for the keyword tail's changes: FTS5 alone (no word-pair index), every video
    # read again for each search (no cache of decoded contexts).
    fts5_store = SQLiteStorage(path, pair_reads=False)
    before_runtime = build_runtime(settings, storage=fts5_store, vectors=index)
    before_runtime.embed = [rung]
    before_runtime.contexts = ContextCache(max_items=0)
    before_runtime.cards = ContextCache(max_items=0)
    try:
        queries = _queries(n)
        mix = [q for kind in queries.values() for q in kind]
        vectors = [
            (await asyncio.to_thread(lambda q=q: next(iter(rung._load().embed([q]))).tolist()))
            for q in mix[:40]
        ]

        def engine(q: str, mode: str, on: Any = runtime):  # type: ignore[no-untyped-def]
            return lambda: search(on, SearchRequest(query=q, mode=mode, limit=10))

        for mode in ("keyword", "hybrid"):  # alternately, the same queries, the same load
            figures[f"{mode}_vs_before"] = {
                kind: await compare_async(
                    [engine(q, mode) for q in qs], [engine(q, mode, before_runtime) for q in qs]
                )
                for kind, qs in {**queries, "mix": mix}.items()
            }
        figures["keyword_storage_vs_fts5_alone"] = {
            kind: await compare_async(
                [lambda q=q: store.search(q, limit=50) for q in qs],
                [lambda q=q: fts5_store.search(q, limit=50) for q in qs],
            )
            for kind, qs in queries.items()
        }

        figures["keyword"] = {
            kind: await _timed([engine(q, "keyword") for q in qs]) for kind, qs in queries.items()
        }
        figures["keyword"]["mix"] = await _timed([engine(q, "keyword") for q in mix])
        figures["keyword_reference_storage_search"] = {
            kind: await _timed([lambda q=q: store.search(q, limit=50) for q in qs])
            for kind, qs in queries.items()
        }
        figures["hybrid"] = {
            kind: await _timed([engine(q, "hybrid") for q in qs]) for kind, qs in queries.items()
        }
        figures["hybrid"]["mix"] = await _timed([engine(q, "hybrid") for q in mix])
        figures["hybrid_parts"] = {
            "embed_query": await _timed(  # as a search embeds it: one text, the one-thread session
                [lambda q=q: asyncio.to_thread(rung._run, [q]) for q in mix[:40]]
            ),
            "embed_query_batch_session": await _timed(  # the same on the session batches use
                [lambda q=q: asyncio.to_thread(lambda: list(rung._load().embed([q]))) for q in mix[:40]]
            ),
            "vector_query_top50": await _timed(
                [lambda v=v: index.query(space, v, top_k=50) for v in vectors]
            ),
        }
        if LATENCY_ONLY:
            return figures
        figures["hybrid_parts"] |= {
            "vector_query_top50_vec0_knn": await _timed(
                [lambda v=v: vec0_knn.query(space, v, top_k=50) for v in vectors]
            ),
            "vector_query_top50_before": await _timed([_before(index, space, v) for v in vectors]),
            "vector_query_top50_exact_reference": await _timed(
                [lambda v=v: exact.query(space, v, top_k=50) for v in vectors]
            ),
            "vector_query_top50_vs_before": await compare_async(
                [lambda v=v: index.query(space, v, top_k=50) for v in vectors],
                [_before(index, space, v) for v in vectors],
            ),
        }
        parts = figures["hybrid_parts"]
        parts["vector_prefilter_vs_exact_p50"] = round(
            parts["vector_query_top50"]["p50_ms"] / parts["vector_query_top50_exact_reference"]["p50_ms"], 3
        )
        for top in (10, 50):
            for name, searched in (("prefilter", index), ("vec0_knn", vec0_knn)):
                recalls = []
                for v in vectors:
                    truth = {h.id for h in await exact.query(space, v, top_k=top)}
                    found = {h.id for h in await searched.query(space, v, top_k=top)}
                    recalls.append(len(truth & found) / top)
                parts[f"{name}_recall_at_{top}"] = round(statistics.mean(recalls), 4)
        sample = await search(runtime, SearchRequest(query=mix[0], limit=10))
        figures["hybrid_meta_example"] = {
            "query": mix[0],
            "sides": sample.meta.sides,
            "vector": sample.meta.vector,
            "videos": sample.meta.videos,
            "indexed": sample.meta.indexed,
            "timings": msgspec.to_builtins(sample.meta.timings),
        }
    finally:
        await runtime.aclose()
        await fts5_store.close()
    return figures


def _before(index: SQLiteVectorIndex, space: EmbeddingSpace, vector: list[float]) -> Any:
    """The index's query for a top 50 before its plain table and in-memory copy: vec0's KNN over
    the bit table, re-scoring from the ``vec0`` table (the same statement, the vec0 table named
    where the plain one is now)."""
    blob = np.asarray(vector, dtype=np.float32).tobytes()
    sql = _prefilter_sql(vec_table(space), bits_table(space))
    params = (blob, -(-2 * 50 * index.oversample // 8), 50 * index.oversample, 50)
    return lambda: index.database.read(lambda conn: conn.execute(sql, params).fetchall())


async def _indexing(rung: FastEmbedder, videos: int) -> dict[str, Any]:
    """Windows a second through index_video (memory index), and fastembed alone on the same texts."""
    from vid2context.search.windows import make_windows

    runtime = build_runtime(load_settings({}))
    runtime.embed = [rung]
    rng = random.Random(3)
    pool = _pool(random.Random(11))
    contexts = [_context(100_000 + i, pool, rng) for i in range(videos)]
    for context in contexts:
        await runtime.storage.put_context(context)
    await index_video(runtime, contexts[0])  # load the model
    windows = sum(len(make_windows(c)) for c in contexts)
    started, started_cpu = time.perf_counter(), time.process_time()
    for context in contexts:
        assert (await index_video(runtime, context)).outcome == "ok"
    wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    texts = [w.text for c in contexts for w in make_windows(c)]
    model = rung._load()
    started, started_cpu = time.perf_counter(), time.process_time()
    await asyncio.to_thread(lambda: list(model.embed(texts, batch_size=32)))
    ref_wall, ref_cpu = time.perf_counter() - started, time.process_time() - started_cpu
    await runtime.aclose()
    return {
        "videos": videos,
        "windows": windows,
        "hours_of_speech": round(videos * SEGMENTS * SEGMENT_SEC / 3600, 2),
        "windows_per_s": round(windows / wall, 1),
        "cpu_s_per_window": round(cpu / windows, 4),
        "reference_fastembed_windows_per_s": round(windows / ref_wall, 1),
        "reference_cpu_s_per_window": round(ref_cpu / windows, 4),
        "ratio_to_reference": round(wall / ref_wall, 3),
        "seconds_per_hour_of_speech": round(wall / (videos * SEGMENTS * SEGMENT_SEC / 3600), 1),
    }


async def _run(n: int) -> dict[str, Any]:
    load_at_start = [round(x, 2) for x in os.getloadavg()]  # the machine is shared: say how busy
    RESULTS.mkdir(exist_ok=True)
    rung = _model()
    space = _space(rung)
    name = f"search-v{VERSION}-n{n}-w{WINDOWS_PER_VIDEO}-{space.tag}-m{_migrations()}"
    path = RESULTS / f"{name}.db"
    built = RESULTS / f"{name}.json"
    if path.exists() and built.exists():
        build = json.loads(built.read_text(encoding="utf-8"))
        build["cached"] = True
    else:
        build = await _build(path, n, space)
        built.write_text(json.dumps(build, indent=2) + "\n", encoding="utf-8")
        build["cached"] = False
    hours = n * SEGMENTS * SEGMENT_SEC / 3600
    vector_bytes = build["total_bytes"] - build["keyword_bytes"]
    figures = await _measure(path, n, rung)
    bit_bytes = figures["prefilter_backfill"]["bytes_added"]
    return {
        "library": build,
        "size": {
            "hours_of_speech": hours,
            "keyword_mb_per_hour": round(build["keyword_bytes"] / 1e6 / hours, 3),
            "vectors_mb_per_hour": round(vector_bytes / 1e6 / hours, 3),
            "total_mb_per_hour": round(build["total_bytes"] / 1e6 / hours, 3),
            "vector_bytes_per_window": round(vector_bytes / build["windows"], 1),
            "prefilter_mb_per_hour": round(bit_bytes / 1e6 / hours, 4) if bit_bytes > 0 else None,
            "prefilter_bytes_per_window": round(bit_bytes / build["windows"], 1) if bit_bytes > 0 else None,
        },
        "search": figures,
        "targets": {"keyword_p95_ms": 20, "hybrid_p95_ms": 50},
        "indexing": None
        if LATENCY_ONLY
        else await _indexing(rung, int(os.environ.get("BENCH_SEARCH_INDEX_VIDEOS", "3"))),
        "embedding_space": {"model": space.model, "dim": space.dim, "pooling": space.pooling},
        "numpy": np.__version__,
        "load_average_1_5_15_min": {"start": load_at_start, "end": [round(x, 2) for x in os.getloadavg()]},
    }


def run() -> dict[str, object]:
    return asyncio.run(_run(int(os.environ.get("BENCH_SEARCH_N", "10000"))))
