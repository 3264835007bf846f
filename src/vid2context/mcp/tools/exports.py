"""Exports to the user's own tools: Obsidian notes, written on the machine the server runs on.

Local only: the file writing lives in ``exports/obsidian.py`` (a local-only module, imported inside
the tool), and a call that arrives over HTTP is refused, since the server's disk is not the
caller's.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ... import library
from ...batch import read_videos
from ...errors import ErrorCode, VidError
from ...models import Base, FailedInput
from ..params import OptionalCollection, Urls
from ..results import JsonReply, Reply
from ..runs import Run
from ..toolkit import ContractTool, Deps, define, over_http
from .common import long_call

__all__ = ["ObsidianExport", "tools"]

VaultPath = Annotated[
    str,
    Field(
        alias="vaultPath",
        description="The folder to write the notes into (your Obsidian vault, or a folder in it); it must "
        "be inside the server's allowed roots (VID2CONTEXT_FILE_ROOTS, default the current directory).",
    ),
]


class ObsidianExport(Base, kw_only=True):
    vault: str
    notes: list[str]
    """Paths written: one note per video, then the index note."""
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
        Answers the paths written, about 30 tokens per note.
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
        inputs = [text for text in urls or [] if isinstance(text, str) and text.strip()]
        title = "vid2context export"
        if collection is not None:
            view = await library.get_collection_view(runtime, collection)
            inputs = [video.id for video in view.videos] + list(view.pending) + inputs
            title = view.name
        if not inputs:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "No videos to export.",
                hint="Give urls (videos, playlists, channels) and/or a collection id.",
            )
        args = {"vaultPath": vault_path, "urls": inputs, "title": title}

        async def work(run: Run) -> Reply:
            found = await read_videos(
                runtime, inputs, ctx=run.ctx(), leave_out=True, on_progress=run.progress_event
            )
            contexts, failed = found.contexts, found.failed
            vault, written = export_notes(
                vault_path, runtime.settings.file_roots, contexts, title=title, failed=failed
            )
            failures = [
                FailedInput(input=text, code=error.code.value, message=error.message, hint=error.hint)
                for text, error in failed
            ]
            return JsonReply(
                ObsidianExport(vault=str(vault), notes=[str(p) for p in written], failed=failures)
            )

        return await long_call(deps, ctx, "export_obsidian", args, work, writes=True)

    return [
        define(
            export_obsidian, title="Export Obsidian notes", read_only=False, open_world=True, idempotent=True
        ),
    ]
