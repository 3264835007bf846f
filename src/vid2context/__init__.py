"""vid2context: any video as context an AI agent can use.

The public surface is re-exported here; each module's ``__all__`` says what it offers.
"""

from .errors import STATUS_BY_CODE, ErrorCode, VidError
from .inputs import is_list, parse_input
from .models import (
    Attempt,
    CaptionTrack,
    Chapter,
    Comment,
    Segment,
    Transcript,
    VideoContext,
    VideoMetadata,
    VideoRef,
    VideoSummary,
)
from .timecode import format_timestamp, parse_time, timestamp_url
from .tokens import estimate_tokens

__version__ = "0.1.0"

__all__ = [
    "STATUS_BY_CODE",
    "Attempt",
    "CaptionTrack",
    "Chapter",
    "Comment",
    "ErrorCode",
    "Segment",
    "Transcript",
    "VidError",
    "VideoContext",
    "VideoMetadata",
    "VideoRef",
    "VideoSummary",
    "__version__",
    "estimate_tokens",
    "format_timestamp",
    "is_list",
    "parse_input",
    "parse_time",
    "timestamp_url",
]
