"""The MCP server: every tool, prompt and resource of the contract, over stdio and HTTP.

``create_mcp(runtime)`` (``server.py``) builds it; ``tools/`` holds one module per group of tools,
``prompts.py`` and ``resources.py`` the rest. ``results.py`` shapes every answer (errors as
``isError`` results, structured content from msgspec), ``fences.py`` fences text from videos,
``paging.py`` cuts transcripts into pages, ``runs.py`` keeps long work going past the wait
(``queued.py``: on the Worker's queue, ``owner.py``: whose runs they are), and ``http.py`` mounts
the server at ``/mcp`` with its auth, origin, host and rate checks.

The ``mcp`` SDK draws random numbers at import time (the Worker forbids randomness at start-up)
and takes about a second to import, so nothing here imports it until it is used: ``create_mcp``
is loaded on first access, and ``http.py`` loads the SDK on the first MCP message, so the REST API
and the discovery documents never pay for it. Modules outside ``mcp/`` import from here inside a
function, never at module top.
"""

from typing import Any

__all__ = ["create_mcp"]


def __getattr__(name: str) -> Any:
    if name == "create_mcp":
        from .server import create_mcp

        return create_mcp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
