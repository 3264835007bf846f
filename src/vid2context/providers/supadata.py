"""YouTube captions and metadata through Supadata, a hosted transcript API, for addresses YouTube blocks.

A Cloudflare Worker calls YouTube from Cloudflare's addresses, which YouTube answers with "sign in
to confirm you're not a bot", and a Worker's ``fetch`` cannot go through a proxy. Supadata fetches
the captions from addresses YouTube accepts and answers over plain HTTPS, so this rung runs on both
runtimes with nothing but the shared ``httpx.AsyncClient``. It is optional: without
``SUPADATA_API_KEY`` it accepts nothing (health lists it disabled). It sits after InnerTube on the
Worker; locally it comes after every free YouTube rung (the user's own address usually works, and
each Supadata call spends the account's credits).

Built from Supadata's own documentation (read 2026-12):

- https://docs.supadata.ai/api-reference/introduction: base URL ``https://api.supadata.ai/v1``,
  the ``x-api-key`` header, the status codes (400, 401, 402, 404, 429 "a plan limit has been
  surpassed", 5xx) and the error body ``{error, message, details, documentationUrl}``;
- https://docs.supadata.ai/get-transcript and .../api-reference/endpoint/transcript/transcript:
  ``GET /transcript?url=&lang=&text=false&mode=native``; 200 with ``{content: [{text, offset,
  duration, lang}], lang, availableLangs}`` (offsets and durations in milliseconds); 202 with
  ``{jobId}`` for long videos; ``lang`` is a preference ("if the requested language is
  unavailable, the API defaults to the first available language"); ``mode=native`` only fetches
  an existing transcript (no AI generation, which would cost more and is not captions);
- https://docs.supadata.ai/api-reference/endpoint/transcript/transcript-get:
  ``GET /transcript/{jobId}`` -> ``{status: queued|active|completed|failed, error, content, lang,
  availableLangs}``;
- the official Python SDK (github.com/supadata-ai/py, ``client.py``, ``errors.py``, ``youtube.py``):
  206 from a transcript endpoint means "transcript-unavailable", a gateway's bare 403/404/429
  without a JSON body, and ``GET /youtube/video?id=`` for a video's metadata (``title``,
  ``description``, ``duration`` in seconds, ``channel {id, name}``, ``tags``, ``thumbnail``,
  ``uploadDate``, ``viewCount``).

Failures, each a ``VidError`` (the hosted-service table of ``speech.status_error`` where it fits)::

    401 403 ............................ auth (502), naming SUPADATA_API_KEY (never its value)
    402 (plan or credits used up) ...... auth (502), the hint says to top up the plan
    429 ................................ rate-limited, retry_after from Retry-After
    206, a job or answer without text .. no-transcript
    404 (video not found) .............. not-found
    400 ................................ bad-request (Supadata refused the video's URL)
    408 5xx, a failed job .............. upstream
    a job still running at the deadline  timeout
    timeout / transport error .......... timeout / upstream
    an answer that is not the documented shape ... upstream
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import msgspec

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import CaptionTrack, Comment, Segment, Thumbnail, Transcript, VideoMetadata, VideoRef
from ..refusals import Where, no_captions
from ..settings import Settings
from .captions import missing_note, same_language
from .speech import Wording, parse_retry_after, status_error, transport_error

__all__ = ["DEFAULT_BASE_URL", "PRODUCER", "REQUIRES", "SupadataProvider"]

DEFAULT_BASE_URL = "https://api.supadata.ai/v1"
PRODUCER = "supadata/transcript"
REQUIRES = ("SUPADATA_API_KEY",)
SERVICE = "Supadata"
POLL_INTERVAL_S = 1.0
"""How long to wait between two looks at a transcript job (Supadata documents no interval)."""
MAX_POLLS = 120
_VIDEO_ID = re.compile(r"[A-Za-z0-9_-]{11}")
_MAX_SEGMENTS = 200_000
WORDING = Wording(
    capability="hosted transcript",
    too_large="the request",
    too_large_hint="Tell the user Supadata refused the request as too large; do not retry.",
    timeout_hint="Repeat the call once; if Supadata runs out of time again, tell the user, and do not retry.",
    upstream_hint="Repeat the call once in a moment; if Supadata fails again, tell the user, and do not retry.",
)

Sleep = Callable[[float], Awaitable[None]]


class _Chunk(msgspec.Struct):
    text: str = ""
    offset: float = 0.0
    duration: float = 0.0
    lang: str | None = None


class _TranscriptAnswer(msgspec.Struct):
    """A transcript (``GET /transcript``, 200) or a job's state (``GET /transcript/{jobId}``)."""

    content: list[_Chunk] | str | None = None
    lang: str | None = None
    availableLangs: list[str] = []  # noqa: N815 - Supadata's field name
    jobId: str | None = None  # noqa: N815
    status: str | None = None
    error: Any = None


class _Channel(msgspec.Struct):
    id: str | None = None
    name: str | None = None


class _Video(msgspec.Struct):
    id: str | None = None
    title: str = ""
    description: str | None = None
    duration: float | None = None
    channel: _Channel | None = None
    tags: list[str] = []
    thumbnail: str | None = None
    uploadDate: str | None = None  # noqa: N815
    viewCount: int | None = None  # noqa: N815


_transcript_decoder = msgspec.json.Decoder(_TranscriptAnswer)
_video_decoder = msgspec.json.Decoder(_Video)


def _said(response: httpx.Response) -> str:
    """Supadata's own error code and message, when its body is the documented JSON (short)."""
    try:
        body = msgspec.json.decode(response.content[:4096])
    except msgspec.DecodeError:
        return ""
    if not isinstance(body, dict):
        return ""
    error = body.get("error")
    return _said_of(error if isinstance(error, dict) else body)  # nested: the older SDK's shape


def _status_error(response: httpx.Response, video_id: str, where: Where) -> VidError:
    status = response.status_code
    said = _said(response)
    quoted = f" ({said})" if said else ""
    if status == 206:
        return _no_transcript(video_id, where, quoted)
    if status in (401, 403):  # the message names the variable too: attempts show messages, not hints
        error = status_error(SERVICE, status, requires=REQUIRES, wording=WORDING)
        error.message = f"Supadata refused SUPADATA_API_KEY (HTTP {status}){quoted}."
        error.args = (error.message,)
        return error
    if status == 402:
        return VidError(
            ErrorCode.AUTH,
            f"Supadata refused the request: the account's plan or credits are used up (HTTP 402){quoted}.",
            hint="Tell the user to top up the Supadata plan behind SUPADATA_API_KEY, or to push the video "
            "from their own machine (`vid2context push`); do not retry until then.",
        )
    if status == 404:
        return VidError(
            ErrorCode.NOT_FOUND,
            f"Supadata found no video {video_id} (HTTP 404){quoted}.",
            hint="Check the url for a typo; if it is right, tell the user the video was removed or made "
            "private, and do not retry.",
        )
    if status == 400:
        return VidError(
            ErrorCode.BAD_REQUEST,
            f"Supadata refused the request for video {video_id} (HTTP 400){quoted}.",
            hint="Give the video's full YouTube URL; if it is right, tell the user, and do not retry.",
        )
    return status_error(
        SERVICE,
        status,
        body=said,
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        requires=REQUIRES,
        wording=WORDING,
    )


def _no_transcript(video_id: str, where: Where, quoted: str = "") -> VidError:
    return VidError(
        ErrorCode.NO_TRANSCRIPT,
        f"Supadata has no captions for video {video_id}{quoted}.",
        hint=no_captions(where),
    )


def _unreadable(video_id: str, what: str) -> VidError:
    return VidError(
        ErrorCode.UPSTREAM,
        f"Could not read Supadata's {what} (video {video_id}).",
        hint=WORDING.upstream_hint,
    )


def _segments(chunks: list[_Chunk]) -> list[Segment]:
    """Supadata's chunks (milliseconds) as ordered segments; empty or broken chunks are dropped."""
    segments: list[Segment] = []
    for chunk in chunks[:_MAX_SEGMENTS]:
        text = " ".join(chunk.text.split())
        start, length = chunk.offset / 1000, chunk.duration / 1000
        if not text or not math.isfinite(start) or start < 0:
            continue
        length = length if math.isfinite(length) and length > 0 else 0.0
        segments.append(Segment(start_sec=round(start, 3), end_sec=round(start + length, 3), text=text))
    segments.sort(key=lambda s: s.start_sec)
    return segments


class SupadataProvider:
    """``SourceProvider`` for YouTube videos through Supadata's REST API (see the module docstring)."""

    id = "supadata"
    name = "Supadata (hosted YouTube transcripts)"
    requires = REQUIRES

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        api_key: str | None,
        base_url: str | None = None,
        poll_interval_s: float = POLL_INTERVAL_S,
        max_polls: int = MAX_POLLS,
        sleep: Sleep = asyncio.sleep,
        where: Where | None = None,
    ) -> None:
        self.enabled = bool(api_key)
        self._client = client
        self._api_key = api_key or ""
        self._base = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._poll_interval = poll_interval_s
        self._max_polls = max_polls
        self._sleep = sleep
        self._where = where or Where()
        """Where the server runs: the way out of a video without captions that its hints name."""

    @classmethod
    def from_settings(cls, settings: Settings, client: httpx.AsyncClient, where: Where) -> SupadataProvider:
        return cls(
            client, api_key=settings.supadata_api_key, base_url=settings.supadata_base_url, where=where
        )

    def accepts(self, ref: VideoRef) -> bool:
        """YouTube videos, once the key is set (lists and channels stay with InnerTube)."""
        return self.enabled and ref.platform == "youtube" and ref.kind == "video"

    # -- the protocol --

    async def metadata(self, ref: VideoRef, ctx: Ctx) -> VideoMetadata:
        vid = self._video_id(ref)
        response = await self._get("/youtube/video", {"id": vid}, vid, ctx)
        try:
            video = _video_decoder.decode(response.content)
        except msgspec.DecodeError:
            raise _unreadable(vid, "video details") from None
        if not video.title:
            raise _unreadable(vid, "video details")
        channel = video.channel or _Channel()
        duration = video.duration if video.duration and math.isfinite(video.duration) else None
        return VideoMetadata(
            id=ref.id,
            platform="youtube",
            title=video.title,
            url=ref.url or f"https://www.youtube.com/watch?v={vid}",
            channel=channel.name or None,
            channel_id=channel.id or None,
            duration_sec=duration,
            published_at=(video.uploadDate or "")[:10] or None,
            description=video.description or None,
            thumbnails=[Thumbnail(url=video.thumbnail)] if video.thumbnail else [],
            tags=[tag for tag in video.tags if isinstance(tag, str)][:100],
            view_count=video.viewCount,
        )

    async def caption_tracks(self, ref: VideoRef, ctx: Ctx) -> list[CaptionTrack]:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "Supadata does not list a video's caption tracks (nor whether each is manual or automatic).",
            hint="Tell the user this rung lists no caption tracks (the InnerTube rung does); do not retry "
            "here.",
        )

    async def captions(self, ref: VideoRef, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        vid = self._video_id(ref)
        params = {"url": f"https://www.youtube.com/watch?v={vid}", "text": "false", "mode": "native"}
        if lang:
            params["lang"] = lang
        ctx.progress("captions", None, "asking Supadata for the captions")
        response = await self._get("/transcript", params, vid, ctx)
        answer = self._decode(response, vid)
        if response.status_code == 202 or answer.jobId:
            answer = await self._wait(answer, vid, ctx)
        return self._transcript(answer, vid, lang)

    async def items(self, ref: VideoRef, ctx: Ctx, *, limit: int | None = None) -> list[VideoRef]:
        return [ref]

    async def comments(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[Comment]:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "Supadata does not read comments.",
            hint="Comments are read by the yt-dlp rung of the local runtime (`vid2context get URL "
            "--comments`); tell the user, and do not retry here.",
        )

    # -- the wire --

    def _video_id(self, ref: VideoRef) -> str:
        if not _VIDEO_ID.fullmatch(ref.native_id):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"{ref.native_id[:40]!r} is not a YouTube video id.",
                hint="Give a url with an 11-character video id, or the video's full URL.",
            )
        return ref.native_id

    async def _get(self, path: str, params: dict[str, str], vid: str, ctx: Ctx) -> httpx.Response:
        ctx.check()
        try:
            response = await self._client.get(
                self._base + path,
                params=params,
                headers={"x-api-key": self._api_key, "Accept": "application/json"},
                timeout=self._timeout(ctx),
            )
        except httpx.TimeoutException as exc:
            raise transport_error(SERVICE, exc, timeout=True, wording=WORDING) from None
        except httpx.HTTPError as exc:
            raise transport_error(SERVICE, exc, wording=WORDING) from None
        if response.status_code not in (200, 202):
            raise _status_error(response, vid, self._where)
        return response

    def _timeout(self, ctx: Ctx) -> Any:
        """The client's own timeouts, shortened to what is left of the call's time."""
        remaining, usual = ctx.remaining, self._client.timeout.read
        if remaining is None:
            return httpx.USE_CLIENT_DEFAULT
        return httpx.Timeout(max(0.1, min(remaining, usual if usual is not None else remaining)))

    def _decode(self, response: httpx.Response, vid: str) -> _TranscriptAnswer:
        try:
            return _transcript_decoder.decode(response.content)
        except msgspec.DecodeError:
            raise _unreadable(vid, "transcript") from None

    async def _wait(self, answer: _TranscriptAnswer, vid: str, ctx: Ctx) -> _TranscriptAnswer:
        """Poll ``/transcript/{jobId}`` until the job completes or fails, within the call's time."""
        job = answer.jobId
        if not job or not re.fullmatch(r"[A-Za-z0-9_-]{1,128}", job):
            raise _unreadable(vid, "transcript job")
        for _ in range(self._max_polls):
            remaining = ctx.remaining
            if remaining is not None and remaining <= self._poll_interval:
                break
            await self._sleep(self._poll_interval)
            state = self._decode(await self._get(f"/transcript/{job}", {}, vid, ctx), vid)
            if state.status == "completed":
                return state
            if state.status == "failed":
                said = _said_of(state.error)
                if said and "transcript-unavailable" in said:
                    raise _no_transcript(vid, self._where, f" ({said})")
                raise VidError(
                    ErrorCode.UPSTREAM,
                    f"Supadata's transcript job for video {vid} failed" + (f" ({said})." if said else "."),
                    hint=WORDING.upstream_hint,
                )
            if state.status not in ("queued", "active"):
                raise _unreadable(vid, "transcript job")
            ctx.progress("captions", None, f"Supadata's job is {state.status}")
        raise VidError(
            ErrorCode.TIMEOUT,
            f"Supadata's transcript job for video {vid} did not finish in time.",
            hint=WORDING.timeout_hint,
        )

    def _transcript(self, answer: _TranscriptAnswer, vid: str, lang: str | None) -> Transcript:
        if not isinstance(answer.content, list):
            raise _unreadable(vid, "transcript")
        segments = _segments(answer.content)
        if not segments:
            raise _no_transcript(vid, self._where)
        language = answer.lang or next((c.lang for c in answer.content if c.lang), None)
        available = [code for code in answer.availableLangs if isinstance(code, str)][:200]
        missing = lang if lang and language and not same_language(lang, language, exact=False) else None
        note = "Supadata does not say whether the track is the uploader's or YouTube's automatic one"
        if missing:
            before, after = missing_note(missing, available)
            note = f"{before}{language}{after}; {note}"
        return Transcript(
            language=language,
            origin="captions-auto",
            timing="caption",
            producer=PRODUCER,
            segments=segments,
            note=note + ".",
            requested_language=missing,
            available_languages=available,
        )


def _said_of(error: Any) -> str:
    """An error object (``{error, message}``; ``{code, title}`` in the older shape) or a bare
    string, short and on one line."""
    if isinstance(error, dict):
        parts = [error.get("error") or error.get("code"), error.get("message") or error.get("title")]
    else:
        parts = [error]
    return " ".join(" ".join(str(p)[:80] for p in parts if isinstance(p, str) and p).split())
