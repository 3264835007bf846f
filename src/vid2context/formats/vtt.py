"""WebVTT (``.vtt``): ``HH:MM:SS.mmm`` times, cue text escaped as the spec requires.

In cue text ``&``, ``<`` and ``>`` are written as character references (the spec requires it of
``&`` and ``<``; ``>`` too, so no cue contains ``-->``), which is what lets a caption saying
``<div>`` or ``&amp;lt;`` come back from any WebVTT reader as it was said; blank lines, which end
a cue, are dropped. A speaker becomes a voice span, ``<v Name>``.
"""

from __future__ import annotations

from ..models import VideoContext
from .base import RenderOptions
from .blocks import cues, numbered_cues, plain_cues, segments_of

__all__ = ["VttFormatter", "escape_cue_text", "vtt_time"]


def vtt_time(ms: int) -> str:
    hours, rest = divmod(max(0, ms), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def escape_cue_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class VttFormatter:
    id = "vtt"
    description = "WebVTT subtitles (.vtt)."
    mime_type = "text/vtt; charset=utf-8"
    extension = "vtt"
    combines_videos = False

    def render(self, context: VideoContext, options: RenderOptions) -> str:
        segments = segments_of(context)
        plain = plain_cues(segments)
        if plain is not None:  # one f-string per cue; times and escaping in batches
            starts, ends, texts = plain
            if texts:  # escaped all at once: NUL, the separator, is not in any text
                texts = escape_cue_text("\x00".join(texts)).split("\x00")
            blocks = numbered_cues(starts, ends, texts, ".")
            return "WEBVTT\n\n" + "\n\n".join(blocks) + "\n" if blocks else "WEBVTT\n"
        blocks = ["WEBVTT"]
        for number, cue in enumerate(cues(segments), start=1):
            lines = [escape_cue_text(line) for line in cue.lines]
            if cue.speaker:
                lines[0] = f"<v {escape_cue_text(cue.speaker)}>{lines[0]}</v>"
            timing = f"{vtt_time(cue.start_ms)} --> {vtt_time(cue.end_ms)}"
            blocks.append("\n".join([str(number), timing, *lines]))
        return "\n\n".join(blocks) + "\n"
