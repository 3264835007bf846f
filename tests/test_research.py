"""``POST /api/v1/research`` and ``research_videos``: ranked excerpts per video, with context.

Two talks built in the tests (``talks.py``): the bike review says "kickstand" only in its fifth
chapter, the sourdough talk never. Both are saved before the call (as a read would save them), so
the excerpts can be checked against the very segments. The vector side runs over the labelled
talks indexed with the offline MiniLM model, where "how far does the stand tilt" shares no word
with the kickstand's passage. Bad input goes through both skins from one table.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from mcp.client import Client

from vid2context.answers.research import ResearchRequest, check_research, in_library, rank_excerpts
from vid2context.api import create_app
from vid2context.ctx import Ctx
from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.mcp.tools.research import RESEARCH_COSTS
from vid2context.models import Attempt
from vid2context.runtime import Runtime
from vid2context.search.indexing import index_video
from vid2context.tokens import estimate_tokens

from .hint_steps import problems, surfaces
from .pages import text_of
from .retrieval_set import talks
from .runtimes import ON_EVERY_RUNTIME, Runtimes, serve
from .talks import BIKE, BIKE_TOPICS, BREAD, bike_review, sourdough
from .test_indexing import QUIET, model_runtime
from .youtube_replay import httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

NO_CAPTIONS = "dsMFmonKDD4"  # recorded: captions disabled


async def saved(runtimes: Runtimes) -> Runtime:
    runtime = await runtimes.build(QUIET)
    for talk in (bike_review(), sourdough()):
        await runtime.storage.put_context(talk)
    return runtime


def kickstand_chapter() -> tuple[float, float]:
    chapters = bike_review().metadata.chapters
    index = [name for name, _ in BIKE_TOPICS].index("The kickstand")
    return chapters[index].start_sec, chapters[index + 1].start_sec


@ON_EVERY_RUNTIME
async def test_excerpts_are_ranked_per_video_with_their_context_and_links(runtimes: Runtimes) -> None:
    runtime = await saved(runtimes)
    body = {"urls": [BIKE, BREAD], "query": "kickstand", "maxExcerpts": 3, "contextSec": 10}
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/research", json=body)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    bike, bread = found["results"]
    assert (bike["videoId"], bread["videoId"]) == (f"youtube:{BIKE}", f"youtube:{BREAD}")
    assert bread["excerpts"] == [] and found["failed"] == []
    assert 1 <= len(bike["excerpts"]) <= 3
    segments = bike_review().transcript.segments  # type: ignore[union-attr]
    low, high = kickstand_chapter()
    for excerpt in bike["excerpts"]:
        segment = next(s for s in segments if s.start_sec == excerpt["startSec"])  # a real segment
        assert excerpt["text"] == segment.text and "kickstand" in segment.text.lower()
        assert low <= excerpt["startSec"] < high
        assert excerpt["url"] == f"https://www.youtube.com/watch?v={BIKE}&t={int(excerpt['startSec'])}s"
        around = [
            s.text
            for s in segments
            if s.end_sec > excerpt["startSec"] - 10 and s.start_sec < excerpt["endSec"] + 10
        ]
        assert excerpt["context"] == " ".join(around)  # whole segments, 10 s each side
        assert (
            excerpt["contextStartSec"] <= excerpt["startSec"]
            and excerpt["contextEndSec"] >= excerpt["endSec"]
        )
    starts = [e["startSec"] for e in bike["excerpts"]]
    for i, excerpt in enumerate(bike["excerpts"]):
        for other in bike["excerpts"][:i]:  # no excerpt inside an earlier one's context
            assert not other["contextStartSec"] <= excerpt["startSec"] <= other["contextEndSec"]
    assert len(set(starts)) == len(starts)
    assert found["meta"]["sides"] == ["keyword"] and found["meta"]["vector"] in ("off", "disabled")


@ON_EVERY_RUNTIME
async def test_the_tool_is_the_routes_core_fenced_with_a_status_line(runtimes: Runtimes) -> None:
    runtime = await saved(runtimes)
    body = {"urls": [BIKE, BREAD], "query": "kickstand", "maxExcerpts": 2, "contextSec": 5}
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        rest = (await http.post("/api/v1/research", json=body)).json()
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("research_videos", body)
    assert not result.is_error
    text = text_of(result)
    (fenced,) = unfence(text)
    assert text.count("=== BEGIN UNTRUSTED VIDEO TEXT [") == 1 and "] research excerpts (" in text
    for excerpt in rest["results"][0]["excerpts"]:
        assert excerpt["url"] in fenced and excerpt["text"] in fenced
    assert "## Sourdough at home (youtube:Sourdough01)\n(no passage matches)" in fenced
    status = text.splitlines()[-1]
    assert status.startswith("Research: 2 excerpts in 2 videos (ran keyword; vector search ")
    assert "get_section" in status


async def test_no_saved_library_is_needed_and_a_failed_video_is_listed(
    runtimes: Runtimes, httpx_mock: Any
) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    runtime = await runtimes.build(QUIET)
    assert await runtime.storage.count_videos() == 0
    body = {"urls": ["GJLlxj_dtq8", NO_CAPTIONS], "query": "original transcript"}
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/research", json=body)
        alone = await http.post("/api/v1/research", json={"urls": [NO_CAPTIONS], "query": "test"})
    assert answer.status_code == 200, answer.text
    (video,) = answer.json()["results"]
    assert [e["text"] for e in video["excerpts"]] == ["this is not the original transcript"]
    (failed,) = answer.json()["failed"]
    assert (failed["input"], failed["code"]) == (NO_CAPTIONS, "no-transcript") and failed["hint"]
    assert alone.status_code == 422 and alone.json()["error"]["code"] == "no-transcript"


async def test_the_vector_side_finds_a_passage_in_other_words(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await model_runtime(runtimes, embed_model_dir)
    for talk in talks():
        await runtime.storage.put_context(talk)
        await index_video(runtime, talk)
    body = {"urls": ["EbikeTalk01", "SourdoughT1"], "query": "how far does the stand tilt", "maxExcerpts": 3}
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/research", json=body)
    found = answer.json()
    assert answer.status_code == 200 and found["meta"]["sides"] == ["keyword", "vector"]
    assert found["meta"]["vector"] == "ok"
    bike = found["results"][0]["excerpts"]
    assert "vector" in bike[0]["sources"]
    assert any("kickstand" in e["context"] for e in bike)


async def test_what_a_result_costs_is_what_the_description_states(runtimes: Runtimes) -> None:
    runtime = await saved(runtimes)
    texts, counts = [], []
    async with Client(create_mcp(runtime)) as client:
        for most in (1, 6):  # "noticed" is said all through the bike review: every excerpt is used
            result = await client.call_tool(
                "research_videos", {"urls": [BIKE], "query": "noticed", "maxExcerpts": most}
            )
            texts.append(text_of(result))
            counts.append(len(re.findall(r"^\d+\. \[", unfence(texts[-1])[0], flags=re.M)))
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert counts == [1, 6]
    per_excerpt = (estimate_tokens(texts[1]) - estimate_tokens(texts[0])) / (counts[1] - counts[0])
    base = estimate_tokens(texts[0]) - per_excerpt
    stated = RESEARCH_COSTS["research_per_excerpt"]
    assert abs(per_excerpt - stated) <= 0.3 * stated, per_excerpt
    assert abs(base - RESEARCH_COSTS["research_base"]) <= 0.3 * RESEARCH_COSTS["research_base"], base
    assert f"{stated} per excerpt" in (tools["research_videos"].description or "")


# --- bad input, on both skins --------------------------------------------------------------------------

BAD: list[tuple[str, dict[str, Any], str]] = [
    ("no urls", {"urls": [], "query": "kickstand"}, "bad-request"),
    ("blank urls", {"urls": ["  "], "query": "kickstand"}, "bad-request"),
    ("eleven urls", {"urls": [f"vid{i:08d}" for i in range(11)], "query": "kickstand"}, "too-large"),
    ("empty query", {"urls": [BIKE], "query": ""}, "bad-request"),
    ("operators only", {"urls": [BIKE], "query": "-kickstand"}, "bad-request"),
    ("100 kB query", {"urls": [BIKE], "query": "kickstand " * 10_000}, "bad-request"),
    ("negative context", {"urls": [BIKE], "query": "kickstand", "contextSec": -1}, "bad-request"),
    ("too much context", {"urls": [BIKE], "query": "kickstand", "contextSec": 301}, "bad-request"),
    ("no excerpts", {"urls": [BIKE], "query": "kickstand", "maxExcerpts": 0}, "bad-request"),
    ("too many excerpts", {"urls": [BIKE], "query": "kickstand", "maxExcerpts": 21}, "bad-request"),
    (
        "a url that is no video",
        {"urls": ["'; DROP TABLE videos; --"], "query": "kickstand"},
        "unsupported-input",
    ),
    ("a very long url", {"urls": ["x" * 5000], "query": "kickstand"}, "bad-request"),
]


@pytest.mark.parametrize(("case", "body", "code"), BAD, ids=[case for case, _, _ in BAD])
async def test_bad_input_is_the_contracts_code_with_a_hint(
    runtimes: Runtimes, case: str, body: dict[str, Any], code: str
) -> None:
    runtime = await saved(runtimes)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/research", json=body)
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("research_videos", body)
    error = answer.json()["error"]
    assert answer.status_code == {"bad-request": 400, "too-large": 413, "unsupported-input": 400}[code], case
    assert error["code"] == code and error["hint"], case
    assert problems(error["hint"], surfaces()["rest"], code=code) == []
    assert result.is_error, case
    tool = msgspec.json.decode(result.content[0].text)
    assert tool["error"] in (code, "bad-request") and tool["hint"], case  # the schema may refuse first
    assert "Traceback" not in answer.text and "Traceback" not in result.content[0].text


@pytest.mark.parametrize(
    "body",
    [
        {"query": "kickstand"},
        {"urls": [BIKE]},
        {"urls": BIKE, "query": "kickstand"},
        {"urls": [BIKE], "query": "kickstand", "maxExcerpts": "5"},
        {"urls": [BIKE], "query": "kickstand", "contextSec": True},
        {"urls": [BIKE], "query": "kickstand", "extra": 1},
    ],
)
async def test_a_malformed_body_is_a_bad_request(runtimes: Runtimes, body: dict[str, Any]) -> None:
    runtime = await saved(runtimes)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/research", json=body)
        broken = await http.post(
            "/api/v1/research", content=b"{not json", headers={"content-type": "application/json"}
        )
    for reply in (answer, broken):
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad-request"
        assert reply.json()["error"]["hint"]


async def test_hostile_queries_are_searched_as_words(runtimes: Runtimes) -> None:
    runtime = await saved(runtimes)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        for query in (
            'kickstand" OR 1=1 --',
            "NEAR(kickstand stand)",
            "kickstand* ^stand",
            "<script>kickstand",
        ):
            answer = await http.post("/api/v1/research", json={"urls": [BIKE], "query": query})
            assert answer.status_code in (200, 400), query
            assert "fts5" not in answer.text.lower() and "sqlite" not in answer.text.lower(), query


@ON_EVERY_RUNTIME
async def test_a_video_not_in_the_library_is_ranked_alike_in_the_requests_own_index(
    runtimes: Runtimes,
) -> None:
    runtime = await runtimes.build(QUIET)  # nothing saved
    talk = bike_review()
    checked = check_research(ResearchRequest(urls=[BIKE], query="kickstand", context_sec=5, max_excerpts=4))
    assert not in_library(talk)  # as an upload, or a read whose save failed
    alone, _ = await rank_excerpts(runtime, [talk], checked, Ctx())
    await runtime.storage.put_context(talk)
    cached = msgspec.structs.replace(
        talk, attempts=[Attempt(id=runtime.storage.id, stage="cache", outcome="ok")]
    )
    assert in_library(cached)
    saved, _ = await rank_excerpts(runtime, [cached], checked, Ctx())
    assert len(alone[0].excerpts) == 3 and alone == saved  # every kickstand, 5 s of context apart


async def test_a_read_key_may_research(runtimes: Runtimes) -> None:
    key = "reader-key-1"
    hashed = f"reader:read:{hashlib.sha256(key.encode()).hexdigest()}"
    runtime = await runtimes.build({**QUIET, "VID2CONTEXT_API_KEYS": hashed})
    await runtime.storage.put_context(bike_review())
    body = {"urls": [BIKE], "query": "kickstand"}
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        allowed = await http.post("/api/v1/research", json=body, headers={"Authorization": f"Bearer {key}"})
        anonymous = await http.post("/api/v1/research", json=body)
    assert allowed.status_code == 200 and allowed.json()["results"][0]["excerpts"]
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "unauthorized"
