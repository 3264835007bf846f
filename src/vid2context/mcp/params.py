"""The input fields tools share, each with its description (the contract's names, camelCase).

A video input is always ``url`` (a URL, a YouTube id, or on the local server a file path); several
are ``urls``; a collection is ``collection`` (its id or its name). Times take any form
``parse_time`` reads. A number the server checks has its range in the schema too (``int_range``),
while the tool's own check keeps answering with its message and hint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

__all__ = [
    "MAX_BUDGET",
    "MIN_BUDGET",
    "Chapter",
    "CollectionId",
    "Cursor",
    "Format",
    "Include",
    "From",
    "Language",
    "MaxTokens",
    "Mode",
    "OptionalCollection",
    "Speakers",
    "Timestamps",
    "To",
    "Translate",
    "Url",
    "Urls",
    "int_range",
    "limit_arg",
]

MAX_BUDGET = 10_000_000
MIN_BUDGET = 100
"""A page needs room for its header and its closing line (``VID2CONTEXT_MCP_MAX_TOKENS`` has the
same bounds)."""


def int_range(low: int, high: int) -> Callable[[dict[str, Any]], None]:
    """``json_schema_extra`` that declares ``minimum``/``maximum`` on the integer alternative of a
    field (``int | None`` is an ``anyOf``; clients with one-type schemas read bounds there)."""

    def extra(schema: dict[str, Any]) -> None:
        for branch in schema.get("anyOf", [schema]):
            if branch.get("type") == "integer":
                branch["minimum"], branch["maximum"] = low, high

    return extra


Url = Annotated[
    str,
    Field(description="Video URL or YouTube id (local server: a file path).", min_length=1, max_length=2048),
]
Urls = Annotated[
    list[str] | None,
    Field(description="Videos or lists (playlists, channels: expanded to their videos), as URLs or ids."),
]
CollectionId = Annotated[str, Field(description="A collection's id (col_...) or its name.")]
OptionalCollection = Annotated[
    str | None,
    Field(description="A collection's id (col_...) or name: its saved videos, then its pending ones."),
]
Format = Annotated[
    str,
    Field(
        description="Output format, one of the ids list_formats returns (text, markdown, srt, vtt, json, ...)."
    ),
]
Timestamps = Annotated[
    bool,
    Field(
        description="text format only: one [m:ss] line per segment, so every line can be cited (the "
        "default); false for paragraphs without times, about a seventh fewer tokens."
    ),
]
Mode = Annotated[
    str,
    Field(
        description="auto (captions, else speech-to-text), or only captions, stt (speech-to-text) or video."
    ),
]
Include = Annotated[
    list[str] | None,
    Field(
        description='["on_screen"] also reads the picture (slides, code, text on screen) as mode=video '
        "does, whatever the mode: an On screen section with [m:ss] (local server only)."
    ),
]
Language = Annotated[
    str | None,
    Field(
        description="Preferred transcript language, BCP-47 (en, de, pt-BR); default: the video's own.",
        json_schema_extra={"maxLength": 35},
    ),
]
Translate = Annotated[
    bool,
    Field(
        description="With language: when the video has no track in it, a language model translates the "
        "best one, every segment keeping its time (saved, so asking again costs nothing); your own "
        "model answers when your client can sample. Default false: the best track as it is.",
    ),
]
Speakers = Annotated[
    bool | None,
    Field(
        description="true labels who speaks: with mode=stt (or a video without captions) the "
        "speech-to-text rung that labels speakers is tried first, which the service bills; a "
        "transcript without labels says how to get them. false never labels. Left out: labels only "
        "when two or more voices were found."
    ),
]
MaxTokens = Annotated[
    int | None,
    Field(
        alias="maxTokens",
        description="Most tokens in one result (about 4 characters each); a longer result comes in "
        "pages. Left out: the server's page size, which the tool description states.",
        json_schema_extra=int_range(MIN_BUDGET, MAX_BUDGET),
    ),
]
Cursor = Annotated[
    str | None,
    Field(description='next_cursor of the previous page ("seg:N"); pass it with the same other arguments.'),
]
From = Annotated[
    str | float | None,
    Field(
        alias="from",
        description="Start of a time range: seconds (90), m:ss (1:30), h:mm:ss (1:02:05) or 1h2m5s.",
    ),
]
To = Annotated[str | float | None, Field(description="End of a time range, in the same forms as from.")]
Chapter = Annotated[
    int | str | None,
    Field(
        description="A chapter (or time section) by its get_outline index, or by title: exact, prefix, then substring."
    ),
]


def limit_arg(high: int, default: int, what: str) -> Any:
    """The ``limit`` argument of a tool that returns at most ``high`` ``what`` (``default`` when
    left out)."""
    return Annotated[
        int | None,
        Field(description=f"Most {what} to return; default {default}.", json_schema_extra=int_range(1, high)),
    ]
