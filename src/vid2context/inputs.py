"""Any input a person or an agent pastes, read into one ``VideoRef``.

Every route, tool and command takes "a video" as one string, so the guessing happens once, here,
offline and without touching the filesystem or DNS (this runs on the Worker too). Deciding early
what an input is lets the pipeline pick a provider without trying them in turn, and lets public
mode refuse local files and private addresses before any provider can be tricked into reading
them. Hosts are matched exactly, after the same normalisation a browser applies (percent-decoding,
IDNA, legacy IPv4 numbers), so ``youtube.com.evil.com`` is not YouTube and ``0x7f000001`` is not a
public host. Which addresses are public is ``addresses``' table; names are only read here, and
the check that holds when a connection is made (DNS answers, redirects) is the local runtime's
``egress``.

Accepted forms::

    YouTube video      youtube.com/watch?v=ID (www., m., music.), youtu.be/ID, /shorts/ID, /live/ID,
                       /embed/ID, /v/ID, youtube-nocookie.com/embed/ID; with or without http(s)://;
                       t=90 t=90s t=1m30s, #t=..., start= (embeds); list=; a bare 11-character id;
                       youtube:ID
    YouTube playlist   youtube.com/playlist?list=ID (m., music.), /embed/videoseries?list=ID,
                       /watch?list=ID without v=; youtube:playlist:ID
    YouTube channel    /@handle, /channel/UC..., /c/name, /user/name (optionally /videos, /streams,
                       /shorts, /featured); a bare @handle; youtube:channel:<@handle|UC...|c/x|user/x>
    web page           any other http(s):// URL, handed to yt-dlp later; web:<url>
    local file         /abs, ./rel, ../rel, ~/rel, C:\\ or C:/, file:///path (or file://localhost/),
                       a relative name with a slash or a media/subtitle extension; local:<path>
    upload             upload:<sha256> as returned by POST /api/v1/uploads

Every ``id`` a ``VideoRef`` carries parses back to the same reference, so stored ids are inputs too.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
import unicodedata
from urllib.parse import parse_qs, quote, unquote, urlsplit

import msgspec

from .addresses import host_class, refusal
from .errors import ErrorCode, Hint, VidError, per_surface
from .models import VideoRef
from .timecode import parse_time

__all__ = ["is_list", "legacy_ipv4", "parse_input"]

_MAX_CHARS = 2048
_SHOWN_CHARS = 60

_ACCEPTED = "a video URL, a YouTube id or @handle, upload:<sha256>, or a local file path"
_ACCEPTED_PUBLIC = "a public http(s) video URL, a YouTube id or @handle, or upload:<sha256>"
_UPLOAD_HINT = per_surface(
    rest="Upload the file with POST /api/v1/uploads instead, then pass the upload:<sha256> it returns.",
    mcp="Give a public URL of the media as url instead; or tell the user a local MCP server of their "
    "own reads files (`vid2context mcp`).",
)
_PAGE_HINT = {
    surface: "For a web page, give the full URL with https://. " + text
    for surface, text in _UPLOAD_HINT.items()
}
_UPLOAD_INPUT_HINT = per_surface(
    rest="Use the input value that POST /api/v1/uploads returned (upload:<sha256>).",
    mcp="Use the input value the upload returned (upload:<sha256>).",
)

_YT_VIDEO_ID = re.compile(r"[A-Za-z0-9_-]{11}")
_YT_LIST_ID = re.compile(r"[A-Za-z0-9_-]{2,128}")
_YT_CHANNEL_ID = re.compile(r"UC[A-Za-z0-9_-]{22}")
_YT_HANDLE = re.compile(r"@[\w.·-]{3,30}")
_YT_NAME = re.compile(r"[\w.·-]{1,100}")
_YT_TABS = {"videos", "streams", "shorts", "featured"}
_YT_HOSTS = {"youtube.com", "www.youtube.com", "m.youtube.com", "music.youtube.com"}
_YT_SHORT_HOSTS = {"youtu.be", "www.youtu.be"}
_YT_EMBED_HOSTS = {"youtube-nocookie.com", "www.youtube-nocookie.com"}
_YT_ALL_HOSTS = _YT_HOSTS | _YT_SHORT_HOSTS | _YT_EMBED_HOSTS
_YT_VIDEO_PATHS = {"shorts", "live", "embed", "v"}
_YT_TIME_PARAMS = ("t", "start", "time_continue")
_YT_EXAMPLE = "https://www.youtube.com/watch?v=jNQXAC9IVRw"

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_WINDOWS_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_IPV4_NUMBER = re.compile(r"0x[0-9a-f]*|[0-9]+")
_MEDIA_EXTENSIONS = {
    "mp4", "m4v", "mkv", "webm", "mov", "avi", "wmv", "flv", "mpg", "mpeg", "ts", "mts", "m2ts", "3gp",
    "ogv", "m4a", "mp3", "wav", "flac", "ogg", "oga", "opus", "aac", "wma", "aif", "aiff", "amr", "weba",
    "srt", "vtt", "ass", "ssa", "sbv", "ttml", "dfxp",
}  # fmt: skip
_BIDI_CONTROLS = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def parse_input(text: str, *, public: bool = False) -> VideoRef:
    """The ``VideoRef`` that ``text`` names, or a ``VidError`` saying why it names none.

    ``public`` (the server's ``VID2CONTEXT_PUBLIC=1``) also refuses local files and URLs that
    point into a private network, so a public server cannot be used to read either.
    """
    if not isinstance(text, str):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"The input must be a string, not {type(text).__name__}.",
            hint=f"Give {_ACCEPTED}.",
        )
    text = text.strip()
    _check_text(text)
    return _parse(text, public)


def is_list(ref: VideoRef) -> bool:
    """True for a playlist or a channel: a reference that expands to several videos."""
    return ref.kind in ("playlist", "channel")


# --- dispatch ------------------------------------------------------------------------------------


def _parse(text: str, public: bool) -> VideoRef:
    lower = text.lower()
    if lower.startswith("upload:"):
        return _upload(text[len("upload:") :])
    if lower.startswith("youtube:"):
        return _youtube_prefixed(text[len("youtube:") :])
    if lower.startswith("web:"):
        rest = text[len("web:") :]
        if not rest.lower().startswith(("http://", "https://")):
            raise _unsupported(f"{_show(text)} is not web:<http(s) URL>.", "Give the http(s) URL itself.")
        return _url(rest, public)
    if lower.startswith("local:"):
        return _local(text[len("local:") :], public, text)
    if lower.startswith("file:"):
        return _file_url(text, public)
    if _WINDOWS_DRIVE.match(text) or text.startswith(("/", "./", "../", "~/")):
        return _local(text, public, text)
    if _YT_VIDEO_ID.fullmatch(text):
        return _youtube_video(text)
    if _YT_HANDLE.fullmatch(text):
        return _youtube_channel(text)
    first = re.split(r"[/?#]", lower, maxsplit=1)[0]
    if first.partition(":")[0].removesuffix(".") in _YT_ALL_HOSTS:
        return _url("https://" + text, public)
    if scheme := _SCHEME.match(text):
        if lower.startswith(("http://", "https://")):
            return _url(text, public)
        raise _unsupported(
            f"The {_show(scheme.group().lower())} scheme is not supported.",
            f"Give {_ACCEPTED_PUBLIC if public else _ACCEPTED}.",
        )
    if "/" in text or "\\" in text or _has_media_extension(text):
        return _local(text, public, text)
    raise _unsupported(
        f"Cannot tell what {_show(text)} is.",
        f"Give {_ACCEPTED_PUBLIC if public else _ACCEPTED}.",
    )


# --- YouTube -------------------------------------------------------------------------------------


def _youtube_prefixed(rest: str) -> VideoRef:
    lower = rest.lower()
    if lower.startswith("playlist:"):
        return _youtube_playlist(rest[len("playlist:") :])
    if lower.startswith("channel:"):
        native = rest[len("channel:") :]
        kind, _, name = native.partition("/")
        if kind in ("c", "user") and _YT_NAME.fullmatch(name):
            return _youtube_channel(native)
        if _YT_HANDLE.fullmatch(native) or _YT_CHANNEL_ID.fullmatch(native):
            return _youtube_channel(native)
        raise _unsupported(
            f"{_show('youtube:' + rest)} is not a valid YouTube channel reference.",
            "Use youtube:channel:@handle, youtube:channel:UC... (24 characters), c/name or user/name.",
        )
    if _YT_VIDEO_ID.fullmatch(rest):
        return _youtube_video(rest)
    raise _unsupported(
        f"{_show('youtube:' + rest)} is not a valid YouTube reference.",
        "Use youtube:<11-character id>, youtube:playlist:<id> or youtube:channel:<@handle or UC id>.",
    )


def _youtube_url(host: str, path: str, query: str, fragment: str) -> VideoRef:
    params = parse_qs(query, keep_blank_values=True)
    segments = [unquote(s) for s in path.split("/") if s]

    def param(name: str) -> str | None:
        values = params.get(name)
        return values[0] if values and values[0] else None

    if host in _YT_SHORT_HOSTS:
        if len(segments) == 1:
            return _youtube_video(_video_id(segments[0]), params, fragment)
        raise _bad_youtube("A youtu.be link must be youtu.be/<11-character id>.")
    head = segments[0] if segments else ""
    if host in _YT_EMBED_HOSTS and head not in ("embed", "v"):
        raise _bad_youtube("A youtube-nocookie.com link must be /embed/<11-character id>.")
    if head == "watch" and len(segments) == 1:
        if (video := param("v")) is not None:
            return _youtube_video(_video_id(video), params, fragment)
        if (playlist := param("list")) is not None:
            return _youtube_playlist(playlist)
        raise _bad_youtube("The YouTube watch URL has no v= video id.")
    if head == "watch":
        raise _bad_youtube("youtube.com/watch/<id> is not a YouTube link; the id goes in watch?v=<id>.")
    if head == "playlist" and len(segments) == 1:
        return _youtube_playlist(param("list") or "")
    if head == "embed" and segments[1:] == ["videoseries"]:
        return _youtube_playlist(param("list") or "")
    if head in _YT_VIDEO_PATHS and len(segments) == 2:
        # The old Flash embed put its parameters in the path: /v/ID&hl=en_US&fs=1.
        video = re.split(r"[&;]", segments[1], maxsplit=1)[0] if head == "v" else segments[1]
        return _youtube_video(_video_id(video), params, fragment)
    channel = _channel_path(segments)
    if channel is not None:
        return _youtube_channel(channel)
    raise _bad_youtube("This YouTube URL is not a video, playlist or channel link.")


def _channel_path(segments: list[str]) -> str | None:
    """The channel's native id for a channel path, or ``None`` when the path is not one."""
    if segments and segments[0].startswith("@"):
        body, tab = segments[0], segments[1:]
        if not _YT_HANDLE.fullmatch(body):
            raise _bad_youtube("The YouTube handle is not valid (3 to 30 letters, digits, . _ -).")
    elif len(segments) >= 2 and segments[0] == "channel":
        body, tab = segments[1], segments[2:]
        if not _YT_CHANNEL_ID.fullmatch(body):
            raise _bad_youtube("A YouTube channel id is UC followed by 22 characters.")
    elif len(segments) >= 2 and segments[0] in ("c", "user"):
        if not _YT_NAME.fullmatch(segments[1]):
            raise _bad_youtube("The YouTube channel name is not valid.")
        body, tab = f"{segments[0]}/{segments[1]}", segments[2:]
    else:
        return None
    if tab and (len(tab) > 1 or tab[0] not in _YT_TABS):
        raise _bad_youtube("Only a channel's home, /videos, /streams, /shorts or /featured page is accepted.")
    return body


def _video_id(value: str) -> str:
    if not _YT_VIDEO_ID.fullmatch(value):
        raise _bad_youtube("The YouTube URL has no valid video id (it must be 11 characters).")
    return value


def _youtube_video(video_id: str, params: dict[str, list[str]] | None = None, fragment: str = "") -> VideoRef:
    params = params or {}
    start: float | None = None
    for name in _YT_TIME_PARAMS:
        if values := [v for v in params.get(name, []) if v]:
            start = parse_time(values[0])
            break
    if start is None:
        start = _fragment_time(fragment)
    lists = [v for v in params.get("list", []) if _YT_LIST_ID.fullmatch(v)]
    return VideoRef(
        id=f"youtube:{video_id}",
        platform="youtube",
        kind="video",
        native_id=video_id,
        url=f"https://www.youtube.com/watch?v={video_id}",
        start_sec=start,
        list_id=lists[0] if lists else None,
    )


def _youtube_playlist(list_id: str) -> VideoRef:
    if not _YT_LIST_ID.fullmatch(list_id):
        raise _bad_youtube("The YouTube playlist URL has no valid list= id.")
    return VideoRef(
        id=f"youtube:playlist:{list_id}",
        platform="youtube",
        kind="playlist",
        native_id=list_id,
        url=f"https://www.youtube.com/playlist?list={list_id}",
    )


def _youtube_channel(native: str) -> VideoRef:
    path = quote(native, safe="@/._-")
    if native.startswith("UC"):
        path = f"channel/{path}"
    return VideoRef(
        id=f"youtube:channel:{native}",
        platform="youtube",
        kind="channel",
        native_id=native,
        url=f"https://www.youtube.com/{path}",
    )


def _bad_youtube(message: str) -> VidError:
    return _unsupported(message, f"Check the URL: a video link looks like {_YT_EXAMPLE}.")


# --- web URLs ------------------------------------------------------------------------------------


def _url(text: str, public: bool) -> VideoRef:
    """An http(s) URL: YouTube when the host is exactly one of YouTube's, any other page otherwise."""
    if "\\" in text:
        # WHATWG reads "\" as "/" and urllib does not: "https://evil.com\@youtube.com/" is evil.com to
        # a browser and youtube.com to urlsplit. Refuse rather than pick one reading.
        raise _unsupported("The URL contains a backslash.", "Use forward slashes (/) in URLs.")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise _unsupported(
            f"{_show(text)} is not a valid URL.", "Check the host and port of the URL."
        ) from None
    scheme = parts.scheme.lower()
    userinfo, _, hostport = parts.netloc.rpartition("@")
    if parts.hostname is None or not hostport or hostport.startswith(":"):
        raise _unsupported(
            f"The URL {_show(text)} has no host.", "Give a full URL such as https://example.com/video."
        )
    host = _normal_host(parts.hostname, bracketed=hostport.startswith("["))
    if host in _YT_ALL_HOSTS and not userinfo and port in (None, 80, 443):
        return _youtube_url(host, parts.path, parts.query, parts.fragment)
    if public:
        _guard_public_url(host, userinfo, port)
    shown_host = f"[{host.replace('%', '%25')}]" if ":" in host else host
    default_port = {"http": 80, "https": 443}[scheme]
    netloc = (f"{userinfo}@" if userinfo else "") + shown_host
    if port is not None and port != default_port:
        netloc += f":{port}"
    path = _requote(parts.path) or "/"
    query = f"?{_requote(parts.query)}" if parts.query else ""
    # A `#t=` fragment is a moment in the video, not another video: it goes to start_sec and
    # stays out of the id, so one page is one library entry whatever moment was linked.
    start = _fragment_time(parts.fragment)
    native = f"{scheme}://{netloc}{path}{query}"
    return VideoRef(
        id=f"web:{native}", platform="web", kind="video", native_id=native, url=native, start_sec=start
    )


def _normal_host(raw: str, *, bracketed: bool) -> str:
    """The host as a browser would connect to it: decoded, IDNA-encoded, legacy IPv4 spelled out."""
    host = unquote(raw)
    bad = _unsupported(f"The URL's host {_show(host)} is not valid.", "Check the URL's host name.")
    if bracketed:
        try:
            return ipaddress.IPv6Address(host).compressed
        except ValueError:
            raise bad from None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise bad from None
    host = host.lower().removesuffix(".")
    if not _HOST_NAME.fullmatch(host):
        raise bad
    ipv4 = legacy_ipv4(host)
    if ipv4 is False:
        raise bad
    return str(ipv4) if ipv4 else host


def legacy_ipv4(host: str) -> ipaddress.IPv4Address | bool | None:
    """The address of a host whose last label is a number, as browsers and ``inet_aton`` read it.

    ``127.1``, ``0x7f000001``, ``2130706433`` and ``0177.0.0.1`` are all 127.0.0.1. ``None`` when
    the host is a name, ``False`` when it looks like a number but is no valid address (WHATWG
    refuses those hosts outright).
    """
    labels = host.split(".")
    if not _IPV4_NUMBER.fullmatch(labels[-1]):
        return None
    if len(labels) > 4:
        return False
    numbers: list[int] = []
    for label in labels:
        if re.fullmatch(r"0x[0-9a-f]*", label):
            numbers.append(int(label[2:] or "0", 16))
        elif re.fullmatch(r"0[0-7]*", label):
            numbers.append(int(label, 8))
        elif re.fullmatch(r"[1-9][0-9]*", label) and len(label) <= 10:
            numbers.append(int(label))
        else:
            return False
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return False
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _guard_public_url(host: str, userinfo: str, port: int | None) -> None:
    if userinfo:
        raise _unsupported(
            "URLs with a user name or password are not accepted here.",
            "Remove the user:password@ part; this server only reads public pages.",
        )
    if port not in (None, 80, 443):
        raise _unsupported(
            f"Port {port} is not accepted here; only 80 and 443 are.",
            "Give a public URL on the standard http or https port.",
        )
    found = host_class(host)
    if found is not None:
        raise refusal(found, subject=f"The host {_show(host)}")


def _requote(part: str) -> str:
    """Percent-encode what a URL cannot carry raw (spaces, non-ASCII), keeping existing escapes."""
    return quote(part, safe="!$%&'()*+,/:;=?@[]~")


def _fragment_time(fragment: str) -> float | None:
    """Seconds from a ``#t=90`` (or ``#t=1m30s``, or the media-fragment ``#t=90,120``) fragment."""
    if not fragment.startswith("t="):
        return None
    value = fragment[2:].split("&", 1)[0].split(",", 1)[0].removeprefix("npt:")
    return parse_time(unquote(value)) if value else None


# --- local files and uploads ---------------------------------------------------------------------


def _local(path: str, public: bool, original: str) -> VideoRef:
    if public:
        hint = _UPLOAD_HINT
        first = re.split(r"[/\\?#]", original, maxsplit=1)[0]
        if "." in first and not _has_media_extension(first) and not first.startswith(("~", ".")):
            hint = _PAGE_HINT
        raise _unsupported("Local files are not accepted by this server.", hint)
    if not path:
        raise VidError(
            ErrorCode.BAD_REQUEST, "The local path is empty.", hint="Give the path to a video file."
        )
    if _WINDOWS_DRIVE.match(path):
        path = path[0].upper() + ":" + path[2:].replace("\\", "/")
    native = posixpath.normpath(path)
    if native.startswith("//"):
        native = "/" + native.lstrip("/")
    return VideoRef(id=f"local:{native}", platform="local", kind="video", native_id=native)


def _file_url(text: str, public: bool) -> VideoRef:
    if public:
        raise _unsupported("file:// URLs are not accepted by this server.", _UPLOAD_HINT)
    try:
        parts = urlsplit(text)
    except ValueError:
        raise _unsupported(
            f"{_show(text)} is not a valid file URL.", "Give the file's path instead."
        ) from None
    if parts.netloc.lower() not in ("", "localhost"):
        raise _unsupported(
            "The file URL names another machine; only files on this one can be read.",
            "Use file:///path/to/video.mp4 or the path itself.",
        )
    path = unquote(parts.path)
    if re.match(r"/[A-Za-z]:[\\/]", path):
        path = path[1:]
    if not path.startswith("/") and not _WINDOWS_DRIVE.match(path):
        raise _unsupported(
            "A file URL needs an absolute path.", "Use file:///path/to/video.mp4, or give the path itself."
        )
    _check_text(path)  # the percent-decoding may have revealed a NUL or a line break
    ref = _local(path, public, text)
    start = _fragment_time(parts.fragment)
    return ref if start is None else msgspec.structs.replace(ref, start_sec=start)


def _upload(sha: str) -> VideoRef:
    if not _SHA256.fullmatch(sha):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "An upload reference is upload: followed by a 64-character hex SHA-256.",
            hint=_UPLOAD_INPUT_HINT,
        )
    sha = sha.lower()
    return VideoRef(id=f"upload:{sha}", platform="upload", kind="video", native_id=sha)


def _has_media_extension(text: str) -> bool:
    _, dot, extension = text.rpartition(".")
    return bool(dot) and extension.lower() in _MEDIA_EXTENSIONS


# --- shared --------------------------------------------------------------------------------------


def _check_text(text: str) -> None:
    if not text:
        raise VidError(ErrorCode.BAD_REQUEST, "The input is empty.", hint=f"Give {_ACCEPTED}.")
    if len(text) > _MAX_CHARS:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"The input is {len(text):,} characters long; the limit is {_MAX_CHARS:,}.",
            hint="Give the video's URL alone, without surrounding text or extra query parameters.",
        )
    for position, char in enumerate(text):
        if char in _BIDI_CONTROLS or unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"The input contains a control character (U+{ord(char):04X}) at position {position}.",
                hint="Remove line breaks, tabs and other control characters; give one input per call.",
            )


def _show(text: str) -> str:
    """``text`` quoted for a message, cut short: errors never echo a long input back."""
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 3] + "..."
    return repr(text)


def _unsupported(message: str, hint: Hint) -> VidError:
    return VidError(ErrorCode.UNSUPPORTED_INPUT, message, hint=hint)
