"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def measure(work: Callable[[], object], *, repeat: int = 15, warmup: int = 2) -> dict[str, float]:
    """Milliseconds per call: median, best and p90 over ``repeat`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        work()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 3),
        "best_ms": round(samples[0], 3),
        "p90_ms": round(samples[int(len(samples) * 0.9) - 1], 3),
    }
