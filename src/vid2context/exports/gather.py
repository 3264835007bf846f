"""What an export covers and the two exports every runtime can make: the core that REST
(``api/exports.py``) and MCP (``mcp/tools/exports.py``) both call.

The inputs are the caller's videos or lists and/or a collection (its saved videos in added order,
then its pending inputs), at most ``batch.MAX_VIDEOS`` distinct videos (``too-large`` beyond, before
anything is read). Videos are read by ``batch.read_videos``; one that cannot be read is left out and
named, never failing the export, unless none could be read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..batch import MAX_VIDEOS, OnEvent, read_videos
from ..batch_inputs import Refusals, request_inputs
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import FailedInput, VideoContext
from ..runtime import Runtime
from .notes import vault_notes
from .notion import DEFAULT_ORIGIN, NotionApi, NotionPage, export_pages, parent_page_id

__all__ = [
    "Gathered",
    "NotionExport",
    "failed_inputs",
    "gather",
    "named_inputs",
    "notion_export",
    "notion_parent",
    "obsidian_files",
]

INPUTS_HINT = (
    "Give inputs (video URLs or ids, playlists, channels) and/or a collectionId, e.g. "
    '{"inputs": ["https://www.youtube.com/watch?v=jNQXAC9IVRw"]}.'
)
TITLE = "vid2context export"
_REFUSALS = Refusals(none="No videos to export.", hint=INPUTS_HINT, names="This export")


@dataclass(frozen=True, slots=True)
class Gathered:
    """The videos read, those that could not be, and a title for the index (the collection's name)."""

    contexts: list[VideoContext]
    failed: list[tuple[str, VidError]]
    title: str


@dataclass(frozen=True, slots=True)
class NotionExport:
    pages: list[NotionPage]
    failed: list[tuple[str, VidError]]


async def named_inputs(
    runtime: Runtime, inputs: list[str] | None, collection_id: str | None
) -> tuple[list[str], str]:
    """The inputs to read and the export's title; ``bad-request`` when there are none."""
    given = [text for text in inputs or [] if isinstance(text, str) and text.strip()]
    named, view = await request_inputs(runtime, given, collection_id, _REFUSALS, recount=False)
    return named, TITLE if view is None else view.name


async def gather(
    runtime: Runtime, inputs: list[str], title: str, ctx: Ctx | None, *, on_progress: OnEvent | None = None
) -> Gathered:
    found = await read_videos(runtime, inputs, ctx=ctx, limit=MAX_VIDEOS, on_progress=on_progress)
    found.raise_if_empty(INPUTS_HINT)
    return Gathered(found.contexts, found.failed, title)


def failed_inputs(failed: list[tuple[str, VidError]]) -> list[FailedInput]:
    """The inputs left out, as answers list them."""
    return [
        FailedInput(input=text[:200], code=error.code.value, message=error.message, hint=error.hint)
        for text, error in failed
    ]


def obsidian_files(gathered: Gathered) -> list[tuple[str, str]]:
    """``(relative path, content)`` for each note: one per video, then the index note."""
    notes = vault_notes(gathered.contexts, title=gathered.title, failed=gathered.failed)
    return [(f"{name}.md", text) for name, text in notes]


def notion_parent(runtime: Runtime, given: str | None) -> str:
    """Refuse early, before any video is read: no token, or no usable parent page."""
    if not runtime.settings.notion_token:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "Notion exports are not set up on this server (no NOTION_TOKEN).",
            hint="Tell the user to create a Notion integration, set its secret as NOTION_TOKEN on the server "
            "and share the parent page with it; do not retry until then.",
        )
    return parent_page_id(given, runtime.settings.notion_parent_page_id)


def _api(runtime: Runtime) -> NotionApi:
    token = runtime.settings.notion_token or ""
    origin = runtime.settings.notion_origin or DEFAULT_ORIGIN
    if runtime.name == "local":
        try:
            from .notion_sdk import NotionSdk  # local only: the Worker ships no SDK
        except ImportError:
            pass
        else:
            return NotionSdk(token, origin)
    from .notion_http import NotionHttp

    return NotionHttp(runtime.http, token, origin)


async def notion_export(runtime: Runtime, gathered: Gathered, parent_id: str, ctx: Ctx) -> NotionExport:
    api = _api(runtime)
    try:
        pages = await export_pages(api, gathered.contexts, parent_id, ctx)
    finally:
        if close := getattr(api, "aclose", None):
            await close()
    return NotionExport(pages, gathered.failed)
