"""The REST API: ``create_app(runtime)`` builds the Litestar app; one module per route group.

Handlers are thin: they parse the query, call the same core functions the CLI and MCP tools call,
and return msgspec Structs. Every failure is a ``VidError`` turned into the contract's error body
by ``errors.py``, so no framework default error page ever reaches a client.
"""

from .app import create_app

__all__ = ["create_app"]
