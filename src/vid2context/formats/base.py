"""What a formatter is: an id, a MIME type and one pure ``render`` function.

Formatters turn a ``VideoContext`` into the text a caller asked for. They are plain objects in an
ordered map (``FORMATTERS``), never discovered by name, and they do no I/O, so the same code runs
locally and on the Worker.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import msgspec

from ..models import VideoContext

__all__ = ["FormatInfo", "Formatter", "Links", "Part", "RenderOptions", "format_info"]


Links = Literal["each", "pattern"]
"""How a result prints its moments: ``each`` as a link, or ``pattern``: bare ``[m:ss]`` with the
link pattern stated once in the header."""


class Part(msgspec.Struct, kw_only=True, frozen=True):
    """What a result covers when it is not a first read (a later page, a section): its header is
    then the lean one-line header, which says so."""

    start_sec: float
    end_sec: float
    title: str | None = None
    """The chapter's title when the result is one chapter."""


class RenderOptions(msgspec.Struct, kw_only=True, frozen=True):
    """How to render. Formatters ignore the options that mean nothing to them."""

    timestamps: bool = False
    """Prefix each line with ``[m:ss]`` where the format has lines (``text``)."""
    max_tokens: int | None = None
    """Token budget for the whole result (``pack``); ``None`` means no limit."""
    asked: str | None = None
    """The language the caller asked for: the header names the track only when it differs."""
    part: Part | None = None
    """Set for a result that is not a first read: the header is the lean one for this part."""
    speakers: str | None = None
    """What the full header says about speaker labels (``speakers.with_speakers``), when asked."""


@runtime_checkable
class Formatter(Protocol):
    id: str
    """Stable id used in ``format=`` parameters (``text``, ``srt``)."""
    description: str
    mime_type: str
    """The ``Content-Type`` a route answers with, charset included for text."""
    extension: str
    """File extension without the dot, for downloads and bundles."""
    combines_videos: bool
    """True when the format is meant for several videos at once (``pack``)."""

    def render(self, context: VideoContext, options: RenderOptions) -> str:
        """The rendered text; never raises for a well-formed context."""
        ...


class FormatInfo(msgspec.Struct, kw_only=True, rename="camel"):
    """A formatter as ``GET /formats``, health output and ``list_formats`` describe it."""

    id: str
    description: str
    mime_type: str
    extension: str
    combines_videos: bool


def format_info(formatter: Formatter) -> FormatInfo:
    return FormatInfo(
        id=formatter.id,
        description=formatter.description,
        mime_type=formatter.mime_type,
        extension=formatter.extension,
        combines_videos=formatter.combines_videos,
    )
