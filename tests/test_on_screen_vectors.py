"""On-screen text in the vector index: semantic and hybrid search return ``kind: on_screen`` hits.

The real offline MiniLM model (``tests/embed_model.py``) embeds on every runtime's own index
(memory, sqlite-vec, the Vectorize stand-in beside Miniflare's D1); the local runtime reads a
deck drawn with ffmpeg (``tests/slides.py``) through Tesseract and embeds it at save. Assertions
are on which passage ranks first for words only a slide shows, never on scores.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from vid2context.api import create_app
from vid2context.models import VideoContext, VisualItem
from vid2context.runtime import Runtime, build_local_runtime
from vid2context.search.embedders.fastembed_local import FastEmbedder
from vid2context.search.embedders.rungs import ordered
from vid2context.search.engine import SearchRequest, search
from vid2context.search.indexing import index_video
from vid2context.search.windows import index_windows, is_on_screen, make_windows, on_screen_windows
from vid2context.storage.common import ON_SCREEN_IDX

from .runtimes import ON_EVERY_RUNTIME, Runtimes, serve
from .slides import SLIDES, draw_deck
from .test_visual import _talk_with_slides

pytestmark = pytest.mark.anyio

API = "/api/v1"


def talk_with_slides() -> VideoContext:
    """``test_visual``'s talk (two spoken segments, a slide at 0:02) with two stretches more: one
    with nothing read, and a slide that nobody speaks of."""
    return msgspec.structs.replace(
        _talk_with_slides(),
        visual=[
            VisualItem(start_sec=2.0, end_sec=9.0, kind="on_screen_text", text="Kickstand tilts\nbackwards"),
            VisualItem(start_sec=9.0, end_sec=12.0, kind="on_screen_text", text="   \n"),  # nothing read
            VisualItem(start_sec=12.0, end_sec=20.0, kind="on_screen_text", text="Quarterly Revenue Report"),
        ],
    )


def test_each_stretch_of_text_is_a_window_of_its_own() -> None:
    context = talk_with_slides()
    shown = on_screen_windows(context)
    assert [(w.first_segment, w.start_sec, w.end_sec, w.text) for w in shown] == [
        (ON_SCREEN_IDX, 2.0, 9.0, "Kickstand tilts / backwards"),
        (ON_SCREEN_IDX + 2, 12.0, 20.0, "Quarterly Revenue Report"),
    ]
    assert all(is_on_screen(w) for w in shown) and not any(is_on_screen(w) for w in make_windows(context))
    assert index_windows(context) == make_windows(context) + shown
    assert len({w.id for w in index_windows(context)}) == len(index_windows(context))
    long = VideoContext(
        id="youtube:LongSlide11", metadata=context.metadata, visual=[
            VisualItem(start_sec=0.0, end_sec=5.0, kind="on_screen_text", text="word " * 700)
        ],
    )  # fmt: skip
    parts = on_screen_windows(long)
    assert len(parts) >= 3 and all(w.words <= 300 and w.tokens <= 512 for w in parts)
    assert {w.first_segment for w in parts} == {ON_SCREEN_IDX}


@ON_EVERY_RUNTIME
async def test_semantic_and_hybrid_search_find_a_slide(runtimes: Runtimes, embed_model_dir: Path) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_EMBED_ON_SAVE": "0"})
    runtime.embed = ordered([FastEmbedder(folder=str(embed_model_dir), pooling="mean"), *runtime.embed])
    context = talk_with_slides()
    await runtime.storage.put_context(context)
    indexed = await index_video(runtime, context)
    assert indexed.outcome == "ok" and indexed.windows == len(index_windows(context)), indexed
    assert runtime.vectors is not None and indexed.space is not None
    held = await runtime.vectors.window_ids(indexed.space, context.id)
    assert held == sorted(w.id for w in index_windows(context))

    semantic = await search(runtime, SearchRequest(query="kickstand tilts", mode="vector"))
    top = semantic.hits[0]
    assert (top.kind, top.start_sec, top.text, top.sources) == (
        "on_screen", 2.0, "Kickstand tilts / backwards", ["vector"]
    ), semantic.hits  # fmt: skip
    assert semantic.meta.vector == "ok"
    spoken = await search(runtime, SearchRequest(query="battery charging", mode="vector"))
    assert spoken.hits[0].kind == "transcript"

    hybrid = await search(runtime, SearchRequest(query="kickstand", mode="hybrid"))
    shown = [h for h in hybrid.hits if h.kind == "on_screen" and h.start_sec == 2.0]
    assert len(shown) == 1 and shown[0] is hybrid.hits[0], hybrid.hits  # one passage, both sides
    assert shown[0].sources == ["keyword", "vector"]

    # The reading changed under the vectors (a stretch fewer): the stale window is skipped.
    await runtime.storage.put_context(
        VideoContext(id=context.id, metadata=context.metadata, transcript=context.transcript, visual=[])
    )
    stale = await search(runtime, SearchRequest(query="quarterly revenue report", mode="vector"))
    assert all(h.kind == "transcript" for h in stale.hits), stale.hits


@pytest.fixture
async def local(tmp_path: Path, embed_model_dir: Path) -> AsyncIterator[tuple[Runtime, Path]]:
    deck = draw_deck(tmp_path / "deck.mp4", SLIDES[:2], seconds=2)
    rt = build_local_runtime(
        {
            "VID2CONTEXT_HOME": str(tmp_path / "home"),
            "VID2CONTEXT_FILE_ROOTS": str(tmp_path),
            "VID2CONTEXT_ACCESS_LOG": "0",
            "VID2CONTEXT_RATE_LIMIT": "0",
            "VID2CONTEXT_EMBED_MODEL_DIR": str(embed_model_dir),
        }
    )
    try:
        yield rt, deck
    finally:
        await rt.aclose()


async def test_a_drawn_deck_read_with_mode_video_is_found_by_meaning(local: tuple[Runtime, Path]) -> None:
    runtime, deck = local
    async with serve(create_app(runtime)) as http:
        read = await http.get(f"{API}/context", params={"url": str(deck), "mode": "video"})
        assert read.status_code == 200, read.text
        assert ("embed", "ok") in [(a["stage"], a["outcome"]) for a in read.json()["attempts"]]
        found = await http.get(f"{API}/search", params={"q": "kickstand backwards", "mode": "vector"})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["meta"]["vector"] == "ok", body["meta"]
    top = body["hits"][0]
    assert top["kind"] == "on_screen" and top["sources"] == ["vector"] and 2 <= top["startSec"] < 3, body
