"""Plain text: readable paragraphs, or one ``[m:ss]`` line per segment with ``timestamps``.

The header is not part of this format, so ``text`` stays the transcript alone (what a pipe or a
subtitle-to-text conversion expects); the MCP tools and resources put ``context_header()`` above it.
A context whose picture was read (``mode=video``) ends with its "On screen" section.
"""

from __future__ import annotations

from ..models import Segment, VideoContext
from ..timecode import format_timestamp
from .base import RenderOptions
from .blocks import chapter_spans, clean_text, one_line, paragraphs, segments_of, split_by_starts
from .onscreen import on_screen_text

__all__ = ["TextFormatter", "segment_lines"]


def segment_lines(segments: list[Segment]) -> list[str]:
    """``[m:ss] text`` (``[m:ss] Speaker: text``) for every segment that has words."""
    lines = []
    for seg in segments:
        if text := clean_text(seg.text):
            speaker = one_line(seg.speaker)
            lines.append(f"[{format_timestamp(seg.start_sec)}] {f'{speaker}: ' if speaker else ''}{text}")
    return lines


class TextFormatter:
    id = "text"
    description = "Plain text: paragraphs, or one [m:ss] line per segment with timestamps."
    mime_type = "text/plain; charset=utf-8"
    extension = "txt"
    combines_videos = False

    def render(self, context: VideoContext, options: RenderOptions) -> str:
        body = self._transcript(context, options)
        shown = on_screen_text(context)
        if shown is None:
            return body
        return f"{body}\n{shown}\n" if body else f"{shown}\n"

    def _transcript(self, context: VideoContext, options: RenderOptions) -> str:
        segments = segments_of(context)
        if options.timestamps:
            lines = segment_lines(segments)
            return "\n".join(lines) + "\n" if lines else ""
        spans = chapter_spans(context)
        groups = split_by_starts(segments, [s.start_sec for s in spans]) if spans else [segments]
        blocks = []
        for group in groups:
            for para in paragraphs(group):
                speaker = one_line(para.speaker)
                blocks.append(f"{speaker}: {para.text}" if speaker else para.text)
        return "\n\n".join(blocks) + "\n" if blocks else ""
