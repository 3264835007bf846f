"""JSON: the whole ``VideoContext`` as the API returns it (camelCase), pretty-printed.

Pretty rather than compact because agents and people read it, and the contracts ask for
pretty-printed JSON text; the indentation costs little next to the transcript itself.
"""

from __future__ import annotations

import msgspec

from ..models import VideoContext
from .base import RenderOptions

__all__ = ["JsonFormatter"]

_ENCODER = msgspec.json.Encoder()


class JsonFormatter:
    id = "json"
    description = "The full VideoContext as JSON: metadata, timed segments, attempts."
    mime_type = "application/json"
    extension = "json"
    combines_videos = False

    def render(self, context: VideoContext, options: RenderOptions) -> str:
        return msgspec.json.format(_ENCODER.encode(context), indent=2).decode() + "\n"
