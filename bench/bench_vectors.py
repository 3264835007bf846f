"""The sqlite-vec index at size: 400,000 windows of 384-dimension vectors (some 2,700 hours of speech).

Figures:

- insert throughput (vectors/s, wall and CPU) through ``SQLiteVectorIndex.upsert``, 10,000 windows a
  call, measured when the database is built;
- query p50/p95 ms (wall, and CPU of this process) of the index exact (``oversample=0``, the
  reference): float32, top 10, over all windows and within 10 videos; of the index as it is,
  past its ``PREFILTER_ABOVE``: Hamming distances from its in-memory copy of the bit table and
  float32 re-scoring from its plain table, top 10 and top 50 (what a hybrid search asks), with
  their recall against the exact answer, and the same with vec0's KNN over its partitioned bit
  table instead of the copy (what a query does while the copy is stale); then of
  quantised copies of the same vectors, which the index does not use: int8 (``vec_quantize_int8(v, 'unit')``, sqlite-vec's only scaling in
  0.1.9, and int8 scaled to the data's range first), and binary (``vec_quantize_binary``) alone and
  with exact float32 re-scoring of the best ``10 x oversample`` candidates, their float32 vectors
  read from the ``vec0`` table or from a plain table of blobs (``bench_f32``: a rowid lookup in a
  b-tree, where ``vec0`` reads from its chunks);
- recall@10 of each variant against the exact float32 answer, and the ratio of its p50 to float32's;
- the size on disk of each table (the pages it added) and of the whole file.

The vectors are synthetic and seeded: unit vectors made of a direction they all share (real
embeddings are anisotropic), one of 2,000 topics per video, a direction per video and noise per
window; each query is a stored window with noise added. Recall depends on that structure (uniform
random vectors, with no near neighbours to find, would show less): read the figures for how the
variants compare, not as the recall of a real model.

Building takes a minute or two, so the database is kept in ``bench/results/`` under a name made of
its parameters (``BENCH_VECTORS_N``, default 400000; ``BENCH_VECTORS_QUERIES``, default 100) and
reused while they are the same. numpy (in the ``dev`` extra's set) makes the vectors.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from vid2context.models import EmbeddingSpace
from vid2context.search.vectors import VectorRecord
from vid2context.search.windows import WindowRef
from vid2context.storage.sqlite_vec import SQLiteVectorIndex, bits_table, open_vector_index, vec_table

DIM = 384
SEED = 20261101
CHUNK = 10_000
WINDOWS_PER_VIDEO = 50
TOPICS = 2_000
TOP = 10
OVERSAMPLE = (4, 16)
SPACE = EmbeddingSpace(model="bench/synthetic-384", dim=DIM, pooling="cls")
RESULTS = Path(__file__).resolve().parent / "results"
VERSION = 3  # bump when the data or the tables change


def _video(i: int) -> str:
    return f"youtube:bench{i // WINDOWS_PER_VIDEO:07d}"


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class Data:
    """The seeded vectors, made a chunk at a time so that any chunk can be made again alone."""

    def __init__(self) -> None:
        rng = np.random.default_rng([SEED, 0])
        self.shared = _unit(rng.standard_normal((1, DIM)))[0]
        self.topics = _unit(rng.standard_normal((TOPICS, DIM)))

    def chunk(self, index: int, n: int) -> np.ndarray:
        start = index * CHUNK
        count = min(CHUNK, n - start)
        rng = np.random.default_rng([SEED, 1, index])
        videos = np.arange(start, start + count) // WINDOWS_PER_VIDEO
        first_video = videos[0]
        own = _unit(rng.standard_normal((videos[-1] - first_video + 1, DIM)))
        topic = self.topics[(videos * 7919) % TOPICS]
        noise = rng.standard_normal((count, DIM)).astype(np.float32) / np.sqrt(DIM)
        mixed = 0.6 * self.shared + 1.0 * topic + 0.6 * own[videos - first_video] + 0.9 * noise
        return _unit(mixed)

    def row(self, i: int, n: int) -> np.ndarray:
        return self.chunk(i // CHUNK, n)[i % CHUNK]


def _records(start: int, vectors: np.ndarray) -> list[VectorRecord]:
    records = []
    for offset, vector in enumerate(vectors):
        i = start + offset
        seg = (i % WINDOWS_PER_VIDEO) * 20
        window = WindowRef(
            id=f"{_video(i)}@{seg}-{seg + 20}",
            video_id=_video(i),
            start_sec=seg * 4.5,
            end_sec=(seg + 20) * 4.5,
            first_segment=seg,
            last_segment=seg + 20,
        )
        records.append(VectorRecord(window, vector.tolist()))
    return records


def _file_bytes(conn: Any) -> int:
    return conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]


async def _build(path: Path, n: int, data: Data) -> dict[str, Any]:
    index = open_vector_index(path)
    if index is None:
        raise RuntimeError("sqlite-vec cannot be loaded here (install the local extra)")
    chunks = range((n + CHUNK - 1) // CHUNK)
    wall = cpu = 0.0
    max_abs = 0.0
    for chunk in chunks:
        vectors = data.chunk(chunk, n)
        max_abs = max(max_abs, float(np.abs(vectors).max()))
        records = _records(chunk * CHUNK, vectors)
        started, started_cpu = time.perf_counter(), time.process_time()
        await index.upsert(SPACE, records)
        wall += time.perf_counter() - started
        cpu += time.process_time() - started_cpu
    scale = 1.0 / max_abs

    def quantise(conn: Any) -> dict[str, Any]:
        table = vec_table(SPACE)
        try:  # the bit table the index made as it passed its threshold (dbstat, where built in)
            bits = conn.execute(
                "SELECT SUM(pgsize) FROM dbstat WHERE name LIKE ?", (bits_table(SPACE) + "%",)
            ).fetchone()[0]
        except Exception:  # noqa: BLE001
            bits = None
        sizes: dict[str, Any] = {"float32_and_index_bit_table": _file_bytes(conn)}
        conn.execute("CREATE VIRTUAL TABLE bench_int8 USING vec0(embedding int8[384] distance_metric=cosine)")
        conn.execute(
            f"INSERT INTO bench_int8 (rowid, embedding) SELECT rowid, vec_quantize_int8(embedding, 'unit') FROM {table}"
        )
        sizes["int8_unit"] = _file_bytes(conn) - sum(sizes.values())
        conn.execute(
            "CREATE VIRTUAL TABLE bench_int8s USING vec0(embedding int8[384] distance_metric=cosine)"
        )
        rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid")]
        for chunk in chunks:
            vectors = np.clip(np.rint(data.chunk(chunk, n) * scale * 127), -127, 127).astype(np.int8)
            ids = rowids[chunk * CHUNK : chunk * CHUNK + len(vectors)]
            conn.executemany(
                "INSERT INTO bench_int8s (rowid, embedding) VALUES (?, vec_int8(?))",
                [(rowid, v.tobytes()) for rowid, v in zip(ids, vectors, strict=True)],
            )
        sizes["int8_scaled"] = _file_bytes(conn) - sum(sizes.values())
        conn.execute("CREATE VIRTUAL TABLE bench_bit USING vec0(embedding bit[384])")
        conn.execute(
            f"INSERT INTO bench_bit (rowid, embedding) SELECT rowid, vec_quantize_binary(embedding) FROM {table}"
        )
        sizes["binary"] = _file_bytes(conn) - sum(sizes.values())
        conn.execute("CREATE TABLE bench_f32 (id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
        conn.execute(f"INSERT INTO bench_f32 (id, embedding) SELECT rowid, embedding FROM {table}")
        sizes["float32_plain_table"] = _file_bytes(conn) - sum(sizes.values())
        if bits is not None:
            sizes["index_bit_table"] = bits
            sizes["float32"] = sizes["float32_and_index_bit_table"] - bits
        return sizes

    sizes = await index.database.write(quantise)
    await index.close()
    return {
        "insert": {
            "vectors": n,
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "vectors_per_s": round(n / wall),
            "vectors_per_cpu_s": round(n / cpu) if cpu else None,
            "per_call": CHUNK,
        },
        "int8_scale": scale,
        "bytes": sizes,
    }


def _stats(walls: list[float], cpus: list[float]) -> dict[str, float]:
    walls = sorted(walls)
    return {
        "p50_ms": round(statistics.median(walls), 2),
        "p95_ms": round(walls[max(0, int(round(len(walls) * 0.95)) - 1)], 2),
        "cpu_p50_ms": round(statistics.median(cpus), 2),
    }


async def _measure(path: Path, n: int, queries: int, data: Data, scale: float) -> dict[str, Any]:
    opened = open_vector_index(path, readers=1)
    assert isinstance(opened, SQLiteVectorIndex)
    for _ in range(2):  # the second query loads the bit table's in-memory copy
        await opened.query(SPACE, [1.0] + [0.0] * (DIM - 1))
    await opened.backfills()
    index = SQLiteVectorIndex(opened.database, oversample=0)  # exact: the reference
    vec0_knn = SQLiteVectorIndex(opened.database, in_memory=False)
    rng = np.random.default_rng([SEED, 2])
    targets = rng.choice(n, size=queries, replace=False)
    vectors = _unit(np.stack([data.row(int(i), n) for i in targets]) + 0.5 * rng.standard_normal((queries, DIM)) / np.sqrt(DIM))  # fmt: skip
    within = [[_video(int(i) + k * WINDOWS_PER_VIDEO * 97) for k in range(10)] for i in targets]
    table = vec_table(SPACE)

    def timed(work: Any) -> tuple[Any, float, float]:
        started, started_cpu = time.perf_counter(), time.process_time()
        result = work()
        return result, (time.perf_counter() - started) * 1000, (time.process_time() - started_cpu) * 1000

    figures: dict[str, Any] = {}
    truth: list[set[int]] = []

    # The index as it is, through its own query (the join to vector_windows included).
    walls, cpus, found_ids = [], [], []
    for vector in vectors:
        started, started_cpu = time.perf_counter(), time.process_time()
        hits = await index.query(SPACE, vector.tolist(), top_k=TOP)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - started_cpu) * 1000)
        found_ids.append([h.id for h in hits])
    figures["float32_exact"] = {**_stats(walls, cpus), "recall_at_10": 1.0}
    walls, cpus = [], []
    for vector, videos in zip(vectors, within, strict=True):
        started, started_cpu = time.perf_counter(), time.process_time()
        await index.query(SPACE, vector.tolist(), top_k=TOP, video_ids=videos)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - started_cpu) * 1000)
    figures["float32_exact_within_10_videos"] = _stats(walls, cpus)
    for top in (TOP, 50):
        exact, walls, cpus = [], [], []
        for vector in vectors:
            started, started_cpu = time.perf_counter(), time.process_time()
            exact.append([h.id for h in await index.query(SPACE, vector.tolist(), top_k=top)])
            walls.append((time.perf_counter() - started) * 1000)
            cpus.append((time.process_time() - started_cpu) * 1000)
        if top != TOP:
            figures[f"float32_exact_top{top}"] = _stats(walls, cpus)
        for name, searched in (("", opened), ("_vec0_knn", vec0_knn)):
            walls, cpus, recalls = [], [], []
            for vector, expected in zip(vectors, exact, strict=True):
                started, started_cpu = time.perf_counter(), time.process_time()
                hits = await searched.query(SPACE, vector.tolist(), top_k=top)
                walls.append((time.perf_counter() - started) * 1000)
                cpus.append((time.process_time() - started_cpu) * 1000)
                recalls.append(len({h.id for h in hits} & set(expected)) / top)
            figures[f"index_prefiltered{name}_top{top}"] = {
                **_stats(walls, cpus),
                f"recall_at_{top}": round(statistics.mean(recalls), 4),
                "oversample": searched.oversample,
                "in_memory_vectors": searched.in_memory_vectors(SPACE),
            }

    def variants(conn: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for vector in vectors:
            rows = conn.execute(
                f"SELECT rowid FROM {table} WHERE embedding MATCH ? AND k = ?", (vector.tobytes(), TOP)
            ).fetchall()
            truth.append({r[0] for r in rows})

        def run(name: str, one: Any) -> None:
            walls, cpus, recalls = [], [], []
            for vector, expected in zip(vectors, truth, strict=True):
                rowids, wall, cpu = timed(lambda v=vector: one(v))
                walls.append(wall)
                cpus.append(cpu)
                recalls.append(len(set(rowids) & expected) / TOP)
            out[name] = {**_stats(walls, cpus), "recall_at_10": round(statistics.mean(recalls), 4)}

        def knn(sql: str, param: Any, k: int = TOP) -> list[int]:
            return [r[0] for r in conn.execute(sql, (param, k))]

        run("int8_unit", lambda v: knn(
            "SELECT rowid FROM bench_int8 WHERE embedding MATCH vec_quantize_int8(?, 'unit') AND k = ?", v.tobytes()
        ))  # fmt: skip
        run("int8_scaled", lambda v: knn(
            "SELECT rowid FROM bench_int8s WHERE embedding MATCH vec_int8(?) AND k = ?",
            np.clip(np.rint(v * scale * 127), -127, 127).astype(np.int8).tobytes(),
        ))  # fmt: skip
        run("binary", lambda v: knn(
            "SELECT rowid FROM bench_bit WHERE embedding MATCH vec_quantize_binary(?) AND k = ?", v.tobytes()
        ))  # fmt: skip
        for oversample in OVERSAMPLE:

            def rescored(v: np.ndarray, oversample: int = oversample) -> list[int]:
                candidates = knn(
                    "SELECT rowid FROM bench_bit WHERE embedding MATCH vec_quantize_binary(?) AND k = ?",
                    v.tobytes(),
                    TOP * oversample,
                )
                rows = conn.execute(  # one rowid lookup per candidate (`rowid IN (...)` scans)
                    f"SELECT c.value FROM json_each(?) AS c CROSS JOIN {table} AS v ON v.rowid = c.value "
                    "ORDER BY vec_distance_cosine(v.embedding, ?) LIMIT ?",
                    (json.dumps(candidates), v.tobytes(), TOP),
                )
                return [r[0] for r in rows]

            run(f"binary_rescored_x{oversample}", rescored)

            def rescored_plain(v: np.ndarray, oversample: int = oversample) -> list[int]:
                candidates = knn(
                    "SELECT rowid FROM bench_bit WHERE embedding MATCH vec_quantize_binary(?) AND k = ?",
                    v.tobytes(),
                    TOP * oversample,
                )
                rows = conn.execute(
                    "SELECT c.value FROM json_each(?) AS c CROSS JOIN bench_f32 AS f ON f.id = c.value "
                    "ORDER BY vec_distance_cosine(f.embedding, ?) LIMIT ?",
                    (json.dumps(candidates), v.tobytes(), TOP),
                )
                return [r[0] for r in rows]

            run(f"binary_rescored_x{oversample}_from_plain_table", rescored_plain)
        return out

    figures.update(await index.database.read(variants))
    reference = figures["float32_exact"]["p50_ms"]
    for entry in figures.values():
        entry["p50_vs_float32"] = round(entry["p50_ms"] / reference, 3) if reference else None
    await opened.close()
    return figures


async def _run(n: int, queries: int) -> dict[str, Any]:
    RESULTS.mkdir(exist_ok=True)
    name = f"vectors-v{VERSION}-n{n}-d{DIM}-s{SEED}"
    path = RESULTS / f"{name}.db"
    built = RESULTS / f"{name}.json"
    data = Data()
    if path.exists() and built.exists():
        build = json.loads(built.read_text(encoding="utf-8"))
        build["cached"] = True
    else:
        for stale in RESULTS.glob(f"{name}.db*"):
            stale.unlink()
        build = await _build(path, n, data)
        built.write_text(json.dumps(build, indent=2) + "\n", encoding="utf-8")
        build["cached"] = False
    figures = await _measure(path, n, queries, data, build["int8_scale"])
    total = sum(p.stat().st_size for p in RESULTS.glob(f"{name}.db*"))
    return {
        "vectors": n,
        "dimensions": DIM,
        "queries": queries,
        "top_k": TOP,
        "database": str(path.relative_to(RESULTS.parent.parent)),
        "build": build,
        "file_bytes": total,
        "bytes_per_vector": {k: round(v / n, 1) for k, v in build["bytes"].items()},
        "query": figures,
    }


def run() -> dict[str, object]:
    n = int(os.environ.get("BENCH_VECTORS_N", "400000"))
    queries = int(os.environ.get("BENCH_VECTORS_QUERIES", "100"))
    return asyncio.run(_run(n, queries))
