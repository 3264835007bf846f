"""Lists: a playlist or channel expanded to its videos, and a video's comments."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from ...errors import ErrorCode, VidError
from ...models import Base, Comment, Kind, Platform
from ...pipeline import get_comments as read_comments
from ...pipeline import get_metadata, list_items
from ..params import Url, limit_arg
from ..results import JsonReply, Reply, output_schema
from ..runs import Run
from ..toolkit import ContractTool, Deps, define
from .common import long_call

__all__ = ["CommentsResult", "Item", "ItemsResult", "tools"]

DEFAULT_ITEMS = 50
MAX_ITEMS = 500
DEFAULT_COMMENTS = 100
MAX_COMMENTS = 1000
ItemsLimit = limit_arg(MAX_ITEMS, DEFAULT_ITEMS, "videos")
CommentsLimit = limit_arg(MAX_COMMENTS, DEFAULT_COMMENTS, "comments")


class Item(Base, kw_only=True):
    id: str
    platform: Platform
    kind: Kind
    native_id: str
    url: str | None = None


class ItemsResult(Base, kw_only=True):
    input: str
    count: int
    items: list[Item]


class CommentsResult(Base, kw_only=True):
    title: str
    url: str | None = None
    count: int
    comments: list[Comment]


def _limit(limit: int | None, default: int, cap: int) -> int:
    value = default if limit is None else limit
    if not 1 <= value <= cap:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"limit must be 1 to {cap}, not {value}.",
            hint=f"Give limit from 1 to {cap}.",
        )
    return value


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def list_items_tool(ctx: Context, url: Url, limit: ItemsLimit = None) -> Reply:
        """The videos of a playlist or channel (a single video lists itself): id, platform, kind,
        native id and URL of each, in the list's order. Default limit 50, at most 500. Costs about
        40 tokens per video; nothing is transcribed."""
        count = _limit(limit, DEFAULT_ITEMS, min(MAX_ITEMS, runtime.settings.max_playlist_items))

        async def work(run: Run) -> Reply:
            refs = await list_items(runtime, url, limit=count, ctx=run.ctx())
            items = [
                Item(id=r.id, platform=r.platform, kind=r.kind, native_id=r.native_id, url=r.url)
                for r in refs
            ]
            return JsonReply(ItemsResult(input=url, count=len(items), items=items), structured=True)

        return await long_call(deps, ctx, "list_items", {"url": url, "limit": count}, work)

    list_items_tool.__name__ = "list_items"

    async def get_comments(ctx: Context, url: Url, limit: CommentsLimit = None) -> Reply:
        """A video's top-level comments (text, author, likes, date), read from the source; a video
        without a transcript still has comments. Default limit 100, at most 1000. Costs about 60
        tokens per comment. Sources that have no comments answer unsupported-input or no-provider."""
        count = _limit(limit, DEFAULT_COMMENTS, MAX_COMMENTS)

        async def work(run: Run) -> Reply:
            job_ctx = run.ctx()
            metadata = await get_metadata(runtime, url, ctx=job_ctx)
            found = await read_comments(runtime, url, limit=count, ctx=job_ctx)
            result = CommentsResult(title=metadata.title, url=metadata.url, count=len(found), comments=found)
            return JsonReply(result, structured=True, untrusted="comments")

        return await long_call(deps, ctx, "get_comments", {"url": url, "limit": count}, work)

    return [
        define(
            list_items_tool,
            title="List a playlist's or channel's videos",
            read_only=True,
            open_world=True,
            idempotent=True,
            output=output_schema(ItemsResult),
        ),
        define(
            get_comments,
            title="Read a video's comments",
            read_only=True,
            open_world=True,
            idempotent=True,
            output=output_schema(CommentsResult),
        ),
    ]
