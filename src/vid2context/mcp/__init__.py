"""The MCP server: every tool, prompt and resource of the contract, over stdio and HTTP.

``create_mcp(runtime)`` (``server.py``) builds it; ``tools/`` holds one module per group of tools,
``prompts.py`` and ``resources.py`` the rest. ``results.py`` shapes every answer (errors as
``isError`` results, structured content from msgspec), ``fences.py`` fences text from videos,
``paging.py`` cuts transcripts into pages, ``runs.py`` keeps long work going past the wait, and
``http.py`` mounts the server at ``/mcp`` with its auth, origin, host and rate checks.

Importing this package imports the ``mcp`` SDK, which draws random numbers at import time: modules
outside ``mcp/`` import it inside a function, never at module top (the Worker forbids randomness
at start-up).
"""

from .server import create_mcp

__all__ = ["create_mcp"]
