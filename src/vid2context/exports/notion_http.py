"""Notion over plain httpx: the Worker's transport (it ships no SDK), and the fallback anywhere the
notion-client SDK is not installed.

It sends what ``exports/notion.py`` built, with the token and ``Notion-Version``, and turns
Notion's error object (``{"object": "error", "status", "code", "message"}``) and ``Retry-After``
into a ``NotionRefusal``; the core decides what to retry.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..providers.speech import parse_retry_after
from .notion import NOTION_VERSION, NotionRefusal

__all__ = ["NotionHttp", "not_an_object", "refusal_of", "unreachable"]

TIMEOUT = 30.0


def refusal_of(status: int, body: bytes, retry_after: str | None) -> NotionRefusal:
    """Notion's error answer as a ``NotionRefusal``, whatever shape the body has."""
    try:
        said = msgspec.json.decode(body) if body else {}
    except msgspec.DecodeError:
        said = {}
    if not isinstance(said, dict):
        said = {}
    wait = parse_retry_after(retry_after)
    return NotionRefusal(
        status=status,
        code=str(said.get("code") or "unknown"),
        message=str(said.get("message") or body[:200].decode("utf-8", "replace")),
        retry_after=float(wait) if wait is not None else None,
    )


def unreachable(exc: Exception) -> VidError:
    """A network failure on the way to Notion (no answer at all)."""
    if isinstance(exc, httpx.TimeoutException):
        return VidError(
            ErrorCode.TIMEOUT,
            "Notion did not answer in time.",
            hint="Repeat the call once with fewer videos; if it fails again, tell the user Notion is not answering, and do not retry.",
        )
    return VidError(
        ErrorCode.UPSTREAM,
        f"Notion could not be reached ({type(exc).__name__}).",
        hint="Retry once in a moment; if it fails again, tell the user Notion cannot be reached, and do not retry.",
    )


def not_an_object() -> VidError:
    return VidError(
        ErrorCode.UPSTREAM,
        "Notion answered something that is not a JSON object.",
        hint="Retry once in a moment; if it fails again, tell the user Notion cannot be reached, and do not retry.",
    )


class NotionHttp:
    """``NotionApi`` over an ``httpx.AsyncClient`` (the runtime's shared one)."""

    def __init__(self, client: httpx.AsyncClient, token: str, origin: str) -> None:
        self._client, self._token, self._origin = client, token, origin.rstrip("/")

    async def create_page(self, body: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
        return await self._send("POST", "/v1/pages", body, ctx)

    async def append_children(
        self, block_id: str, children: list[dict[str, Any]], ctx: Ctx
    ) -> dict[str, Any]:
        return await self._send("PATCH", f"/v1/blocks/{block_id}/children", {"children": children}, ctx)

    async def _send(self, method: str, path: str, body: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
        remaining = ctx.remaining
        timeout = TIMEOUT if remaining is None else max(0.1, min(TIMEOUT, remaining))
        try:
            response = await self._client.request(
                method,
                self._origin + path,
                content=msgspec.json.encode(body),
                headers={
                    "Authorization": f"Bearer {self._token}",
                    "Notion-Version": NOTION_VERSION,
                    "Content-Type": "application/json",
                },
                timeout=timeout,
            )
        except httpx.HTTPError as exc:
            raise unreachable(exc) from None
        if response.status_code >= 300:
            raise refusal_of(response.status_code, response.content, response.headers.get("Retry-After"))
        try:
            answer = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            answer = None
        if not isinstance(answer, dict):
            raise not_an_object()
        return answer
