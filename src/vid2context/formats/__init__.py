"""Formatters: one module each, in one ordered map.

``FORMATTERS`` is the only list of formats; routes, tools and health output read it at runtime.
``text`` comes first because it is the default everywhere.
"""

from __future__ import annotations

from ..errors import ErrorCode, VidError
from ..models import VideoContext
from .base import FormatInfo, Formatter, Links, Part, RenderOptions, format_info
from .header import context_header
from .json import JsonFormatter
from .markdown import MarkdownFormatter
from .pack import PackFormatter, render_many
from .srt import SrtFormatter
from .text import TextFormatter
from .vtt import VttFormatter

__all__ = [
    "FORMATTERS",
    "FormatInfo",
    "Formatter",
    "Links",
    "Part",
    "RenderOptions",
    "context_header",
    "format_info",
    "format_infos",
    "get_formatter",
    "header_of",
    "render",
    "render_many",
    "render_view",
]

FORMATTERS: dict[str, Formatter] = {
    formatter.id: formatter
    for formatter in (
        TextFormatter(),
        MarkdownFormatter(),
        SrtFormatter(),
        VttFormatter(),
        JsonFormatter(),
        PackFormatter(),
    )
}


def get_formatter(format_id: str) -> Formatter:
    """The formatter for ``format_id`` (case and surrounding space ignored); ``bad-request`` if none."""
    key = format_id.strip().lower() if isinstance(format_id, str) else ""
    if formatter := FORMATTERS.get(key):
        return formatter
    shown = str(format_id)
    if len(shown) > 40:
        shown = shown[:40] + "..."
    raise VidError(
        ErrorCode.BAD_REQUEST,
        f"Unknown format {shown!r}.",
        hint=f"Give format as one of: {', '.join(FORMATTERS)}.",
    )


def render(context: VideoContext, format_id: str = "text", options: RenderOptions | None = None) -> str:
    return get_formatter(format_id).render(context, options or RenderOptions())


def format_infos() -> list[FormatInfo]:
    """Every formatter as ``GET /formats`` and ``list_formats`` describe it, in map order."""
    return [format_info(formatter) for formatter in FORMATTERS.values()]


def header_of(context: VideoContext, formatter: Formatter, options: RenderOptions) -> str:
    """The header ``render_view`` starts with for ``formatter`` ("" for the formats without one):
    the full header, or the lean one when ``options.part`` is set. Plain text gives the link
    pattern once (its ``[m:ss]`` are bare); Markdown links every moment."""
    if formatter.id not in ("text", "markdown"):
        return ""
    links: Links = "pattern" if formatter.id == "text" else "each"
    return context_header(
        context, links=links, asked=options.asked, part=options.part, speakers=options.speakers
    )


def render_view(
    context: VideoContext, formatter: Formatter, options: RenderOptions, section_line: str = ""
) -> str:
    """What a reader gets for one video: ``text`` carries the header (and a section's line) above
    the body, so the agent always knows the source; other formats are the formatter's output
    (Markdown has the header in its own layout).

    The CLI, the REST API and the MCP tools all print through this, so they agree byte for byte.
    """
    body = formatter.render(context, options)
    if formatter.id == "text":
        parts = [header_of(context, formatter, options), section_line, body]
        body = "\n\n".join(part for part in parts if part)
    return body if body.endswith("\n") else body + "\n"
