"""Exports to the user's own tools: Obsidian notes written on the machine the server runs on,
and Notion pages.

``export_obsidian`` is local only: the file writing lives in ``exports/obsidian.py`` (a local-only
module, imported inside the tool), and a call that arrives over HTTP is refused, since the
server's disk is not the caller's (REST's ``/exports/obsidian`` answers the notes as files
instead). ``export_notion`` works everywhere, on the same core as ``POST /api/v1/exports/notion``
(``exports/gather.py``).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ...errors import ErrorCode, VidError
from ...exports.gather import failed_inputs, gather, named_inputs, notion_export, notion_parent
from ...exports.notion import NotionPage
from ...models import Base, FailedInput
from ..params import OptionalCollection, Urls
from ..results import JsonReply, Reply
from ..runs import Run
from ..toolkit import ContractTool, Deps, define, over_http
from .common import describe_costs, long_call

__all__ = ["EXPORT_COSTS", "NotionExportReply", "ObsidianExport", "tools"]

EXPORT_COSTS: dict[str, int] = {"per_note": 12, "per_page": 30}
"""What each note's path (beyond vaultPath) and each Notion page cost in the answer, measured by
``tests/test_mcp_costs.py``."""

VaultPath = Annotated[
    str,
    Field(
        alias="vaultPath",
        description="The folder to write the notes into (your Obsidian vault, or a folder in it); it must "
        "be inside the server's allowed roots (VID2CONTEXT_FILE_ROOTS, default the current directory).",
    ),
]


ParentPageId = Annotated[
    str | None,
    Field(
        alias="parentPageId",
        description="The Notion page to create the pages under: its id or its URL (Copy link). Default: the "
        "server's VID2CONTEXT_NOTION_PARENT_PAGE_ID.",
    ),
]


class ObsidianExport(Base, kw_only=True):
    vault: str
    notes: list[str]
    """Paths written: one note per video, then the index note."""
    failed: list[FailedInput]


class NotionExportReply(Base, kw_only=True):
    pages: list[NotionPage]
    """The pages created, one per video, in order."""
    failed: list[FailedInput]


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def export_obsidian(
        ctx: Context, vault_path: VaultPath, urls: Urls = None, collection: OptionalCollection = None
    ) -> Reply:
        """Write Obsidian notes on this machine: one Markdown note per video (front matter, header,
        chapters, [m:ss](link) paragraphs) and an index note linking them, into vaultPath.

        Only over stdio (the local server): over HTTP it is refused, since the server's disk is not
        yours. Writes only inside the allowed roots; a video that cannot be read is listed in failed.
        Answers the paths written: each is vaultPath and the note's name, about {per_note} tokens more.
        """
        if over_http(ctx) or runtime.name == "worker":
            raise VidError(
                ErrorCode.FORBIDDEN,
                "export_obsidian writes files on the server's own disk, so it only runs on the local server.",
                hint="Tell the user, and do not retry here: it writes to the disk of the server it runs on, so "
                "it runs in a local MCP server of their own (`vid2context mcp`, over stdio).",
            )
        from ...exports.obsidian import allowed_roots, export_notes, resolve_vault  # local only

        resolve_vault(
            vault_path, allowed_roots(runtime.settings.file_roots)
        )  # refuse before reading anything
        inputs, title = await named_inputs(runtime, urls, collection)
        args = {"vaultPath": vault_path, "urls": inputs, "title": title}

        async def work(run: Run) -> Reply:
            gathered = await gather(runtime, inputs, title, run.ctx(), on_progress=run.progress_event)
            vault, written = export_notes(
                vault_path,
                runtime.settings.file_roots,
                gathered.contexts,
                title=title,
                failed=gathered.failed,
            )
            return JsonReply(
                ObsidianExport(
                    vault=str(vault), notes=[str(p) for p in written], failed=failed_inputs(gathered.failed)
                )
            )

        return await long_call(deps, ctx, "export_obsidian", args, work, writes=True)

    async def export_notion(
        ctx: Context,
        urls: Urls = None,
        collection: OptionalCollection = None,
        parent_page_id: ParentPageId = None,
    ) -> Reply:
        """Create one Notion page per video under parentPageId: the title, the video's facts,
        chapters as headings and paragraphs whose [m:ss] links open the video at that moment.

        Needs the server's Notion integration (NOTION_TOKEN) with the parent page shared with it.
        A video that cannot be read is listed in failed. Answers the page URLs, about {per_page} tokens
        per page.
        """
        parent = notion_parent(runtime, parent_page_id)  # refused before any video is read
        inputs, title = await named_inputs(runtime, urls, collection)
        args = {"parentPageId": parent, "urls": inputs, "title": title}

        async def work(run: Run) -> Reply:
            gathered = await gather(runtime, inputs, title, run.ctx(), on_progress=run.progress_event)
            done = await notion_export(runtime, gathered, parent, run.ctx())
            return JsonReply(NotionExportReply(pages=done.pages, failed=failed_inputs(done.failed)))

        return await long_call(deps, ctx, "export_notion", args, work, writes=True)

    describe_costs(export_obsidian, EXPORT_COSTS)
    describe_costs(export_notion, EXPORT_COSTS)
    return [
        define(
            export_obsidian, title="Export Obsidian notes", read_only=False, open_world=True, idempotent=True
        ),
        define(export_notion, title="Export to Notion", read_only=False, open_world=True, idempotent=False),
    ]
