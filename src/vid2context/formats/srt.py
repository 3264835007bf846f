"""SubRip (``.srt``): numbered cues, ``HH:MM:SS,mmm`` times, text that never holds a blank line.

A blank line ends a cue in SRT, so every line of a segment is trimmed and empty lines are dropped;
segments with no text are left out and the rest are numbered from 1 without gaps.

Text is written as it is, ``<``, ``>`` and ``&`` included: SubRip has no escaping. ``&lt;`` would
be shown as four characters by the ``srt`` library, ffmpeg (and so mpv) and MPC-HC alike, so
escaping would corrupt every file to help none. The format cannot say everything, though:
ffmpeg-based players drop tags they do not know (``<div>``) and all of them style ``<i>``, and
readers that decode entities as VLC does turn a spelled-out ``&amp;lt;`` into ``&lt;``. WebVTT
(which escapes) and JSON carry caption text exactly.
"""

from __future__ import annotations

from ..models import VideoContext
from .base import RenderOptions
from .blocks import cues, numbered_cues, plain_cues, segments_of

__all__ = ["SrtFormatter", "srt_time"]


def srt_time(ms: int) -> str:
    hours, rest = divmod(max(0, ms), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d},{millis:03d}"


class SrtFormatter:
    id = "srt"
    description = "SubRip subtitles (.srt)."
    mime_type = "application/x-subrip; charset=utf-8"
    extension = "srt"
    combines_videos = False

    def render(self, context: VideoContext, options: RenderOptions) -> str:
        segments = segments_of(context)
        plain = plain_cues(segments)
        if plain is not None:  # one f-string per cue, times in one batch
            starts, ends, texts = plain
            blocks = numbered_cues(starts, ends, texts, ",")
            return "\n\n".join(blocks) + "\n" if blocks else ""
        blocks = []
        for number, cue in enumerate(cues(segments), start=1):
            lines = list(cue.lines)
            if cue.speaker:
                lines[0] = f"{cue.speaker}: {lines[0]}"
            timing = f"{srt_time(cue.start_ms)} --> {srt_time(cue.end_ms)}"
            blocks.append("\n".join([str(number), timing, *lines]))
        return "\n\n".join(blocks) + "\n" if blocks else ""
