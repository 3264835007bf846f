"""What a stream's manifest says: HLS master or media playlist, DASH MPD, live or not.

Pure text in, a ``Manifest`` out, so the rule "a playlist that will not grow is not live" is one
function both the probe and its tests read. An HLS media playlist is finished (video on demand)
when it carries ``#EXT-X-ENDLIST`` or ``#EXT-X-PLAYLIST-TYPE:VOD``; a master playlist names its
variants, whose first is read next; a DASH MPD is live when its ``type`` is ``dynamic``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

__all__ = ["Manifest", "read_manifest"]

Kind = Literal["hls-master", "hls-media", "dash", "page", "other"]
"""``page``: an HTML answer (set by the fetcher, which sees the ``Content-Type``), whose stream a
page reader may find; ``other``: anything else that is no manifest (a media file)."""

_MPD_TYPE = re.compile(r"<MPD\b[^>]*\btype\s*=\s*[\"']([a-z]+)[\"']", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Manifest:
    kind: Kind
    live: bool = False
    """Whether more is still to come (an HLS media playlist without an end, a dynamic MPD)."""
    segments: int = 0
    """Media segments listed (HLS media playlists; DASH: 1, its segments are templated)."""
    variant: str | None = None
    """A master playlist's first variant, as an absolute URL."""


def read_manifest(text: str, url: str) -> Manifest:
    """The manifest ``text`` fetched from ``url`` (which resolves a variant's relative address)."""
    head = text.lstrip("\ufeff \t\r\n")
    if head.startswith("#EXTM3U"):
        return _hls(head, url)
    if "<MPD" in head[:4096]:
        found = _MPD_TYPE.search(head)
        return Manifest(kind="dash", live=bool(found and found.group(1).lower() == "dynamic"), segments=1)
    return Manifest(kind="other")


def _hls(text: str, url: str) -> Manifest:
    lines = [line.strip() for line in text.splitlines()]
    if any(line.startswith("#EXT-X-STREAM-INF") for line in lines):
        for index, line in enumerate(lines):
            if line.startswith("#EXT-X-STREAM-INF"):
                uri = next((x for x in lines[index + 1 :] if x and not x.startswith("#")), None)
                if uri is not None:
                    return Manifest(kind="hls-master", variant=urljoin(url, uri))
        return Manifest(kind="hls-master")
    finished = any(
        line.startswith("#EXT-X-ENDLIST") or line.upper() == "#EXT-X-PLAYLIST-TYPE:VOD" for line in lines
    )
    segments = sum(1 for line in lines if line.startswith("#EXTINF"))
    return Manifest(kind="hls-media", live=not finished, segments=segments)
