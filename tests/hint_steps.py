"""What a hint names, and whether it exists on the surface that reads it.

A hint is actionable when it names at least one next step the reader can take on its surface
(``errors.py`` has the rules):

- an MCP tool (``get_metadata``) or method (``tools/list``) to an MCP client, a served route
  (``GET /api/v1/metadata``) to a REST client;
- an argument of a tool or a parameter of a route, as ``name=value`` (``mode=stt``) or after a
  verb (``give its path as url``, ``leave maxTokens out``);
- a setting from ``settings.SETTINGS``, for the user to set;
- repeating the same call, for one that was canceled or ran out of time;
- or the words "tell the user" with "do not retry", when nothing the caller does would help.

And it names nothing that does not exist there: no route to MCP, no tool to REST, no route that is
not served, no setting that is not read, no ``name=`` that is no argument.

``surfaces()`` reads each surface from the app itself (the OpenAPI document, ``tools/list``) once.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx
from mcp.client import Client

from vid2context.api import create_app
from vid2context.mcp import create_mcp
from vid2context.runtime import build_runtime
from vid2context.settings import SETTINGS, load_settings

__all__ = ["INPUT_CODES", "REST_ONLY", "Surface", "corrects", "problems", "steps_named", "surfaces"]

REST_ONLY = (
    "api/",
    "ui/app_assets.py",
    "autochapters/",
    "auth/",
    "integrations/",
    "jobs.py",
    "jobs_queued.py",
    "job_kinds.py",
    "job_units.py",
    "job_pieces.py",
    "cli.py",
    "cli_remote.py",
    "cli_frame.py",
    "remote.py",
    "library_put.py",
    "site.py",
    "site_files.py",
    "settings.py",
    "bots/",
)
"""Modules no MCP call runs (paths under the package): the REST app, the REST job queue (in process
and on the Worker's queue) and its kinds, the CLI (push, pull and sync included, and the PUT they
call), the docs site, the settings' help texts (the configuration page) and the chat bots (their
webhooks are REST routes)."""

INPUT_CODES = frozenset({"unsupported-input", "bad-request", "too-large", "not-found"})
"""The codes about what the caller sent: a hint that says how to send it right is a next step."""

SETTING_NAMES = frozenset(setting.env for setting in SETTINGS)
_TELL = re.compile(r"tell the user\b.*\bdo not\s+(?:retry|call again)", re.IGNORECASE | re.DOTALL)
_SETTING = re.compile(
    r"\b(?:VID2CONTEXT|GROQ|CLOUDFLARE|DEEPGRAM|NOTION|TELEGRAM|DISCORD|SLACK)_[A-Z0-9_]+\b"
)
_ROUTE = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) (/[^\s,;)`'\"]*[^\s,;)`'\".])")
_ASSIGN = re.compile(r"(?<![\w/.&?-])([a-zA-Z][a-zA-Z_]*)=(?!=)")
_VERB_ARG = re.compile(
    r"\b(?:give|pass|use|leave|with|as|add|send|set|fix|without|no|in|keep|put|choose|split)\s+"
    r"(?:the\s+|a\s+|an\s+|its\s+|each\s+)?`?([a-zA-Z][a-zA-Z_-]*)`?",
    re.IGNORECASE,
)
_CODE = re.compile(r"`[^`]*`")
_QUOTED = re.compile(r"`([a-zA-Z][a-zA-Z_-]*)`")
_HEADERS = frozenset(
    {"Authorization", "Content-Length", "Content-Type", "Last-Event-ID", "If-None-Match", "If-Match"}
)
"""Request headers are a REST call's arguments too."""
OAUTH_PARAMETERS = frozenset(
    {"grant_type", "code", "code_verifier", "redirect_uri", "client_id", "client_secret", "refresh_token"}
    | {"token", "resource", "scope", "state", "code_challenge", "code_challenge_method", "response_type"}
    | {"redirect_uris", "grant_types", "token_endpoint_auth_method", "client_name", "owner_key"}
)
"""The parameters of the OAuth endpoints (RFC 6749, 7591, 7009), which OpenAPI does not list."""
_AGAIN = re.compile(r"\brepeat (?:the|this|that) call\b|\bthe same call again\b", re.IGNORECASE)
"""Calling again is the step for a call that was canceled or ran out of time."""
_CORRECTION = re.compile(
    r"(?:^|[.;:]\s+|, or\s+)(?:Give|Use|Pass|Send|Remove|Check|Put|Leave|Split|Keep|Shorten|Compress|"
    r"Reduce|Move|Fix|Name|Start|Choose|Quote|Upload|Read|Make|List)\b",
    re.IGNORECASE,
)
"""An imperative telling the caller how to change what it sent (``Give a full URL ...``)."""
_RETRY = re.compile(r"(?<!not )\bretry\b", re.IGNORECASE)
_BOUNDED = re.compile(r"\bonce\b|retry-after|tell the user|\bwait\b|\bin a moment\b", re.IGNORECASE)
_TOOLISH = re.compile(r"\b(?:get|list|create|add|export|search|delete)_[a-z_]+\b")
_METHODS = {"tools/list", "resources/list", "resources/read", "prompts/list"}


@dataclass(frozen=True)
class Surface:
    name: str
    tools: frozenset[str] = frozenset()
    arguments: frozenset[str] = frozenset()
    routes: frozenset[tuple[str, str]] = frozenset()
    """``(METHOD, path template)`` with every path parameter written ``{}``."""
    settings: frozenset[str] = field(default=SETTING_NAMES)

    def serves(self, method: str, path: str) -> bool:
        template = re.sub(r"\{[^}]*\}|<[^>]*>", "{}", path.split("?", 1)[0])
        return (method, template) in self.routes


def _template(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def _schema_properties(schema: Any, components: dict[str, Any], depth: int = 0) -> set[str]:
    if not isinstance(schema, dict) or depth > 6:
        return set()
    if ref := schema.get("$ref"):
        return _schema_properties(components.get(ref.rsplit("/", 1)[-1]), components, depth + 1)
    names = set(schema.get("properties", {}))
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key, []):
            names |= _schema_properties(part, components, depth + 1)
    return names


async def _collect() -> dict[str, Surface]:
    runtime = build_runtime(load_settings({"VID2CONTEXT_ACCESS_LOG": "0"}))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t"
        ) as rest:
            document = (await rest.get("/api/v1/openapi.json")).json()
        async with Client(create_mcp(runtime)) as client:
            tools = (await client.list_tools()).tools
    finally:
        await runtime.aclose()
    components = document.get("components", {}).get("schemas", {})
    routes, parameters = set(), set()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            routes.add((method.upper(), _template(path)))
            parameters |= {p["name"] for p in operation.get("parameters", [])}
            for media in operation.get("requestBody", {}).get("content", {}).values():
                parameters |= _schema_properties(media.get("schema"), components)
    arguments = {name for tool in tools for name in tool.input_schema.get("properties", {})}
    # Served by the app beside the OpenAPI routes: the MCP endpoint and its server card, which the
    # HTTP transport's own answers name to the client software.
    routes |= {("POST", "/mcp"), ("GET", "/mcp/server-card")}
    # And the OAuth server (api/oauth.py), whose answers name its own endpoints and parameters.
    routes |= {("GET", "/oauth/authorize"), ("POST", "/oauth/authorize")}
    routes |= {("POST", f"/oauth/{name}") for name in ("register", "token", "revoke")}
    parameters |= OAUTH_PARAMETERS
    return {
        "rest": Surface("rest", arguments=frozenset(parameters | _HEADERS), routes=frozenset(routes)),
        "mcp": Surface(
            "mcp", tools=frozenset(t.name for t in tools) | _METHODS, arguments=frozenset(arguments)
        ),
    }


@functools.cache
def surfaces() -> dict[str, Surface]:
    """Both surfaces as this app serves them (read in a thread of its own, outside any loop)."""
    found: dict[str, dict[str, Surface]] = {}
    thread = threading.Thread(target=lambda: found.setdefault("x", asyncio.run(_collect())))
    thread.start()
    thread.join()
    return found["x"]


def steps_named(hint: str, surface: Surface) -> list[str]:
    """The next steps ``hint`` names that exist on ``surface``."""
    found = []
    if _TELL.search(hint):
        found.append("tell the user, do not retry")
    if _AGAIN.search(hint):
        found.append("repeat the call")
    found += [name for name in _SETTING.findall(hint) if name in surface.settings]
    found += [f"{m} {p}" for m, p in _ROUTE.findall(hint) if surface.serves(m, p)]
    found += [tool for tool in surface.tools if re.search(rf"(?<![\w/]){re.escape(tool)}\b", hint)]
    found += [f"{name}=" for name in _ASSIGN.findall(hint) if name in surface.arguments]
    found += [f"argument {name}" for name in _VERB_ARG.findall(hint) if name in surface.arguments]
    found += [f"argument {name}" for name in _QUOTED.findall(hint) if name in surface.arguments]
    return found


def corrects(hint: str) -> bool:
    """Whether ``hint`` tells the caller how to change what it sent (for ``INPUT_CODES``)."""
    return bool(_CORRECTION.search(hint))


def problems(hint: str | None, surface: Surface, *, code: str | None = None) -> list[str]:
    """What is wrong with ``hint`` on ``surface``: empty when it names a step and nothing unreal.

    A hint for one of ``INPUT_CODES`` (or of no known code) may instead say how to send the input
    right. "Retry" is bounded: once, after a wait, or with what to tell the user if it fails again.
    """
    if not hint:
        return ["no hint"]
    wrong = [f"setting {name} is not read" for name in _SETTING.findall(hint) if name not in surface.settings]
    routes = _ROUTE.findall(hint)
    if surface.name == "mcp":
        wrong += [f"route {m} {p} named to an MCP client" for m, p in routes]
        wrong += [
            f"tool {name} does not exist" for name in _TOOLISH.findall(hint) if name not in surface.tools
        ]
    else:
        wrong += [f"route {m} {p} is not served" for m, p in routes if not surface.serves(m, p)]
        tools = surfaces()["mcp"].tools - _METHODS
        wrong += [f"tool {name} named to a REST client" for name in _TOOLISH.findall(hint) if name in tools]
    wrong += [
        f"{name}= is no argument here"
        for name in _ASSIGN.findall(_CODE.sub("", hint))  # a `command` is the user's to run
        if name not in surface.arguments and name not in surface.settings
    ]
    if not steps_named(hint, surface) and not ((code is None or code in INPUT_CODES) and corrects(hint)):
        wrong.append("names no step")
    if _RETRY.search(hint) and not _BOUNDED.search(hint):
        wrong.append("an unbounded retry")
    return wrong
