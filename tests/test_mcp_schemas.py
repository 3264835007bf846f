"""Every tool's schemas are portable, valid and small, and say the ranges the server enforces.

Through the SDK's in-process client: what ``tools/list`` sends is what is checked. Portable means
one ``type`` per schema, never a list (clients with a single-type dialect, Gemini's function
calling among them, refuse ``["string", "null"]``); valid means the JSON Schema 2020-12
meta-schema accepts it; small means no keyword a validator ignores in output schemas. The
conversion itself (``vid2context.mcp.schemas``) is checked on schemas built here, too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp.client import Client

from vid2context.mcp import create_mcp
from vid2context.mcp.params import MAX_BUDGET, MIN_BUDGET
from vid2context.mcp.schemas import portable_input, portable_output
from vid2context.runtime import Runtime

from .runtimes import Runtimes
from .test_mcp_tools import LONG, TOOLS, error_of, long_context
from .youtube_replay import PLAYLIST_ID, httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

_MAPS = {"properties", "$defs", "patternProperties", "dependentSchemas"}
_VALUES = {"enum", "const", "required", "default", "examples"}
_ANNOTATIONS = {"title", "description", "default", "examples"}


def subschemas(schema: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside ``schema`` (keywords only: a property called "type" is a name)."""
    if not isinstance(schema, dict):
        return
    yield where, schema
    for key, value in schema.items():
        if key in _MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from subschemas(sub, f"{where}/{key}/{name}")
        elif key in _VALUES:
            continue
        elif isinstance(value, dict):
            yield from subschemas(value, f"{where}/{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                yield from subschemas(item, f"{where}/{key}/{i}")


def single_typed(schema: dict[str, Any]) -> list[str]:
    """Where ``schema`` has a ``type`` that is not one string."""
    return [where for where, sub in subschemas(schema) if "type" in sub and not isinstance(sub["type"], str)]


@pytest.fixture
async def runtime(httpx_mock: Any, runtimes: Runtimes) -> Runtime:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    rt = await runtimes.build()
    await rt.storage.put_context(long_context())
    return rt


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[Client]:
    async with Client(create_mcp(runtime)) as connected:
        yield connected


async def listed(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


# --- every tool ---------------------------------------------------------------------------------


async def test_every_schema_is_single_typed_and_valid_2020_12(client: Client) -> None:
    tools = await listed(client)
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        schemas = {"input": tool.input_schema, "output": tool.output_schema}
        for kind, schema in schemas.items():
            if schema is None:
                continue
            assert single_typed(schema) == [], (name, kind, single_typed(schema))
            Draft202012Validator.check_schema(schema)
            assert schema.get("type") == "object", (name, kind)  # the protocol wants an object at the root
            for where, sub in subschemas(schema):
                assert "title" not in sub, (name, kind, where)
                assert sub.get("default", 0) is not None, (name, kind, where)
                if kind == "output":
                    assert not _ANNOTATIONS & set(sub), (name, where, _ANNOTATIONS & set(sub))
                if "enum" in sub and all(isinstance(v, str) for v in sub["enum"]):
                    assert sub.get("type") == "string", (name, kind, where)
            refs = [sub["$ref"] for _, sub in subschemas(schema) if "$ref" in sub]
            for ref in refs:  # what remains in $defs is used more than once, and resolves
                assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in schema.get("$defs", {})
                assert refs.count(ref) > 1, (name, kind, ref)


async def test_input_fields_keep_their_descriptions_and_url_is_described_once_briefly(client: Client) -> None:
    tools = await listed(client)
    described = set()
    for name, tool in tools.items():
        for field, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), (name, field)
            if field == "url" and name != "watch_live":  # a stream's manifest, not a video
                described.add(schema["description"])
    (url,) = described  # one text, from mcp/params.py
    assert len(url) <= 80 and "YouTube" in url
    stream = tools["watch_live"].input_schema["properties"]["url"]["description"]
    assert len(stream) <= 80 and "HLS" in stream and "DASH" in stream


BOUNDS = [
    ("search_transcript", "limit", 1, 100),
    ("get_transcript", "maxTokens", MIN_BUDGET, MAX_BUDGET),
    ("export_context_pack", "maxTokens", 1, MAX_BUDGET),
    ("export_context_pack", "limit", 1, 100),
    ("list_items", "limit", 1, 500),
    ("get_comments", "limit", 1, 1000),
]


async def test_the_ranges_the_server_enforces_are_declared_and_enforced_at_their_edges(
    client: Client,
) -> None:
    tools = await listed(client)
    args = {
        "search_transcript": {"query": "speaker"},
        "get_transcript": {"url": LONG},
        "export_context_pack": {"urls": [LONG]},
        "list_items": {"url": f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"},
        "get_comments": {"url": LONG},
    }
    for tool, field, low, high in BOUNDS:
        schema = tools[tool].input_schema["properties"][field]
        assert (schema["type"], schema["minimum"], schema["maximum"]) == ("integer", low, high), (tool, field)
        for outside in (low - 1, high + 1):
            body = error_of(await client.call_tool(tool, {**args[tool], field: outside}))
            assert body["error"] == "bad-request" and str(outside) in body["message"], (tool, field, body)
        if tool != "get_comments":  # the recorded YouTube has no comments to read
            # A pack's budget below its index is refused with the minimum for those videos (a figure
            # no schema can declare), so its range is tried inside at the top.
            edge = high if (tool, field) == ("export_context_pack", "maxTokens") else low
            inside = await client.call_tool(tool, {**args[tool], field: edge})
            assert not inside.is_error, (tool, field, inside.content[0].text[:300])
            if edge != low:
                body = error_of(await client.call_tool(tool, {**args[tool], field: low}))
                assert body["error"] == "bad-request" and "Give maxTokens of at least " in body["hint"]
    lengths = {
        ("create_collection", "name"): ("maxLength", 200),
        ("create_collection", "sources"): ("maxItems", 100),
        ("add_to_collection", "urls"): ("maxItems", 5000),
        ("get_transcript", "language"): ("maxLength", 35),
        ("get_transcript", "url"): ("maxLength", 2048),
    }
    for (tool, field), (keyword, value) in lengths.items():
        assert tools[tool].input_schema["properties"][field][keyword] == value, (tool, field)


# --- the conversion -------------------------------------------------------------------------------


def test_type_lists_become_single_types_and_titles_go_but_a_field_named_title_stays() -> None:
    schema = {
        "type": "object",
        "title": "Thing",
        "properties": {
            "title": {"type": ["string", "null"], "title": "Title"},
            "type": {"type": ["integer"], "default": None},
            "kind": {"enum": ["a", "b"]},
        },
        "required": ["title", "type"],
    }
    out = portable_input(schema)
    assert out == {
        "type": "object",
        "properties": {
            "title": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "type": {"type": "integer"},
            "kind": {"enum": ["a", "b"], "type": "string"},
        },
        "required": ["title", "type"],
    }
    Draft202012Validator.check_schema(out)


def test_optional_inputs_lose_null_and_required_ones_keep_it() -> None:
    schema = {
        "type": "object",
        "properties": {
            "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "description": "d"},
            "from": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
            "must": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["must"],
    }
    out = portable_input(schema)["properties"]
    assert out["cursor"] == {"type": "string", "description": "d"}
    assert out["from"] == {"anyOf": [{"type": "string"}, {"type": "number"}]}
    assert out["must"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_outputs_keep_validation_only_and_inline_what_is_used_once() -> None:
    schema = {
        "type": "object",
        "anyOf": [{"$ref": "#/$defs/Result"}],
        "$defs": {
            "Result": {
                "title": "Result",
                "description": "The result.",
                "type": "object",
                "properties": {
                    "name": {"type": "string", "examples": ["x"]},
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                    "first": {"$ref": "#/$defs/Point"},
                    "last": {"$ref": "#/$defs/Point"},
                    "extra": {"anyOf": [{"$ref": "#/$defs/Extra"}, {"type": "null"}]},
                },
                "required": ["name", "note", "first", "last", "extra"],
            },
            "Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
            "Extra": {
                "type": "object",
                "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
            },
        },
    }
    out = portable_output(schema)
    assert out == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "first": {"$ref": "#/$defs/Point"},
            "last": {"$ref": "#/$defs/Point"},
            "extra": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
                    },
                    {"type": "null"},
                ]
            },
        },
        "required": ["name", "first", "last", "extra"],
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
    }
    Draft202012Validator.check_schema(out)
    validator = Draft202012Validator(out)
    assert validator.is_valid({"name": "n", "note": None, "first": {"x": 1}, "last": {"x": 2}, "extra": None})
    assert not validator.is_valid({"name": "n", "first": {"x": "1"}, "last": {"x": 2}, "extra": None})
