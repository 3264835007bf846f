"""The MCP server over stdio, for clients that start it as a process (``vid2context mcp``).

stdout carries the protocol and nothing else; logs go to stderr (the CLI sets that up). When the
client closes stdin the server stops, long runs still going are cancelled (what they read is in the
library already), and the runtime's store and clients are closed.
"""

from __future__ import annotations

from ..runtime import Runtime
from .server import create_mcp

__all__ = ["serve_stdio"]


async def serve_stdio(runtime: Runtime) -> None:
    server = create_mcp(runtime)
    try:
        await server.run_stdio_async()
    finally:
        try:
            await server.deps.runs.aclose()
        finally:
            await runtime.aclose()
