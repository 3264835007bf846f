"""Markdown: the header as a heading block, chapters as ``##`` headings, cited paragraphs.

Every paragraph starts with its ``[m:ss](link)`` citation, so an agent quoting any paragraph can
cite it. The pack reuses ``markdown_body`` one heading level down.

Transcript text, speakers and chapter titles go through ``md_text``: a caption saying "wrap it
in a <div>" renders with its ``<div>`` (a backslash before it in the source) instead of losing it
to the renderer as HTML, and a caption cannot make a link that passes for a citation. The text
format and JSON keep the text exactly.
"""

from __future__ import annotations

from ..models import Segment, VideoContext
from .base import RenderOptions
from .blocks import (
    chapter_spans,
    cite,
    md_text,
    one_line,
    paragraphs,
    plain_text,
    segments_of,
    split_by_starts,
)
from .header import context_header
from .onscreen import on_screen_markdown

__all__ = ["MarkdownFormatter", "markdown_body"]

NO_TRANSCRIPT = "_No transcript._"


def markdown_body(context: VideoContext, *, level: int = 2, limit: int | None = None) -> str:
    """The transcript as Markdown blocks, without the header.

    Chapters become headings at ``level``; a video without chapters gets no heading. ``limit``
    renders only the first ``limit`` segments (a cut on a segment boundary) and the chapter headings
    up to the last one those segments reach.
    """
    segments = segments_of(context)
    included = segments if limit is None else segments[: max(0, limit)]
    spans = chapter_spans(context)
    if not spans:
        return "\n\n".join(_cited(context, group) for group in [included] if group)
    groups = split_by_starts(included, [span.start_sec for span in spans])
    if limit is None:
        last = len(spans) - 1
    else:
        last = max((i for i, group in enumerate(groups) if group), default=-1)
    blocks = []
    hashes = "#" * max(1, min(level, 6))
    for span, group in list(zip(spans, groups, strict=True))[: last + 1]:
        title = md_text(one_line(span.title, 200)) or "Untitled"
        blocks.append(f"{hashes} {title} {cite(context, span.start_sec)}")
        if group:
            blocks.append(_cited(context, group))
    return "\n\n".join(blocks)


def _cited(context: VideoContext, segments: list[Segment]) -> str:
    blocks = []
    for para in paragraphs(segments):
        speaker = md_text(one_line(para.speaker))
        blocks.append(
            f"{cite(context, para.start_sec)} {f'{speaker}: ' if speaker else ''}{md_text(para.text)}"
        )
    return "\n\n".join(blocks)


class MarkdownFormatter:
    id = "markdown"
    description = "Markdown with the source header, chapter headings and [m:ss](link) citations."
    mime_type = "text/markdown; charset=utf-8"
    extension = "md"
    combines_videos = False

    def render(self, context: VideoContext, options: RenderOptions) -> str:
        blocks = [context_header(context, asked=options.asked, part=options.part, speakers=options.speakers)]
        if not plain_text(segments_of(context)):
            blocks.append(NO_TRANSCRIPT)
        else:
            if not chapter_spans(context):
                blocks.append("## Transcript")
            blocks.append(markdown_body(context, level=2))
        if (shown := on_screen_markdown(context)) is not None:
            blocks.append(shown)
        return "\n\n".join(blocks) + "\n"
