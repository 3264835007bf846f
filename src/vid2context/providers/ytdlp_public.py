"""yt-dlp in public mode: nothing it runs may fetch around the filtering proxy.

``--proxy`` sends yt-dlp's own requests through the proxy (``egress/proxy.py``), and yt-dlp sets
``http_proxy`` for the ffmpeg it starts. That leaves the ways a run could open a socket or a file
of a page's choosing without asking the proxy, each closed here:

    rtmp, rtsp, mms formats .... downloaded by rtmpdump, mpv or mplayer, which take no proxy:
                                 only http(s), HLS and DASH formats are chosen (``public_format``);
                                 rtmp goes to ffmpeg, whose whitelist refuses it
    yt-dlp's ffmpeg ............ ``-protocol_whitelist`` http(s) only: a playlist's file:, udp:,
                                 rtmp: or raw tcp: entries are refused (its HLS and DASH readers
                                 never open tcp: for a segment)
    ffmpeg fixups .............. ``--fixup never``: a "media" file that is a playlist would make
                                 ffmpeg read the files it names
    --load-info-json ........... the info JSON given back keeps http(s) URLs only, and no
                                 ``downloader_options`` (extra ffmpeg arguments)
    the environment ............ ``*_proxy`` and ``no_proxy`` are not inherited: ``no_proxy``
                                 would let ffmpeg connect directly
    --enable-file-urls ......... refused in ``VID2CONTEXT_YTDLP_ARGS`` at start-up
    the saved file ............. must have a media extension: PyAV (faster-whisper) would read a
                                 saved playlist as one, and open what it names

Options the operator sets (cookies, config locations, external downloaders, which yt-dlp gives
the proxy too) are the operator's. Local only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ErrorCode, VidError

__all__ = [
    "FFMPEG_PROTOCOLS",
    "PUBLIC_PROTOCOLS",
    "check_saved_media",
    "public_args",
    "public_env",
    "public_format",
    "public_info",
    "public_info_file",
    "refuse_file_urls",
]

PUBLIC_PROTOCOLS = r"^(https?|m3u8(_native)?|http_dash_segments(_generator)?)$"
"""The download protocols allowed: yt-dlp fetches them itself, or hands them to ffmpeg over http."""
FFMPEG_PROTOCOLS = "http,https,tls,tcp,httpproxy,crypto,data"
"""What yt-dlp's ffmpeg may open: http(s) through the proxy (``tcp`` carries it there)."""
MEDIA_EXTENSIONS = frozenset(
    {"m4a", "mp4", "m4v", "webm", "weba", "mka", "mkv", "mp3", "ogg", "oga", "opus", "aac", "flac", "wav",
     "3gp", "flv", "ts", "mov"}
)  # fmt: skip
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "no_proxy")
_FILE_URLS = "--enable-file-urls"


def public_format(selector: str) -> str:
    """``selector`` (``a/b/c``) with every choice limited to ``PUBLIC_PROTOCOLS``."""
    return "/".join(f"{choice}[protocol~='{PUBLIC_PROTOCOLS}']" for choice in selector.split("/"))


def public_args(proxy_url: str) -> list[str]:
    """The arguments that put a run on the proxy; they go after the operator's, so they win."""
    return [
        "--proxy", proxy_url, "--fixup", "never", "--downloader", "rtmp:ffmpeg",
        "--downloader-args", f"ffmpeg_i:-protocol_whitelist {FFMPEG_PROTOCOLS}",
    ]  # fmt: skip


def public_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the proxy variables (yt-dlp sets ``http_proxy`` for its ffmpeg itself)."""
    return {k: v for k, v in env.items() if k.lower() not in _PROXY_VARIABLES}


def refuse_file_urls(extra_args: Sequence[str]) -> None:
    """``bad-request`` when the operator's arguments turn on ``file://`` URLs (abbreviated too:
    yt-dlp accepts any unambiguous prefix of a long option)."""
    for arg in extra_args:
        name = arg.split("=", 1)[0]
        if len(name) > len("--en") and _FILE_URLS.startswith(name):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"VID2CONTEXT_YTDLP_ARGS has {_FILE_URLS}, which public mode does not allow.",
                hint="Tell the user to remove it from VID2CONTEXT_YTDLP_ARGS (in public mode yt-dlp reads "
                "public http(s) addresses only); do not retry until then.",
            )


def check_saved_media(path: Path, subject: str) -> None:
    """Refuse (and remove) a downloaded file that is not named as media (a playlist, say)."""
    if path.suffix.lstrip(".").lower() in MEDIA_EXTENSIONS:
        return
    path.unlink(missing_ok=True)
    raise VidError(
        ErrorCode.UNSUPPORTED_INPUT,
        f"yt-dlp saved the media of {subject} as a {path.suffix or 'nameless'} file, which this server "
        "does not decode.",
        hint="Give the page of a video, or a direct link to an audio or video file.",
    )


def public_info(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with only what yt-dlp fetches through the proxy: formats and caption tracks with
    http(s) URLs (or inline data), and no ``downloader_options``."""
    info = {k: v for k, v in info.items() if k != "downloader_options"}
    if "url" in info and not _http(info["url"]):
        del info["url"]
    for key in ("formats", "requested_formats"):
        if isinstance(info.get(key), list):
            info[key] = [
                {k: v for k, v in f.items() if k != "downloader_options"}
                for f in info[key]
                if isinstance(f, dict) and _http(f.get("url"))
            ]
    for key in ("subtitles", "automatic_captions"):
        if isinstance(info.get(key), dict):
            info[key] = {
                lang: [t for t in tracks if isinstance(t, dict) and _fetchable(t)]
                for lang, tracks in info[key].items()
                if isinstance(tracks, list)
            }
    if isinstance(info.get("requested_subtitles"), dict):
        info["requested_subtitles"] = {
            lang: track
            for lang, track in info["requested_subtitles"].items()
            if isinstance(track, dict) and _fetchable(track)
        }
    return info


def public_info_file(raw: bytes) -> bytes:
    """``public_info`` of the JSON bytes yt-dlp printed; other bytes are returned as they are."""
    try:
        info = json.loads(raw)
    except ValueError:
        return raw
    return json.dumps(public_info(info)).encode() if isinstance(info, dict) else raw


def _http(url: Any) -> bool:
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


def _fetchable(track: dict[str, Any]) -> bool:
    """A caption track fetched over http(s), or carried inline (``data``, no URL)."""
    return _http(track.get("url")) or "url" not in track
