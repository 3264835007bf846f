"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Sequence


def measure(work: Callable[[], object], *, repeat: int = 15, warmup: int = 2) -> dict[str, float]:
    """Milliseconds per call over ``repeat`` runs after ``warmup`` runs.

    Wall time (median, best, p90) and CPU time of this process (median): on a shared machine
    the CPU figure moves far less with other processes' load, so ratios are read from it.
    """
    for _ in range(warmup):
        work()
    samples = []
    cpu = []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        work()
        samples.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 3),
        "best_ms": round(samples[0], 3),
        "p90_ms": round(samples[int(len(samples) * 0.9) - 1], 3),
        "cpu_median_ms": round(statistics.median(cpu), 3),
    }


def compare(
    ours: Callable[[], object], theirs: Callable[[], object], *, repeat: int = 31
) -> dict[str, object]:
    """Ours against a reference, run alternately in this process so both see the same load.

    Medians of wall and CPU milliseconds for each side, and ``speedup``: the reference's CPU
    median over ours (above 1 means ours is faster), with ``speedup_wall`` from wall time.
    """
    for _ in range(2):
        ours()
        theirs()
    wall: dict[str, list[float]] = {"ours": [], "theirs": []}
    cpu: dict[str, list[float]] = {"ours": [], "theirs": []}
    for _ in range(repeat):
        for side, work in (("ours", ours), ("theirs", theirs)):
            started, started_cpu = time.perf_counter(), time.process_time()
            work()
            wall[side].append((time.perf_counter() - started) * 1000)
            cpu[side].append((time.process_time() - started_cpu) * 1000)
    return _compared(wall, cpu)


async def compare_async(
    ours: Sequence[Callable[[], Awaitable[object]]], theirs: Sequence[Callable[[], Awaitable[object]]]
) -> dict[str, object]:
    """``compare`` for awaited work: ``ours[i]`` and ``theirs[i]`` (the same input, done two
    ways) run one after the other for each ``i``, after one warm-up pair. Which goes first
    alternates: the second run of the same input finds the pages the first one read cached."""
    await ours[0]()
    await theirs[0]()
    wall: dict[str, list[float]] = {"ours": [], "theirs": []}
    cpu: dict[str, list[float]] = {"ours": [], "theirs": []}
    for i, pair in enumerate(zip(ours, theirs, strict=True)):
        sides = list(zip(("ours", "theirs"), pair, strict=True))
        for side, work in sides if i % 2 == 0 else sides[::-1]:
            started, started_cpu = time.perf_counter(), time.process_time()
            await work()
            wall[side].append((time.perf_counter() - started) * 1000)
            cpu[side].append((time.process_time() - started_cpu) * 1000)
    return _compared(wall, cpu)


def _compared(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> dict[str, object]:
    medians = {
        side: {
            "median_ms": round(statistics.median(wall[side]), 3),
            "cpu_median_ms": round(statistics.median(cpu[side]), 3),
            "p95_ms": _p95(wall[side]),
            "cpu_p95_ms": _p95(cpu[side]),
        }
        for side in wall
    }
    return {
        **medians,
        "speedup": round(medians["theirs"]["cpu_median_ms"] / medians["ours"]["cpu_median_ms"], 2),
        "speedup_wall": round(medians["theirs"]["median_ms"] / medians["ours"]["median_ms"], 2),
    }


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[max(0, int(round(len(ordered) * 0.95)) - 1)], 3)
