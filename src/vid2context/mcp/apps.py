"""MCP Apps (``io.modelcontextprotocol/ui``): the transcript viewer page as a ``ui://`` resource.

The SDK's ``Apps`` extension advertises the capability and serves the resource as
``text/html;profile=mcp-app``; the tool that points at it (``tools/viewer.py``) sets its own
``_meta.ui.resourceUri``, because our tools are ``ContractTool``s, not the plain SDK tools
``Apps.tool`` would make. The page is built when it is read (``ui.viewer_html``: the component
and its glue inlined), and needs no network: it only renders the result the host hands it.
"""

from __future__ import annotations

from mcp.server.apps import APP_MIME_TYPE, Apps
from mcp.server.mcpserver.resources import FunctionResource

from ..ui import VIEWER_URI, viewer_html

__all__ = ["APP_MIME_TYPE", "apps_extension"]


async def _page() -> str:
    return viewer_html()


def apps_extension() -> Apps:
    """The extension with the viewer page, for ``MCPServer(extensions=[...])``."""
    apps = Apps()
    apps.add_resource(
        FunctionResource(
            uri=VIEWER_URI,
            name="transcript-viewer",
            title="Transcript viewer",
            description="The page open_transcript_viewer renders in: chapters, search, [m:ss] links.",
            mime_type=APP_MIME_TYPE,
            fn=_page,
        )
    )
    return apps
