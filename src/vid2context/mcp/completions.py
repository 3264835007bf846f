"""``completion/complete``: what a client may offer while the user types a prompt's argument or a
resource template's ``{id}``.

- the prompts' ``collection`` (``brief``, ``buyer_guide``, ``digest``): collection ids and names;
- the prompts' ``urls``: saved videos, as their ids (the newest first);
- ``vid2context://video/{id}`` and its ``/transcript``: saved video ids;
- ``vid2context://collection/{id}``: collection ids.

A value matches when it starts with what was typed, or (for names and titles) contains it as a
word, case-insensitive; at most ``MAX_VALUES`` are offered, the spec's limit, with ``hasMore``
and ``total`` when there are more. Only the library is read; nothing is fetched.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import Completion, PromptReference, ResourceTemplateReference

from .. import library
from ..runtime import Runtime

__all__ = ["MAX_VALUES", "complete", "register"]

MAX_VALUES = 100
"""The most values one completion offers (the MCP spec's cap)."""
_SCAN = 500
"""How many saved videos are looked through: the newest first."""
_COLLECTION_ARGS = {"collection"}
_VIDEO_ARGS = {"urls"}


def _matches(typed: str, *candidates: str | None) -> bool:
    needle = typed.strip().lower()
    if not needle:
        return True
    for candidate in candidates:
        text = (candidate or "").lower()
        if text.startswith(needle) or f" {needle}" in f" {text}":
            return True
    return False


def _offer(values: list[str]) -> Completion:
    distinct = list(dict.fromkeys(values))
    return Completion(values=distinct[:MAX_VALUES], total=len(distinct), has_more=len(distinct) > MAX_VALUES)


async def _collections(runtime: Runtime, typed: str, *, names: bool) -> Completion:
    found: list[str] = []
    for collection in await library.list_collections(runtime):
        if _matches(typed, collection.id, collection.name):
            found.append(collection.id)
            if names and collection.name:
                found.append(collection.name)
    return _offer(found)


async def _videos(runtime: Runtime, typed: str) -> Completion:
    found: list[str] = []
    cursor: str | None = None
    seen = 0
    while seen < _SCAN:
        page = await library.list_videos(runtime, limit=100, cursor=cursor)
        for summary in page.items:
            if _matches(typed, summary.id, summary.id.split(":", 1)[-1], summary.title):
                found.append(summary.id)
        seen += len(page.items)
        cursor = page.next_cursor
        if cursor is None or not page.items:
            break
    return _offer(found)


async def complete(runtime: Runtime, ref: Any, name: str, typed: str) -> Completion | None:
    """The values to offer for argument ``name`` of ``ref`` after ``typed``; ``None``: none."""
    typed = typed[:200] if isinstance(typed, str) else ""
    if isinstance(ref, PromptReference):
        if name in _COLLECTION_ARGS:
            return await _collections(runtime, typed, names=True)
        if name in _VIDEO_ARGS:
            return await _videos(runtime, typed)
        return None
    if isinstance(ref, ResourceTemplateReference) and name == "id":
        if ref.uri.startswith("vid2context://collection/"):
            return await _collections(runtime, typed, names=False)
        if ref.uri.startswith("vid2context://video/"):
            return await _videos(runtime, typed)
    return None


def register(server: MCPServer, runtime: Runtime) -> None:
    @server.completion()
    async def handle(ref: Any, argument: Any, context: Any) -> Completion | None:
        return await complete(runtime, ref, argument.name, argument.value)
