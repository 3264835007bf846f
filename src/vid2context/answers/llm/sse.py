"""Server-sent events, as the chat APIs stream them: the ``data`` of each event, up to ``[DONE]``.

Both wire formats our rungs read are SSE: OpenAI's chat completions (``data: {chunk}`` ... then
``data: [DONE]``) and Workers AI's text generation (``data: {"response": "..."}`` ... ``data:
[DONE]``, over REST and from the binding's ReadableStream alike). ``events(lines)`` reads either,
per the HTML standard's parsing rules as far as these services use them: lines end in LF, CR or
CRLF; ``data:`` lines of one event are joined with newlines; a line starting with ``:`` is a
comment (keep-alives); other fields (``event``, ``id``, ``retry``) are ignored; an event ends at a
blank line, and a last one without its blank line still counts when the stream ends.
``lines_of(chunks)`` turns raw byte chunks (cut anywhere, even inside a UTF-8 character) into
those lines.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable, AsyncIterator

__all__ = ["DONE", "MAX_EVENT_CHARS", "events", "lines_of"]

DONE = "[DONE]"
MAX_EVENT_CHARS = 1_000_000
"""One event larger than this is not an answer chunk: the stream is refused (``ValueError``)."""


async def lines_of(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """The text lines of a byte stream (without their line ends)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    pending = ""
    async for chunk in chunks:
        text = pending + decoder.decode(chunk)
        if len(text) > MAX_EVENT_CHARS:
            raise ValueError("an event stream line is too long")
        held = "\r" if text.endswith("\r") else ""  # its \n may come in the next chunk
        *whole, rest = text[: len(text) - len(held)].replace("\r\n", "\n").replace("\r", "\n").split("\n")
        pending = rest + held
        for line in whole:
            yield line
    pending = (pending + decoder.decode(b"", final=True)).rstrip("\r")
    if pending:
        yield pending


async def events(lines: AsyncIterable[str]) -> AsyncIterator[str]:
    """The ``data`` of each event, in order, up to ``DONE`` (yielded, so a reader knows the stream
    ended as it should) or the end of the lines."""
    data: list[str] = []
    size = 0
    async for line in lines:
        if not line:
            if data:
                payload = "\n".join(data)
                data, size = [], 0
                if payload.strip() == DONE:
                    yield DONE
                    return
                yield payload
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field != "data":
            continue
        value = value[1:] if value.startswith(" ") else value
        size += len(value)
        if size > MAX_EVENT_CHARS:
            raise ValueError("an event is too large")
        data.append(value)
    if data:
        payload = "\n".join(data)
        yield DONE if payload.strip() == DONE else payload
