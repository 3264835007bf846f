"""A live page (a YouTube live, any page yt-dlp reads) to the address of its stream's manifest.

Local only (``LOCAL_ONLY``): yt-dlp is a subprocess. ``FfmpegLive.probe`` asks here when the
address it was given is a page rather than a manifest (a YouTube URL, or any answer that is not an
HLS playlist or DASH manifest); the address found is then read as if it had been given, through
the same checks (public mode's egress included).

``live_manifest(info)`` is the pure half: yt-dlp's ``-J`` answer in, the manifest address out.
A page yt-dlp says is not live (``is_live: false``, ``live_status`` ``not_live``, ``was_live``,
``post_live``), or whose media is a file rather than a stream, is a video (``unsupported-input``,
with the hint to read its transcript); a scheduled stream has not started (``timeout``, as a
playlist with no media yet). Where yt-dlp cannot tell (its generic extractor on an HTML5
``<video>`` does not look), the manifest found decides: the probe refuses a finished playlist as
it refuses one given directly. Of the formats streamed over HLS or DASH, one with
sound and the least data a second is read (the audio is all that is transcribed): an HLS format's
own media playlist, a DASH format's manifest.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..ctx import Ctx
from ..errors import ErrorCode, VidError, per_surface
from ..inputs import parse_input
from ..models import VideoRef

__all__ = ["PageReader", "live_manifest", "not_a_stream", "resolve_page"]

_HLS = ("m3u8", "m3u8_native")
_DASH = ("http_dash_segments",)
_OVER = ("not_live", "was_live", "post_live")


class PageReader(Protocol):
    """What reads a page's info (``providers.ytdlp.YtDlpProvider``)."""

    def accepts(self, ref: VideoRef) -> bool:
        """Whether it reads pages of ``ref``'s platform."""
        ...

    async def page_info(self, ref: VideoRef, ctx: Ctx) -> dict[str, Any]:
        """yt-dlp's ``-J`` answer for one video's page; raises its ``VidError``."""
        ...


def _not_live(title: str) -> VidError:
    return VidError(
        ErrorCode.UNSUPPORTED_INPUT,
        f"{title} is not live now: it is a video, not a stream on air.",
        hint=per_surface(
            rest="Read it as a video with GET /api/v1/transcript?url=<the same address>; for a stream, give "
            "its page while it is on air, or its .m3u8 or .mpd address.",
            mcp="Read it as a video with get_transcript and the same url; for a stream, give its page while "
            "it is on air, or its .m3u8 or .mpd address.",
        ),
    )


def not_a_stream() -> VidError:
    """The address is neither a stream's manifest nor a page with a live stream."""
    return VidError(
        ErrorCode.UNSUPPORTED_INPUT,
        "The address is not an HLS playlist or DASH manifest of a stream, nor a page with a live stream.",
        hint=per_surface(
            rest="Give the stream's .m3u8 or .mpd address or its live page; for a video, read its transcript "
            "instead (GET /api/v1/transcript?url=...).",
            mcp="Give the stream's .m3u8 or .mpd address or its live page; for a video, read its transcript "
            "instead (get_transcript).",
        ),
    )


def _rate(fmt: dict[str, Any]) -> float:
    for name in ("tbr", "abr"):
        value = fmt.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return float("inf")


def live_manifest(info: dict[str, Any]) -> str:
    """The manifest address of the live stream yt-dlp found (see the module docstring)."""
    title = str(info.get("title") or "The page")[:80]
    status = info.get("live_status")
    if status == "is_upcoming":
        raise VidError(
            ErrorCode.TIMEOUT,
            f"{title} has not started: the stream is scheduled, not on air yet.",
            hint="Tell the user the stream has not started, and do not retry until it is on air.",
        )
    if info.get("is_live") is False or status in _OVER:
        raise _not_live(title)
    listed = info.get("formats")
    formats = [f for f in listed if isinstance(f, dict)] if isinstance(listed, list) else []
    formats = formats or [info]  # one format: yt-dlp puts it in the info itself
    streamed = [
        f
        for f in formats
        if str(f.get("protocol") or "") in _HLS + _DASH and isinstance(f.get("url"), str) and f.get("url")
    ]
    if not streamed:
        if any(isinstance(f.get("url"), str) for f in formats):
            raise _not_live(title)  # a media file: a video
        raise not_a_stream()
    heard = [f for f in streamed if f.get("acodec") != "none"] or streamed
    best = min(heard, key=_rate)  # the first of the least data a second: the order yt-dlp lists
    if str(best.get("protocol")) in _DASH and isinstance(best.get("manifest_url"), str):
        return str(best["manifest_url"])
    return str(best["url"])


async def resolve_page(reader: PageReader | None, url: str, ctx: Ctx) -> str:
    """The manifest address behind the page ``url``; ``unsupported-input`` when nothing here reads
    such pages, or the page has no live stream."""
    ref = parse_input(url)
    if reader is None or not reader.accepts(ref) or ref.kind != "video":
        raise not_a_stream()
    try:
        info = await reader.page_info(ref, ctx)
    except VidError as error:
        if error.code is ErrorCode.UNSUPPORTED_INPUT:  # yt-dlp: "Unsupported URL", a page without media
            raise not_a_stream() from None
        raise
    return live_manifest(info)
