"""What ``tools/list`` costs an agent before it calls anything: estimated tokens, in all and per tool.

Every MCP client puts the tool catalogue into the model's context, so its size is paid on every
turn. Figures (``vid2context.tokens.estimate_tokens``, the estimator the tools quote their costs
with, over the JSON a client receives through the SDK's in-process client):

- ``total_tokens`` and ``total_bytes`` of the ``tools/list`` result;
- ``input_schema_tokens``, ``output_schema_tokens``, ``description_tokens``: the sums per part;
- ``tools``: each tool's ``all`` (its JSON), ``input``, ``output`` and ``description`` tokens.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp.client import Client

from vid2context.mcp import create_mcp
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings
from vid2context.storage.memory import MemoryStorage
from vid2context.tokens import estimate_tokens


async def _catalogue() -> list[dict[str, Any]]:
    runtime = build_runtime(load_settings({}), storage=MemoryStorage())
    try:
        async with Client(create_mcp(runtime)) as client:
            tools = (await client.list_tools()).tools
    finally:
        await runtime.aclose()
    return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]


def _tokens(value: Any) -> int:
    return estimate_tokens(value if isinstance(value, str) else json.dumps(value)) if value else 0


def run() -> dict[str, Any]:
    wire = asyncio.run(_catalogue())
    text = json.dumps({"tools": wire})
    per_tool = {
        tool["name"]: {
            "all": _tokens(tool),
            "input": _tokens(tool.get("inputSchema")),
            "output": _tokens(tool.get("outputSchema")),
            "description": _tokens(tool.get("description")),
        }
        for tool in wire
    }
    return {
        "tools_listed": len(wire),
        "total_tokens": estimate_tokens(text),
        "total_bytes": len(text.encode()),
        "input_schema_tokens": sum(t["input"] for t in per_tool.values()),
        "output_schema_tokens": sum(t["output"] for t in per_tool.values()),
        "description_tokens": sum(t["description"] for t in per_tool.values()),
        "tools": per_tool,
    }
