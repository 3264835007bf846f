"""SponsorBlock's crowd-sourced skip segments for a YouTube video, read the privacy-preserving way.

SponsorBlock (https://sponsor.ajay.app, its API documented at https://wiki.sponsor.ajay.app/w/API_Docs)
lists, per YouTube video, the ranges its users marked as a sponsor read, self-promotion, a reminder
to subscribe, an intro, and so on. We never send the video id: ``GET /api/skipSegments/<prefix>``
takes the first characters of the id's SHA-256 (four, as the docs recommend) and answers every
video whose hash starts with them; we keep the one we asked about. As the docs describe it:

- query ``categories`` and ``actionTypes`` as JSON arrays (defaults ``["sponsor"]`` and
  ``["skip", "mute"]``: we ask for every category and action type and filter here, so one cached
  answer serves every filter);
- 200: ``[{videoID, segments: [{category, actionType, segment: [start, end], UUID, votes, locked,
  videoDuration, description}]}]``; 404: no video with that prefix has segments (not an error);
  400: the parameters are malformed; 429 with ``Retry-After``: rate-limited.

Answers are kept in the runtime's KV (``sponsorblock:<video id>``) for an hour, "no segments"
included, so a busy video is asked about once an hour per server. The origin is
``VID2CONTEXT_SPONSORBLOCK_ORIGIN`` (tests point it at a stand-in). Requests go through the
runtime's own client, as YouTube's and Supadata's do: the address is the operator's setting and the
path only hex, so nothing a caller sends chooses where it goes (``egress`` guards caller-chosen
URLs).

Failures, each a ``VidError``::

    429 ............................. rate-limited, retry_after from Retry-After
    400, another status, a body that is not the documented shape, one over MAX_BODY ... upstream
    no answer in time / no connection .. timeout / upstream
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

import httpx
import msgspec

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..providers.speech import parse_retry_after
from ..storage.base import KvStore

__all__ = [
    "ACTION_TYPES",
    "ATTRIBUTION",
    "CATEGORIES",
    "DEFAULT_ORIGIN",
    "KV_PREFIX",
    "MAX_BODY",
    "PREFIX_LENGTH",
    "TTL_S",
    "RawSegment",
    "fetch_segments",
    "hash_prefix",
]

DEFAULT_ORIGIN = "https://sponsor.ajay.app"
CATEGORIES: tuple[str, ...] = (
    "sponsor",
    "selfpromo",
    "interaction",
    "intro",
    "outro",
    "preview",
    "music_offtopic",
    "filler",
    "poi_highlight",
    "chapter",
)
"""Every category the API documents, in its order."""
ACTION_TYPES: tuple[str, ...] = ("skip", "mute", "full", "poi", "chapter")
ATTRIBUTION = (
    "Skip segments from SponsorBlock (https://sponsor.ajay.app), contributed by its users; "
    "licensed CC BY-NC-SA 4.0 (https://creativecommons.org/licenses/by-nc-sa/4.0/)."
)
"""What the data's licence asks of whoever shows it: the source, a link, the licence."""
PREFIX_LENGTH = 4
KV_PREFIX = "sponsorblock:"
TTL_S = 3600
MAX_BODY = 8 * 1024 * 1024
"""A prefix's answer holds every video that shares it (some hundreds); far more is not SponsorBlock."""
SERVICE = "SponsorBlock"


class RawSegment(msgspec.Struct, kw_only=True, rename="camel"):
    """One segment as SponsorBlock gives it (and as the cache keeps it)."""

    category: str
    action_type: str = "skip"
    segment: tuple[float, float]
    uuid: str = msgspec.field(default="", name="UUID")
    votes: int = 0
    locked: int = 0
    description: str = ""


class _Video(msgspec.Struct):
    videoID: str  # noqa: N815 - SponsorBlock's field name
    segments: list[RawSegment] = []


_ANSWER = msgspec.json.Decoder(list[_Video])
_CACHED = msgspec.json.Decoder(list[RawSegment])
_ENCODE = msgspec.json.Encoder()
_QUERY = {
    "categories": json.dumps(list(CATEGORIES), separators=(",", ":")),
    "actionTypes": json.dumps(list(ACTION_TYPES), separators=(",", ":")),
}


def hash_prefix(video_id: str) -> str:
    """The first ``PREFIX_LENGTH`` hex digits of the id's SHA-256: all SponsorBlock learns."""
    return hashlib.sha256(video_id.encode()).hexdigest()[:PREFIX_LENGTH]


async def fetch_segments(
    client: httpx.AsyncClient,
    kv: KvStore,
    origin: str,
    video_id: str,
    ctx: Ctx,
    *,
    max_body: int = MAX_BODY,
) -> list[RawSegment]:
    """Every segment SponsorBlock has for ``video_id`` (a YouTube id), from KV when asked within
    the hour; an empty list when it has none. An answer over ``max_body`` bytes is ``upstream``."""
    key = KV_PREFIX + video_id
    cached = await kv.get(key)
    if cached is not None:
        try:
            return _CACHED.decode(cached)
        except msgspec.DecodeError:
            pass  # an entry of another version: ask again, and overwrite it
    ctx.check()
    found = await _ask(client, origin, video_id, max_body)
    await kv.put(key, _ENCODE.encode(found).decode(), ttl=TTL_S)
    return found


async def _ask(client: httpx.AsyncClient, origin: str, video_id: str, max_body: int) -> list[RawSegment]:
    url = f"{origin.rstrip('/')}/api/skipSegments/{hash_prefix(video_id)}"
    try:
        async with client.stream("GET", url, params=_QUERY, headers={"Accept": "application/json"}) as answer:
            if answer.status_code == 404:
                return []
            if answer.status_code != 200:
                raise _status_error(answer.status_code, answer.headers.get("Retry-After"))
            body = bytearray()
            async for chunk in answer.aiter_bytes():
                body += chunk
                if len(body) > max_body:
                    raise _unreadable(f"an answer over {max_body:,} bytes")
    except httpx.TimeoutException:
        raise VidError(
            ErrorCode.TIMEOUT,
            f"{SERVICE} did not answer in time.",
            hint="Repeat the call once; if SponsorBlock runs out of time again, tell the user, and do not retry.",
        ) from None
    except httpx.HTTPError as exc:
        raise VidError(
            ErrorCode.UPSTREAM,
            f"Could not reach {SERVICE}: {type(exc).__name__}.",
            hint="Repeat the call once in a moment; if it fails again, tell the user to check "
            "VID2CONTEXT_SPONSORBLOCK_ORIGIN and the network, and do not retry.",
        ) from None
    try:
        videos = _ANSWER.decode(bytes(body))
    except msgspec.DecodeError:
        raise _unreadable("an answer that is not its documented JSON") from None
    for video in videos:
        if video.videoID == video_id:
            return [s for s in video.segments if s.segment[1] >= s.segment[0] >= 0]
    return []


def _status_error(status: int, retry_after: str | None) -> VidError:
    if status == 429:
        wait = parse_retry_after(retry_after)
        said = f"; it asks to wait {wait} s" if wait is not None else ""
        return VidError(
            ErrorCode.RATE_LIMITED,
            f"{SERVICE} is rate-limiting this server{said}.",
            hint="Wait the Retry-After seconds, then repeat the call once; if it is refused again, tell "
            "the user, and do not retry.",
            retry_after=wait,
        )
    kind: Literal["refused", "failed"] = "refused" if status < 500 else "failed"
    return VidError(
        ErrorCode.UPSTREAM,
        f"{SERVICE} {kind} the request (HTTP {status}).",
        hint="Repeat the call once in a moment; if SponsorBlock fails again, tell the user (and to "
        "check VID2CONTEXT_SPONSORBLOCK_ORIGIN), and do not retry.",
    )


def _unreadable(what: str) -> VidError:
    return VidError(
        ErrorCode.UPSTREAM,
        f"{SERVICE} sent {what}.",
        hint="Tell the user SponsorBlock's answer could not be read (check VID2CONTEXT_SPONSORBLOCK_ORIGIN); "
        "do not retry.",
    )
