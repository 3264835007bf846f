"""The ``bot_reply`` job kind: build the answer to one chat message and post it.

The routes answer the platform at once (Slack and Discord want an answer within 3 s) and queue
this job, so the work runs in the in-process queue locally and on the ``JOBS`` queue on the
Worker, retried there like any job::

    bot_reply  input: {platform: telegram|discord|slack, text, replyKey}   options: none
               result: {platform, lines, characters}

Where the reply goes (a chat id, or a Discord interaction's token, or a Slack ``response_url``)
is a credential for a few minutes, so it is not in the job's input, which anyone with a key may
read: it waits in the KV under ``replyKey`` (``STASH_TTL``), and the input only names that key.
A job for a key that is not there is refused before it is queued.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import ErrorCode, VidError
from ..jobs import Job, JobKind, JobRun
from ..models import Base
from .message import render
from .platforms import post_reply
from .replies import MAX_TEXT, reply_for

if TYPE_CHECKING:
    from ..runtime import Runtime

__all__ = ["BOT_KINDS", "BotReplyResult", "queue_reply"]

PLATFORMS = ("telegram", "discord", "slack")
STASH_TTL = 900
"""Seconds a reply target is kept: Discord's interaction tokens last 15 minutes, Slack's
``response_url`` 30."""
_PREFIX = "bot-reply:"


class BotReplyResult(Base, kw_only=True):
    platform: str
    lines: int
    characters: int


async def queue_reply(runtime: Runtime, platform: str, text: str, target: dict[str, Any]) -> Job:
    """Keep ``target`` in the KV and queue the job that answers ``text`` there."""
    key = secrets.token_urlsafe(18)
    await runtime.kv.put(_PREFIX + key, msgspec.json.encode(target).decode(), ttl=STASH_TTL)
    return await runtime.jobs.submit(
        runtime, "bot_reply", {"platform": platform, "text": text[:MAX_TEXT], "replyKey": key}
    )


def _bad(message: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        message,
        hint="Give bot_reply jobs no options: the bot webhooks (POST /api/v1/bots/telegram and the others) "
        "queue them themselves.",
    )


async def _check(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    if options:
        raise _bad("A bot_reply job takes no options.")
    if not isinstance(value, dict) or set(value) != {"platform", "text", "replyKey"}:
        raise _bad("A bot_reply job's input is {platform, text, replyKey}.")
    if value["platform"] not in PLATFORMS or not isinstance(value["text"], str):
        raise _bad("A bot_reply job's platform is telegram, discord or slack, and its text a string.")
    if not isinstance(value["replyKey"], str) or await runtime.kv.get(_PREFIX + value["replyKey"]) is None:
        raise VidError(
            ErrorCode.NOT_FOUND,
            "This bot_reply job names no reply that is waiting.",
            hint="Tell the user bot replies are queued by the bot routes only; do not retry.",
        )
    return value, {}


async def _run(run: JobRun) -> BotReplyResult:
    runtime = run.runtime
    platform = run.input["platform"]
    raw = await runtime.kv.get(_PREFIX + run.input["replyKey"])
    if raw is None:
        raise VidError(
            ErrorCode.NOT_FOUND,
            "The chat this reply was for is no longer known (it waited past 15 minutes).",
            hint="Tell the user to send the message to the bot again; do not retry this job.",
        )
    message = await reply_for(runtime, run.input["text"], run.ctx)
    text = render(message, platform)
    await post_reply(runtime.settings, runtime.http, platform, msgspec.json.decode(raw), text, run.ctx)
    await runtime.kv.delete(_PREFIX + run.input["replyKey"])
    return BotReplyResult(platform=platform, lines=len(message.lines), characters=len(text))


BOT_KINDS: dict[str, JobKind] = {"bot_reply": JobKind(_check, _run, "answer one chat message in its chat")}
