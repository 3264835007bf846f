"""What the bot answers to a message, once for every platform.

- A message with a video link (``http(s)://``, any page the server reads) gets the video's
  outline: the title linked to the video, its channel and length, then each chapter (or
  five-minute section) as ``[m:ss] Title`` linking to that moment.
- A message with words besides the link, or words alone, is a question: with a language model set
  up it gets the ``ask`` answer (over the linked video, or over the saved library without a link),
  each ``[n]`` a checked citation listed under Sources with its link; numbers the model invented
  match no source and were removed by the check, and the answer says how many. Without a model the
  bot says so, and still outlines a linked video.
- Anything else gets a line on how to use the bot.

A video that cannot be read is answered with the error's message and hint, in the chat, so the
person who asked sees why.
"""

from __future__ import annotations

import re

from ..answers.ask import Question, ask
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..formats.blocks import duration_of, one_line
from ..outline import outline
from ..pipeline import get_context
from ..runtime import Runtime
from ..timecode import format_timestamp
from .message import Message, Part

__all__ = ["MAX_TEXT", "reply_for"]

MAX_TEXT = 4000
"""The longest message read; more is cut (a chat message is short, a paste of a whole page is not)."""
MAX_CHAPTERS = 25
_LINK = re.compile(r"https?://[^\s<>\"']+", re.IGNORECASE)
_COMMAND = re.compile(r"^/[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?\s*")
_USAGE = "Paste a video link for its outline, or ask a question about it (or about the saved videos)."


def _split(text: str) -> tuple[str | None, str]:
    found = _LINK.search(text)
    if found is None:
        return None, " ".join(text.split())
    link = found.group(0).rstrip(".,;:!?)]}>")
    rest = (text[: found.start()] + " " + text[found.end() :]).strip()
    return link, " ".join(rest.split())


def _error(message: Message, error: VidError) -> Message:
    message.add(f"{error.message}")
    if error.hint:
        message.add(error.hint)
    return message


async def _outline(runtime: Runtime, link: str, ctx: Ctx, message: Message) -> str | None:
    """Add the video's outline to ``message``; the video's id, or ``None`` when it cannot be read."""
    try:
        context = await get_context(runtime, link, ctx=ctx)
    except VidError as error:
        _error(message, error)
        return None
    meta = context.metadata
    message.add(Part(one_line(meta.title, 200) or context.id, meta.url))
    facts = [one_line(meta.channel, 100)]
    if (duration := duration_of(context)) is not None:
        facts.append(format_timestamp(duration))
    if facts := [fact for fact in facts if fact]:
        message.add(" · ".join(facts))
    shown = outline(context)
    for entry in shown.chapters[:MAX_CHAPTERS]:
        message.add(Part(f"[{entry.start}]", entry.url), f" {one_line(entry.title, 120)}")
    if len(shown.chapters) > MAX_CHAPTERS:
        message.add(f"… and {len(shown.chapters) - MAX_CHAPTERS} more.")
    if context.transcript is None:
        message.add("There is no transcript of this video.")
    return context.id


async def _answer(runtime: Runtime, question: str, video: str | None, ctx: Ctx, message: Message) -> None:
    try:
        result = await ask(runtime, Question(question=question, inputs=[video] if video else None), ctx)
    except VidError as error:
        if error.code is ErrorCode.NO_PROVIDER:
            message.add("Questions need a language model on this server, and none is set up.")
            return
        _error(message, error)
        return
    message.add(result.answer.strip())
    if result.citations:
        message.add("Sources:")
        for citation in result.citations:
            stamp = f"[{citation.n}] {one_line(citation.title, 80)} @ {format_timestamp(citation.start_sec)}"
            message.add(Part(stamp, citation.url))
    if result.unverified:
        count = len(result.unverified)
        message.add(
            f"({count} citation{'s' if count > 1 else ''} matched no source and {'were' if count > 1 else 'was'} removed.)"
        )


async def reply_for(runtime: Runtime, text: str, ctx: Ctx) -> Message:
    """The answer to one chat message (module docstring)."""
    link, question = _split(text[:MAX_TEXT])
    question = _COMMAND.sub("", question).strip()  # "/ask ..." or "/start": the words after it
    message = Message()
    video = await _outline(runtime, link, ctx, message) if link else None
    if question and (video or not link):
        if video:
            message.add("")
        await _answer(runtime, question, video, ctx, message)
    if not message.lines:
        message.add(_USAGE)
    return message
