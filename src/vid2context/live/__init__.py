"""Live streams cut and transcribed as they arrive (``core``), from manifests (``playlists``) read by
ffmpeg on the local runtime (``ffmpeg_live``, local only); the Worker has no reader and says so."""

from .core import (
    DEFAULT_MAX_MINUTES,
    MAX_MINUTES,
    PIECE_SEC,
    LivePiece,
    LiveSource,
    LiveWatch,
    check_minutes,
    live_events,
    prepare_live,
)
from .playlists import Manifest, read_manifest

__all__ = [
    "DEFAULT_MAX_MINUTES",
    "MAX_MINUTES",
    "PIECE_SEC",
    "LivePiece",
    "LiveSource",
    "LiveWatch",
    "Manifest",
    "check_minutes",
    "live_events",
    "prepare_live",
    "read_manifest",
]
