"""``POST /api/v1/exports/obsidian`` and ``POST /api/v1/exports/notion``: videos out to where
people keep notes.

Thin skins over ``exports/gather.py``: the body is read, the core gathers the videos and makes
the export. Obsidian answers the notes as files for the caller to write (or zip): the server's
disk is not the caller's, so nothing is written here. Notion creates the pages through the
integration in ``NOTION_TOKEN``. Both list the inputs that could not be read in ``failed`` (the
Obsidian index note names them too); one unreadable video never fails the export.
"""

from __future__ import annotations

from litestar import Request, post
from litestar.params import JSONBody

from ..exports.gather import failed_inputs, gather, named_inputs, notion_export, notion_parent, obsidian_files
from ..exports.notion import NotionPage
from ..models import Base, FailedInput
from .middleware import request_ctx
from .params import BODY_ERRORS, decode_body, runtime_of

__all__ = ["EXPORT_ROUTES", "NotionExportBody", "ObsidianExportBody"]


class ObsidianExportBody(Base, kw_only=True, forbid_unknown_fields=True):
    """Videos or lists in ``inputs`` (expanded), and/or a collection; at most 100 videos."""

    inputs: list[str] | None = None
    collection_id: str | None = None


class NotionExportBody(ObsidianExportBody, kw_only=True, forbid_unknown_fields=True):
    parent_page_id: str | None = None
    """The Notion page the new pages go under (id or URL); default
    ``VID2CONTEXT_NOTION_PARENT_PAGE_ID``."""


class ExportFile(Base, kw_only=True):
    path: str
    """A relative file name, safe on every system: ``Title (id).md``, and the index note."""
    content: str


class ObsidianFiles(Base, kw_only=True):
    files: list[ExportFile]
    failed: list[FailedInput]


class NotionPages(Base, kw_only=True):
    pages: list[NotionPage]
    failed: list[FailedInput]


@post("/api/v1/exports/obsidian", status_code=200, exception_handlers=BODY_ERRORS)
async def obsidian_route(request: Request, data: JSONBody[ObsidianExportBody]) -> ObsidianFiles:
    """Obsidian notes as files: one note per video (YAML front matter, header, chapters,
    ``[m:ss](link)`` paragraphs) and an index note linking them. The caller writes them into a
    vault; ``path`` is always a single safe file name."""
    body = await decode_body(request, ObsidianExportBody)  # strict: Litestar's decode was lenient
    runtime = runtime_of(request)
    inputs, title = await named_inputs(runtime, body.inputs, body.collection_id)
    gathered = await gather(runtime, inputs, title, request_ctx(request, runtime))
    files = [ExportFile(path=path, content=content) for path, content in obsidian_files(gathered)]
    return ObsidianFiles(files=files, failed=failed_inputs(gathered.failed))


@post("/api/v1/exports/notion", status_code=200, exception_handlers=BODY_ERRORS)
async def notion_route(request: Request, data: JSONBody[NotionExportBody]) -> NotionPages:
    """One Notion page per video under ``parentPageId``: the title, the video's facts, chapters
    as headings and paragraphs whose ``[m:ss]`` links open the video there. Needs
    ``NOTION_TOKEN`` on the server (``503 no-provider`` otherwise) and the parent page shared
    with that integration (``404 not-found`` otherwise)."""
    body = await decode_body(request, NotionExportBody)
    runtime = runtime_of(request)
    parent = notion_parent(runtime, body.parent_page_id)  # refused before any video is read
    inputs, title = await named_inputs(runtime, body.inputs, body.collection_id)
    ctx = request_ctx(request, runtime)
    done = await notion_export(runtime, await gather(runtime, inputs, title, ctx), parent, ctx)
    return NotionPages(pages=done.pages, failed=failed_inputs(done.failed))


EXPORT_ROUTES = [obsidian_route, notion_route]
