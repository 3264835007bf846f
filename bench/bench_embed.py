"""Local embedding throughput: texts a second through the fastembed rung, on the offline test model.

The model is all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions, mean pooling) assembled by
``tests/embed_model.py`` from the dev extra's two packages; nothing is downloaded. Two kinds of
text, both made here from a fixed seed:

- ``windows``: transcript windows of about 250 words (what search indexes; about 330 tokens each);
- ``sentences``: short lines of 8 to 14 words (what a search query looks like).

Each goes through ``embed_batches`` (the runner every rung is called through: batches of the rung's
``max_batch``, each in a worker thread, every vector checked and scaled to unit length in Python),
and, as the reference measured in the same run, through fastembed's ``TextEmbedding.embed``
directly with the same batch size. Figures: texts per second (wall) and CPU seconds per text for
both (best of three alternating runs), and our overhead as the ratio of the two wall times (goal:
at most 1.1). ONNX Runtime uses every core, so the CPU figure is the one to compare across machines.

``BENCH_EMBED_WINDOWS`` (default 64) and ``BENCH_EMBED_SENTENCES`` (default 512) change the run.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.embed_model import model_dir

from vid2context.ctx import Ctx
from vid2context.search.embedders.base import EmbedPlan, embed_batches
from vid2context.search.embedders.fastembed_local import FastEmbedder

WORDS = (
    "the a of and to in that it is was for on with as this at by from they we you he she bike stand "
    "battery hinge screen keyboard camera lens video talk speaker slide chapter question answer model "
    "data training loss gradient network layer token window search index vector query result citation "
    "minute second hour price review build design metal plastic fold open close tilt angle degree "
    "charge power port cable speed test score benchmark light heavy small large quick slow simple"
).split()


REPEAT = 3
"""Timed runs of each side; the best wall time of each is reported (the machine is shared)."""


def _texts(count: int, low: int, high: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) for _ in range(count)]


def _timed(work: Any) -> tuple[float, float]:
    started, started_cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - started, time.process_time() - started_cpu


def _figures(texts: list[str], rung: FastEmbedder, raw: Any) -> dict[str, float]:
    def ours() -> None:
        asyncio.run(embed_batches(rung, texts, Ctx(timeout=3600), EmbedPlan()))

    def reference() -> None:
        for start in range(0, len(texts), rung.max_batch):
            batch = texts[start : start + rung.max_batch]
            list(raw.embed(batch, batch_size=len(batch)))

    ours()  # warm up: the model is loaded and its first batches run
    reference()
    runs = [(_timed(ours), _timed(reference)) for _ in range(REPEAT)]  # alternating: load hits both
    (wall, cpu), _ = min(runs, key=lambda pair: pair[0][0])
    _, (ref_wall, ref_cpu) = min(runs, key=lambda pair: pair[1][0])
    return {
        "texts": len(texts),
        "texts_per_s": round(len(texts) / wall, 1),
        "cpu_ms_per_text": round(cpu * 1000 / len(texts), 2),
        "reference_texts_per_s": round(len(texts) / ref_wall, 1),
        "reference_cpu_ms_per_text": round(ref_cpu * 1000 / len(texts), 2),
        "overhead_ratio": round(wall / ref_wall, 3),
    }


def run() -> dict[str, Any]:
    folder = model_dir()
    rung = FastEmbedder(folder=str(folder), pooling="mean")
    raw = rung._load()  # the same fastembed TextEmbedding the rung runs, for the reference
    windows = _texts(int(os.environ.get("BENCH_EMBED_WINDOWS", "64")), 240, 260, seed=1)
    sentences = _texts(int(os.environ.get("BENCH_EMBED_SENTENCES", "512")), 8, 14, seed=2)
    return {
        "model": "all-MiniLM-L6-v2 int8 (tests/embed_model.py), mean pooling",
        "batch": rung.max_batch,
        "cores": os.cpu_count(),
        "windows_250_words": _figures(windows, rung, raw),
        "sentences": _figures(sentences, rung, raw),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
