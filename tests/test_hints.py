"""Hints name the next step on the surface that asked: tools to MCP clients, routes to REST ones.

Three checks:

- the source: every string in a module an MCP call can reach that names a REST route
  (``/api/v1``) is a docstring or the REST half of a hint (``per_surface(rest=...)``, the ``STEPS``
  table); the REST-only modules may name routes freely, but their hints name no MCP tool;
- ``STEPS``: every route it names is served by the app, every tool by the MCP server;
- the wire: the same failures over MCP and over REST answer a hint for each.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.errors import STEPS, VidError, on_surface, per_surface, steps
from vid2context.mcp import create_mcp
from vid2context.runtime import Runtime

from .runtimes import Runtimes
from .test_mcp_tools import LONG, TOOLS, error_of, json_block, long_context
from .youtube_replay import httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "vid2context"
REST_ONLY = (
    "api/",
    "jobs.py",
    "job_kinds.py",
    "cli.py",
    "site.py",
    "site_files.py",
    "settings.py",
    "auth/signin.py",
)
"""Modules no MCP call runs: the REST app, the REST job queue and its kinds, the CLI, the docs site,
the settings' help texts (the configuration page) and hosted mode's GitHub sign-in (browsers only)."""
_TOOL = re.compile(r"\b(" + "|".join(sorted(TOOLS)) + r")\b")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            # a docstring, and the string just after an assignment (how this code documents names)
            for i, statement in enumerate(body):
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    if i == 0 or isinstance(body[i - 1], (ast.Assign, ast.AnnAssign)):
                        found.add(id(statement.value))
    return found


def _rest_halves(tree: ast.AST) -> set[int]:
    """Strings that are the REST half of a per-surface hint (``rest=`` of ``per_surface``) or a
    route of ``STEPS``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "rest":
            found |= {id(n) for n in ast.walk(node.value)}
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "STEPS"
        ):
            for value in node.value.values:  # type: ignore[union-attr]
                found |= {id(n) for n in ast.walk(value.elts[0])}  # type: ignore[attr-defined]
    return found


def _strings(tree: ast.AST) -> list[ast.Constant]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _modules() -> list[tuple[str, ast.AST]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def test_no_string_an_mcp_call_can_reach_names_a_rest_route() -> None:
    offenders = []
    for name, tree in _modules():
        if name.startswith(REST_ONLY):
            continue
        allowed = _docstrings(tree) | _rest_halves(tree)
        for node in _strings(tree):
            if "/api/v1" in node.value and id(node) not in allowed:
                offenders.append(f"{name}:{node.lineno}: {node.value[:80]!r}")
    assert offenders == [], "\n".join(offenders)


def test_rest_hints_name_no_mcp_tool() -> None:
    """The REST half of a hint, every hint of a REST-only module, and every one-text hint of the
    core (which REST clients read too) name no MCP tool."""
    offenders = []
    for name, tree in _modules():
        rest_only = name.startswith(REST_ONLY)
        shared = not rest_only and not name.startswith("mcp/")
        for node in ast.walk(tree):
            texts: list[ast.AST] = []
            if isinstance(node, ast.keyword) and node.arg == "rest":
                texts = [node.value]
            elif isinstance(node, ast.keyword) and node.arg == "hint" and (rest_only or shared):
                texts = [] if isinstance(node.value, ast.Call) else [node.value]  # steps(), per_surface()
            elif (
                (rest_only or shared)
                and isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "_bad"
            ):
                texts = [a for a in node.args[1:2] if not isinstance(a, ast.Call)]  # _bad(message, hint)
            for text in texts:
                for string in _strings(text):
                    if _TOOL.search(string.value):
                        offenders.append(f"{name}:{string.lineno}: {string.value[:80]!r}")
    assert offenders == [], "\n".join(offenders)


async def test_every_step_is_a_real_route_and_a_real_tool(runtime: Runtime) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t"
    ) as rest:
        paths = (await rest.get("/api/v1/openapi.json")).json()["paths"]
    async with Client(create_mcp(runtime)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name, (route, step) in STEPS.items():
        method, target = route.split(" ", 1)
        path, _, query = target.partition("?")
        template = re.sub(r"\{[^}]+\}", "{collection_id}", path)
        operation = paths.get(template, paths.get(path, {})).get(method.lower())
        assert operation is not None, (name, route)
        for parameter in filter(None, (pair.split("=")[0] for pair in query.split("&"))):
            assert parameter in {p["name"] for p in operation.get("parameters", [])}, (name, route)
        tool, _, argument = step.partition(" with ")  # "list_models with kind=embed"
        assert tool in tools or tool == "resources/list", (name, step)
        if argument:
            assert argument.split("=")[0] in tools[tool].input_schema["properties"], (name, step)


def test_a_hint_renders_for_the_surface_that_reads_it() -> None:
    error = VidError("not-found", "gone", hint=steps("See {collections}."))
    assert error.hint == "See GET /api/v1/collections."  # REST unless a call says otherwise
    with on_surface("mcp"):
        assert error.hint == "See list_collections."
        copied = VidError(error.code, error.message, hint=error.hints)
    assert (
        copied.hint_for("rest") == "See GET /api/v1/collections."
        and copied.hint_for("mcp") == "See list_collections."
    )
    plain = VidError("bad-request", "x", hint="Same everywhere.")
    assert plain.hint_for("mcp") == plain.hint_for("rest") == "Same everywhere."
    assert VidError("bad-request", "x").hint is None
    assert per_surface(rest="r", mcp="m") == {"rest": "r", "mcp": "m"}


# --- on the wire ------------------------------------------------------------------------------------


@pytest.fixture
async def runtime(httpx_mock: Any, runtimes: Runtimes) -> Runtime:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    rt = await runtimes.build(
        {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0", "VID2CONTEXT_PUBLIC": "1"}
    )
    await rt.storage.put_context(long_context())
    return rt


CASES = [
    # (MCP tool and arguments, REST method, path and body, what MCP's hint names, what REST's names)
    (("get_collection", {"collection": "nope"}), ("GET", "/api/v1/collections/nope", None), "list_collections", "GET /api/v1/collections"),
    (("get_section", {"url": LONG, "chapter": 99}), ("GET", f"/api/v1/section?url={LONG}&chapter=99", None), "get_outline", "GET /api/v1/outline"),
    (("get_transcript", {"url": "/home/me/talk.mp4"}), ("GET", "/api/v1/transcript?url=/home/me/talk.mp4", None), "public URL", "POST /api/v1/uploads"),
    (("get_transcript", {"url": "upload:abc"}), ("GET", "/api/v1/transcript?url=upload:abc", None), "upload:<sha256>", "POST /api/v1/uploads"),
    (("create_collection", {"name": "x", "sources": [LONG]}), ("POST", "/api/v1/collections", {"name": "x", "sources": [LONG]}), "add_to_collection", "POST /api/v1/collections/{id}/items"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mcp_call", "rest_call", "mcp_names", "rest_names"), CASES, ids=[c[0][0] + "-" + c[3] for c in CASES]
)
async def test_the_same_failure_hints_a_tool_over_mcp_and_a_route_over_rest(
    runtime: Runtime, mcp_call: Any, rest_call: Any, mcp_names: str, rest_names: str
) -> None:
    async with Client(create_mcp(runtime)) as client:
        body = error_of(await client.call_tool(*mcp_call))
    assert mcp_names in body["hint"] and "/api/" not in body["hint"], body
    method, path, payload = rest_call
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t"
    ) as rest:
        response = await rest.request(method, path, json=payload)
    error = response.json()["error"]
    assert body["error"] == error["code"] and rest_names in error["hint"], error
    assert not _TOOL.search(error["hint"]), error


async def test_hints_copied_into_a_summary_name_tools_over_mcp(runtime: Runtime) -> None:
    async with Client(create_mcp(runtime)) as client:
        created = json_block(await client.call_tool("create_collection", {"name": "Mixed"}))
        args = {"collection": created["collection"]["id"], "urls": [LONG, "/home/me/talk.mp4"]}
        summary = json_block(await client.call_tool("add_to_collection", args))["summary"]
    (failed,) = summary["failed"]
    assert failed["code"] == "unsupported-input" and failed["hint"] and "/api/" not in failed["hint"]
    assert json.dumps(summary).count("/api/") == 0
