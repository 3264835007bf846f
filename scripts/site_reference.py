"""The generated parts of the docs site, read from the running code; ``build_site.py`` places them.

Each ``<!-- generate: NAME -->`` marker in a page is filled by one generator here (``GENERATORS``):
the REST reference from the app's OpenAPI document, the MCP catalog from the server's own
``tools/list``, ``prompts/list`` and ``resources/templates/list``, the configuration from
``settings.SETTINGS``, the error table from ``errors.STATUS_BY_CODE``, and the MCP client files in
``local/mcp/``. It lives apart from the page build because it is the half that knows the app: it
starts it offline, walks JSON Schemas and settings, and cross-checks them against the words in
``site/_src/site.toml``; the page build only knows Markdown, the template and the llms files.

The small Markdown-text helpers (``cell``, ``prose``, ``code``, ``table``, ``slugify``, ...) are
here because the generators are nearly all their users; ``slugify`` is also the page build's
heading ids, so an anchor written here always matches the heading rendered there.
"""

from __future__ import annotations

import asyncio
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "site" / "_src"

CONFIG_FILE = SOURCES / "site.toml"
"""The site's own data: pages and their order, llms.txt's summary, the error table's words, which
settings are Worker secrets, and the MCP client files to show."""
CONFIG: dict[str, Any] = tomllib.loads(CONFIG_FILE.read_text(encoding="utf-8"))

__all__ = [
    "CONFIG",
    "GENERATORS",
    "ROOT",
    "SOURCES",
    "Inputs",
    "api_reference",
    "cell",
    "code",
    "collect",
    "configuration_reference",
    "error_table",
    "mcp_clients",
    "mcp_reference",
    "paragraphs",
    "prose",
    "slugify",
    "table",
]


# --- Markdown text ------------------------------------------------------------------------------------


def slugify(text: str) -> str:
    """The id of a heading: lower case, every run of other characters one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


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
    """Each shape a structured result can have: its top-level fields (output schemas list the
    fields they check, not the scalars that may be null), or the ``processing`` answer."""
    shapes = []
    for part in schema.get("anyOf", schema.get("oneOf", [schema])):
        fields = part.get("properties", {})
        if fields.get("status", {}).get("enum") == ["processing"]:
            shapes.append("a `processing` answer (then call `get_job`)")
        elif fields:
            shapes.append("an object with " + ", ".join(code(name) for name in fields))
    return shapes


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
            named = ", or ".join(shapes) if shapes else "an object"
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
"""Marker name -> (what the page's notice says the part came from, the generator)."""
