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

from vid2context import library
from vid2context.api import create_app
from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.runtime import Runtime
from vid2context.tokens import estimate_tokens

from .fake_llm import FakeLlm, Request
from .runtimes import ON_EVERY_RUNTIME, Runtimes
from .talks import three_hour_talk
from .youtube_replay import httpx_callback

pytestmark = [
    pytest.mark.anyio,
    # The stand-in model is a real server on 127.0.0.1: only YouTube is answered by httpx_mock.
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host != "127.0.0.1"
    ),
]

A, B = "KickstandA1", "KickstandB2"
NO_CAPTIONS = "dsMFmonKDD4"
"""A recorded video without captions (tests/fixtures)."""
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
    a = by_title["Review A"][0]
    b = by_title.get("Review B", [a])[0]
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
    assert job["progress"] == {
        "done": 2,
        "total": 2,
        "message": "2 passages of 2 videos found; asking llm/self-hosted/llama3.2",
    }
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


# --- bad input ---------------------------------------------------------------------------------------

MANY = [f"https://www.youtube.com/watch?v=Many{i:07d}" for i in range(21)]
DEEP: dict[str, Any] = {"type": "object"}
for _ in range(20):
    DEEP = {"type": "object", "properties": {"x": DEEP}}
BIG_SCHEMA = {
    "type": "object",
    "properties": {f"field{i}": {"type": "string", "description": "x" * 100} for i in range(400)},
}
REMOTE = {"type": "object", "properties": {"a": {"$ref": "https://schemas.example.com/product.json"}}}

BAD_REQUESTS: list[tuple[str, Any, int, str]] = [
    ("briefs", {}, 400, "bad-request"),
    ("briefs", {"inputs": []}, 400, "bad-request"),
    ("briefs", {"inputs": ["  "]}, 400, "bad-request"),
    ("briefs", {"inputs": "youtube:KickstandA1"}, 400, "bad-request"),
    ("briefs", {"inputs": MANY}, 413, "too-large"),
    ("briefs", {"collectionId": "col_nope"}, 404, "not-found"),
    ("briefs", {"inputs": [A], "question": ""}, 400, "bad-request"),
    ("briefs", {"inputs": [A], "question": "why " * 25_000}, 413, "too-large"),
    ("briefs", {"inputs": [A], "template": "nope"}, 400, "bad-request"),
    ("briefs", {"inputs": [A], "model": {"rung": "x"}}, 400, "bad-request"),
    ("briefs", [A], 400, "bad-request"),
    ("extract", {"inputs": [A]}, 400, "bad-request"),
    ("extract", {"inputs": [A], "template": "products", "schema": {"type": "object"}}, 400, "bad-request"),
    ("extract", {"inputs": [A], "template": "nope"}, 400, "bad-request"),
    ("extract", {"inputs": [A], "schema": [1, 2]}, 400, "bad-request"),
    ("extract", {"inputs": [A], "schema": "an object"}, 400, "bad-request"),
    ("extract", {"inputs": [A], "schema": {"type": "array"}}, 400, "bad-request"),
    (
        "extract",
        {"inputs": [A], "schema": {"type": "object", "properties": {"a": {"type": "nope"}}}},
        400,
        "bad-request",
    ),
    ("extract", {"inputs": [A], "schema": REMOTE}, 400, "bad-request"),
    ("extract", {"inputs": [A], "schema": DEEP}, 400, "bad-request"),
    ("extract", {"inputs": [A], "schema": BIG_SCHEMA}, 413, "too-large"),
    ("extract", {"inputs": [A], "schema": {"type": "object", "x": "y" * (1 << 20)}}, 413, "too-large"),
    ("extract", {"inputs": MANY, "template": "facts"}, 413, "too-large"),
    ("extract", {"template": "facts"}, 400, "bad-request"),
]


@pytest.mark.parametrize(
    ("route", "body", "status", "code"),
    BAD_REQUESTS,
    ids=[f"{r}-{i}" for i, (r, *_) in enumerate(BAD_REQUESTS)],
)
async def test_bad_requests_are_refused_before_a_job_exists(
    runtimes: Runtimes, fake: FakeLlm, httpx_mock: Any, route: str, body: Any, status: int, code: str
) -> None:
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with rest(runtime) as client:
        answer = await client.post(f"/api/v1/{route}", json=body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["code"] == code and error["hint"], error
    assert "Traceback" not in answer.text and "schemas.example.com/product" not in str(
        httpx_mock.get_requests()
    )
    assert fake.requests == [] and httpx_mock.get_requests() == []  # nothing asked, nothing fetched
    assert runtime.jobs.kinds and not [job async for job in _jobs(runtime)]


async def _jobs(runtime: Runtime) -> Any:
    for record in getattr(runtime.jobs, "_records", {}).values():
        yield record


async def test_no_language_model_is_no_provider_before_a_job_exists(runtimes: Runtimes) -> None:
    runtime = await saved(await runtimes.build(QUIET))
    async with rest(runtime) as client:
        for route, body in (("briefs", {"inputs": [A]}), ("extract", {"inputs": [A], "template": "facts"})):
            answer = await client.post(f"/api/v1/{route}", json=body)
            assert answer.status_code == 503, answer.text
            assert (
                answer.json()["error"]["code"] == "no-provider"
                and "GROQ_API_KEY" in answer.json()["error"]["hint"]
            )


async def test_a_video_without_a_transcript_fails_the_job_with_no_transcript(
    runtimes: Runtimes, fake: FakeLlm, httpx_mock: Any
) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with rest(runtime) as client:
        job = await finished(
            client, runtime, await client.post("/api/v1/briefs", json={"inputs": [NO_CAPTIONS]})
        )
        mixed = await finished(
            client, runtime, await client.post("/api/v1/briefs", json={"inputs": [NO_CAPTIONS, A]})
        )
    assert job["status"] == "failed" and job["error"]["code"] == "no-transcript" and job["error"]["hint"], job
    assert mixed["status"] == "succeeded", mixed
    assert [f["code"] for f in mixed["result"]["failed"]] == ["no-transcript"]
    assert len(fake.requests) == 1  # only the brief that had words to read asked the model


def first_source(request: Request) -> str:
    """A brief that cites the first source for every claim."""
    return json.dumps(
        {
            "summary": "The battery suffers in the cold [1].",
            "claims": [{"text": "The cold matters more than the mileage [1]."}],
            "consensus": [],
            "disagreement": [],
            "openQuestions": [],
        }
    )


@ON_EVERY_RUNTIME
async def test_a_collection_over_the_window_is_answered_from_its_best_passages(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    fake.reply = first_source
    runtime = await runtimes.build(local_model(fake, VID2CONTEXT_LLM_CONTEXT_TOKENS="4096"))
    talks = [three_hour_talk(f"LongTalk{i:03d}", minutes=40, seed=i) for i in range(3)]
    for context in talks:
        await runtime.storage.put_context(context)
    collection = await library.create_collection(runtime, "winter talks")
    await library.add_to_collection(runtime, collection.id, [c.id for c in talks])
    whole = sum(estimate_tokens(c.transcript.segments[0].text) * len(c.transcript.segments) for c in talks)
    async with rest(runtime) as client:
        body = {"collectionId": "winter talks", "question": "How does the battery hold up after a winter?"}
        job = await finished(client, runtime, await client.post("/api/v1/briefs", json=body))
    assert job["status"] == "succeeded", job
    brief = job["result"]
    assert brief["leftOut"] > 0 and any("did not fit" in note for note in brief["notes"])
    sent = estimate_tokens(fake.requests[0].messages[0]["content"])
    assert sent < 4096 - 512 < whole  # the prompt fits the window's room for it; the transcripts never would


async def test_a_window_too_small_for_one_passage_is_too_large(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await saved(await runtimes.build(local_model(fake, VID2CONTEXT_LLM_CONTEXT_TOKENS="1024")))
    async with rest(runtime) as client:
        job = await finished(client, runtime, await client.post("/api/v1/briefs", json={"inputs": [A, B]}))
    assert job["status"] == "failed" and job["error"]["code"] == "too-large" and job["error"]["hint"], job
    assert fake.requests == []
