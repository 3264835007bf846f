"""Notion through the notion-client SDK: the local runtime's transport.

The SDK gets a client of its own per export (it rewrites the headers and base URL of the client
it is given, so the runtime's shared one must not be handed over), the same ``Notion-Version`` as
the httpx transport, and its retries off: ``exports/notion.py`` paces and retries for both
runtimes alike, within the call's deadline.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
from notion_client import AsyncClient
from notion_client.errors import HTTPResponseError, RequestTimeoutError

from ..ctx import Ctx
from .notion import NOTION_VERSION, NotionRefusal
from .notion_http import TIMEOUT, not_an_object, refusal_of, unreachable

__all__ = ["NotionSdk"]


class NotionSdk:
    """``NotionApi`` over notion-client's ``AsyncClient``; close it with ``aclose``."""

    def __init__(self, token: str, origin: str) -> None:
        self._client = AsyncClient(
            auth=token,
            base_url=origin.rstrip("/"),
            notion_version=NOTION_VERSION,
            retry=False,
            timeout_ms=int(TIMEOUT * 1000),
            logger=logging.getLogger("vid2context.notion"),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def create_page(self, body: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
        return await self._call(self._client.pages.create(**body))

    async def append_children(
        self, block_id: str, children: list[dict[str, Any]], ctx: Ctx
    ) -> dict[str, Any]:
        return await self._call(self._client.blocks.children.append(block_id=block_id, children=children))

    async def _call(self, pending: Any) -> dict[str, Any]:
        try:
            answer = await pending
        except HTTPResponseError as error:
            refusal: NotionRefusal = refusal_of(
                error.status, error.body.encode(), error.headers.get("Retry-After")
            )
            raise refusal from None
        except RequestTimeoutError:
            raise unreachable(httpx.ReadTimeout("timed out")) from None
        except httpx.HTTPError as exc:  # the SDK lets httpx's network errors through
            raise unreachable(exc) from None
        if not isinstance(answer, dict):
            raise not_an_object()
        return answer
