"""What the transcript viewer shows: one video's metadata, chapters and timed segments.

The MCP tool ``open_transcript_viewer`` sends it as ``structuredContent`` and the component in
``ui/transcript.js`` renders it, so the shape is the contract between the two (and the web app
takes the same). Chapters are the outline's: the video's own, else sections of about five
minutes (``sections`` says which), so a video without chapters can still be jumped through.
``link`` is the moment link with ``<seconds>`` where the whole seconds go, made here once so the
page needs no knowledge of platforms; ``None`` where the video has no shareable link. ``PageView`` is what the web app reads
(``GET /api/v1/view``): the same, with the token count a reader weighs before pasting it anywhere.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .formats.blocks import link_pattern, segments_of
from .models import Base, Chapter, Origin, Segment, VideoContext, VideoMetadata
from .outline import outline

__all__ = ["PageView", "TranscriptView", "page_view", "transcript_view"]


class TranscriptView(Base, kw_only=True):
    id: str
    metadata: VideoMetadata
    chapters: list[Chapter]
    sections: Literal["chapters", "time"]
    segments: list[Segment]
    link: str | None = None
    language: str | None = None
    origin: Origin | None = None


class PageView(TranscriptView, kw_only=True):
    total_tokens: int = 0
    """What the whole transcript costs in ``text`` (as ``/outline``'s ``totalTokens``)."""


def transcript_view(context: VideoContext) -> TranscriptView:
    """The viewer's data for ``context``; the metadata without its chapters (``chapters`` has them)."""
    parts = outline(context)
    transcript = context.transcript
    return TranscriptView(
        id=context.id,
        metadata=msgspec.structs.replace(context.metadata, chapters=[]),
        chapters=[
            Chapter(title=entry.title, start_sec=entry.start_sec, end_sec=entry.end_sec)
            for entry in parts.chapters
        ],
        sections=parts.sections,
        segments=segments_of(context),
        link=link_pattern(context),
        language=transcript.language if transcript else None,
        origin=transcript.origin if transcript else None,
    )


def page_view(context: VideoContext, total_tokens: int) -> PageView:
    """``transcript_view`` with the transcript's token count, for the web app."""
    view = transcript_view(context)
    return PageView(**msgspec.structs.asdict(view), total_tokens=total_tokens)
