"""Who the MCP server is, without importing the ``mcp`` SDK.

The ``/mcp`` checks and discovery documents need the server's name and protocol versions on every
request, while the SDK itself (about a second of imports) is only needed once a client actually
speaks MCP. Keeping these here lets ``http.py`` answer everything else without it; a test keeps
``PROTOCOL_VERSIONS`` equal to the SDK's own lists.
"""

from __future__ import annotations

SERVER_NAME = "vid2context"
PROTOCOL_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
"""The SDK's handshake versions, then its modern ones (``mcp_types.version``)."""
