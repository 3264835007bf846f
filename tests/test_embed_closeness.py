"""How close local bge-small-en-v1.5 is to Workers AI's: the premise of one space on both sides.

``BAAI/bge-small-en-v1.5`` with CLS pooling is one ``EmbeddingSpace`` whether fastembed runs it on
a laptop or Workers AI runs it on the edge (``@cf/baai/bge-small-en-v1.5`` with ``pooling: "cls"``),
so a library indexed on one side is searched from the other. This test measures that premise on
recorded Workers AI vectors: each local vector must point where Workers AI's does (cosine above
``MIN_COSINE``: fastembed's bge-small is an int8 export, so near, not equal), and every sentence's
pair of sentences must be about as similar on both sides, with the same nearest neighbour.

It needs two things this machine cannot fetch (neither Workers AI nor the Hugging Face hub is
reachable from here, and no registry package ships bge-small's weights), so it skips, saying which
is missing, until both are there:

1. The recording, ``tests/fixtures/embeddings/workers-ai-bge-small-en-v1.5.json``: Workers AI's REST
   answer for ``SENTENCES``, made with one request (the body printed by this module)::

       .venv/bin/python -m tests.test_embed_closeness | curl -s -X POST \\
         "https://api.cloudflare.com/client/v4/accounts/$CLOUDFLARE_ACCOUNT_ID/ai/run/@cf/baai/bge-small-en-v1.5" \\
         -H "Authorization: Bearer $CLOUDFLARE_API_TOKEN" -H "Content-Type: application/json" \\
         --data-binary @- > tests/fixtures/embeddings/workers-ai-bge-small-en-v1.5.json

2. Local bge-small-en-v1.5: a model folder (``model.onnx`` and its tokenizer files, as
   ``VID2CONTEXT_EMBED_MODEL_DIR`` takes) named by ``VID2CONTEXT_TEST_BGE_DIR``, or fastembed's own
   copy in ``$VID2CONTEXT_TEST_FASTEMBED_CACHE`` (a ``cache_dir`` where ``BAAI/bge-small-en-v1.5``
   was downloaded once); it is loaded with the hub offline.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from vid2context.ctx import Ctx
from vid2context.search.embedders.base import EmbedPlan, embed_batches
from vid2context.search.embedders.fastembed_local import FastEmbedder

pytestmark = pytest.mark.anyio

RECORDING = Path(__file__).resolve().parent / "fixtures" / "embeddings" / "workers-ai-bge-small-en-v1.5.json"
MIN_COSINE = 0.98
SENTENCES = [
    "how far does the stand tilt back",
    "the kickstand bends to one hundred sixty five degrees",
    "the laptop's hinge opens all the way flat",
    "we ordered pizza after the keynote",
    "the battery lasts about ten hours on a charge",
    "subscribe to the channel for more reviews",
    "Paris is the capital of France",
    "she moved to Lisbon in the spring of 2019",
    "gradient descent lowers the loss step by step",
    "the referee showed him a red card in the second half",
]


def dot(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(dot(vector, vector))
    return [x / norm for x in vector]


def recorded() -> list[list[float]]:
    if not RECORDING.is_file():
        pytest.skip(
            f"no recorded Workers AI vectors at {RECORDING.relative_to(RECORDING.parents[2])} (see docstring)"
        )
    answer = json.loads(RECORDING.read_text(encoding="utf-8"))
    assert answer.get("success") is True, "the recording is an error answer: record it again"
    result = answer["result"]
    assert result["shape"] == [len(SENTENCES), 384], "recorded for other sentences: record it again"
    assert result.get("pooling", "cls") == "cls", "recorded with mean pooling: record it again with cls"
    return [unit(row) for row in result["data"]]


def local_model() -> FastEmbedder:
    folder = os.environ.get("VID2CONTEXT_TEST_BGE_DIR")
    cache = os.environ.get("VID2CONTEXT_TEST_FASTEMBED_CACHE")
    if folder:
        return FastEmbedder(model="BAAI/bge-small-en-v1.5", folder=folder, pooling="cls")
    if cache:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return FastEmbedder(cache_dir=cache)
    pytest.skip(
        "no local bge-small-en-v1.5: set VID2CONTEXT_TEST_BGE_DIR or VID2CONTEXT_TEST_FASTEMBED_CACHE"
    )


def neighbours(vectors: list[list[float]], i: int) -> list[int]:
    others = [j for j in range(len(vectors)) if j != i]
    return sorted(others, key=lambda j: -dot(vectors[i], vectors[j]))


async def test_local_bge_small_points_where_workers_ai_does() -> None:
    edge = recorded()
    rung = local_model()
    assert (rung.model_id, rung.dim, rung.pooling) == ("BAAI/bge-small-en-v1.5", 384, "cls")
    local = (await embed_batches(rung, SENTENCES, Ctx(timeout=120), EmbedPlan())).vectors
    closeness = [dot(a, b) for a, b in zip(local, edge, strict=True)]
    assert min(closeness) > MIN_COSINE, [round(c, 4) for c in closeness]
    # Search ranks alike on both sides: every pair of sentences is about as similar, and each
    # sentence's nearest neighbour is the same one.
    for i in range(len(SENTENCES)):
        for j in range(len(SENTENCES)):
            assert abs(dot(local[i], local[j]) - dot(edge[i], edge[j])) < 0.05, (SENTENCES[i], SENTENCES[j])
        assert neighbours(local, i)[0] == neighbours(edge, i)[0], SENTENCES[i]


def main() -> None:
    """Print the request body that records ``RECORDING`` (see the module docstring)."""
    print(json.dumps({"text": SENTENCES, "pooling": "cls"}))


if __name__ == "__main__":
    main()
