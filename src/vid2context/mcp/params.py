"""The input fields tools share, each with its description (the contract's names, camelCase).

A video input is always ``url`` (a URL, a YouTube id, or on the local server a file path); several
are ``urls``; a collection is ``collection`` (its id). Times take any form ``parse_time`` reads.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

__all__ = [
    "Chapter",
    "CollectionId",
    "Cursor",
    "Format",
    "From",
    "Language",
    "Limit",
    "MaxTokens",
    "Mode",
    "OptionalCollection",
    "Timestamps",
    "To",
    "Url",
    "Urls",
]

Url = Annotated[
    str,
    Field(
        description="The video: a YouTube URL or id (jNQXAC9IVRw), any video page URL, or on the local "
        "server a media file path.",
        min_length=1,
        max_length=2048,
    ),
]
Urls = Annotated[
    list[str] | None,
    Field(description="Videos or lists (playlists, channels: expanded to their videos), as URLs or ids."),
]
CollectionId = Annotated[str, Field(description="A collection id (col_...), as list_collections shows it.")]
OptionalCollection = Annotated[
    str | None, Field(description="A collection id (col_...): its saved videos, then its pending ones.")
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
        description="auto (captions, then speech-to-text), captions (platform captions only), stt "
        "(speech-to-text only) or video."
    ),
]
Language = Annotated[
    str | None,
    Field(description="Preferred transcript language, BCP-47 (en, de, pt-BR); default: the video's own."),
]
MaxTokens = Annotated[
    int | None,
    Field(
        alias="maxTokens",
        description="Most tokens in one result (about 4 characters each), 100 to 10000000; a longer "
        "result comes in pages. Left out: the server's page size, which the tool description states.",
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
Limit = Annotated[int | None, Field(description="Most items to return.")]
