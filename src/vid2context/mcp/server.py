"""``create_mcp(runtime)``: the MCP server, the same for stdio and for Streamable HTTP.

It holds the runtime and the registry of long runs, nothing per request: every call builds its
own per-call state. Transports are elsewhere (``vid2context mcp`` in the CLI for stdio, ``http.py``
for the mount at ``/mcp``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import Resource as MCPResource

from ..errors import ErrorCode, VidError, on_surface
from ..runtime import Runtime
from . import completions, logging_level, prompts, resources, updates
from .apps import apps_extension
from .identity import INSTRUCTIONS, SERVER_INFO, SERVER_NAME
from .results import ErrorReply
from .runs import Runs
from .toolkit import Deps
from .tools import all_tools

__all__ = ["INSTRUCTIONS", "SERVER_NAME", "VidServer", "create_mcp"]


class VidServer(MCPServer):
    """``MCPServer`` whose resource list is read from the library at each ``resources/list``,
    after the server's own fixed resources (the viewer page)."""

    def __init__(self, deps: Deps, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.deps = deps
        self.subscriptions: updates.Subscriptions | None = None
        """Who subscribed to which collection (``updates.py``), set by ``create_mcp``."""

    async def list_resources(self) -> list[MCPResource]:
        fixed = await super().list_resources()
        return fixed + [
            MCPResource(uri=uri, name=name, description=description, mime_type=mime)
            for uri, name, description, mime in await resources.listed_resources(self.deps)
        ]


def _unknown_tools(names: frozenset[str]) -> Any:
    """Middleware: a call to a tool that does not exist is a ``not-found`` result, like any error."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping):
            name = params.get("name")
            if isinstance(name, str) and name not in names:
                error = VidError(
                    ErrorCode.NOT_FOUND,
                    f"There is no tool {name[:64]!r}.",
                    hint="tools/list names every tool: " + ", ".join(sorted(names)) + ".",
                )
                return ErrorReply(error).to_result()
        return await call_next(ctx)

    return middleware


async def _mcp_surface(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: every request is handled as a call from the MCP surface, so the hints copied
    into its results name tools, not routes (``errors.SURFACE``)."""
    with on_surface("mcp"):
        return await call_next(ctx)


def create_mcp(
    runtime: Runtime, *, wait_s: float | None = None, job_wait_s: float | None = None
) -> VidServer:
    """The MCP server over ``runtime``.

    ``wait_s`` is how long a call waits for long work before answering ``processing``, and
    ``job_wait_s`` how long ``get_job`` waits (both ``VID2CONTEXT_MCP_WAIT_S``, 45 s by default;
    tests make them short).
    """
    runs = Runs(
        timeout=runtime.settings.request_timeout_ms / 1000,
        wait_s=runtime.settings.mcp_wait_s if wait_s is None else wait_s,
        job_wait_s=job_wait_s,
        keep_alive=runtime.hand_off,  # on the Worker a run must be given to waitUntil to outlive its request
        durable=runtime.mcp_runs,  # or, with a JOBS queue, it is a message on it (queued.py)
    )
    deps = Deps(runtime=runtime, runs=runs)
    root = logging.getLogger()
    placeholder = logging.NullHandler() if not root.handlers else None
    if placeholder is not None:  # the SDK calls logging.basicConfig; logging belongs to the process
        root.addHandler(placeholder)
    tools = all_tools(deps)
    try:
        server = VidServer(
            deps,
            **SERVER_INFO,
            instructions=INSTRUCTIONS,
            tools=tools,
            log_level="WARNING",
            middleware=[_mcp_surface, _unknown_tools(frozenset(tool.name for tool in tools))],
            extensions=[apps_extension()],
        )
    finally:
        if placeholder is not None:
            root.removeHandler(placeholder)
    prompts.register(server, deps)
    resources.register(server, deps)
    completions.register(server, runtime)
    logging_level.register(server)
    server.subscriptions = updates.register(server, runtime)
    return server
