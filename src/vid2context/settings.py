"""Settings are data, read once.

``SETTINGS`` names every environment variable with its default and help; the configuration docs
are generated from it, so a variable cannot exist without being documented. ``load_settings()``
reads them once into a frozen ``Settings`` that the runtime holds; nothing else reads the
environment. A malformed value stops start-up with a message naming the variable, rather than
being silently replaced by its default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

import msgspec

from .errors import ErrorCode, VidError

__all__ = ["SETTINGS", "Setting", "Settings", "load_settings"]

Kind = Literal["str", "int", "bool", "path"]


class Setting(NamedTuple):
    env: str
    field: str
    kind: Kind
    default: str | int | bool | None
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "VID2CONTEXT_HOME", "home", "path", "~/.local/share/vid2context",
        "Folder for the local database, blobs and exports.",
    ),
    Setting(
        "VID2CONTEXT_PUBLIC", "public", "bool", False,
        "Public mode: refuse local paths, file:// URLs and private or loopback addresses.",
    ),
    Setting(
        "VID2CONTEXT_PROXY", "proxy", "str", None,
        "HTTP(S) proxy URL for every upstream request (for hosts whose addresses YouTube blocks).",
    ),
    Setting(
        "VID2CONTEXT_YOUTUBE_ORIGIN", "youtube_origin", "str", "https://www.youtube.com",
        "Origin YouTube requests go to; point it at a local server to replay recorded traffic.",
    ),
    Setting(
        "VID2CONTEXT_MAX_PLAYLIST_ITEMS", "max_playlist_items", "int", 500,
        "Most videos a playlist or channel expands to (also the default limit).",
    ),
    Setting(
        "VID2CONTEXT_REQUEST_TIMEOUT_MS", "request_timeout_ms", "int", 300_000,
        "Longest a request or CLI run may take before it is answered with `timeout`.",
    ),
    Setting(
        "VID2CONTEXT_HTTP_TIMEOUT_S", "http_timeout_s", "int", 30,
        "Timeout for one upstream HTTP request, in seconds.",
    ),
)


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    home: str = "~/.local/share/vid2context"
    public: bool = False
    proxy: str | None = None
    youtube_origin: str = "https://www.youtube.com"
    max_playlist_items: int = 500
    request_timeout_ms: int = 300_000
    http_timeout_s: int = 30


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _bad(setting: Setting, raw: str, why: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"{setting.env}={raw[:40]!r} is not valid: {why}.",
        hint=f"{setting.env}: {setting.help}",
    )


def _convert(setting: Setting, raw: str) -> object:
    if setting.kind == "bool":
        value = raw.strip().lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise _bad(setting, raw, "expected 1/0, true/false, yes/no")
    if setting.kind == "int":
        try:
            number = int(raw.strip().replace("_", ""))
        except ValueError:
            raise _bad(setting, raw, "expected a whole number") from None
        if number < 0:
            raise _bad(setting, raw, "expected zero or more")
        return number
    value = raw.strip()
    return value or setting.default


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Settings from ``environ`` (``os.environ`` locally, the Worker's vars on the edge)."""
    values: dict[str, object] = {}
    for setting in SETTINGS:
        raw = environ.get(setting.env)
        if raw is not None:
            values[setting.field] = _convert(setting, raw)
    return Settings(**values)  # type: ignore[arg-type]
