"""Every error code, made by a real call on each surface, answers a hint that names a next step
there (``hint_steps.py``: a tool or route that exists, an argument, a setting, or "tell the user;
do not retry").

``TABLE`` has one row per ``ErrorCode``: the MCP tool call (through the SDK's in-process client)
and the REST call that produce it, or why that surface cannot produce it. A new code without a
row fails ``test_every_code_has_a_row``.

Upstreams are stand-ins, never the network: YouTube is the recorded replay
(``youtube_replay.py``), with three ids of its own here: one YouTube never answers (a read
timeout, raised at once), one it answers only when the test lets it (so a job can be canceled
while it waits), one it answers with HTTP 500. Groq refuses the key with its documented 401 body, a
self-hosted speech-to-text service refuses the audio with a 400.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.errors import STATUS_BY_CODE, ErrorCode
from vid2context.mcp import create_mcp
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings

from .hint_steps import problems, surfaces
from .runtimes import ON_WORKER_TOO, Runtimes
from .test_mcp_tools import json_block
from .youtube_replay import TOO_MANY_REQUESTS_ID, httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

VIDEO = "GJLlxj_dtq8"  # recorded: manual captions in eight languages, chapters
AGE = "Njp5uhTorCo"  # recorded: age-restricted, with its details
BOT = "botCheck001"  # recorded: "Sign in to confirm you're not a bot"
NO_CAPTIONS = "dsMFmonKDD4"  # recorded: captions disabled
GONE = "unavailable"  # recorded: "This video is unavailable"
SILENT = "noAnswer001"  # YouTube never answers (a read timeout)
SLOW = "slowVideo01"  # YouTube answers when the test lets it
BROKEN = "brokenVid01"  # YouTube answers HTTP 500
STT_URL = "https://stt.example/v1"
READER_KEY = "reader-key-1234"
BASE = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0", "VID2CONTEXT_KEYLESS": "0"}
GROQ = {"GROQ_API_KEY": "gsk-refused-key"}
SELF_HOSTED = {"VID2CONTEXT_STT_URL": STT_URL, "VID2CONTEXT_STT_KEY": "sk-self-hosted"}


def watch(video_id: str) -> str:
    return f"https://www.youtube.com/watch?v={video_id}"


# --- the calls -------------------------------------------------------------------------------------

Body = dict[str, Any]
"""What a call answered: ``{code, message, hint}``."""


@dataclass
class World:
    """One row's runtime and what its calls share (an upload, a temporary folder)."""

    runtime: Runtime
    tmp: Path
    released: asyncio.Event = field(default_factory=asyncio.Event)
    upload: str = ""

    def fill(self, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("{upload}", self.upload).replace("{tmp}", str(self.tmp))
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value


Call = Callable[[World], Awaitable[Body]]


def tool(name: str, **arguments: Any) -> Call:
    async def call(world: World) -> Body:
        async with Client(create_mcp(world.runtime)) as client:
            result = await client.call_tool(name, world.fill(arguments))
        assert result.is_error, result.content[0].text[:300]
        body = json.loads(result.content[0].text)
        assert set(body) == {"error", "message", "hint", "attempts"}, body
        return {"code": body["error"], "message": body["message"], "hint": body["hint"]}

    call.__name__ = f"{name} {json.dumps(arguments)[:60]}"
    return call


def rest(method: str, path: str, body: Any = None, **headers: str) -> Call:
    async def call(world: World) -> Body:
        async with _rest(world) as client:
            response = await client.request(method, world.fill(path), json=world.fill(body), headers=headers)
        answer = response.json()
        assert response.status_code >= 400, answer
        assert response.status_code == STATUS_BY_CODE[ErrorCode(answer["error"]["code"])], answer
        return answer["error"]

    call.__name__ = f"{method} {path}"
    return call


def _rest(world: World) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(world.runtime)), base_url="http://t"
    )


async def canceled_job(world: World) -> Body:
    """A job canceled while YouTube has not answered yet: its result is the error."""
    async with _rest(world) as client:
        job = (await client.post("/api/v1/jobs", json={"kind": "context", "input": watch(SLOW)})).json()
        assert (await client.delete(f"/api/v1/jobs/{job['id']}")).status_code == 202
        found = (await client.get(f"/api/v1/jobs/{job['id']}")).json()
    world.released.set()
    assert found["status"] == "canceled", found
    return found["error"]


# --- the table -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    mcp: Call | str
    """The tool call that makes the code, or why no tool call can."""
    rest: Call | str
    """The REST call that makes the code, or why none can."""
    env: dict[str, str] = field(default_factory=dict)
    upload: bool = False
    """Upload a file first (REST ``POST /api/v1/uploads``); ``{upload}`` is its input."""
    corrupt: bool = False
    """Run on a SQLite library whose file is then overwritten with garbage."""


PUBLIC = {"VID2CONTEXT_PUBLIC": "1"}
TABLE: dict[ErrorCode, Row] = {
    ErrorCode.UNSUPPORTED_INPUT: Row(
        tool("get_transcript", url="/home/me/talk.mp4"),
        rest("GET", "/api/v1/transcript?url=/home/me/talk.mp4"),
        env=PUBLIC,
    ),
    ErrorCode.BAD_REQUEST: Row(
        tool("get_transcript", url=VIDEO, mode="fast"), rest("GET", f"/api/v1/transcript?url={VIDEO}&mode=fast")
    ),
    ErrorCode.NOT_FOUND: Row(tool("get_metadata", url=watch(GONE)), rest("GET", f"/api/v1/metadata?url={GONE}")),
    ErrorCode.UNAVAILABLE: Row(tool("get_transcript", url=AGE), rest("GET", f"/api/v1/transcript?url={AGE}")),
    ErrorCode.NO_TRANSCRIPT: Row(
        tool("get_transcript", url=NO_CAPTIONS, mode="captions"),
        rest("GET", f"/api/v1/transcript?url={NO_CAPTIONS}&mode=captions"),
    ),
    ErrorCode.TOO_LARGE: Row(
        tool("export_context_pack", urls=[VIDEO] * 501),
        rest("POST", "/api/v1/pack", {"inputs": [VIDEO] * 101}),
    ),
    ErrorCode.RATE_LIMITED: Row(
        tool("get_transcript", url=TOO_MANY_REQUESTS_ID),
        rest("GET", f"/api/v1/transcript?url={TOO_MANY_REQUESTS_ID}"),
    ),
    ErrorCode.TIMEOUT: Row(tool("get_metadata", url=SILENT), rest("GET", f"/api/v1/metadata?url={SILENT}")),
    ErrorCode.BLOCKED: Row(tool("get_transcript", url=BOT), rest("GET", f"/api/v1/transcript?url={BOT}")),
    ErrorCode.NO_PROVIDER: Row(
        tool("get_comments", url=VIDEO), rest("GET", f"/api/v1/comments?url={VIDEO}")
    ),
    ErrorCode.ALL_RUNGS_FAILED: Row(
        tool("get_transcript", url="{upload}"),
        rest("GET", "/api/v1/transcript?url={upload}"),
        env={**GROQ, **SELF_HOSTED},
        upload=True,
    ),
    ErrorCode.AUTH: Row(
        tool("get_transcript", url="{upload}"), rest("GET", "/api/v1/transcript?url={upload}"), env=GROQ, upload=True
    ),
    ErrorCode.UPSTREAM: Row(tool("get_metadata", url=BROKEN), rest("GET", f"/api/v1/metadata?url={BROKEN}")),
    ErrorCode.INTERNAL: Row(
        tool("get_metadata", url=VIDEO), rest("GET", f"/api/v1/metadata?url={VIDEO}"), corrupt=True
    ),
    ErrorCode.CANCELED: Row(
        "A tool call is canceled by the client (notifications/cancelled), and the SDK sends no "
        "result for a canceled request; MCP runs are never canceled by the server.",
        canceled_job,
    ),
    ErrorCode.UNAUTHORIZED: Row(
        "Tool calls carry no credentials: stdio and the in-process client have none, and over HTTP "
        "/mcp answers 401 itself before any tool runs (its hint: the last test here).",
        rest("GET", f"/api/v1/metadata?url={VIDEO}"),
        env={"VID2CONTEXT_API_KEYS": "a-full-key"},
    ),
    ErrorCode.FORBIDDEN: Row(
        tool("export_obsidian", vaultPath="/", urls=[VIDEO]),
        rest("POST", "/api/v1/collections", {"name": "x"}, authorization=f"Bearer {READER_KEY}"),
        env={
            "VID2CONTEXT_FILE_ROOTS": "{tmp}",
            "VID2CONTEXT_API_KEYS": f"reader:read:{hashlib.sha256(READER_KEY.encode()).hexdigest()}",
        },
    ),
}  # fmt: skip

NOT_ON_MCP = {code for code, row in TABLE.items() if isinstance(row.mcp, str)}
NOT_ON_REST = {code for code, row in TABLE.items() if isinstance(row.rest, str)}


def test_every_code_has_a_row() -> None:
    """A new ErrorCode needs a row: a call on each surface, or the reason it cannot be made."""
    assert set(TABLE) == set(ErrorCode)
    assert NOT_ON_MCP == {ErrorCode.CANCELED, ErrorCode.UNAUTHORIZED}
    assert NOT_ON_REST == set()
    assert all(len(row.mcp) > 40 for code, row in TABLE.items() if code in NOT_ON_MCP)


# --- running a row ---------------------------------------------------------------------------------


async def _upstream(world: World, request: httpx.Request) -> httpx.Response:
    """The stand-in upstreams (see the module docstring)."""
    url = urlsplit(str(request.url))
    video = parse_qs(url.query).get("v", [""])[0]
    if url.path == "/youtubei/v1/player":
        video = json.loads(request.content).get("videoId", "")
    if video == SILENT:
        raise httpx.ReadTimeout("no answer", request=request)
    if video == SLOW:
        await world.released.wait()
    if video == BROKEN:
        return httpx.Response(500, text="Internal Server Error")
    if url.hostname == "api.groq.com":
        return httpx.Response(
            401,
            json={
                "error": {
                    "message": "Invalid API Key",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        )
    if url.hostname == "stt.example":
        return httpx.Response(
            400, json={"error": {"message": "Unsupported audio format", "type": "invalid_request"}}
        )
    return httpx_callback(request)


@pytest.fixture
async def world(httpx_mock: Any, runtimes: Runtimes, tmp_path: Path, request: Any) -> AsyncIterator[World]:
    row: Row = TABLE[request.param]
    env = {k: v.replace("{tmp}", str(tmp_path)) for k, v in {**BASE, **row.env}.items()}
    home = tmp_path / "home"
    if row.corrupt:
        from vid2context.storage.sqlite import open_local_stores

        stores = open_local_stores(home)
        runtime = build_runtime(
            load_settings({**env, "VID2CONTEXT_HOME": str(home)}),
            storage=stores.storage,
            kv=stores.kv,
            blobs=stores.blobs,
        )
    else:
        runtime = await runtimes.build(env)
    world = World(runtime=runtime, tmp=tmp_path)
    httpx_mock.add_callback(lambda r: _upstream(world, r), is_reusable=True, is_optional=True)
    if row.upload:
        async with _rest(world) as client:
            answer = await client.post(
                "/api/v1/uploads", files={"file": ("talk.mp3", b"\x07" * 2000, "audio/mpeg")}
            )
        world.upload = answer.json()["input"]
    if row.corrupt:
        for path in home.rglob("*.db*"):  # a disk fault: the library file is no database any more
            path.write_bytes(b"not a database " * 100)
    yield world
    world.released.set()
    if row.corrupt:
        await runtime.aclose()


def _check(body: Body, code: ErrorCode, surface: str) -> None:
    print("\nHINT", code.value, surface, "|", body["message"], "|", body.get("hint"))
    assert body["code"] == code.value, body
    assert body["message"], body
    assert problems(body.get("hint"), surfaces()[surface], code=code.value) == [], body["hint"]


ON_MCP = [code for code in TABLE if code not in NOT_ON_MCP]
ON_REST = [code for code in TABLE if code not in NOT_ON_REST]


@pytest.mark.parametrize("world", ON_MCP, ids=[c.value for c in ON_MCP], indirect=True)
async def test_the_tool_call_answers_its_code_and_a_step_mcp_has(world: World, request: Any) -> None:
    code = ErrorCode(request.node.callspec.params["world"])
    call = TABLE[code].mcp
    assert callable(call)
    _check(await call(world), code, "mcp")


@pytest.mark.parametrize("world", ON_REST, ids=[c.value for c in ON_REST], indirect=True)
async def test_the_rest_call_answers_its_code_and_a_step_rest_has(world: World, request: Any) -> None:
    code = ErrorCode(request.node.callspec.params["world"])
    call = TABLE[code].rest
    assert callable(call)
    _check(await call(world), code, "rest")


# --- every hint in the source ----------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "vid2context"
REST_ONLY = ("api/", "auth/", "jobs.py", "job_kinds.py", "cli.py", "site.py", "site_files.py", "settings.py")
"""Modules whose hints only REST clients (and the CLI) read; ``mcp/`` ones only MCP clients."""
_HINT_NAME = re.compile(r"^_?(?:[A-Z]+_)*HINT(?:_[A-Z]+)*$")


def _texts(
    node: ast.AST, names: dict[str, ast.AST], hole: str = "{N}"
) -> list[tuple[str | None, str]] | None:
    """The texts a hint expression can be, each with the surface it is for (``None``: both), with
    ``hole`` where a value goes; ``None`` when the text is made elsewhere (a refusal helper,
    another error's hint), where the tests of that code check it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(None, node.value)]
    if isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.Constant) else hole for v in node.values]
        return [(None, "".join(str(p) for p in parts))]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _texts(node.left, names, hole), _texts(node.right, names, hole)
        return [(None, a + b) for _, a in left or [(None, hole)] for _, b in right or [(None, hole)]]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "format":
            return _texts(node.func.value, names, hole)
        return [(None, hole)] if node.func.attr == "join" else None
    if isinstance(node, ast.IfExp):
        return (_texts(node.body, names, hole) or []) + (_texts(node.orelse, names, hole) or []) or None
    if isinstance(node, ast.Name) and node.id in names:
        return _texts(names[node.id], names, hole)
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "per_surface":
        found: list[tuple[str | None, str]] = []
        for keyword in node.keywords:
            found += [(keyword.arg, text) for _, text in _texts(keyword.value, names, hole) or []]
        return found
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "steps" and node.args:
        from vid2context.errors import steps

        templates = _texts(node.args[0], names, "N") or []
        return [(surface, text) for _, t in templates for surface, text in steps(t).items()]
    return None


def _source_hints() -> list[tuple[str, str, str, str | None]]:
    """Every hint text written in the package: (where, surface, text, the error's code if known)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            target.id: node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        surfaces_here = (
            ("rest",)
            if name.startswith(REST_ONLY) or name == "mcp/http.py"  # the HTTP transport's own answers
            else ("mcp",)
            if name.startswith("mcp/")
            else ("rest", "mcp")
        )
        helpers = {  # the module's own error helpers whose last parameter is the hint
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.args.args and node.args.args[-1].arg == "hint"
        }
        values: list[tuple[ast.AST, str | None]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                code = _code_of(node.args[0]) if node.args else None
                values += [(k.value, code) for k in node.keywords if k.arg == "hint"]
                if getattr(node.func, "id", "") in helpers and len(node.args) >= 2:
                    values.append((node.args[-1], code))
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and _HINT_NAME.match(t.id) for t in node.targets
            ):
                values.append((node.value, None))
        for value, code in values:
            for surface, text in _texts(value, names) or []:
                for each in (surface,) if surface else surfaces_here:
                    found.append((f"{name}:{value.lineno}", each, text, code))
    return found


def _code_of(node: ast.AST) -> str | None:
    """The code of ``ErrorCode.NAME`` as its wire value; ``None`` for anything else."""
    if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "ErrorCode":
        return ErrorCode[node.attr].value
    return None


def test_every_hint_written_in_the_source_names_a_step() -> None:
    """Not only the table's: each hint the code can give (its literal text, with "N" where a value
    goes) names a step that exists on the surface that reads it, and nothing that does not."""
    offenders = [
        f"{where} [{surface}] {code} {wrong}: {text[:150]}"
        for where, surface, text, code in _source_hints()
        if (wrong := problems(text, surfaces()[surface], code=code))
    ]
    assert offenders == [], "\n" + "\n".join(offenders)


# --- what the tester saw ---------------------------------------------------------------------------


@ON_WORKER_TOO
@pytest.mark.parametrize("video", [BOT, AGE], ids=["blocked", "age-restricted"])
async def test_a_refusal_names_the_way_out_where_the_server_runs(
    httpx_mock: Any, runtimes: Runtimes, runtime_kind: str, tmp_path: Path, video: str
) -> None:
    """On the user's machine the way out is a setting (cookies, a proxy), never "run locally",
    which it already does; on the Worker it is the local runtime, never a proxy it cannot use.
    Both say to tell the user and not to retry."""
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    world = World(runtime=await runtimes.build(BASE), tmp=tmp_path)
    hints = {
        "mcp": (await tool("get_transcript", url=video)(world))["hint"],
        "rest": (await rest("GET", f"/api/v1/transcript?url={video}")(world))["hint"],
    }
    for surface, hint in hints.items():
        assert problems(hint, surfaces()[surface]) == [], hint
        assert "do not retry" in hint and "locally" not in hint, hint
        if runtime_kind == "worker":
            assert "local runtime" in hint and "VID2CONTEXT_PROXY" not in hint, hint
        else:
            assert "VID2CONTEXT_YTDLP_COOKIES" in hint and "local runtime" not in hint, hint
            assert ("VID2CONTEXT_PROXY" in hint) is (video == BOT), hint
    if video == AGE:  # names the setting even where it is the local runtime's, and what still works
        assert all("VID2CONTEXT_YTDLP_COOKIES" in hint for hint in hints.values())
        assert "get_metadata" in hints["mcp"] and "GET /api/v1/metadata" in hints["rest"]
    if video == BOT and runtime_kind != "worker":  # the user's own copy of the media
        assert "give its path as url with mode=stt" in hints["mcp"]
        assert "POST /api/v1/uploads" in hints["rest"]


async def test_an_age_restricted_video_still_has_its_metadata(
    httpx_mock: Any, runtimes: Runtimes, tmp_path: Path
) -> None:
    """What the hint promises: the recorded age-restricted answer still describes the video, so
    get_metadata and GET /api/v1/metadata answer while its transcript is refused."""
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    world = World(runtime=await runtimes.build(BASE), tmp=tmp_path)
    refused = await tool("get_transcript", url=AGE)(world)
    assert refused["code"] == "unavailable" and "age-restricted" in refused["message"]
    async with Client(create_mcp(world.runtime)) as client:
        result = await client.call_tool("get_metadata", {"url": AGE})
    assert not result.is_error
    assert json_block(result)["title"].startswith("Laura Branigan - Self Control")
    async with _rest(world) as client:
        response = await client.get("/api/v1/metadata", params={"url": AGE})
    assert response.status_code == 200 and response.json()["title"].startswith("Laura Branigan")


async def test_mcp_over_http_answers_unauthorized_before_any_tool_with_a_step(
    runtimes: Runtimes, tmp_path: Path
) -> None:
    """The row's reason for ``unauthorized``: /mcp answers it itself, as an HTTP error body whose
    hint (read by the client's software and its user, not by a tool caller) names the setting."""
    world = World(runtime=await runtimes.build({**BASE, "VID2CONTEXT_MCP_TOKENS": "a-token"}), tmp=tmp_path)
    async with _rest(world) as client:
        response = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "unauthorized" and "VID2CONTEXT_MCP_TOKENS" in error["hint"]
    assert problems(error["hint"], surfaces()["rest"]) == []
