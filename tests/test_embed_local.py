"""The local rung for real: fastembed running the all-MiniLM-L6-v2 test model (``tests/embed_model.py``).

What the model's output proves is checked, not a recording of it: meaning decides the nearest
line (ARCHITECTURE: "how far does the stand tilt back" scores about 0.40 against the kickstand line
and below 0.14 against unrelated ones with mean pooling), vectors repeat within a tolerance, and
pooling changes them. Then the model's identity (which space its vectors belong to), the settings
that are refused at start-up, and a run with the network closed that downloads nothing.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.models import EmbeddingSpace
from vid2context.runtime import build_local_runtime
from vid2context.search.embedders.base import EmbedPlan, embed_batches
from vid2context.search.embedders.fastembed_local import DEFAULT_MODEL, FastEmbedder
from vid2context.search.embedders.ladder import embed_texts
from vid2context.settings import load_settings

pytestmark = pytest.mark.anyio

QUERY = "how far does the stand tilt back"
ANSWER = "the kickstand bends to one hundred sixty five degrees"
UNRELATED = [
    "we ordered pizza after the keynote",
    "the battery lasts ten hours on a charge",
    "subscribe to the channel for more videos",
    "she moved to Lisbon in the spring",
]


def dot(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


async def vectors(rung: FastEmbedder, texts: list[str]) -> list[list[float]]:
    return (await embed_batches(rung, texts, Ctx(timeout=60), EmbedPlan())).vectors


async def test_meaning_decides_the_nearest_line(embed_model_dir: Path) -> None:
    rung = FastEmbedder(folder=str(embed_model_dir), pooling="mean")
    query, answer, *others = await vectors(rung, [QUERY, ANSWER, *UNRELATED])
    near = dot(query, answer)
    far = [dot(query, other) for other in others]
    assert near > 0.3 and max(far) < 0.2, (near, far)
    assert near > max(far) + 0.15


async def test_a_window_of_250_words_finds_its_topic(embed_model_dir: Path) -> None:
    rung = FastEmbedder(folder=str(embed_model_dir), pooling="mean")
    bikes = " ".join(["the folding bike has a kickstand and a chain and gears"] * 25)  # 250 words
    cooking = " ".join(["simmer the onions slowly then add garlic and tomatoes to the pan"] * 21)
    query, *windows = await vectors(rung, ["repairing a bicycle chain", bikes, cooking])
    assert dot(query, windows[0]) > dot(query, windows[1]) + 0.1


async def test_vectors_repeat_within_a_tolerance_whatever_the_batch(embed_model_dir: Path) -> None:
    rung = FastEmbedder(folder=str(embed_model_dir), pooling="mean", max_batch=4)
    texts = [f"{line} ({i})" for i, line in enumerate([QUERY, ANSWER, *UNRELATED] * 2)]
    batched = await vectors(rung, texts)  # three batches, padded to their longest text
    for text, vector in zip(texts, batched, strict=True):
        (alone,) = await vectors(rung, [text])
        assert max(abs(x - y) for x, y in zip(alone, vector, strict=True)) < 1e-4


async def test_pooling_is_part_of_the_space(embed_model_dir: Path) -> None:
    mean = FastEmbedder(folder=str(embed_model_dir), pooling="mean")
    cls = FastEmbedder(folder=str(embed_model_dir), pooling="cls")
    assert mean.model_id == cls.model_id and mean.pooling != cls.pooling
    one = await embed_batches(mean, [ANSWER], Ctx(timeout=60), EmbedPlan())
    other = await embed_batches(cls, [ANSWER], Ctx(timeout=60), EmbedPlan())
    assert one.space != other.space and one.space.key != other.space.key
    assert dot(one.vectors[0], other.vectors[0]) < 0.99  # different vectors, not the same ones renamed


def test_a_folder_is_named_by_its_files(embed_model_dir: Path, tmp_path: Path) -> None:
    here = FastEmbedder(folder=str(embed_model_dir), pooling="mean")
    assert here.model_id.startswith("local:") and len(here.model_id) == len("local:") + 16
    assert here.dim == 384 and here.id == f"embed/fastembed/{embed_model_dir.name}"
    copy = tmp_path / "elsewhere"
    shutil.copytree(embed_model_dir, copy)
    assert FastEmbedder(folder=str(copy), pooling="mean").model_id == here.model_id  # same files, same space
    tokenizer = json.loads((copy / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["truncation"] = {
        "direction": "Right",
        "max_length": 128,
        "strategy": "LongestFirst",
        "stride": 0,
    }
    (copy / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    assert FastEmbedder(folder=str(copy), pooling="mean").model_id != here.model_id
    named = FastEmbedder(
        model="sentence-transformers/all-MiniLM-L6-v2", folder=str(embed_model_dir), pooling="mean"
    )
    assert named.model_id == "sentence-transformers/all-MiniLM-L6-v2"  # naming it is a promise


def test_a_folder_pooling_comes_from_the_setting_its_export_or_cls(
    embed_model_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "st-export"
    shutil.copytree(embed_model_dir, folder)
    assert FastEmbedder(folder=str(folder)).pooling == "cls"
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "word_embedding_dimension": 384,
                "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True,
            }
        )
    )
    assert FastEmbedder(folder=str(folder)).pooling == "mean"
    assert FastEmbedder(folder=str(folder), pooling="cls").pooling == "cls"


def test_the_default_model_is_workers_ai_s_without_loading_anything() -> None:
    rung = FastEmbedder()
    assert rung.model == DEFAULT_MODEL == "BAAI/bge-small-en-v1.5"
    assert (rung.model_id, rung.dim, rung.pooling, rung.tier) == (DEFAULT_MODEL, 384, "cls", "local")
    assert rung._loaded is None


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        ({"VID2CONTEXT_EMBED_MODEL_DIR": "{tmp}/nowhere"}, ["VID2CONTEXT_EMBED_MODEL_DIR", "does not exist"]),
        ({"VID2CONTEXT_EMBED_MODEL_DIR": "{tmp}/half"}, ["VID2CONTEXT_EMBED_MODEL_DIR", "tokenizer.json"]),
        ({"VID2CONTEXT_EMBED_POOLING": "mean"}, ["VID2CONTEXT_EMBED_POOLING", "cls"]),
        ({"VID2CONTEXT_EMBED_POOLING": "max"}, ["VID2CONTEXT_EMBED_POOLING", "cls or mean"]),
        ({"VID2CONTEXT_EMBED_DIM": "1"}, ["VID2CONTEXT_EMBED_DIM", "2 to 8192"]),
    ],
    ids=["missing-folder", "half-folder", "pooling-against-the-model", "unknown-pooling", "dim"],
)
def test_wrong_settings_stop_start_up_naming_the_variable(
    tmp_path: Path, embed_model_dir: Path, environ: dict[str, str], words: list[str]
) -> None:
    half = tmp_path / "half"
    half.mkdir()
    shutil.copyfile(embed_model_dir / "model.onnx", half / "model.onnx")
    given = {name: value.format(tmp=tmp_path) for name, value in environ.items()}
    with pytest.raises(VidError) as caught:
        build_local_runtime({"VID2CONTEXT_HOME": str(tmp_path / "home"), **given})
    error = caught.value
    assert error.code is ErrorCode.BAD_REQUEST and error.hint
    for word in words:
        assert word in error.message + " " + error.hint


def test_pooling_setting_is_read_without_case() -> None:
    assert load_settings({"VID2CONTEXT_EMBED_POOLING": " MEAN "}).embed_pooling == "mean"
    assert load_settings({}).embed_pooling is None


async def test_the_local_runtime_puts_the_local_model_first(embed_model_dir: Path, tmp_path: Path) -> None:
    runtime = build_local_runtime(
        {
            "VID2CONTEXT_HOME": str(tmp_path),
            "VID2CONTEXT_EMBED_MODEL_DIR": str(embed_model_dir),
            "VID2CONTEXT_EMBED_POOLING": "mean",
            "CLOUDFLARE_ACCOUNT_ID": "acct",
            "CLOUDFLARE_API_TOKEN": "token",
        }
    )
    try:
        assert [rung.service for rung in runtime.embed] == ["fastembed", "cloudflare", "openai"]
        attempts: list = []
        made = await embed_texts(runtime, [QUERY, ANSWER], attempts=attempts)
        assert made.producer == runtime.embed[0].id
        assert made.space == EmbeddingSpace(model=runtime.embed[0].model_id, dim=384, pooling="mean")
        assert [(a.id, a.outcome, a.reason) for a in attempts] == [
            ("embed/openai/text-embedding-3-small", "skipped", "missing-key"),  # not set up
            (made.producer, "ok", None),
        ]
    finally:
        await runtime.aclose()


OFFLINE_RUN = """
import asyncio, json, socket, sys

def refuse(*args, **kwargs):
    raise OSError("the network is closed in this test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse

from vid2context.runtime import build_local_runtime
from vid2context.search.embedders.ladder import embed_texts

async def main():
    runtime = build_local_runtime()
    try:
        made = await embed_texts(runtime, ["how far does the stand tilt back"])
    finally:
        await runtime.aclose()
    print(json.dumps({"producer": made.producer, "dim": len(made.vectors[0])}))

asyncio.run(main())
"""


def test_a_model_folder_needs_no_network_and_downloads_nothing(embed_model_dir: Path, tmp_path: Path) -> None:
    """In a fresh process with every connection refused and the hub offline: the folder loads,
    and no cache (the hub's, fastembed's, ours) gains a file."""
    caches = {name: tmp_path / name for name in ("hf", "fastembed", "home")}
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("VID2CONTEXT_", "HF_", "FASTEMBED_", "CLOUDFLARE_"))
    }
    env.update(
        HF_HUB_OFFLINE="1",
        HF_HOME=str(caches["hf"]),
        FASTEMBED_CACHE_PATH=str(caches["fastembed"]),
        VID2CONTEXT_HOME=str(caches["home"]),
        VID2CONTEXT_EMBED_MODEL_DIR=str(embed_model_dir),
        VID2CONTEXT_EMBED_POOLING="mean",
    )
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_RUN], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"producer": f"embed/fastembed/{embed_model_dir.name}", "dim": 384}
    for name in ("hf", "fastembed"):
        assert not caches[name].exists() or not any(caches[name].rglob("*")), name
    assert not (caches["home"] / "models").exists() or not any((caches["home"] / "models").rglob("*"))
