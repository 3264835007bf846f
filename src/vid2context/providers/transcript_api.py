"""YouTube captions through youtube-transcript-api, as a rung beside our own InnerTube one.

Local only. The library does what ``youtube.py`` does (watch page, ANDROID ``player``, the
track's timedtext file) over ``requests``; it is a separate rung because it is maintained
upstream and gets fixes quickly when YouTube changes, and an upgrade (`pip install -U
youtube-transcript-api`) brings them without a vid2context release. It is blocking code, so each
call runs in a worker thread (``asyncio.to_thread``) with a fresh ``YouTubeTranscriptApi`` (the
library is not thread-safe) over our own ``requests.Session``, which:

- sends every request to ``origin`` (``VID2CONTEXT_YOUTUBE_ORIGIN``), as the InnerTube rung does;
- gives every request a timeout and checks ``ctx`` first, so an aborted or expired call stops
  at its next request (a thread cannot be killed; it can be told to stop asking);
- uses ``VID2CONTEXT_PROXY``; and takes an injected transport adapter (the tests serve recorded
  responses through one, as httpx's ``MockTransport`` does for the InnerTube rung).

It reads captions only: ``metadata`` answers ``no-provider`` (the library has no metadata API), so
the pipeline moves on to the next rung for that stage.

The library finds and fetches the track; its text is read by ``captions.parse_timedtext_xml``
from the file the session saw (``/api/timedtext``). The library's own parser decodes the HTML and
then removes every tag, ``preserve_formatting`` or not (that keeps a list of HTML formatting tags
and still removes the rest), so ``<price>`` or ``<div>`` in a caption would be lost; read by our
parser, this rung gives the same text as the InnerTube one. Its snippets are the fallback should
a release fetch the file from elsewhere.

The library's typed errors, as ours (same failure, same code as the InnerTube rung)::

    TranscriptsDisabled, NoTranscriptFound, NotTranslatable,
      TranslationLanguageNotAvailable ................. no-transcript
    VideoUnavailable, InvalidVideoId .................. not-found
    IpBlocked (HTTP 429 or the captcha page) .......... rate-limited
    RequestBlocked ("confirm you're not a bot") ....... blocked
    PoTokenRequired ................................... blocked
    AgeRestricted, VideoUnplayable .................... unavailable
    FailedToCreateConsentCookie, YouTubeRequestFailed,
      YouTubeDataUnparsable, a malformed caption file . upstream
    requests timeout / connection error ............... timeout / upstream
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit
from xml.etree.ElementTree import ParseError

import requests
from requests.adapters import BaseAdapter
from youtube_transcript_api import YouTubeTranscriptApi
from youtube_transcript_api import _errors as yta_errors

from ..ctx import Ctx
from ..errors import ErrorCode, VidError, steps
from ..models import CaptionTrack, Comment, Segment, Transcript, VideoMetadata, VideoRef
from ..refusals import (
    Where,
    blocked,
    consent,
    flaky,
    no_captions,
    not_played,
    po_token,
    rate_limited,
    signed_in,
)
from ..settings import Settings
from .captions import choose_track, parse_timedtext_xml

__all__ = ["PRODUCER", "TranscriptApiProvider", "transcript_api_error"]

PRODUCER = "youtube/transcript-api"
YOUTUBE_ORIGIN = "https://www.youtube.com"

_HERE = Where()
"""This rung runs on the local runtime only."""
HINT_STT = no_captions(_HERE)
_VIDEO_ID = re.compile(r"[A-Za-z0-9_-]{11}")


def transcript_api_error(exc: BaseException, video_id: str) -> VidError:
    """One of the library's exceptions (or ``requests``'), as our error with a next step."""
    subject = f"video {video_id}"
    e = yta_errors
    if isinstance(exc, (e.TranscriptsDisabled, e.NoTranscriptFound)):
        return VidError(ErrorCode.NO_TRANSCRIPT, f"Video {video_id} has no captions.", hint=HINT_STT)
    if isinstance(exc, (e.NotTranslatable, e.TranslationLanguageNotAvailable)):
        return VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"YouTube cannot translate the captions of video {video_id}.",
            hint=HINT_STT,
        )
    if isinstance(exc, (e.VideoUnavailable, e.InvalidVideoId)):
        return VidError(
            ErrorCode.NOT_FOUND,
            f"Video {video_id} was not found: YouTube says it is unavailable.",
            hint="Check the url for a typo; if it is right, tell the user the video was removed or made "
            "private, and do not retry.",
        )
    if isinstance(exc, e.IpBlocked):  # before RequestBlocked, its base class
        return VidError(
            ErrorCode.RATE_LIMITED,
            f"YouTube is rate-limiting requests from this address ({subject}).",
            hint=rate_limited(_HERE, None),
        )
    if isinstance(exc, e.RequestBlocked):
        return VidError(
            ErrorCode.BLOCKED,
            f"YouTube asks to sign in to confirm this is not a bot for video {video_id}: it blocks this address.",
            hint=blocked(_HERE),
        )
    if isinstance(exc, e.PoTokenRequired):
        return VidError(
            ErrorCode.BLOCKED,
            f"YouTube requires a PO token for the captions of video {video_id}.",
            hint=po_token(_HERE),
        )
    if isinstance(exc, e.AgeRestricted):
        return VidError(
            ErrorCode.UNAVAILABLE,
            f"Video {video_id} is age-restricted: YouTube shows it only to signed-in adult accounts.",
            hint=signed_in(_HERE, "age"),
        )
    if isinstance(exc, e.VideoUnplayable):
        reason = " ".join(str(exc.reason or "").split())[:160] if hasattr(exc, "reason") else ""
        return VidError(
            ErrorCode.UNAVAILABLE,
            f"Video {video_id} cannot be played" + (f": {reason.rstrip('.')}." if reason else "."),
            hint=not_played(_HERE),
        )
    if isinstance(exc, e.FailedToCreateConsentCookie):
        return VidError(
            ErrorCode.UPSTREAM,
            f"YouTube showed its EU cookie-consent page and it could not be answered ({subject}).",
            hint=consent(_HERE),
        )
    if isinstance(exc, e.YouTubeRequestFailed):
        status = getattr(getattr(exc, "http_error", None), "response", None)
        code = getattr(status, "status_code", None)
        return VidError(
            ErrorCode.UPSTREAM,
            f"YouTube answered HTTP {code} ({subject})."
            if code
            else f"A request to YouTube failed ({subject}).",
            hint=flaky(_HERE),
        )
    network = (
        "Retry once in a moment; if it fails again, tell the user to check the network and "
        "VID2CONTEXT_PROXY, and do not retry."
    )
    if isinstance(exc, requests.Timeout):
        return VidError(ErrorCode.TIMEOUT, f"YouTube did not answer in time ({subject}).", hint=network)
    if isinstance(exc, requests.RequestException):
        return VidError(
            ErrorCode.UPSTREAM, f"Could not reach YouTube ({subject}): {type(exc).__name__}.", hint=network
        )
    return VidError(ErrorCode.UPSTREAM, f"Could not read YouTube's answer ({subject}).", hint=flaky(_HERE))


_EXPECTED: tuple[type[BaseException], ...] = (
    yta_errors.YouTubeTranscriptApiException,
    requests.RequestException,
    ParseError,
    ValueError,  # a JSON or XML answer that does not parse (defusedxml raises ValueError subclasses too)
    KeyError,  # a player answer without the fields the library expects
    TypeError,
    AttributeError,
    IndexError,
)


class _Session(requests.Session):
    """A ``requests.Session`` that honours our origin, timeout and the call's abort signal."""

    def __init__(self, *, origin: str, timeout: float, ctx: Ctx, proxy: str | None) -> None:
        super().__init__()
        self._origin = origin.rstrip("/")
        self._timeout = timeout
        self._ctx = ctx
        if proxy:
            self.proxies = {"http": proxy, "https": proxy}
        self.caption_file: bytes | None = None
        """The body of the last caption file fetched through this session."""

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        self._ctx.check()  # raises VidError in the worker thread; the library lets it through
        text = url.decode() if isinstance(url, bytes) else url
        if self._origin != YOUTUBE_ORIGIN and text.startswith(YOUTUBE_ORIGIN + "/"):
            text = self._origin + text[len(YOUTUBE_ORIGIN) :]
        remaining = self._ctx.remaining
        kwargs.setdefault(
            "timeout", self._timeout if remaining is None else max(0.1, min(self._timeout, remaining))
        )
        response = super().request(method, text, *args, **kwargs)
        if urlsplit(text).path == "/api/timedtext":
            self.caption_file = response.content
        return response


class TranscriptApiProvider:
    """``SourceProvider`` for YouTube captions through youtube-transcript-api (videos only)."""

    id = "transcript-api"
    name = "youtube-transcript-api"

    def __init__(
        self,
        *,
        origin: str = YOUTUBE_ORIGIN,
        proxy: str | None = None,
        timeout_s: float = 30,
        adapter: BaseAdapter | Callable[[], BaseAdapter] | None = None,
    ) -> None:
        self._origin = origin
        self._proxy = proxy
        self._timeout = timeout_s
        self._adapter = adapter

    @classmethod
    def from_settings(cls, settings: Settings) -> TranscriptApiProvider:
        return cls(
            origin=settings.youtube_origin, proxy=settings.proxy, timeout_s=settings.http_timeout_s or 30
        )

    def accepts(self, ref: VideoRef) -> bool:
        return ref.platform == "youtube" and ref.kind == "video"

    # -- the protocol --

    async def metadata(self, ref: VideoRef, ctx: Ctx) -> VideoMetadata:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "youtube-transcript-api reads captions only, not video metadata.",
            hint=steps("Metadata comes from the InnerTube and yt-dlp rungs ({metadata})."),
        )

    async def caption_tracks(self, ref: VideoRef, ctx: Ctx) -> list[CaptionTrack]:
        tracks, _ = await self._call(ref, ctx, lambda api, vid, session: _tracks(api.list(vid)))
        return tracks

    async def captions(self, ref: VideoRef, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        return await self._call(ref, ctx, lambda api, vid, session: _read(api, session, vid, lang, ctx))

    async def items(self, ref: VideoRef, ctx: Ctx, *, limit: int | None = None) -> list[VideoRef]:
        return [ref]

    async def comments(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[Comment]:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "youtube-transcript-api does not read comments.",
            hint="Comments are read by the yt-dlp rung: tell the user to install yt-dlp (the `local` "
            "extra) if this server lacks it, and do not retry until then.",
        )

    # -- running the library off the event loop --

    def _session(self, ctx: Ctx) -> _Session:
        session = _Session(origin=self._origin, timeout=self._timeout, ctx=ctx, proxy=self._proxy)
        if self._adapter is not None:
            adapter = self._adapter if isinstance(self._adapter, BaseAdapter) else self._adapter()
            session.mount("https://", adapter)
            session.mount("http://", adapter)
        return session

    async def _call(
        self, ref: VideoRef, ctx: Ctx, work: Callable[[YouTubeTranscriptApi, str, _Session], Any]
    ) -> Any:
        vid = ref.native_id
        if not _VIDEO_ID.fullmatch(vid):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"{vid[:40]!r} is not a YouTube video id.",
                hint="Give a url with an 11-character video id, or the video's full URL.",
            )
        ctx.check()

        def run() -> Any:
            with self._session(ctx) as session:
                api = YouTubeTranscriptApi(http_client=session)
                try:
                    return work(api, vid, session)
                except VidError:
                    raise
                except _EXPECTED as exc:
                    raise transcript_api_error(exc, vid) from exc

        try:
            return await asyncio.wait_for(asyncio.to_thread(run), timeout=ctx.remaining)
        except TimeoutError:
            ctx.check()
            raise VidError(
                ErrorCode.TIMEOUT,
                f"YouTube did not answer in time (video {vid}).",
                hint="Retry once in a moment; if it fails again, tell the user, and do not retry.",
            ) from None


# --- in the worker thread --------------------------------------------------------------------------


def _tracks(listing: Any) -> tuple[list[CaptionTrack], list[Any]]:
    """Our tracks and the library's, in the same order (its own: manual first, then generated)."""
    found = list(listing)
    tracks = [
        CaptionTrack(
            language=t.language_code,
            name=t.language,
            kind="auto" if t.is_generated else "manual",
            translatable=bool(t.is_translatable),
        )
        for t in found
    ]
    return tracks, found


def _read(api: YouTubeTranscriptApi, session: _Session, vid: str, lang: str | None, ctx: Ctx) -> Transcript:
    listing = api.list(vid)
    tracks, originals = _tracks(listing)
    translations: list[str] = []
    for original in originals:
        for language in original.translation_languages:
            if language.language_code not in translations:
                translations.append(language.language_code)
    # The generated track is in the language the video speaks, as the InnerTube rung assumes too.
    spoken = next((t.language for t in tracks if t.kind == "auto"), None)
    choice = choose_track(tracks, lang=lang, video_language=spoken, translation_languages=translations)
    if choice is None:
        raise VidError(ErrorCode.NO_TRANSCRIPT, f"Video {vid} has no captions.", hint=HINT_STT)
    chosen = originals[choice.index]
    track = tracks[choice.index]
    if choice.translate_to:
        chosen = chosen.translate(choice.translate_to)
    ctx.progress("captions", None, f"downloading {choice.translate_to or track.language} captions")
    session.caption_file = None
    fetched = chosen.fetch()
    if session.caption_file is not None:
        subject = f"video {vid} ({choice.translate_to or track.language})"
        segments = parse_timedtext_xml(session.caption_file, source=subject)
    else:
        segments = _snippet_segments(fetched.snippets)
    if not segments:
        raise VidError(
            ErrorCode.NO_TRANSCRIPT, f"The {track.language} captions of video {vid} are empty.", hint=HINT_STT
        )
    origin = "captions-translated" if choice.translate_to else f"captions-{track.kind}"
    return Transcript(
        language=choice.translate_to or track.language,
        origin=origin,  # type: ignore[arg-type]
        timing="caption",
        producer=PRODUCER,
        segments=segments,
        note=choice.note,
        requested_language=choice.missing,
        available_languages=list(choice.languages),
    )


def _snippet_segments(snippets: Any) -> list[Segment]:
    """The library's own text (tags removed), for a caption file our session did not see."""
    segments: list[Segment] = []
    for snippet in snippets:
        text = " ".join(str(snippet.text).split())
        start, duration = float(snippet.start), float(snippet.duration)
        if not text or not math.isfinite(start) or start < 0:
            continue
        duration = duration if math.isfinite(duration) and duration > 0 else 0.0
        segments.append(Segment(start_sec=round(start, 3), end_sec=round(start + duration, 3), text=text))
    return segments
