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
    Setting(
        "VID2CONTEXT_API_KEYS", "api_keys", "str", None,
        "Comma-separated API keys for /api/*: plain keys (full access) or name:scope:sha256hex "
        "entries (scope read, write or admin). Unset: the API is open and binds to 127.0.0.1.",
    ),
    Setting(
        "VID2CONTEXT_RATE_LIMIT", "rate_limit", "int", 120,
        "Requests per minute per API key (or per client IP when open); 0 turns limiting off.",
    ),
    Setting(
        "VID2CONTEXT_RATE_BURST", "rate_burst", "int", None,
        "Bucket size for bursts above the steady rate; default half of VID2CONTEXT_RATE_LIMIT.",
    ),
    Setting(
        "VID2CONTEXT_TRUST_PROXY", "trust_proxy", "bool", False,
        "Trust X-Forwarded-For and X-Real-IP for the client address (only behind your own proxy).",
    ),
    Setting(
        "VID2CONTEXT_CORS_ORIGINS", "cors_origins", "str", None,
        "Comma-separated origins allowed by CORS (https://app.example, chrome-extension://id, or *); "
        "unset: CORS is off.",
    ),
    Setting(
        "VID2CONTEXT_MAX_BODY_KB", "max_body_kb", "int", 1024,
        "Largest JSON request body, in KiB; larger bodies get 413 too-large.",
    ),
    Setting(
        "VID2CONTEXT_MAX_UPLOAD_MB", "max_upload_mb", "int", 100,
        "Largest upload to POST /api/v1/uploads, in MiB.",
    ),
    Setting(
        "VID2CONTEXT_UPLOAD_TTL_MIN", "upload_ttl_min", "int", 60,
        "Minutes an upload is kept.",
    ),
    Setting(
        "VID2CONTEXT_ACCESS_LOG", "access_log", "bool", True,
        "One JSON access-log line per request on stderr; 0 turns it off.",
    ),
    Setting(
        "VID2CONTEXT_SHUTDOWN_TIMEOUT_MS", "shutdown_timeout_ms", "int", 10_000,
        "On SIGTERM or SIGINT, how long in-flight requests may finish before the server exits.",
    ),
    Setting(
        "VID2CONTEXT_POLICY", "policy", "str", "free",
        "Default model policy reported by GET /api/v1/models: free, quality or local-only.",
    ),
    Setting(
        "VID2CONTEXT_KEYLESS", "keyless", "bool", True,
        "Allow keyless (free, no account) provider rungs; 0 disables them.",
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
    api_keys: str | None = None
    rate_limit: int = 120
    rate_burst: int | None = None
    trust_proxy: bool = False
    cors_origins: str | None = None
    max_body_kb: int = 1024
    max_upload_mb: int = 100
    upload_ttl_min: int = 60
    access_log: bool = True
    shutdown_timeout_ms: int = 10_000
    policy: str = "free"
    keyless: bool = True


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
