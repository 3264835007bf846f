"""Helpers the tool modules share: reading a video through a long run, and saying what ran."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from mcp.server.mcpserver import Context

from ...errors import ErrorCode, VidError
from ...models import Attempt, VideoContext
from ...pipeline import MODES
from ..costs import about, with_costs
from ..params import MAX_BUDGET, MIN_BUDGET
from ..results import Reply
from ..runs import Run
from ..toolkit import Deps, caller, progress_sender

__all__ = [
    "MAX_BUDGET",
    "MIN_BUDGET",
    "STALE_DAYS",
    "about",
    "check_budget",
    "check_language",
    "check_mode",
    "describe_costs",
    "describe_paging",
    "layers_line",
    "long_call",
    "notes",
]


async def long_call(
    deps: Deps,
    ctx: Context,
    tool: str,
    args: dict[str, Any],
    work: Callable[[Run], Awaitable[Reply]],
    *,
    writes: bool = False,
) -> Reply:
    """``work`` as a long run: its reply, or ``processing`` when it takes longer than the wait.

    A finished run answers the same call again (for 15 minutes) unless the tool ``writes``. On the
    Worker's queue the consumer makes the whole call again (``queued.py``): what the tool changes
    before this, it must not change twice (``runs.replaying``, as ``create_collection`` does).
    """
    return await deps.runs.call(tool, args, caller(ctx), work, progress_sender(ctx), reuse=not writes)


def check_mode(mode: str) -> str:
    checked = mode.strip().lower() if isinstance(mode, str) else ""
    if checked not in MODES:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"Unknown mode {str(mode)[:20]!r}.",
            hint="Give mode as one of: " + ", ".join(MODES) + ".",
        )
    return checked


def check_language(language: str | None) -> str | None:
    if language is None or not language.strip():
        return None
    text = language.strip()
    if len(text) > 35 or not all(ch.isalnum() or ch in "-_" for ch in text):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{text[:40]!r} is not a language tag.",
            hint="Give a BCP-47 tag such as en, de or pt-BR, or leave language out.",
        )
    return text


def check_budget(max_tokens: int | None) -> int | None:
    if max_tokens is None:
        return None
    if not MIN_BUDGET <= max_tokens <= MAX_BUDGET:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"maxTokens must be {MIN_BUDGET} to {MAX_BUDGET}, not {max_tokens}.",
            hint="Leave maxTokens out for the whole result, or give a budget such as 8000.",
        )
    return max_tokens


def _attempt(attempt: Attempt) -> str:
    if attempt.stage == "cache":
        return f"library ({attempt.id}): saved copy, nothing fetched"
    outcome = attempt.outcome if not attempt.reason else f"{attempt.outcome}, {attempt.reason}"
    return f"{attempt.stage} by {attempt.id} ({outcome}, {attempt.ms} ms)"


def layers_line(context: VideoContext) -> str:
    """``Layers: ...``: which rungs ran for this answer, how they ended and how long they took."""
    if not context.attempts:
        return "Layers: library: saved copy, nothing fetched"
    return "Layers: " + "; ".join(_attempt(attempt) for attempt in context.attempts)


STALE_DAYS = 30
"""A saved copy older than this many days is worth a line: titles, chapters and captions change."""


def _fetched(context: VideoContext) -> datetime | None:
    try:
        when = datetime.fromisoformat((context.fetched_at or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def notes(context: VideoContext, now: datetime | None = None) -> list[str]:
    """Our lines after a transcript's fence, only when they tell the agent something: what ran,
    when a rung failed or was skipped on the way (the words came by another rung than the first),
    and a saved copy older than ``STALE_DAYS``. A fetch where every rung worked, and a recent saved
    copy, say nothing: the header already names the rung that made the words."""
    attempts = context.attempts
    if any(attempt.outcome != "ok" for attempt in attempts):
        return [layers_line(context)]
    fetched = _fetched(context)
    if attempts and all(attempt.stage == "cache" for attempt in attempts) and fetched is not None:
        age = ((now or datetime.now(UTC)) - fetched).days
        if age > STALE_DAYS:
            return [
                f"Library: a saved copy from {fetched.date().isoformat()} ({age} days old); the video's "
                "title, chapters or captions may have changed since."
            ]
    return []


def describe_paging(fn: Callable[..., Any], size: int, whole: str, *, by_max_tokens: bool = True) -> None:
    """Put this server's page size (``VID2CONTEXT_MCP_MAX_TOKENS``) where ``fn``'s docstring says
    ``{paging}``: the agent plans its reading from the figure it will get. ``by_max_tokens``: the
    call's maxTokens sets the page size (for a pack it is a budget instead)."""
    if size and by_max_tokens:
        note = f"The page size is maxTokens, or {size} tokens when it is left out."
    elif size:
        note = f"The page size is {size} tokens."
    elif by_max_tokens:
        note = f"The page size is maxTokens; left out, {whole} comes in one result."
    else:
        note = f"This server does not page: without maxTokens {whole} comes in one result."
    fn.__doc__ = (fn.__doc__ or "").replace("{paging}", note)


def describe_costs(fn: Callable[..., Any], figures: dict[str, int]) -> None:
    """Put each measured figure where ``fn``'s docstring names it (``{per_hour}``)."""
    fn.__doc__ = with_costs(fn.__doc__ or "", figures)
