"""The "On screen" section of ``text`` and ``markdown``: the on-screen layer, one cited line each.

Only a context whose picture was read (``visual`` not ``None``) gets the section. An empty layer
still gets it, with its note, so a reader knows the picture was looked at and could not be read.
The text of a slide is joined on one line with `` / `` between its lines: the section stays one
line per stretch, as the transcript's timestamped lines are.
"""

from __future__ import annotations

from ..models import VideoContext
from ..timecode import format_timestamp
from .blocks import cite, md_text, one_line

__all__ = ["ON_SCREEN", "on_screen_markdown", "on_screen_text"]

ON_SCREEN = "On screen"
_NOTHING = "Nothing on screen could be read."


def _joined(text: str) -> str:
    return " / ".join(one_line(line) for line in text.splitlines() if line.strip())


def _label(kind: str) -> str:
    return "scene: " if kind == "scene" else ""


def on_screen_text(context: VideoContext) -> str | None:
    """``On screen`` then ``[m:ss] text`` lines and the note; ``None`` when the picture was not read."""
    if context.visual is None:
        return None
    lines = [ON_SCREEN]
    lines += [f"[{format_timestamp(i.start_sec)}] {_label(i.kind)}{_joined(i.text)}" for i in context.visual]
    if context.visual_note or not context.visual:
        lines.append(f"Note: {one_line(context.visual_note) or _NOTHING}")
    return "\n".join(lines)


def on_screen_markdown(context: VideoContext, *, level: int = 2) -> str | None:
    """``## On screen`` then one cited bullet per stretch and the note in italics."""
    if context.visual is None:
        return None
    blocks = [f"{'#' * max(1, min(level, 6))} {ON_SCREEN}"]
    bullets = [
        f"- {cite(context, i.start_sec)} {_label(i.kind)}{md_text(_joined(i.text))}" for i in context.visual
    ]
    if bullets:
        blocks.append("\n".join(bullets))
    if context.visual_note or not context.visual:
        blocks.append(f"_{md_text(one_line(context.visual_note) or _NOTHING)}_")
    return "\n\n".join(blocks)
