"""Build the docs site in ``site/``: Markdown pages, their HTML twins, ``llms.txt`` and ``llms-full.txt``.

    .venv/bin/python scripts/build_site.py [--out DIR]      (``make site``)

Sources, all in ``site/_src/`` (underscore: not served, not uploaded):

    <page>.md      the hand-written pages, one per entry of ``site.toml``
    site.toml      page order, nav labels and descriptions, llms.txt's summary, and the words the
                   generated tables need (error meanings, Worker secrets, MCP client files)
    page.html      the one HTML template (``string.Template``), CSS inline, no JavaScript

A page marks each generated part with a line of its own, ``<!-- generate: NAME -->``:

    api            the REST reference, from the OpenAPI document the app serves
                   (``create_app(...)``, ``GET /api/v1/openapi.json``)
    mcp            tools, prompts, resource templates and instructions, read from
                   ``create_mcp(runtime)`` through the SDK's in-process ``Client``
    configuration  every environment variable, from ``settings.SETTINGS``
    errors         every error code and its status, from ``errors.STATUS_BY_CODE``
    mcp-clients    the client configurations in ``local/mcp/``

Everything in ``site/`` outside ``_src/`` is written here and starts with a comment saying so: edit
the sources (or the code the generated parts come from), then rebuild. ``tests/test_site.py``
builds into a temporary folder and fails when the committed files differ.

The output is deterministic: the same sources and the same app give byte-identical files (no
dates, sorted where the inputs have no order of their own). Links between pages are absolute and
extensionless (``/quick-start``); the server answers the HTML twin to browsers and the Markdown
twin to ``Accept: text/markdown`` (``src/vid2context/site.py``). Markdown is rendered by
markdown-it-py (CommonMark plus tables, raw HTML off); headings get ids from ``slugify``.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import re
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
SOURCES = SITE / "_src"
NAME = "vid2context"

__all__ = [
    "PAGES",
    "Inputs",
    "Page",
    "build",
    "collect",
    "heading_ids",
    "main",
    "markdown_links",
    "render_markdown",
    "slugify",
]


# --- the pages ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    slug: str
    """File name without extension: ``site/<slug>.md`` and ``site/<slug>.html``."""
    nav: str
    """Label in the navigation and in llms.txt."""
    description: str
    """One sentence for llms.txt and ``<meta name="description">``."""
    in_nav: bool = True
    """False for the 404 page: not in the navigation, llms.txt or llms-full.txt."""

    @property
    def url(self) -> str:
        return "/" if self.slug == "index" else f"/{self.slug}"

    @property
    def markdown_url(self) -> str:
        return f"/{self.slug}.md"


CONFIG_FILE = SOURCES / "site.toml"
"""The site's own data: pages and their order, llms.txt's summary, the error table's words, which
settings are Worker secrets, and the MCP client files to show."""
CONFIG: dict[str, Any] = tomllib.loads(CONFIG_FILE.read_text(encoding="utf-8"))
PAGES: tuple[Page, ...] = tuple(Page(**entry) for entry in CONFIG["pages"])
SUMMARY: str = CONFIG["summary"]

MARKER = re.compile(r"^<!-- generate: ([a-z-]+) -->$", re.MULTILINE)


# --- Markdown ----------------------------------------------------------------------------------------


def slugify(text: str) -> str:
    """The id of a heading: lower case, every run of other characters one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _heading_text(inline: Any) -> str:
    return "".join(
        child.content for child in (inline.children or []) if child.type in ("text", "code_inline")
    )


def _add_heading_ids(state: StateCore) -> None:
    seen: dict[str, int] = {}
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        slug = slugify(_heading_text(tokens[index + 1]))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        token.attrSet("id", slug if count == 0 else f"{slug}-{count + 1}")


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.core.ruler.push("heading_ids", _add_heading_ids)
    return md


_MD = _markdown()


def render_markdown(text: str) -> str:
    """HTML for a page's Markdown."""
    return _MD.render(text)


def heading_ids(text: str) -> list[str]:
    """The ids the page's headings get (the ``#anchors`` a link may name)."""
    tokens = _MD.parse(text)
    return [t.attrGet("id") for t in tokens if t.type == "heading_open"]  # type: ignore[misc]


def markdown_links(text: str) -> list[str]:
    """Every link target in ``text`` (links and images), in order."""
    found: list[str] = []

    def walk(tokens: Iterable[Any]) -> None:
        for token in tokens:
            if token.type == "link_open":
                found.append(str(token.attrGet("href")))
            elif token.type == "image":
                found.append(str(token.attrGet("src")))
            if token.children:
                walk(token.children)

    walk(_MD.parse(text))
    return found


def cell(text: object) -> str:
    """Text for a table cell: one line, pipes escaped, no accidental links or emphasis."""
    return prose(" ".join(str(text).split())).replace("|", "\\|")


def prose(text: str) -> str:
    """Text from the code (docstrings, descriptions) made safe to paste into Markdown.

    The code writes ``[m:ss](link)`` meaning the shape of a citation, not a link, and RST's
    double backticks; neither should render as written.
    """
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    text = text.replace("](", "]\\(").replace("*", "\\*")
    return re.sub(r"^(\s*)#", r"\1\\#", text, flags=re.MULTILINE)


def paragraphs(text: str) -> str:
    """A description as Markdown paragraphs: lines stripped, blank lines kept."""
    lines = [line.strip() for line in text.strip().splitlines()]
    return prose("\n".join(lines))


def code(text: object) -> str:
    """An inline code span that survives any backticks inside."""
    value = str(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", flat)
    return match.group(1) if match else flat


# --- inputs: what the generated parts are made from ---------------------------------------------------


@dataclass
class Inputs:
    """Everything the generated parts are made from, read from the running code once."""

    openapi: dict[str, Any]
    tools: list[dict[str, Any]]
    prompts: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    instructions: str
    settings: list[Any] = field(default_factory=list)


async def _openapi() -> dict[str, Any]:
    import httpx

    from vid2context.api import create_app
    from vid2context.runtime import build_runtime
    from vid2context.settings import load_settings

    runtime = build_runtime(load_settings({"VID2CONTEXT_ACCESS_LOG": "0"}), http=httpx.AsyncClient())
    try:
        transport = httpx.ASGITransport(app=create_app(runtime))
        async with httpx.AsyncClient(transport=transport, base_url="http://docs") as client:
            response = await client.get("/api/v1/openapi.json")
        response.raise_for_status()
        return response.json()
    finally:
        await runtime.aclose()


async def _mcp_catalog() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], str]:
    import httpx
    from mcp.client import Client

    from vid2context.mcp.server import create_mcp
    from vid2context.runtime import build_runtime
    from vid2context.settings import load_settings

    def dump(items: Iterable[Any]) -> list[dict[str, Any]]:
        return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]

    runtime = build_runtime(load_settings({}), http=httpx.AsyncClient())
    try:
        async with Client(create_mcp(runtime)) as client:
            tools: list[Any] = []
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    break
            prompts = (await client.list_prompts()).prompts
            templates = (await client.list_resource_templates()).resource_templates
            instructions = client.instructions or ""
        return dump(tools), dump(prompts), dump(templates), instructions
    finally:
        await runtime.aclose()


def collect() -> Inputs:
    """Read the OpenAPI document, the MCP catalog and the settings from the code, offline."""
    from vid2context.settings import SETTINGS

    openapi = asyncio.run(_openapi())
    tools, prompts, templates, instructions = asyncio.run(_mcp_catalog())
    return Inputs(openapi, tools, prompts, templates, instructions, list(SETTINGS))


# --- generated: the REST reference --------------------------------------------------------------------

METHODS = ("get", "post", "put", "patch", "delete", "head", "options", "trace")
API_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Videos", ("context", "transcript", "metadata", "outline", "section", "items", "comments", "formats")),
    ("Packs and bundles", ("pack", "bundle")),
    ("Library", ("library",)),
    ("Collections", ("collections",)),
    ("Uploads", ("uploads",)),
    ("Jobs", ("jobs",)),
    ("Service", ("health", "models", "openapi.json")),
)
"""How the reference groups routes, by the first path segment after ``/api/v1/``; a segment not
listed here lands in "Other routes", so a new route is documented before anyone sorts it."""


def _schema_names(components: Mapping[str, Any]) -> dict[str, str]:
    """Component key -> the name shown: its ``title`` when that is unique, else the key."""
    titles = [schema.get("title") for schema in components.values()]
    names = {}
    for key, schema in components.items():
        title = schema.get("title")
        names[key] = title if title and titles.count(title) == 1 else key
    return names


class _Types:
    """Short Markdown for a JSON Schema: ``string``, ``integer (1 to 200)``, links to schemas."""

    def __init__(self, names: Mapping[str, str], link: bool = True) -> None:
        self.names = names
        self.link = link

    def __call__(self, schema: Any, *, drop_null: bool = False) -> str:
        if not isinstance(schema, dict) or not schema:
            return "any"
        if "$ref" in schema:
            key = schema["$ref"].rsplit("/", 1)[-1]
            name = self.names.get(key, key)
            return f"[{code(name)}](#{slugify(name)})" if self.link else code(name)
        for combiner in ("oneOf", "anyOf"):
            if combiner in schema:
                parts = [s for s in schema[combiner] if not (drop_null and s.get("type") == "null")]
                rendered = [self(part) for part in parts] or ["null"]
                return self._limits(" or ".join(dict.fromkeys(rendered)), schema)
        if "const" in schema:
            return code(json.dumps(schema["const"]))
        if "enum" in schema:
            values = [v for v in schema["enum"] if not (drop_null and v is None)]
            return "one of " + ", ".join(code(json.dumps(v) if v is None else v) for v in values)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if not (drop_null and k == "null")]
            return self._limits(" or ".join(self._one({**schema, "type": k}) for k in kinds), schema)
        return self._one(schema)

    def _one(self, schema: dict[str, Any]) -> str:
        kind = schema.get("type")
        if kind == "array":
            return self._limits("array of " + self(schema.get("items", {})), schema)
        if kind is None:
            return "any"
        text = str(kind)
        if "format" in schema:
            text += f" ({schema['format']})"
        return self._limits(text, schema)

    @staticmethod
    def _limits(text: str, schema: dict[str, Any]) -> str:
        low = schema.get("minimum", schema.get("minLength", schema.get("minItems")))
        high = schema.get("maximum", schema.get("maxLength", schema.get("maxItems")))
        unit = ""
        if "minLength" in schema or "maxLength" in schema:
            unit = " characters"
        elif "minItems" in schema or "maxItems" in schema:
            unit = " items"
        if low is not None and high is not None:
            return f"{text}, {low} to {high}{unit}"
        if low is not None:
            return f"{text}, at least {low}{unit}"
        if high is not None:
            return f"{text}, at most {high}{unit}"
        return text


def _operations(doc: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    ops = []
    for path, item in doc.get("paths", {}).items():
        for method in METHODS:
            if isinstance(item.get(method), dict):
                ops.append((method.upper(), path, item[method]))
    return ops


def _group_of(path: str) -> tuple[int, str, int]:
    segment = path.removeprefix("/api/v1/").split("/", 1)[0]
    for number, (title, segments) in enumerate(API_GROUPS):
        if segment in segments:
            return number, title, segments.index(segment)
    return len(API_GROUPS), "Other routes", 0


def _operation_key(op: tuple[str, str, dict[str, Any]]) -> tuple[Any, ...]:
    method, path, _ = op
    group, _title, position = _group_of(path)
    return group, position, path, METHODS.index(method.lower())


def _description(operation: Mapping[str, Any]) -> str:
    text = operation.get("description") or operation.get("summary") or ""
    return paragraphs(text)


def _status_sort(status: str) -> tuple[int, str]:
    return (int(status), "") if status.isdigit() else (1000, status)


def api_reference(doc: Mapping[str, Any]) -> str:
    components = doc.get("components", {}).get("schemas", {})
    names = _schema_names(components)
    types = _Types(names)
    ops = sorted(_operations(doc), key=_operation_key)
    out: list[str] = []

    out.append("## Routes\n")
    rows = []
    for method, path, operation in ops:
        anchor = slugify(f"{method} {path}")
        rows.append(
            [f"[{code(method + ' ' + path)}](#{anchor})", cell(first_sentence(_description(operation)))]
        )
    out.append(table(["Route", "What it answers"], rows) + "\n")

    current_group = None
    for method, path, operation in ops:
        _number, group, _position = _group_of(path)
        if group != current_group:
            out.append(f"## {group}\n")
            current_group = group
        out.append(f"### {method} {path}\n")
        description = _description(operation)
        if description:
            out.append(description + "\n")
        if operation.get("security") == []:
            out.append("Open: no API key needed, even when keys are set.\n")
        out.extend(_parameters(operation, types))
        out.extend(_request_body(operation, types))
        out.extend(_responses(operation, types))

    out.append("## Schemas\n")
    out.append(
        "The shapes the routes above take and answer, as the OpenAPI document names them. "
        "Field names are camelCase on the wire.\n"
    )
    for key in sorted(components, key=lambda k: names[k].lower()):
        out.extend(_schema_section(names[key], components[key], types))
    return "\n".join(out).rstrip() + "\n"


def _parameters(operation: Mapping[str, Any], types: _Types) -> list[str]:
    params = operation.get("parameters") or []
    if not params:
        return []
    rows = []
    for param in params:
        schema = param.get("schema", {})
        kind = types(schema, drop_null=True)
        if "default" in schema and schema["default"] is not None:
            kind += f", default {code(json.dumps(schema['default']))}"
        rows.append(
            [
                code(param["name"]),
                param.get("in", ""),
                kind,
                "yes" if param.get("required") else "no",
                cell(param.get("description") or schema.get("description") or ""),
            ]
        )
    return ["**Parameters**\n", table(["Name", "In", "Type", "Required", "Description"], rows) + "\n"]


def _request_body(operation: Mapping[str, Any], types: _Types) -> list[str]:
    body = operation.get("requestBody")
    if not body:
        return []
    parts = []
    for media, content in sorted(body.get("content", {}).items()):
        parts.append(f"{code(media)}: {types(content.get('schema', {}))}")
    required = "required" if body.get("required") else "optional"
    return [f"**Request body** ({required}): " + "; ".join(parts) + "\n"]


def _sentence(text: str) -> str:
    text = cell(text).rstrip(". ")
    return text + "." if text else ""


def _response_text(response: Mapping[str, Any]) -> str:
    details = _sentence(response.get("description", ""))
    headers = [
        f"{code(name)} ({cell(header.get('description', '')).rstrip('.') or 'no description'})"
        for name, header in sorted((response.get("headers") or {}).items())
    ]
    if headers:
        details += " Headers: " + ", ".join(headers) + "."
    return details


def _is_error_body(response: Mapping[str, Any]) -> bool:
    contents = list((response.get("content") or {}).values())
    return len(contents) == 1 and contents[0].get("schema", {}).get("$ref", "").endswith("/ErrorBody")


def _responses(operation: Mapping[str, Any], types: _Types) -> list[str]:
    rows, errors = [], []
    for status in sorted(operation.get("responses", {}), key=_status_sort):
        response = operation["responses"][status]
        if (not status.isdigit() or int(status) >= 400) and _is_error_body(response):
            errors.append(f"- {code(status)}: {_response_text(response)}")
            continue
        contents = [
            f"{code(media)} {types(content['schema'])}" if content.get("schema") else code(media)
            for media, content in sorted((response.get("content") or {}).items())
        ]
        rows.append([code(status), "; ".join(contents) or "no body", _response_text(response)])
    out = []
    if rows:
        out += ["**Responses**\n", table(["Status", "Body", "Description"], rows) + "\n"]
    if errors:
        out += ["**Errors**, each with an [`ErrorBody`](#errorbody):\n", "\n".join(errors) + "\n"]
    return out


def _schema_section(name: str, schema: Mapping[str, Any], types: _Types) -> list[str]:
    out = [f"### {name}\n"]
    if schema.get("description"):
        out.append(paragraphs(schema["description"]) + "\n")
    properties = schema.get("properties")
    if properties:
        required = set(schema.get("required", []))
        rows = []
        for prop in sorted(properties):
            spec = properties[prop]
            kind = types(spec)
            if "default" in spec:
                kind += f", default {code(json.dumps(spec['default']))}"
            rows.append(
                [code(prop), kind, "yes" if prop in required else "no", cell(spec.get("description", ""))]
            )
        if any(row[-1] for row in rows):
            out.append(table(["Field", "Type", "Required", "Description"], rows) + "\n")
        else:
            out.append(table(["Field", "Type", "Required"], [row[:-1] for row in rows]) + "\n")
    else:
        out.append(
            f"Type: {types({k: v for k, v in schema.items() if k not in ('title', 'description')})}.\n"
        )
    return out


# --- generated: the MCP catalog ------------------------------------------------------------------------


def _annotations(tool: Mapping[str, Any]) -> str:
    notes = tool.get("annotations") or {}
    said = []
    said.append("read-only" if notes.get("readOnlyHint") else "writes")
    if notes.get("destructiveHint") is False:
        said.append("not destructive")
    if notes.get("idempotentHint"):
        said.append("idempotent")
    said.append("reaches the internet" if notes.get("openWorldHint") else "local data only")
    if tool.get("outputSchema"):
        said.append("structured output")
    return ", ".join(said)


def _output_types(schema: Mapping[str, Any]) -> list[str]:
    refs = [part.get("$ref", "") for part in schema.get("anyOf", schema.get("oneOf", [schema]))]
    return [ref.rsplit("/", 1)[-1] for ref in refs if ref]


def mcp_reference(inputs: Inputs) -> str:
    types = _Types({}, link=False)
    out = ["### Tools\n"]
    rows = [
        [f"[{code(t['name'])}](#{slugify(t['name'])})", cell(first_sentence(t.get("description", "")))]
        for t in inputs.tools
    ]
    out.append(table(["Tool", "What it does"], rows) + "\n")
    for tool in inputs.tools:
        title = (tool.get("annotations") or {}).get("title") or tool.get("title") or ""
        out.append(f"#### {tool['name']}\n")
        out.append(f"*{prose(title)}*: {_annotations(tool)}.\n" if title else f"{_annotations(tool)}.\n")
        out.append(paragraphs(tool.get("description", "")) + "\n")
        schema = tool.get("inputSchema", {})
        properties = schema.get("properties", {})
        if properties:
            required = set(schema.get("required", []))
            prop_rows = []
            for name, spec in properties.items():
                kind = types(spec, drop_null=True)
                default = ""
                if name not in required and spec.get("default") is not None:
                    default = code(json.dumps(spec["default"]))
                prop_rows.append(
                    [
                        code(name),
                        kind,
                        "yes" if name in required else "no",
                        default,
                        cell(spec.get("description", "")),
                    ]
                )
            out.append(table(["Argument", "Type", "Required", "Default", "Description"], prop_rows) + "\n")
        else:
            out.append("No arguments.\n")
        if tool.get("outputSchema"):
            shapes = _output_types(tool["outputSchema"])
            named = " or ".join(code(s) for s in shapes) if shapes else "an object"
            out.append(
                f"Structured: the result's `structuredContent` is {named}, as its `outputSchema` "
                "declares, and the same JSON is the text content.\n"
            )

    out.append("### Prompts\n")
    rows = []
    for prompt in inputs.prompts:
        args = [
            code(a["name"]) + (" (required)" if a.get("required") else "")
            for a in prompt.get("arguments", [])
        ]
        rows.append(
            [
                code(prompt["name"]),
                cell(prompt.get("title", "")),
                ", ".join(args) or "none",
                cell(prompt.get("description", "")),
            ]
        )
    out.append(table(["Prompt", "Title", "Arguments", "What it asks for"], rows) + "\n")
    arg_rows = [
        [code(prompt["name"]), code(arg["name"]), cell(arg.get("description", ""))]
        for prompt in inputs.prompts
        for arg in prompt.get("arguments", [])
    ]
    if arg_rows:
        out.append(table(["Prompt", "Argument", "Meaning"], arg_rows) + "\n")

    out.append("### Resources\n")
    rows = [
        [code(t["uriTemplate"]), code(t.get("mimeType", "")), cell(t.get("description", ""))]
        for t in inputs.templates
    ]
    out.append(table(["URI template", "Type", "Content"], rows) + "\n")

    out.append("### Instructions\n")
    out.append(
        "What the server tells every client when it connects (`instructions` in the `initialize` result):\n"
    )
    out.append(_fence(inputs.instructions, "text"))
    return "\n".join(out).rstrip() + "\n"


def _fence(text: str, info: str) -> str:
    ticks = "`" * max(3, max((len(run) + 1 for run in re.findall(r"`+", text)), default=3))
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}\n"


# --- generated: configuration --------------------------------------------------------------------------

WORKER_SECRETS: tuple[str, ...] = tuple(CONFIG["worker"]["secrets"])
LOCAL_ONLY: tuple[str, ...] = tuple(CONFIG["worker"]["local_only"])

_KINDS = {"str": "string", "int": "integer", "bool": "boolean", "path": "path"}


def _default(setting: Any) -> str:
    value = setting.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return code("1" if value else "0")
    return code(value)


def configuration_reference(settings: list[Any]) -> str:
    known = {s.env for s in settings}
    unknown = sorted((set(WORKER_SECRETS) | set(LOCAL_ONLY)) - known)
    if unknown:
        raise SystemExit(f"build_site: [worker] in site/_src/site.toml names unknown settings: {unknown}")
    rows = []
    for setting in settings:
        where = (
            "secret"
            if setting.env in WORKER_SECRETS
            else "local only"
            if setting.env in LOCAL_ONLY
            else "var"
        )
        rows.append(
            [
                code(setting.env),
                _KINDS.get(setting.kind, setting.kind),
                _default(setting),
                where,
                cell(setting.help),
            ]
        )
    out = [table(["Variable", "Type", "Default", "On the Worker", "What it does"], rows) + "\n"]
    out.append(
        "Booleans take `1`, `true`, `yes` or `on`, and `0`, `false`, `no`, `off` or empty. Whole "
        "numbers may use `_` between digits (`300_000`) and are never negative. A malformed value "
        "stops start-up with a `bad-request` naming the variable; it never falls back to the default.\n"
    )
    out.append("### On the Worker\n")
    out.append(
        "Secrets, set with `npx wrangler secret put NAME` (never in `wrangler.toml`): "
        + ", ".join(code(name) for name in WORKER_SECRETS)
        + ".\n"
    )
    out.append(
        "Read only by the local runtime (files, subprocesses, the local model, the Workers AI REST rung; "
        "the Worker uses its `AI` binding instead): " + ", ".join(code(name) for name in LOCAL_ONLY) + ".\n"
    )
    out.append(
        "Every other variable is a plain setting: put it under `[vars]` in `wrangler.toml`, where "
        '`VID2CONTEXT_PUBLIC = "1"` already is.\n'
    )
    return "\n".join(out).rstrip() + "\n"


# --- generated: error codes and MCP client configurations ---------------------------------------------

ERROR_MEANINGS: dict[str, str] = CONFIG["errors"]


def error_table() -> str:
    from vid2context.errors import STATUS_BY_CODE, ErrorCode

    missing = sorted(code.value for code in ErrorCode if code.value not in ERROR_MEANINGS)
    extra = sorted(set(ERROR_MEANINGS) - {code.value for code in ErrorCode})
    if missing or extra:
        raise SystemExit(f"build_site: [errors] in site/_src/site.toml: missing {missing}, unknown {extra}")
    rows = [
        [code(error.value), str(STATUS_BY_CODE[error]), ERROR_MEANINGS[error.value]]
        for error in sorted(ErrorCode, key=lambda e: (STATUS_BY_CODE[e], list(ErrorCode).index(e)))
    ]
    return table(["Code", "Status", "What happened"], rows) + "\n"


MCP_CLIENTS: tuple[tuple[str, str, str], ...] = tuple(
    (entry["file"], entry["client"], entry["where"]) for entry in CONFIG["mcp_clients"]
)

MCP_CONFIGS = ROOT / "local" / "mcp"


def mcp_clients(configs: Path = MCP_CONFIGS) -> str:
    present = sorted(path.name for path in configs.glob("*.json"))
    listed = [name for name, _client, _where in MCP_CLIENTS]
    if sorted(listed) != present:
        raise SystemExit(
            f"build_site: site.toml's [[mcp_clients]] list {sorted(listed)}, local/mcp/ has {present}"
        )
    out = []
    for name, client, where in MCP_CLIENTS:
        out.append(f"#### {client}\n")
        out.append(f"`local/mcp/{name}`. {where}\n")
        out.append(_fence((configs / name).read_text(encoding="utf-8"), "json"))
    return "\n".join(out).rstrip() + "\n"


GENERATORS: dict[str, tuple[str, Callable[[Inputs], str]]] = {
    "errors": ("vid2context.errors.STATUS_BY_CODE", lambda i: error_table()),
    "mcp-clients": ("local/mcp/*.json", lambda i: mcp_clients()),
    "api": ("the OpenAPI document the app serves", lambda i: api_reference(i.openapi)),
    "mcp": ("the MCP server's tools/list, prompts/list and resources/templates/list", mcp_reference),
    "configuration": ("settings.SETTINGS", lambda i: configuration_reference(i.settings)),
}


# --- assembling ----------------------------------------------------------------------------------------


def page_markdown(page: Page, source: str, inputs: Inputs) -> tuple[str, list[str]]:
    """The page's Markdown with its generated parts filled in, and what they came from."""
    used: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise SystemExit(f"build_site: site/_src/{page.slug}.md asks for unknown part {name!r}")
        what, make = GENERATORS[name]
        used.append(what)
        return make(inputs).rstrip("\n")

    text = MARKER.sub(fill, source)
    if "<!--" in text:
        raise SystemExit(f"build_site: site/_src/{page.slug}.md has an HTML comment the build does not know")
    if not text.startswith("# "):
        raise SystemExit(f"build_site: site/_src/{page.slug}.md must start with its '# Title'")
    return text.rstrip("\n") + "\n", used


def _notice(page: Page, used: list[str]) -> str:
    made = f"site/_src/{page.slug}.md" + "".join(f" and {what}" for what in used)
    return f"Generated by scripts/build_site.py from {made}. Edit the sources and rebuild (make site), not this file."


def title_of(markdown: str) -> str:
    return markdown.split("\n", 1)[0].removeprefix("# ").strip()


TEMPLATE = SOURCES / "page.html"
"""The one HTML template (``string.Template``: ``$title``, ``$nav``, ``$body``, ...), CSS inline."""


def page_html(page: Page, markdown: str, notice: str, template: str) -> str:
    title = title_of(markdown)
    current = ' aria-current="page"'
    nav = [
        f'<li><a href="{other.url}"{current if other.slug == page.slug else ""}>{html.escape(other.nav)}</a></li>'
        for other in PAGES
        if other.in_nav
    ]
    return Template(template).substitute(
        notice=html.escape(notice, quote=False),
        title=html.escape(NAME if page.slug == "index" else f"{title} · {NAME}"),
        description=html.escape(page.description),
        markdown_url=page.markdown_url,
        nav="\n".join(nav),
        body=render_markdown(markdown).rstrip("\n"),
    )


def llms_txt(pages: list[Page]) -> str:
    lines = [f"# {NAME}", "", f"> {SUMMARY}", ""]
    lines += [
        (
            "Every page is Markdown at its own path plus `.md` (below), or at its plain path with "
            "`Accept: text/markdown`. Links are relative to the host serving this file."
        ),
        "",
        "## Docs",
        "",
    ]
    lines += [f"- [{p.nav}]({p.markdown_url}): {p.description}" for p in pages]
    lines += [
        "",
        "## Machine-readable",
        "",
        "- [OpenAPI document](/api/v1/openapi.json): OpenAPI 3.1 for every REST route this server answers.",
        "- [MCP server card](/mcp/server-card): the remote MCP endpoint (POST /mcp, Streamable HTTP, stateless).",
        "",
        "## Optional",
        "",
        "- [Everything in one file](/llms-full.txt): every page above, concatenated in this order.",
        "",
    ]
    return "\n".join(lines)


def llms_full(pages: list[Page], bodies: Mapping[str, str]) -> str:
    """Every page in order; a link to an anchor on its own page names the page, as it must once
    the pages share one file."""
    return "\n\n".join(bodies[p.slug].rstrip("\n").replace("](#", f"]({p.url}#") for p in pages) + "\n"


ASSETS_IGNORE = "# Not served: the site build's inputs (scripts/build_site.py).\n_*\n"
"""wrangler uploads everything else in site/ as static assets."""


def render(inputs: Inputs, sources: Path = SOURCES) -> dict[str, str]:
    """Every output file of the site, by path relative to ``site/``."""
    template = (sources / TEMPLATE.name).read_text(encoding="utf-8")
    files: dict[str, str] = {}
    bodies: dict[str, str] = {}
    expected = {f"{page.slug}.md" for page in PAGES}
    present = {path.name for path in sources.glob("*.md")}
    if present != expected:
        raise SystemExit(
            "build_site: site/_src/*.md and the [[pages]] of site.toml disagree: "
            f"missing {sorted(expected - present)}, not in PAGES {sorted(present - expected)}"
        )
    from vid2context.site import is_app_path

    for page in PAGES:
        if is_app_path(page.url):
            raise SystemExit(
                f"build_site: {page.url} is answered by the API app, not the site: rename the page"
            )
        source = (sources / f"{page.slug}.md").read_text(encoding="utf-8")
        markdown, used = page_markdown(page, source, inputs)
        notice = _notice(page, used)
        bodies[page.slug] = markdown
        files[f"{page.slug}.md"] = f"<!-- {notice} -->\n\n{markdown}"
        files[f"{page.slug}.html"] = page_html(page, markdown, notice, template)
    nav_pages = [page for page in PAGES if page.in_nav]
    files["llms.txt"] = llms_txt(nav_pages)
    files["llms-full.txt"] = llms_full(nav_pages, bodies)
    files[".assetsignore"] = ASSETS_IGNORE
    return dict(sorted(files.items()))


def outputs(site: Path = SITE) -> set[str]:
    """The files of ``site`` the build owns: everything outside ``_src``."""
    return {
        path.relative_to(site).as_posix()
        for path in site.rglob("*")
        if path.is_file() and not path.relative_to(site).parts[0].startswith("_")
    }


def build(out: Path = SITE, inputs: Inputs | None = None, sources: Path = SOURCES) -> dict[str, str]:
    """Write the site into ``out``; returns the files. Pages the build no longer makes (``.md``,
    ``.html`` and ``.txt`` files at the top of ``out``) are removed, nothing else."""
    files = render(inputs or collect(), sources)
    out.mkdir(parents=True, exist_ok=True)
    for stale in sorted(outputs(out) - set(files)):
        if "/" not in stale and stale.endswith((".md", ".html", ".txt")):
            (out / stale).unlink()
    for name, text in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SITE, help="where the site goes; default site/")
    args = parser.parse_args(argv)
    files = build(args.out)
    size = sum(len(text.encode("utf-8")) for text in files.values())
    print(f"build_site: {len(files)} files, {size / 1024:.0f} KiB -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
