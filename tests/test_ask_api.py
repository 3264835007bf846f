"""``POST /api/v1/ask`` and ``POST /api/v1/chat``: answers grounded in the library, citations checked.

The model is the OpenAI-compatible stand-in (``tests/fake_llm.py``) on loopback, scripted to cite
the first source with the kickstand sentence and a source number beyond the ones it was given:
that number must be stripped from the JSON answer, from every streamed delta and from ``done``,
and reported in ``unverified``. Streams are read from a real server (uvicorn, in this event loop)
so a keep-alive comment and a client hanging up are what a client sees.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from vid2context.api import create_app
from vid2context.runtime import Runtime

from .cloudflare_bindings import WorkersAi
from .fake_llm import FakeLlm, Request, source_numbers
from .ports import bound_socket
from .retrieval_set import talks
from .runtimes import ON_WORKER_TOO, Runtimes, WorkerLikeApp, serve
from .youtube_replay import httpx_callback

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host != "127.0.0.1"
    ),
]

KICKSTAND = "the kickstand bends to 165 degrees so the bike leans safely on a slope"
QUESTION = "How far does the kickstand bend?"
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
NO_CAPTIONS = "dsMFmonKDD4"  # a recorded video without captions (tests/youtube_replay.py)


def citing(request: Request) -> str:
    """Cites source 1 with the kickstand's own words, and a source that was never given, once
    beside source 1 (``[1, 9]``, which the stand-in streams in two pieces) and once alone."""
    beyond = len(source_numbers(request)) + 5
    return f"The kickstand bends to 165 degrees so the bike leans safely [1, {beyond}]. It is also purple [{beyond}]."


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm(reply=citing) as server:
        yield server


def local_model(fake: FakeLlm, **more: str) -> dict[str, str]:
    return {**QUIET, "VID2CONTEXT_LLM_URL": fake.url + "/v1", "VID2CONTEXT_LLM_MODEL": "llama3.2", **more}


async def library(runtimes: Runtimes, fake: FakeLlm, **more: str) -> Runtime:
    runtime = await runtimes.build(local_model(fake, **more))
    for talk in talks():
        await runtime.storage.put_context(talk)
    return runtime


def parse_sse(text: str) -> list[tuple[str, Any]]:
    """``(event, data)`` for every event of an SSE body, and ``(":", comment)`` for comments."""
    found: list[tuple[str, Any]] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        if block.startswith(":"):
            found.append((":", block[1:].strip()))
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def check_events(events: list[tuple[str, Any]], rung: str = "llm/self-hosted/llama3.2") -> dict[str, Any]:
    """The events are meta, reasoning*, delta+, done; the streamed text is done's; returns done."""
    names = [name for name, _ in events if name != ":"]
    assert names[0] == "meta" and names[-1] == "done", names
    assert set(names[1:-1]) <= {"reasoning", "delta"} and "delta" in names
    meta = events[0][1]
    assert meta["rung"] == rung and meta["promptTokens"] <= meta["contextTokens"]
    assert [s["n"] for s in meta["sources"]] == list(range(1, len(meta["sources"]) + 1))
    deltas = [data["text"] for name, data in events if name == "delta"]
    done = events[-1][1]
    assert "".join(deltas) == done["text"]
    for piece in deltas:
        assert "[" not in piece or "[1]" in piece  # the made-up number never shows, not even in part
    return done


def check_answer(
    text: str, citations: list[dict[str, Any]], unverified: list[int], sources: list[Any]
) -> None:
    beyond = len(sources) + 5
    assert text == "The kickstand bends to 165 degrees so the bike leans safely [1]. It is also purple."
    assert unverified == [beyond] and f"[{beyond}" not in text
    (citation,) = citations
    assert citation["n"] == 1 and citation["videoId"] == "youtube:EbikeTalk01"
    assert citation["quote"] == KICKSTAND and citation["startSec"] >= sources[0]["startSec"]
    assert citation["url"].endswith(f"t={int(citation['startSec'])}s")
    assert set(citation) == {"n", "videoId", "title", "startSec", "endSec", "url", "quote"}


# --- answers -------------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_ask_answers_with_checked_citations(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/ask", json={"question": QUESTION})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    check_answer(body["answer"], body["citations"], body["unverified"], body["sources"])
    assert body["rung"] == "llm/self-hosted/llama3.2" and body["model"] == "llama3.2"
    assert (
        body["usage"]["completionTokens"] > 0 and body["sources"][0]["title"] == "Folding e-bike, a year on"
    )
    assert any(a["stage"] == "llm" and a["outcome"] == "ok" for a in body["attempts"])
    (sent,) = fake.answered
    assert KICKSTAND in sent.messages[0]["content"] and sent.messages[-1]["content"] == QUESTION


@ON_WORKER_TOO
async def test_ask_streams_the_chat_events(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/ask", json={"question": QUESTION, "stream": True})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(answer.text)
    done = check_events(events)
    check_answer(done["text"], done["citations"], done["unverified"], events[0][1]["sources"])
    assert len([name for name, _ in events if name == "delta"]) > 3  # it came in pieces


async def test_chat_takes_the_conversation_and_a_context(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    body = {
        "messages": [
            {"role": "user", "content": "Tell me about the e-bike."},
            {"role": "assistant", "content": "It folds."},
            {"role": "user", "content": QUESTION},
        ],
        "context": {"inputs": ["youtube:EbikeTalk01"]},
        "model": {"rung": "llm/self-hosted/llama3.2", "strict": True},
        "maxTokens": 300,
        "temperature": 0.2,
    }
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/chat", json=body)
    assert answer.status_code == 200, answer.text
    events = parse_sse(answer.text)
    done = check_events(events)
    assert {s["videoId"] for s in events[0][1]["sources"]} == {"youtube:EbikeTalk01"}
    check_answer(done["text"], done["citations"], done["unverified"], events[0][1]["sources"])
    (sent,) = fake.answered
    assert [m["role"] for m in sent.messages] == ["system", "user", "assistant", "user"]
    assert sent.body["max_tokens"] == 300 and sent.body["temperature"] == 0.2


async def test_a_model_that_shows_its_reasoning_streams_reasoning_events(runtimes: Runtimes) -> None:
    with FakeLlm(reply=citing, reasoning="The sources say 165 degrees.") as thinking:
        runtime = await library(runtimes, thinking)
        async with serve(create_app(runtime, owns_runtime=False)) as http:
            answer = await http.post(
                "/api/v1/chat", json={"messages": [{"role": "user", "content": QUESTION}]}
            )
    events = parse_sse(answer.text)
    done = check_events(events)
    reasoning = "".join(data["text"] for name, data in events if name == "reasoning")
    assert reasoning == "The sources say 165 degrees."
    names = [name for name, _ in events]
    assert names.index("reasoning") < names.index("delta")
    check_answer(done["text"], done["citations"], done["unverified"], events[0][1]["sources"])


async def test_a_failure_after_streaming_began_is_an_error_event(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    fake.break_next()
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/chat", json={"messages": [{"role": "user", "content": QUESTION}]})
    events = parse_sse(answer.text)
    assert events[0][0] == "meta" and events[-1][0] == "error"
    assert events[-1][1]["code"] == "upstream" and events[-1][1]["hint"]


# --- request errors, answered before streaming ---------------------------------------------------


def _bad_bodies() -> list[tuple[str, dict[str, Any], int, str]]:
    ten_thousand = [{"role": "user" if i % 2 == 0 else "assistant", "content": "hi"} for i in range(10_000)]
    return [
        ("empty question", {"question": ""}, 400, "bad-request"),
        ("blank question", {"question": "  "}, 400, "bad-request"),
        ("no question", {}, 400, "bad-request"),
        ("question not text", {"question": 42}, 400, "bad-request"),
        ("100 kB question", {"question": "kickstand " * 10_000}, 413, "too-large"),
        ("10,000 turns of history", {"question": QUESTION, "history": ten_thousand[:-1]}, 413, "too-large"),
        ("a system turn", {"question": QUESTION, "history": [{"role": "system", "content": "obey"}]}, 400,
         "bad-request"),
        ("unknown strict rung", {"question": QUESTION, "model": {"rung": "llm/nope/x", "strict": True}}, 400,
         "bad-request"),
        ("rung and policy", {"question": QUESTION, "model": {"rung": "llm/nope/x", "policy": "free"}}, 400,
         "bad-request"),
        ("unknown policy", {"question": QUESTION, "model": {"policy": "cheapest"}}, 400, "bad-request"),
        ("unknown field", {"question": QUESTION, "prompt": "x"}, 400, "bad-request"),
        ("maxTokens 0", {"question": QUESTION, "maxTokens": 0}, 400, "bad-request"),
        ("maxTokens huge", {"question": QUESTION, "maxTokens": 10**9}, 400, "bad-request"),
        ("temperature 9", {"question": QUESTION, "temperature": 9}, 400, "bad-request"),
        ("empty inputs", {"question": QUESTION, "inputs": []}, 400, "bad-request"),
        ("unknown collection", {"question": QUESTION, "collectionId": "col_nothing"}, 404, "not-found"),
        ("a video without a transcript", {"question": QUESTION, "inputs": [NO_CAPTIONS]}, 422, "no-transcript"),
        ("nothing matches", {"question": "xylophone quasar"}, 404, "not-found"),
    ]  # fmt: skip


def _as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The same request as ``/chat`` takes it."""
    chat: dict[str, Any] = {}
    history = body.get("history") or []
    if "question" in body:
        chat["messages"] = [*history, {"role": "user", "content": body["question"]}]
    else:
        chat["messages"] = []
    if "inputs" in body or "collectionId" in body:
        chat["context"] = {k: body[k] for k in ("inputs", "collectionId") if k in body}
    for key in ("model", "maxTokens", "temperature", "prompt"):
        if key in body:
            chat[key] = body[key]
    return chat


@pytest.mark.parametrize(("name", "body", "status", "code"), _bad_bodies(), ids=[b[0] for b in _bad_bodies()])
async def test_bad_requests_get_the_contract_error_before_any_stream(
    runtimes: Runtimes,
    fake: FakeLlm,
    httpx_mock: Any,
    name: str,
    body: dict[str, Any],
    status: int,
    code: str,
) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    runtime = await library(runtimes, fake)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answers = [
            await http.post("/api/v1/ask", json=body),
            await http.post("/api/v1/ask", json={**body, "stream": True}),
            await http.post("/api/v1/chat", json=_as_chat(body)),
        ]
    for answer in answers:
        assert answer.status_code == status, (name, answer.request.url, answer.text[:300])
        assert answer.headers["content-type"].startswith("application/json")
        error = answer.json()["error"]
        assert error["code"] == code and error["hint"], error
        assert "Traceback" not in answer.text
    assert fake.answered == []  # no model was asked


async def test_chat_needs_the_users_question_last(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post(
            "/api/v1/chat",
            json={"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
        )
        bad_role = await http.post("/api/v1/chat", json={"messages": [{"role": "system", "content": "q"}]})
        not_json = await http.post("/api/v1/chat", content=b"{", headers={"content-type": "application/json"})
    assert answer.status_code == 400 and answer.json()["error"]["hint"]
    assert bad_role.status_code == 400 and not_json.status_code == 400


async def test_a_strict_rung_that_is_not_set_up_is_no_provider(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post(
            "/api/v1/ask",
            json={
                "question": QUESTION,
                "model": {"rung": "llm/groq/llama-3.3-70b-versatile", "strict": True},
            },
        )
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "no-provider"
    assert "GROQ_API_KEY" in answer.text


async def test_a_collection_over_the_window_is_answered_from_what_fits_or_too_large(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    from vid2context import library as lib
    from vid2context.ctx import Ctx

    runtime = await library(runtimes, fake, VID2CONTEXT_LLM_CONTEXT_TOKENS="1024")
    made = await lib.create_collection(runtime, "everything", None)
    await lib.add_to_collection(runtime, made.id, [t.id for t in talks()], ctx=Ctx(timeout=30))
    whole = sum(len(" ".join(s.text for s in t.transcript.segments).split()) for t in talks() if t.transcript)
    assert whole > 1024  # the collection is larger than the window
    question = {"question": "kickstand starter inverter rail battery", "collectionId": made.id}
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        too_large = await http.post("/api/v1/ask", json=question)
        fitted = await http.post("/api/v1/ask", json={**question, "maxTokens": 64})
    assert too_large.status_code == 413 and too_large.json()["error"]["code"] == "too-large"
    assert "maxTokens" in too_large.json()["error"]["hint"]
    assert fitted.status_code == 200, fitted.text
    body = fitted.json()
    assert body["sources"] and body["promptTokens"] + 64 <= body["contextTokens"] == 1024


# --- streams from a real server -----------------------------------------------------------------


@asynccontextmanager
async def real_server(app: Any, lifespan: str = "on") -> AsyncIterator[str]:
    """``app`` served by uvicorn on loopback, in this event loop."""
    sock = bound_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan=lifespan
        )
    )
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        assert not task.done(), "uvicorn did not start"
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def test_a_keep_alive_comment_arrives_while_the_model_is_silent(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await library(runtimes, fake)
    app = create_app(runtime, owns_runtime=False)
    app.state.keep_alive_s = 0.05  # the contract's 15 s, shortened
    fake.hold_streams()
    seen: list[str] = []
    async with real_server(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        async with http.stream(
            "POST", "/api/v1/chat", json={"messages": [{"role": "user", "content": QUESTION}]}
        ) as answer:
            assert answer.status_code == 200
            async for line in answer.aiter_lines():
                seen.append(line)
                if line == ": keep-alive" and not fake.release.is_set():
                    assert fake.held.is_set()  # the model is holding its answer back
                    fake.release.set()
    events = parse_sse("\n".join(seen) + "\n")
    assert (":", "keep-alive") in events
    check_events(events)


async def test_a_client_that_hangs_up_closes_the_upstream_call(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    app = create_app(runtime, owns_runtime=False)
    fake.hold_streams()
    async with real_server(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        async with http.stream(
            "POST", "/api/v1/chat", json={"messages": [{"role": "user", "content": QUESTION}]}
        ) as answer:
            async for line in answer.aiter_lines():
                if line.startswith("event: delta"):
                    break  # the first words are in: hang up while the model still holds the rest
        hung_up = await asyncio.to_thread(fake.hung_up.wait, 30)
    fake.release.set()
    assert hung_up, "the stand-in never saw its connection closed"


async def test_the_worker_adapter_serves_the_events(runtimes: Runtimes, fake: FakeLlm) -> None:
    """As ``workers.asgi.fetch`` runs the app (lifespan per request, no client address)."""
    runtime = await library(runtimes, fake)
    app = WorkerLikeApp(create_app(runtime, owns_runtime=False))
    async with real_server(app, "off") as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        answer = await http.post("/api/v1/chat", json={"messages": [{"role": "user", "content": QUESTION}]})
    check_events(parse_sse(answer.text))


@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_the_worker_answers_through_its_ai_binding_streamed(runtimes: Runtimes, fake: FakeLlm) -> None:
    binding = WorkersAi(fake.url)
    runtime = await runtimes.build(QUIET, ai=binding)
    for talk in talks():
        await runtime.storage.put_context(talk)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.post("/api/v1/chat", json={"messages": [{"role": "user", "content": QUESTION}]})
    events = parse_sse(answer.text)
    done = check_events(events, "llm/cloudflare/@cf/meta/llama-3.3-70b-instruct-fp8-fast")
    assert done["text"].endswith("It is also purple.") and done["unverified"] and binding.calls == 1
    assert len([name for name, _ in events if name == "delta"]) > 3
