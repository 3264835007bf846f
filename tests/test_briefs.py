"""Briefs and extraction: ``POST /api/v1/briefs`` and ``/extract`` as jobs, on every runtime.

Two short reviews of one kickstand are saved in the library (``youtube:KickstandA1`` and
``youtube:KickstandB2``), each with sentences said only in it. The stand-in model
(``tests/fake_llm.py``, a real server on 127.0.0.1 speaking the OpenAI-compatible protocol) reads
the numbered sources of its prompt and answers with scripted JSON that cites them: right numbers,
numbers that match no source, consensus from one video, answers that do not match the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from vid2context.api import create_app
from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.runtime import Runtime

from .fake_llm import FakeLlm, Request
from .runtimes import ON_EVERY_RUNTIME, Runtimes

pytestmark = [pytest.mark.anyio]

A, B, BARE = "KickstandA1", "KickstandB2", "NoWordsCC03"
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
_LABEL = re.compile(r"^\[(\d+)\] (.+?) @ (\d+:\d\d)", re.MULTILINE)

A_LINES = [
    "Welcome back to the channel, today the folding bike again.",
    "The kickstand bends back to one hundred sixty five degrees before it stops.",
    "The price was four hundred ninety nine dollars in March.",
    "Overall the frame feels solid for the money.",
]
B_LINES = [
    "Hello everyone, a quick update on my commuter.",
    "My kickstand snapped after a month of daily use.",
    "The frame feels solid and the hinge never rattled.",
    "I would still like to know whether the new stand fixes it.",
]


def talk(native: str, title: str, lines: list[str]) -> VideoContext:
    segments = [
        Segment(start_sec=i * 10.0, end_sec=i * 10.0 + 9.5, text=text) for i, text in enumerate(lines)
    ]
    return VideoContext(
        id=f"youtube:{native}",
        metadata=VideoMetadata(
            id=native,
            platform="youtube",
            title=title,
            url=f"https://www.youtube.com/watch?v={native}",
            duration_sec=len(lines) * 10.0,
        ),
        transcript=Transcript(
            language="en", origin="captions-manual", timing="caption", producer="test", segments=segments
        ),
        fetched_at="2026-11-01T00:00:00Z",
    )


def sources_of(request: Request) -> dict[str, list[int]]:
    """The source numbers of the prompt, by video title."""
    system = next(m["content"] for m in request.messages if m.get("role") == "system")
    found: dict[str, list[int]] = {}
    for match in _LABEL.finditer(system):
        found.setdefault(match.group(2), []).append(int(match.group(1)))
    return found


def brief_answer(request: Request) -> str:
    """A brief citing both videos right, once citing a source that does not exist."""
    by_title = sources_of(request)
    a, b = by_title["Review A"][0], by_title["Review B"][0]
    answer = {
        "summary": f"Two owners review the same folding bike [{a}][{b}].",
        "claims": [
            {"text": f"The kickstand bends back to one hundred sixty five degrees [{a}]."},
            {"text": f"The kickstand snapped after a month [{b}][99]."},
            {"text": "The bike won a design award [42]."},
        ],
        "consensus": [
            {"text": f"The frame feels solid [{a}][{b}]."},
            {"text": f"The price was four hundred ninety nine dollars [{a}]."},
        ],
        "disagreement": [
            {
                "topic": "Whether the kickstand holds up",
                "positions": [
                    {"text": f"It bends but holds [{a}]."},
                    {"text": f"It snapped after a month [{b}]."},
                ],
            }
        ],
        "openQuestions": [f"Does the new stand fix it? [{b}][77]"],
    }
    return "Here is the brief:\n```json\n" + json.dumps(answer) + "\n```"


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm(reply=brief_answer) as server:
        yield server


def local_model(fake: FakeLlm, **more: str) -> dict[str, str]:
    return {**QUIET, "VID2CONTEXT_LLM_URL": fake.url + "/v1", "VID2CONTEXT_LLM_MODEL": "llama3.2", **more}


async def saved(runtime: Runtime) -> Runtime:
    await runtime.storage.put_context(talk(A, "Review A", A_LINES))
    await runtime.storage.put_context(talk(B, "Review B", B_LINES))
    return runtime


def rest(runtime: Runtime) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t")


async def finished(client: httpx.AsyncClient, runtime: Runtime, answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 202, answer.text
    job = answer.json()
    assert job["status"] == "queued" and job["id"].startswith("job_")
    await runtime.jobs.wait(runtime, job["id"])
    done = await client.get(f"/api/v1/jobs/{job['id']}")
    return done.json()


# --- briefs ------------------------------------------------------------------------------------------


@ON_EVERY_RUNTIME
async def test_a_brief_job_checks_every_citation(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with rest(runtime) as client:
        answer = await client.post("/api/v1/briefs", json={"inputs": [A, B]})
        job = await finished(client, runtime, answer)
    assert job["kind"] == "brief" and job["status"] == "succeeded", job
    brief = job["result"]
    assert brief["template"] == "research" and brief["rung"].startswith("llm/")
    claims = {c["text"]: c for c in brief["claims"]}
    # [99] and [42] match no source: removed from the text, listed, and a claim citing only them is gone
    assert "The kickstand snapped after a month [2]." in claims or any("snapped" in t for t in claims)
    assert not any("[99]" in t or "design award" in t for t in claims)
    assert sorted(brief["unverified"]) == [42, 77, 99]
    assert any("design award" in note for note in brief["notes"])
    # consensus stands on two videos; the one-video "consensus" became a claim, and says so
    assert [c["text"] for c in brief["consensus"]] == [brief["consensus"][0]["text"]]
    assert "frame feels solid" in brief["consensus"][0]["text"] and brief["consensus"][0]["videos"] == 2
    assert any("four hundred ninety nine" in t for t in claims)
    assert any("four hundred ninety nine" in note and "consensus" in note for note in brief["notes"])
    # each citation narrowed to the segment that says it, with its link
    bends = next(c for t, c in claims.items() if "sixty five" in t)["citations"][0]
    assert (bends["videoId"], bends["startSec"]) == (f"youtube:{A}", 10.0)
    assert bends["url"] == f"https://www.youtube.com/watch?v={A}&t=10s"
    assert "sixty five degrees" in bends["quote"]
    (split,) = brief["disagreement"]
    assert {p["citations"][0]["videoId"] for p in split["positions"]} == {f"youtube:{A}", f"youtube:{B}"}
    assert brief["openQuestions"] == [brief["openQuestions"][0]] and "[77]" not in brief["openQuestions"][0]
    assert {s["videoId"] for s in brief["sources"]} == {f"youtube:{A}", f"youtube:{B}"}
    # the prompt fenced the sources as untrusted text
    (request,) = fake.requests
    system = request.messages[0]["content"]
    assert "BEGIN UNTRUSTED VIDEO TEXT" in system and "Review A @ 0:00" in system


async def test_a_question_and_a_template_reach_the_prompt(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with rest(runtime) as client:
        body = {"inputs": [A, B], "question": "Does the kickstand hold up?", "template": "buyer-guide"}
        job = await finished(client, runtime, await client.post("/api/v1/briefs", json=body))
    assert job["status"] == "succeeded", job
    assert job["result"]["question"] == "Does the kickstand hold up?"
    assert job["result"]["template"] == "buyer-guide"
    request = fake.requests[0]
    assert "buyer" in request.messages[0]["content"] and "Does the kickstand hold up?" in request.last_user


# --- extraction --------------------------------------------------------------------------------------


def scripted(*answers: Callable[[Request], Any]) -> Callable[[Request], str]:
    """Answers in turn (the last one repeats), each a JSON value built from the request."""
    calls: list[int] = []

    def reply(request: Request) -> str:
        calls.append(1)
        return json.dumps(answers[min(len(calls), len(answers)) - 1](request))

    return reply


def products_ok(request: Request) -> dict[str, Any]:
    a = sources_of(request)["Review A"][0]
    return {
        "data": {
            "products": [{"name": "Folding bike", "price": "$499", "pros": ["solid frame"], "cons": []}]
        },
        "citations": [
            {"field": "/products/0/price", "sources": [a, 55]},
            {"field": "/products/9/name", "sources": [a]},
        ],
    }


def products_bad(request: Request) -> dict[str, Any]:
    return {"data": {"products": [{"name": "Folding bike", "price": 499}]}}


@ON_EVERY_RUNTIME
async def test_an_answer_that_fails_the_schema_is_asked_again_with_the_problems(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    fake.reply = scripted(products_bad, products_ok)
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with rest(runtime) as client:
        body = {"inputs": [A, B], "template": "products"}
        job = await finished(client, runtime, await client.post("/api/v1/extract", json=body))
    assert job["kind"] == "extract" and job["status"] == "succeeded", job
    result = job["result"]
    assert result["template"] == "products"
    assert result["data"]["products"][0]["price"] == "$499"
    (price,) = result["citations"]
    assert price["field"] == "/products/0/price" and result["unverified"] == [55]
    assert price["citations"][0]["startSec"] == 20.0  # the segment that says the price
    assert any("/products/9/name" in note for note in result["notes"])
    first, second = fake.requests
    correction = second.last_user
    assert "/data/products/0: 'pros' is a required property" in correction
    assert "/data/products/0/price: must be of type" in correction
    assert second.messages[-2]["role"] == "assistant"


async def test_an_answer_that_fails_twice_is_reported(runtimes: Runtimes, fake: FakeLlm) -> None:
    fake.reply = scripted(products_bad)
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with rest(runtime) as client:
        body = {"inputs": [A], "template": "products"}
        job = await finished(client, runtime, await client.post("/api/v1/extract", json=body))
    assert job["status"] == "failed" and job.get("result") is None
    error = job["error"]
    assert error["code"] == "upstream" and "even when asked again" in error["message"]
    assert "/data/products/0/price" in error["message"] and error["hint"]
    assert len(fake.requests) == 2


async def test_a_caller_schema_with_local_refs(runtimes: Runtimes, fake: FakeLlm) -> None:
    schema = {
        "type": "object",
        "$defs": {"angle": {"type": "integer", "minimum": 0, "maximum": 360}},
        "properties": {"degrees": {"$ref": "#/$defs/angle"}},
        "required": ["degrees"],
    }

    def answer(request: Request) -> dict[str, Any]:
        a = sources_of(request)["Review A"][0]
        return {"data": {"degrees": 165}, "citations": [{"field": "/degrees", "sources": [a]}]}

    fake.reply = scripted(answer)
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with rest(runtime) as client:
        job = await finished(
            client, runtime, await client.post("/api/v1/extract", json={"inputs": [A], "schema": schema})
        )
    assert job["status"] == "succeeded", job
    assert job["result"]["data"] == {"degrees": 165} and job["result"]["template"] is None
    assert '"$defs"' in fake.requests[0].messages[0]["content"]
