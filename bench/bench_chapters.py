"""Chapter generation for a three-hour transcript, without and with an embedder.

The talk is ``tests/talks.three_hour_talk`` (180 minutes at about 150 words a minute, 2,700-odd
segments) with its chapters taken away, saved in a memory library. What is timed is the whole of
``POST /api/v1/chapters`` below the HTTP layer, ``autochapters.make_chapters`` with ``force``:
the library read, the tiles, the gap similarities, the cuts, the key-phrase titles and the save.

- ``lexical``: no embedding rung, so the cuts measure shared words;
- ``embeddings``: the offline MiniLM test model (``tests/embed_model.py``, int8 ONNX through
  fastembed) embeds every tile; set ``BENCH_CHAPTERS_EMBED=0`` to leave this side out.

The reference, measured in the same run, is what the same video already costs when it is saved
with that embedder: its search windows (about 250 words each) embedded. ``ratio_to_indexing`` is
the chapters' CPU time over that, so the figure survives a loaded machine; ``load_average`` is the
machine's one-minute load when the run began.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.talks import three_hour_talk  # noqa: E402 - the tests' synthetic talks

from vid2context.autochapters import ChaptersRequest, make_chapters  # noqa: E402
from vid2context.autochapters.texttiling import tiles_of  # noqa: E402
from vid2context.runtime import build_runtime  # noqa: E402
from vid2context.search.embedders.ladder import embed_texts  # noqa: E402
from vid2context.search.windows import make_windows  # noqa: E402
from vid2context.settings import load_settings  # noqa: E402

from .timing import measure  # noqa: E402

MINUTES = 180


def _talk() -> Any:
    talk = three_hour_talk("BenchChap01", minutes=MINUTES)
    return msgspec.structs.replace(talk, metadata=msgspec.structs.replace(talk.metadata, chapters=[]))


def _embedder() -> Any:
    from tests.embed_model import model_dir

    from vid2context.search.embedders.fastembed_local import FastEmbedder

    return FastEmbedder(folder=str(model_dir()), pooling="mean")


def run() -> dict[str, object]:
    loop = asyncio.new_event_loop()
    try:
        return _run(loop)
    finally:
        loop.close()


def _run(loop: asyncio.AbstractEventLoop) -> dict[str, object]:
    load = round(os.getloadavg()[0], 2)
    talk = _talk()
    runtime = build_runtime(load_settings({"VID2CONTEXT_ACCESS_LOG": "0"}))
    runtime.embed = []
    loop.run_until_complete(runtime.storage.put_context(talk))
    request = ChaptersRequest(url=talk.id, force=True)
    last: dict[str, Any] = {}

    def chapters() -> None:
        last["result"] = loop.run_until_complete(make_chapters(runtime, request))

    figures: dict[str, object] = {
        "load_average": load,
        "minutes": MINUTES,
        "segments": len(talk.transcript.segments),
        "words": sum(len(s.text.split()) for s in talk.transcript.segments),
        "tiles": len(tiles_of(talk)),
    }
    figures["lexical"] = {**measure(chapters, repeat=9, warmup=2), "chapters": len(last["result"].chapters)}
    if os.environ.get("BENCH_CHAPTERS_EMBED", "1") == "0":
        return figures
    try:
        rung = _embedder()
    except FileNotFoundError as missing:  # the dev extra's model packages are not installed
        figures["embeddings"] = {"skipped": str(missing)}
        return figures
    runtime.embed = [rung]
    windows = [w.text for w in make_windows(talk)]

    def index() -> None:
        loop.run_until_complete(embed_texts(runtime, windows))

    embedded = {**measure(chapters, repeat=3, warmup=1), "chapters": len(last["result"].chapters)}
    embedded["method"] = last["result"].method
    reference = {**measure(index, repeat=3, warmup=0), "windows": len(windows)}
    embedded["ratio_to_indexing"] = round(embedded["cpu_median_ms"] / reference["cpu_median_ms"], 2)
    figures["embeddings"] = embedded
    figures["reference_index_embed"] = reference
    loop.run_until_complete(runtime.aclose())
    return figures
