"""yt-dlp's ``ERROR:`` lines, as our codes.

A failed run says what went wrong only in its stderr; this is the one place that reads it, so
every yt-dlp failure reaches the caller as a ``VidError`` with a code and a next step. Messages
quote yt-dlp's own words with proxy credentials masked. Local only (it goes with ``ytdlp``).
First match wins::

    "not a bot" (sign-in to prove it) .............. blocked
    age check ("confirm your age", age-restricted) . unavailable
    private video .................................. unavailable
    geo restriction ("not available in your country") unavailable (hint: a proxy elsewhere)
    members-only, paid ............................. unavailable
    HTTP 429 ....................................... rate-limited
    HTTP 403 ....................................... blocked (update yt-dlp, cookies or a proxy)
    "Unsupported URL", file:// refused ............. unsupported-input
    other sign-in / login required ................. unavailable (hint: cookies)
    "Video unavailable", removed, HTTP 404 ......... not-found
    live event not started, DRM, no formats ........ unavailable
    ffmpeg missing ................................. no-provider
    "timed out" .................................... timeout
    network errors, anything else .................. upstream (yt-dlp's words, credentials masked)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import ErrorCode, VidError

__all__ = ["mask", "ytdlp_error"]

_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:]+(?::[^\s/@]*)?@")
_ERROR_LINE = re.compile(r"^ERROR:\s*(?:\[[^\]]*\]\s*)?(?:[^\s:]{1,64}:\s+)?(.*)$", re.MULTILINE)
_TRAILERS = (
    " Use --cookies",
    " See  https://",
    " See https://",
    "; please report this issue",
    " Confirm you are on",
)


def mask(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with URL credentials and each of ``secrets`` replaced by ``***``."""
    text = _CREDENTIALS.sub(r"\1***@", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _said(stderr: str, secrets: Sequence[str]) -> str:
    """yt-dlp's own words: its first ERROR line, without the extractor prefix and FAQ trailers."""
    lines = _ERROR_LINE.findall(stderr)
    said = lines[0] if lines else next((line for line in reversed(stderr.splitlines()) if line.strip()), "")
    for trailer in _TRAILERS:
        said = said.split(trailer, 1)[0]
    said = " ".join(mask(said, secrets).split())
    return said[:240].rstrip(" .") or "no error message"


def ytdlp_error(stderr: str, subject: str, *, secrets: Sequence[str] = ()) -> VidError:
    """What a failed yt-dlp run means, from its stderr (see the table in the module docstring)."""
    errors = "\n".join(_ERROR_LINE.findall(stderr)) or stderr[-2000:]
    plain = errors.replace("\u2019", "'").lower()
    said = _said(stderr, secrets)

    def error(code: ErrorCode, message: str, hint: str) -> VidError:
        return VidError(code, f"{message} (yt-dlp: {said}).", hint=hint)

    cookies = "VID2CONTEXT_YTDLP_COOKIES (a cookies file exported from a browser signed in to the site)"
    update = "update yt-dlp (`pip install -U yt-dlp`)"
    if "not a bot" in plain or "not a robot" in plain:
        return error(
            ErrorCode.BLOCKED,
            f"The site asks to sign in to prove this is not a bot ({subject})",
            "Tell the user, and do not retry: the same call fails until the site lifts the block or the "
            f"user sets {cookies} or VID2CONTEXT_PROXY (a residential proxy), or {update}.",
        )
    if any(
        k in plain for k in ("confirm your age", "age-restricted", "age restricted", "inappropriate for some")
    ):
        return error(
            ErrorCode.UNAVAILABLE,
            f"{subject} is age-restricted: the site shows it only to signed-in adult accounts",
            f"Tell the user, and do not retry until it is set: with such an account, set {cookies}.",
        )
    if "private video" in plain or "video is private" in plain or "is private" in plain:
        return error(
            ErrorCode.UNAVAILABLE,
            f"{subject} is private",
            "Tell the user, and do not retry: only accounts it is shared with can see it; with one, "
            f"set {cookies}.",
        )
    if any(
        k in plain for k in ("your country", "geo restrict", "geo-restrict", "your location", "your region")
    ):
        return error(
            ErrorCode.UNAVAILABLE,
            f"{subject} is not available from this location",
            "Tell the user, and do not retry: set VID2CONTEXT_PROXY to a proxy in a country where the "
            "video is available.",
        )
    if any(
        k in plain
        for k in ("members-only", "members only", "join this channel", "requires payment", "premium")
    ):
        return error(
            ErrorCode.UNAVAILABLE,
            f"{subject} is for members or subscribers only",
            f"Tell the user, and do not retry: with a member's account, set {cookies}.",
        )
    if "429" in plain or "too many requests" in plain:
        return error(
            ErrorCode.RATE_LIMITED,
            f"The site is rate-limiting requests from this address ({subject})",
            "Wait a few minutes, then retry once; if the site still refuses, tell the user "
            "(VID2CONTEXT_PROXY sends the requests from another address) and do not retry.",
        )
    if "403" in plain and "forbidden" in plain or "http error 403" in plain:
        return error(
            ErrorCode.BLOCKED,
            f"The site refused the download with HTTP 403 ({subject})",
            f"Tell the user, and do not retry: {update}; if it persists, set {cookies} or VID2CONTEXT_PROXY.",
        )
    if "unsupported url" in plain or "not a valid url" in plain or "file:// urls are disabled" in plain:
        return error(
            ErrorCode.UNSUPPORTED_INPUT,
            f"yt-dlp cannot read {subject}",
            "Give a url of a single video's page on a site yt-dlp supports, or a direct link to a "
            "media file.",
        )
    if any(k in plain for k in ("sign in", "log in", "login", "registered users", "requires authentication")):
        return error(
            ErrorCode.UNAVAILABLE,
            f"{subject} needs a signed-in account",
            f"Tell the user, and do not retry until it is set: {cookies}.",
        )
    if "ffmpeg" in plain and ("not found" in plain or "not installed" in plain):
        return error(
            ErrorCode.NO_PROVIDER,
            f"yt-dlp needs ffmpeg for {subject}",
            "Tell the user to install ffmpeg (`apt-get install ffmpeg`, `brew install ffmpeg`), and do "
            "not retry until then.",
        )
    if any(
        k in plain
        for k in ("video unavailable", "is unavailable", "does not exist", "404", "has been removed",
                  "no longer available", "been terminated", "video not found")
    ):  # fmt: skip
        return error(
            ErrorCode.NOT_FOUND,
            f"{subject} was not found",
            "Check the url for a typo; if it is right, tell the user the video was removed or made "
            "private, and do not retry.",
        )
    if any(k in plain for k in ("live event will begin", "premieres in", "is offline", "not started")):
        return error(
            ErrorCode.UNAVAILABLE,
            f"{subject} has not started yet",
            "Tell the user it has not started; do not retry before it is available as a recording.",
        )
    if "drm" in plain:
        return error(
            ErrorCode.UNAVAILABLE,
            f"{subject} is DRM-protected",
            "Tell the user, and do not retry: DRM-protected videos cannot be read.",
        )
    if "requested format is not available" in plain or "no video formats found" in plain:
        return error(
            ErrorCode.UNAVAILABLE,
            f"yt-dlp found no format it can download for {subject}",
            f"Tell the user to {update}, and do not retry until then.",
        )
    if "timed out" in plain:
        return error(
            ErrorCode.TIMEOUT,
            f"The site did not answer in time ({subject})",
            "Retry once in a moment; if it fails again, tell the user to check the network and "
            "VID2CONTEXT_PROXY, and do not retry.",
        )
    return error(
        ErrorCode.UPSTREAM,
        f"yt-dlp could not read {subject}",
        "Retry once in a minute; if it fails again, tell the user (checking the network and "
        f"VID2CONTEXT_PROXY, or to {update}, may help) and do not retry.",
    )
