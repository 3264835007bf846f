"""``initialize``, ``notifications/initialized``, ``tools/list`` and ``prompts/list`` answered without the SDK.

On the Worker the SDK cannot be in the start-up snapshot (it draws random numbers at import,
``worker/entry.py``), so the first MCP message of every new isolate would pay its import and the
building of the server, a third of a second under CPython and more under Pyodide, only to say
who the server is. What ``initialize`` answers does not depend on the runtime: the protocol
version the client asked for (or the latest handshake version), and this server's capabilities,
name and instructions (``identity.py``). So ``McpHttp`` answers it here, with the SDK's own
protocol models (``mcp_types``, which the snapshot holds) and Starlette's ``Response``, exactly
as the SDK would: same status, headers and bytes. ``tools/list`` and ``prompts/list`` are fixed
too (the tools' schemas and descriptions come from their code, the page size aside): they are
answered from what the SDK's handlers returned at build time (``listed.py``, written by
``scripts/build_listed.py``), through the SDK's own per-version sieve, while the server's
``VID2CONTEXT_MCP_MAX_TOKENS`` is the one they were built with (``listed``). ``resources/list``
reads the library, so it is left to the SDK. ``tests/test_mcp_lean.py`` sends the same requests
to both and compares, so the two cannot drift.

Only a request the SDK would answer the same way is taken: a POST whose ``Content-Type`` is
``application/json`` and whose ``Accept`` names it, with no ``Mcp-Protocol-Version`` header or a
handshake-era one (anything else the SDK routes to its 2026 entry), a body of one JSON-RPC
request ``initialize``, ``tools/list`` or ``prompts/list`` whose params the SDK's own validation
accepts and that carry no ``_meta`` (or of the notification ``notifications/initialized``, which
the SDK answers 202 before reading it). A ``cursor`` is taken: the SDK does not page these lists
and answers the whole list whatever the cursor. Everything else, malformed or not, goes to the
SDK, which says what is wrong.
"""

from __future__ import annotations

from typing import Any

from .identity import CAPABILITIES, INSTRUCTIONS, SERVER_INFO

__all__ = ["MAX_LEAN_BODY", "Answer", "lean_answer"]

MAX_LEAN_BODY = 64 * 1024
"""A larger body goes to the SDK (an ``initialize`` is a few hundred bytes)."""

_LISTS = ("tools/list", "prompts/list")
_results: dict[tuple[str, str], dict[str, Any]] = {}
"""Each list's result, sieved for a protocol version, made on first use (``listed.py``)."""

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
"""Status, raw headers and body of an HTTP response."""


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _version(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The protocol version the SDK's legacy path reads from the headers, or ``None`` when the
    SDK would not take the request the way this module answers it."""
    from mcp_types import DEFAULT_NEGOTIATED_VERSION
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    content_type = _header(headers, b"content-type") or ""
    if content_type.split(";")[0] != "application/json":  # as both of the SDK's checks take it
        return None
    accept = _header(headers, b"accept") or ""
    if "application/json" not in (part.split(";")[0].strip().lower() for part in accept.split(",")):
        return None
    version = _header(headers, b"mcp-protocol-version")
    if version is None:
        return DEFAULT_NEGOTIATED_VERSION
    return version if version in HANDSHAKE_PROTOCOL_VERSIONS else None  # else the SDK's 2026 entry


def _listed(method: str, version: str) -> dict[str, Any]:
    """The SDK's result for ``method`` at ``version``: the listing its handler returned, through
    the same per-version sieve the SDK applies to every result."""
    key = (method, version)
    if key not in _results:
        import json

        from mcp_types import methods as spec_methods

        from .listed import LISTED

        _results[key] = spec_methods.serialize_server_result(method, version, json.loads(LISTED[method]))
    return _results[key]


def lean_answer(headers: list[tuple[bytes, bytes]], body: bytes, *, listed: bool = True) -> Answer | None:
    """The SDK's answer to this POST, when it is one this module may give (see the module
    docstring); ``None`` for the SDK to answer. ``listed``: whether ``listed.py`` holds this
    server's lists (its page size is the one they were built with)."""
    if len(body) > MAX_LEAN_BODY or not (b"initialize" in body or (listed and b"/list" in body)):
        return None
    version = _version(headers)
    if version is None:
        return None
    import pydantic_core
    from mcp_types import (
        Implementation,
        InitializeRequestParams,
        InitializeResult,
        JSONRPCNotification,
        JSONRPCRequest,
        ServerCapabilities,
        jsonrpc_message_adapter,
    )
    from mcp_types import methods as spec_methods
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
    from pydantic import ValidationError
    from starlette.responses import Response

    try:
        message: Any = jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
    except (ValueError, ValidationError):
        return None
    if isinstance(message, JSONRPCNotification) and message.method == "notifications/initialized":
        response = Response(None, status_code=202, headers={"Content-Type": "application/json"})
        return response.status_code, list(response.raw_headers), bytes(response.body)
    if not isinstance(message, JSONRPCRequest):
        return None
    method = message.method
    if method != "initialize" and not (listed and method in _LISTS):
        return None
    params = message.params
    if params is not None and "_meta" in params:
        return None
    try:
        spec_methods.validate_client_request(method, version, params)
        if method in _LISTS:
            return _respond(message.id, _listed(method, version))
        requested = InitializeRequestParams.model_validate(params or {}, by_name=False).protocol_version
        result = InitializeResult(
            protocol_version=requested
            if requested in HANDSHAKE_PROTOCOL_VERSIONS
            else LATEST_HANDSHAKE_VERSION,
            capabilities=ServerCapabilities.model_validate(CAPABILITIES),
            server_info=Implementation(**SERVER_INFO),
            instructions=INSTRUCTIONS,
        )
        dumped = spec_methods.serialize_server_result(
            "initialize", version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
        )
    except (KeyError, ValueError, ValidationError):
        return None
    return _respond(message.id, dumped)


def _respond(request_id: str | int, result: dict[str, Any]) -> Answer:
    """The SDK's JSON response to request ``request_id``, whose result is ``result``."""
    from mcp_types import JSONRPCResponse
    from starlette.responses import Response

    reply = JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
    response = Response(
        reply.model_dump_json(by_alias=True, exclude_unset=True),
        status_code=200,
        headers={"Content-Type": "application/json"},
    )
    return response.status_code, list(response.raw_headers), bytes(response.body)
