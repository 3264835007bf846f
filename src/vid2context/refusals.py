"""What a caller can do when a video platform refuses: the hints for the blocked, age-restricted,
private, region-locked and rate-limited cases, by where the server runs.

The same refusal has different ways out in different places. On the user's own machine (the
local runtime) yt-dlp can send the cookies of a signed-in browser (``VID2CONTEXT_YTDLP_COOKIES``)
and a proxy (``VID2CONTEXT_PROXY``) changes the address YouTube sees; telling that user to "run
vid2context locally" would be no help at all. On a Cloudflare Worker neither exists (``fetch``
has no proxy, there is no yt-dlp), and YouTube blocks the edge's addresses as a rule: the way out
is the local runtime on the user's machine. Either way an agent cannot change a server's
settings, and the same call would meet the same refusal, so these hints say to tell the user and
not to retry.

``Where`` says where the server runs; each function answers a hint per surface: a REST client
can upload the media itself (``POST /api/v1/uploads``), an MCP client of a local server that
reads files can give a file's path instead.

On the edge, ``blocked`` names the way that always works, with nothing left to fill in: the
user's machine reads the video and pushes it here, ``vid2context push <the video's URL> --to <this
server>``. This server's URL is the one the running request reached it by (``EDGE_URL``, set for
each request by the Worker's app, ``api/middleware/edge.py``); without one, the hint says "this
server's URL".

This module imports only ``errors``.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

from .errors import Hint, per_surface, steps

__all__ = [
    "EDGE_URL",
    "SignIn",
    "Where",
    "blocked",
    "consent",
    "flaky",
    "no_captions",
    "not_played",
    "po_token",
    "rate_limited",
    "signed_in",
]

SignIn = Literal["age", "private", "members", "account"]

_COOKIES = "VID2CONTEXT_YTDLP_COOKIES (a cookies file exported from a browser signed in to YouTube)"
_LOCAL = "the local runtime on their own machine (`vid2context get URL`, or `vid2context mcp`)"

EDGE_URL: ContextVar[str | None] = ContextVar("vid2context_edge_url", default=None)
"""This server's own URL (scheme and host) as the running request reached it, on the Worker."""
_SAFE_URL = re.compile(r"https?://[A-Za-z0-9.\[\]:-]{1,255}")
"""What a URL taken from a request's Host may look like to be printed in a hint."""


def push_command(video_url: str) -> str:
    """The command that reads ``video_url`` on the user's machine and pushes it to this server."""
    edge = EDGE_URL.get()
    target = edge if edge and _SAFE_URL.fullmatch(edge) else "<this server's URL>"
    return f"`vid2context push {video_url} --to {target}`"


@dataclass(frozen=True, slots=True)
class Where:
    """Where the server runs, as far as a refusal's way out depends on it."""

    edge: bool = False
    """A Cloudflare Worker: no yt-dlp, no proxy, no audio downloads, addresses YouTube blocks."""
    files: bool = True
    """Whether a local path is an input here (the local runtime outside public mode)."""


def _join(*hints: Hint) -> dict[str, str]:
    """Hints put one after the other, per surface."""
    out = {"rest": "", "mcp": ""}
    for hint in hints:
        for surface in out:
            text = hint if isinstance(hint, str) else hint.get(surface, "")
            out[surface] = f"{out[surface]} {text}".strip()
    return out


def _media_file(where: Where) -> dict[str, str]:
    """Transcribing the user's own copy: the way around any refusal of the page itself."""
    return per_surface(
        rest="If the user has the video or its audio as a file, upload it (POST /api/v1/uploads) and "
        "read the upload:<sha256> it returns with mode=stt.",
        mcp="If the user has the video or its audio as a file, give its path as url with mode=stt."
        if where.files
        else "",
    )


def blocked(where: Where, video_url: str | None = None) -> dict[str, str]:
    """YouTube's "sign in to confirm you're not a bot": it refuses this server's address. On the
    edge with ``video_url``: the exact push command that brings the video here."""
    if where.edge and video_url:
        first = (
            "Tell the user, and do not retry: YouTube blocks Cloudflare's addresses, and a proxy "
            "cannot help a Worker. The local runtime on their own machine reads the video from their "
            f"own address and puts it in this server's library: {push_command(video_url)} (with a "
            "write API key in VID2CONTEXT_REMOTE_KEY); after that this server answers it from its library."
        )
    elif where.edge:
        first = (
            "Tell the user, and do not retry: YouTube blocks Cloudflare's addresses, and a proxy "
            f"cannot help a Worker; {_LOCAL} reads the video from their own address."
        )
    else:
        first = (
            "Tell the user, and do not retry: the same call fails until YouTube lifts the block or "
            f"the user sets {_COOKIES} or VID2CONTEXT_PROXY (a residential proxy)."
        )
    return _join(first, _media_file(where))


def signed_in(where: Where, why: SignIn) -> dict[str, str]:
    """A video YouTube shows to some signed-in accounts only."""
    who = {
        "age": "signed-in adult accounts only",
        "private": "the accounts its owner shared it with only",
        "members": "the channel's paying members only",
        "account": "signed-in accounts only",
    }[why]
    if where.edge:
        first = (
            f"Tell the user, and do not retry here: YouTube shows it to {who}, and this server has "
            f"no account; {_LOCAL} reads it with {_COOKIES}."
        )
    else:
        first = (
            f"Tell the user, and do not retry until it is set: YouTube shows it to {who}; with such "
            f"an account, set {_COOKIES}."
        )
    if why == "age":  # YouTube still describes the video (the recorded answer has its details)
        return _join(first, steps("Meanwhile {metadata} still reads its title, channel and description."))
    return _join(first, _media_file(where))


def not_played(where: Where) -> dict[str, str]:
    """A video YouTube will not play here: a region lock, a takedown, a rights claim."""
    if where.edge:
        first = (
            "Tell the user, and do not retry: YouTube does not play it here (a region lock, a takedown "
            f"or a rights claim); for a region lock, {_LOCAL} with VID2CONTEXT_PROXY set to a proxy "
            "in a country where it plays can read it."
        )
    else:
        first = (
            "Tell the user, and do not retry: YouTube does not play it here (a region lock, a takedown "
            "or a rights claim); for a region lock, set VID2CONTEXT_PROXY to a proxy in a country "
            "where it plays."
        )
    return _join(first, _media_file(where))


def rate_limited(where: Where, retry_after: int | None) -> str:
    """YouTube's 429 or its "unusual traffic" page: this address asked too often."""
    wait = f"Wait {retry_after} s (Retry-After)" if retry_after is not None else "Wait a few minutes"
    way = (
        f"{_LOCAL} reads YouTube from their own address"
        if where.edge
        else "VID2CONTEXT_PROXY sends the requests from another address"
    )
    return f"{wait}, then retry once; if YouTube still refuses, tell the user ({way}) and do not retry."


def flaky(where: Where) -> str:
    """An answer from YouTube that failed or could not be read: often passing, sometimes a change
    of YouTube's that needs a new release."""
    way = f"{_LOCAL} reads YouTube with yt-dlp too" if where.edge else "updating vid2context may help"
    return (
        "Retry once in a minute; if it fails again, tell the user YouTube's answer could not be read "
        f"({way}) and do not retry."
    )


def consent(where: Where) -> str:
    """The EU cookie-consent page, when it cannot be answered."""
    if where.edge:
        return f"Tell the user, and do not retry: {_LOCAL} answers the consent page from their own address."
    return (
        "Tell the user, and do not retry: set VID2CONTEXT_PROXY to a proxy outside the EU, where "
        "YouTube shows no consent page."
    )


def no_captions(where: Where) -> Hint:
    """A video without captions: speech-to-text is the way, where this server can fetch audio."""
    if not where.edge:
        return "Use mode=stt to transcribe the audio instead."
    return per_surface(
        rest="This server cannot fetch YouTube audio: upload the video or its audio (POST "
        "/api/v1/uploads) and read the upload:<sha256> it returns with mode=stt, or tell the user "
        "the local runtime (`vid2context get URL --mode stt`) transcribes it.",
        mcp="Tell the user, and do not retry: this server cannot fetch YouTube audio to transcribe; "
        "the local runtime (`vid2context get URL --mode stt`, or `vid2context mcp`) can.",
    )


def po_token(where: Where) -> Hint:
    """Caption files that answer only with a proof-of-origin token, which yt-dlp can obtain."""
    if not where.edge:
        return (
            "Use mode=stt to transcribe the audio instead; if the yt-dlp rung failed here too, tell "
            "the user to update yt-dlp (`pip install -U yt-dlp`), which fetches these captions."
        )
    return _join(
        "YouTube wants a proof-of-origin token this server cannot make: tell the user, and do not "
        f"retry; {_LOCAL} fetches these captions with yt-dlp.",
        _media_file(where),
    )
