"""Notion pages, one per video, under a parent page: a title, the video's facts, chapters as
headings and paragraphs that start with a timestamp linking to the moment.

One core for both runtimes; only the transport differs (``NotionApi``): the notion-client SDK on
the local runtime (``exports/notion_sdk.py``) and plain httpx on the Worker
(``exports/notion_http.py``), both sending exactly the bodies built here. Notion's documented
limits are kept here, once, so neither transport can break them:

- **100 blocks a request.** A page is created with its first 100 blocks and the rest are appended
  to it 100 at a time, in order.
- **2,000 characters a rich-text object, 100 objects a block.** Long text is cut into pieces of at
  most 2,000 characters, on a space where there is one; a paragraph never needs more than a few.
- **About 3 requests a second.** Requests are spaced at least ``interval`` apart, and a ``429``
  (or a ``5xx``) is retried after its ``Retry-After``, at most ``RETRIES`` times and never past the
  call's deadline. The SDK's own retries are off, so both runtimes wait the same way.

A page under a *page* may only have the ``title`` property (Notion's rule for pages outside a
database), so the other facts (channel, length, published, transcript, link) are the page's first
blocks. Errors map to the contract's codes: no ``NOTION_TOKEN`` is ``no-provider``, a token Notion
refuses is ``auth``, a parent the integration cannot see is ``not-found`` (with the fix: share the
page with the integration), rate limits left after the retries are ``rate-limited``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..formats.blocks import (
    chapter_spans,
    clean_text,
    duration_of,
    link_at,
    one_line,
    paragraphs,
    segments_of,
    split_by_starts,
    transcript_tokens,
)
from ..formats.header import ORIGIN_LABELS, published_date
from ..models import Base, VideoContext
from ..timecode import format_timestamp

__all__ = [
    "BLOCKS_PER_REQUEST",
    "DEFAULT_ORIGIN",
    "NOTION_VERSION",
    "RICH_TEXT_CHARS",
    "NotionApi",
    "NotionPage",
    "NotionRefusal",
    "export_pages",
    "page_blocks",
    "parent_page_id",
    "rich_text",
]

DEFAULT_ORIGIN = "https://api.notion.com"
NOTION_VERSION = "2025-09-03"
"""The API version both transports send (``Notion-Version``), so their bodies mean the same."""
BLOCKS_PER_REQUEST = 100
RICH_TEXT_CHARS = 2000
RICH_TEXT_PER_BLOCK = 100
INTERVAL = 0.34
"""Seconds between requests: Notion allows an average of three a second per integration."""
RETRIES = 4
MAX_WAIT = 60.0
"""The longest ``Retry-After`` honoured; a longer one is answered as ``rate-limited``."""
_ID = re.compile(r"([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})")
_TOKEN_HINT = (
    "Tell the user to create a Notion integration (notion.so/profile/integrations), set its secret as "
    "NOTION_TOKEN on the server, and share the parent page with it; do not retry until then."
)


class NotionPage(Base, kw_only=True):
    """One page created: the video and the page's URL."""

    video_id: str
    url: str


@dataclass(frozen=True, slots=True)
class NotionRefusal(Exception):
    """What Notion answered instead of success, as either transport saw it."""

    status: int
    code: str
    message: str
    retry_after: float | None = None


class NotionApi(Protocol):
    """The two calls an export makes; each returns Notion's JSON object or raises
    ``NotionRefusal`` (or ``VidError`` for a network failure)."""

    async def create_page(self, body: dict[str, Any], ctx: Ctx) -> dict[str, Any]: ...

    async def append_children(
        self, block_id: str, children: list[dict[str, Any]], ctx: Ctx
    ) -> dict[str, Any]: ...


def parent_page_id(value: str | None, default: str | None) -> str:
    """The parent page's id, dashed, from an id or a Notion page URL; ``bad-request`` otherwise."""
    given = value if value is not None else default
    if given is None or not isinstance(given, str) or not given.strip():
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "No Notion parent page was given.",
            hint="Give parentPageId (the page's id, or its URL from Notion's 'Copy link'), or set "
            "VID2CONTEXT_NOTION_PARENT_PAGE_ID on the server.",
        )
    text = given.strip()
    found = _ID.findall(text[:2048]) if len(text) <= 2048 else []
    if not found or (len(text) > 36 and not text.startswith(("https://", "http://"))):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"parentPageId {one_line(text, 80)!r} is not a Notion page id or page URL.",
            hint="Give the 32-character id at the end of the page's URL (with or without dashes), or the URL itself.",
        )
    parts = found[-1]  # a URL's id is its last one (a workspace name may look like hex)
    return "-".join(part.lower() for part in parts)


def rich_text(text: str, link: str | None = None) -> list[dict[str, Any]]:
    """``text`` as rich-text objects of at most 2,000 characters each, cut on spaces where it can."""
    pieces: list[dict[str, Any]] = []
    rest = text
    while rest:
        if len(rest) <= RICH_TEXT_CHARS:
            piece, rest = rest, ""
        else:
            cut = rest.rfind(" ", RICH_TEXT_CHARS // 2, RICH_TEXT_CHARS)
            cut = cut + 1 if cut > 0 else RICH_TEXT_CHARS
            piece, rest = rest[:cut], rest[cut:]
        content: dict[str, Any] = {"content": piece}
        if link:
            content["link"] = {"url": link}
        pieces.append({"type": "text", "text": content})
    return pieces


def _block(kind: str, texts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"object": "block", "type": kind, kind: {"rich_text": texts[:RICH_TEXT_PER_BLOCK]}}


def _stamped(context: VideoContext, seconds: float, text: str, kind: str = "paragraph") -> dict[str, Any]:
    stamp = f"[{format_timestamp(seconds)}]"
    url = link_at(context, seconds)
    return _block(kind, rich_text(stamp, url) + rich_text(f" {text}" if text else ""))


def _facts(context: VideoContext) -> list[dict[str, Any]]:
    meta = context.metadata
    facts = []
    if channel := one_line(meta.channel, 200):
        facts.append(f"Channel: {channel}")
    if (duration := duration_of(context)) is not None:
        facts.append(f"Length: {format_timestamp(duration)}")
    if published := published_date(meta.published_at):
        facts.append(f"Published: {published}")
    if context.transcript is not None:
        origin = ORIGIN_LABELS.get(context.transcript.origin, context.transcript.origin)
        language = f" ({context.transcript.language})" if context.transcript.language else ""
        facts.append(f"Transcript: {origin}{language}, {transcript_tokens(context):,} tokens")
    blocks = [_block("bulleted_list_item", rich_text(fact)) for fact in facts]
    if meta.url and meta.url.startswith(("https://", "http://")) and len(meta.url) <= 2000:
        blocks.append({"object": "block", "type": "bookmark", "bookmark": {"url": meta.url}})
    return blocks


def _paragraphs(context: VideoContext, segments: Sequence[Any]) -> list[dict[str, Any]]:
    blocks = []
    for para in paragraphs(segments):
        speaker = one_line(para.speaker)
        blocks.append(_stamped(context, para.start_sec, f"{speaker}: {para.text}" if speaker else para.text))
    return blocks


def page_blocks(context: VideoContext) -> list[dict[str, Any]]:
    """Every block of the video's page, in order: facts, then chapters (a heading each) or one
    Transcript heading, each followed by its timestamped paragraphs."""
    blocks = _facts(context)
    segments = segments_of(context)
    if not segments:
        return [*blocks, _block("paragraph", rich_text("No transcript."))]
    spans = chapter_spans(context)
    if not spans:
        return [*blocks, _block("heading_2", rich_text("Transcript")), *_paragraphs(context, segments)]
    groups = split_by_starts(segments, [span.start_sec for span in spans])
    for span, group in zip(spans, groups, strict=True):
        title = clean_text(one_line(span.title, 200)) or "Untitled"
        blocks.append(_stamped(context, span.start_sec, title, "heading_2"))
        blocks += _paragraphs(context, group)
    return blocks


def _title(context: VideoContext) -> str:
    return one_line(context.metadata.title, RICH_TEXT_CHARS) or context.id


class _Pacer:
    """Keeps requests at least ``interval`` seconds apart and retries what Notion asks to retry."""

    def __init__(self, interval: float, ctx: Ctx, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.interval, self.ctx, self.sleep = interval, ctx, sleep
        self.last = float("-inf")

    async def call(self, send: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        for attempt in range(RETRIES + 1):
            await self._space()
            try:
                return await send()
            except NotionRefusal as refusal:
                wait = self._retry_wait(refusal, attempt)
                if wait is None:
                    raise _as_error(refusal) from None
                await self.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover - the last attempt raises above

    async def _space(self) -> None:
        gap = self.last + self.interval - time.monotonic()
        if gap > 0:
            await self.sleep(gap)
        self.last = time.monotonic()

    def _retry_wait(self, refusal: NotionRefusal, attempt: int) -> float | None:
        if refusal.status != 429 and refusal.status < 500:
            return None
        if attempt >= RETRIES:
            return None
        wait = refusal.retry_after if refusal.retry_after is not None else min(8.0, 0.5 * 2**attempt)
        remaining = self.ctx.remaining
        if wait > MAX_WAIT or (remaining is not None and wait >= remaining):
            return None
        return max(0.0, wait)


def _as_error(refusal: NotionRefusal) -> VidError:
    said = f"Notion answered {refusal.status} {refusal.code}: {one_line(refusal.message, 300)}"
    if refusal.status == 401:
        return VidError(ErrorCode.AUTH, f"{said}.", hint=_TOKEN_HINT)
    if refusal.status in (403, 404):
        return VidError(
            ErrorCode.NOT_FOUND,
            f"{said}.",
            hint="Tell the user to share the parent page with the integration (the page's ••• menu → "
            "Connections), or give another parentPageId.",
        )
    if refusal.status == 429:
        wait = int(refusal.retry_after) + 1 if refusal.retry_after is not None else 60
        return VidError(
            ErrorCode.RATE_LIMITED,
            f"{said}.",
            hint=f"Notion is limiting this integration's requests: wait {wait} s (Retry-After), then repeat the call once.",
            retry_after=wait,
        )
    return VidError(
        ErrorCode.UPSTREAM,
        f"{said}.",
        hint="Retry once in a moment; if it fails again, tell the user Notion is failing (the pages made so far stay), and do not retry.",
    )


async def export_pages(
    api: NotionApi,
    contexts: Sequence[VideoContext],
    parent_id: str,
    ctx: Ctx,
    *,
    interval: float = INTERVAL,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> list[NotionPage]:
    """Create one page per video under ``parent_id``, in order; the pages created.

    A failure stops the export with its error (Notion cannot take back what it created, so nothing
    is retried twice by us): the pages already made stay, and the message says how many.
    """
    pacer = _Pacer(interval, ctx, sleep)
    pages: list[NotionPage] = []
    for context in contexts:
        blocks = page_blocks(context)
        body = {
            "parent": {"type": "page_id", "page_id": parent_id},
            "properties": {"title": {"title": rich_text(_title(context))}},
            "children": blocks[:BLOCKS_PER_REQUEST],
        }
        try:
            created = await pacer.call(lambda body=body: api.create_page(body, ctx))
            page_id = str(created.get("id") or "")
            for start in range(BLOCKS_PER_REQUEST, len(blocks), BLOCKS_PER_REQUEST):
                chunk = blocks[start : start + BLOCKS_PER_REQUEST]
                await pacer.call(
                    lambda chunk=chunk, page_id=page_id: api.append_children(page_id, chunk, ctx)
                )
        except VidError as error:
            if pages:
                error.message = f"{error.message} ({len(pages)} of {len(contexts)} pages were created first.)"
                error.args = (error.message,)
            raise
        pages.append(NotionPage(video_id=context.id, url=str(created.get("url") or "")))
    return pages
