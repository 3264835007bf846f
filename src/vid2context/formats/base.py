"""What a formatter is: an id, a MIME type and one pure ``render`` function.

Formatters turn a ``VideoContext`` into the text a caller asked for. They are plain objects in an
ordered map (``FORMATTERS``), never discovered by name, and they do no I/O, so the same code runs
locally and on the Worker.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import msgspec

from ..models import VideoContext

__all__ = ["FormatInfo", "Formatter", "RenderOptions", "format_info"]


class RenderOptions(msgspec.Struct, kw_only=True, frozen=True):
    """How to render. Formatters ignore the options that mean nothing to them."""

    timestamps: bool = False
    """Prefix each line with ``[m:ss]`` where the format has lines (``text``)."""
    max_tokens: int | None = None
    """Token budget for the whole result (``pack``); ``None`` means no limit."""


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
