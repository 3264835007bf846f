"""MCP logging: ``logging/setLevel`` and ``notifications/message`` for long work.

Long work (reading a list of videos, transcribing audio, an export) reports each step as a log
message at ``info`` beside its progress notifications, so a client that shows logs can say what
the server is doing. Who gets what depends on the protocol version the session negotiated:

- **up to 2025-11-25** the client sets a level with ``logging/setLevel`` for its connection
  (stdio: the whole session), and gets that level and above; before it sets one it gets
  ``warning`` and above, so nothing is chatty unless asked. Over stateless HTTP each request is
  a connection of its own, so a level set by one request is not remembered for the next: there,
  logs come at the default level (``warning``) only, and the docs say so.
- **2026-07-28** removed ``logging/setLevel``: a request carries its own level in
  ``_meta["io.modelcontextprotocol/logLevel"]``, and the SDK sends only what it asks for.

Levels are kept per connection in a bounded map (the oldest forgotten first); nothing else is
stored.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import EmptyResult, SetLevelRequestParams

__all__ = ["DEFAULT_LEVEL", "LEVELS", "log_step", "register"]

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LEVEL = "warning"
_MODERN = frozenset({"2026-07-28"})
_KEPT = 1024
_levels: OrderedDict[int, str] = OrderedDict()


def _connection_of(session: Any) -> int:
    return id(getattr(session, "_connection", session))


def _threshold(session: Any) -> str | None:
    """The lowest level this session's client gets; ``None`` when the SDK decides per request."""
    if getattr(session, "protocol_version", None) in _MODERN:
        return None
    return _levels.get(_connection_of(session), DEFAULT_LEVEL)


def register(server: MCPServer) -> None:
    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        key = _connection_of(ctx.session)
        _levels[key] = params.level
        _levels.move_to_end(key)
        while len(_levels) > _KEPT:
            _levels.popitem(last=False)
        return EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


async def log_step(ctx: Context, message: str, level: str = "info") -> None:
    """Send ``message`` as a log notification when the client wants ``level``; never raises."""
    try:
        session = ctx.request_context.session
    except (ValueError, LookupError, AttributeError):
        return  # no request (a direct call): nobody to tell
    threshold = _threshold(session)
    if threshold is not None and LEVELS.index(level) < LEVELS.index(threshold):
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks logging deprecated at 2026-07-28
            await ctx.log(level, message, logger_name="vid2context")  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a log that cannot be sent must never fail the work
        return
