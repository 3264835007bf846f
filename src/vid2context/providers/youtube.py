"""YouTube over InnerTube, with nothing but an injected ``httpx.AsyncClient``.

The flow youtube-transcript-api 1.2.5 uses, written here as our own async code:

1. ``GET /watch?v=ID`` (``Accept-Language: en-US``). An EU consent page is answered once with a
   ``CONSENT=YES+<v>`` cookie and the page fetched again. The page gives ``INNERTUBE_API_KEY``,
   the embedded WEB player response (for ``microformat``: publish date) and ``ytInitialData``
   (chapter markers).
2. ``POST /youtubei/v1/player?key=...`` with the ANDROID client context: ``playabilityStatus``,
   ``videoDetails`` and the caption tracks. When that request fails outright (HTTP error, not
   JSON, no API key on the page) and the page embeds a player response for the same video, the
   embedded one is used instead ("watch page fallback").
3. The chosen track's ``baseUrl`` with ``fmt=json3`` (then ``fmt=srv3`` if json3 is unusable).

Steps 1-2 run once per call: their result (or their error) is memoised in ``ctx.memo`` under
``("youtube.player", video_id)``, so ``metadata()`` then ``captions()`` cost one round trip.
Every request goes to ``origin`` (``VID2CONTEXT_YOUTUBE_ORIGIN``), caption URLs included.

Failures, each a ``VidError`` naming the video and the next step::

    HTTP 429, or the "unusual traffic" captcha page ...... rate-limited (retry_after from Retry-After)
    other non-2xx ........................................ upstream (status in the message)
    httpx timeout / other transport error ................ timeout / upstream
    consent page that cannot be answered ................. upstream
    LOGIN_REQUIRED "confirm you're not a bot" ............ blocked
    an age check, whatever the status .................... unavailable, "age-restricted" (metadata works)
    LOGIN_REQUIRED private / members / other sign-in ..... unavailable
    ERROR ("This video is unavailable") .................. not-found
    UNPLAYABLE, LIVE_STREAM_OFFLINE, any other status .... unavailable (YouTube's reason quoted)
    playable, no caption tracks .......................... no-transcript (mode=stt)
    caption URL with exp=xpe (PO token) .................. blocked
    caption file unreadable / hostile XML ................ upstream

The hints for the refusals depend on where the server runs (``where``, see ``refusals.py``): the
local runtime's name cookies and a proxy, the Worker's the local runtime.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import httpx

from ..chapters import choose_chapters
from ..ctx import Ctx
from ..errors import ErrorCode, VidError, steps
from ..models import CaptionTrack, Comment, Segment, Transcript, TranslationTarget, VideoMetadata, VideoRef
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
from .captions import choose_track, parse_captions
from .youtube_pages import (
    WatchPage,
    alert_text,
    as_int,
    caption_track_urls,
    consent_value,
    continuation_items,
    dig,
    extract_json_var,
    innertube_api_key,
    innertube_client_version,
    is_captcha_page,
    is_consent_page,
    iso_date,
    listing_path,
    needs_po_token,
    parse_listing,
    parse_watch_page,
    text_of,
    thumbnails,
    translation_targets,
    video_language,
)

__all__ = ["ANDROID_CLIENT", "DEFAULT_ORIGIN", "YouTubeProvider", "playability_error"]

DEFAULT_ORIGIN = "https://www.youtube.com"
ANDROID_CLIENT = {"clientName": "ANDROID", "clientVersion": "20.10.38"}
"""The InnerTube client youtube-transcript-api 1.2.5 uses for ``player``."""
WEB_CLIENT_VERSION = "2.20250610.00.00"
"""Used for ``browse`` continuations when the page does not say its own version."""
PRODUCER = "youtube/innertube"

_VIDEO_ID = re.compile(r"[A-Za-z0-9_-]{11}")
_AGE = re.compile(r"\bage\b|inappropriate|age-restricted", re.IGNORECASE)
_MEMBERS = re.compile(r"members|join this channel|requires payment|purchase", re.IGNORECASE)
_COOKIE_KEY = "youtube.consent-cookie"
_MAX_RETRY_AFTER = 24 * 3600


def _subject(video_id: str) -> str:
    return f"video {video_id}"


def _watch_url(video_id: str) -> str:
    return f"https://www.youtube.com/watch?v={video_id}"


def _video_ref(video_id: str) -> VideoRef:
    return VideoRef(
        id=f"youtube:{video_id}",
        platform="youtube",
        kind="video",
        native_id=video_id,
        url=_watch_url(video_id),
    )


# --- errors --------------------------------------------------------------------------------------


def _retry_after(response: httpx.Response) -> int | None:
    raw = response.headers.get("Retry-After", "").strip()
    if not raw:
        return None
    if raw.isascii() and raw.isdigit():
        seconds = int(raw)
    else:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        seconds = math.ceil(when.timestamp() - time.time())
    return max(0, min(seconds, _MAX_RETRY_AFTER))


def _rate_limited(subject: str, where: Where, retry_after: int | None = None) -> VidError:
    wait = f"; it asks to wait {retry_after} s" if retry_after is not None else ""
    return VidError(
        ErrorCode.RATE_LIMITED,
        f"YouTube is rate-limiting requests from this address ({subject}){wait}.",
        hint=rate_limited(where, retry_after),
        retry_after=retry_after,
    )


def _transport_error(exc: Exception, subject: str, where: Where) -> VidError:
    """httpx's failures as ours: one place, as httpx's own ``_exceptions`` mapping does."""
    check = "" if where.edge else " to check the network and VID2CONTEXT_PROXY"
    hint = f"Retry once in a moment; if it fails again, tell the user{check}, and do not retry."
    if isinstance(exc, httpx.TimeoutException):
        return VidError(ErrorCode.TIMEOUT, f"YouTube did not answer in time ({subject}).", hint=hint)
    return VidError(
        ErrorCode.UPSTREAM, f"Could not reach YouTube ({subject}): {type(exc).__name__}.", hint=hint
    )


def _status_error(response: httpx.Response, subject: str, where: Where) -> VidError:
    return VidError(
        ErrorCode.UPSTREAM, f"YouTube answered HTTP {response.status_code} ({subject}).", hint=flaky(where)
    )


def _unreadable(subject: str, what: str, where: Where) -> VidError:
    return VidError(ErrorCode.UPSTREAM, f"Could not read YouTube's {what} ({subject}).", hint=flaky(where))


def playability_error(player: dict[str, Any], video_id: str, where: Where | None = None) -> VidError | None:
    """The error a player response's ``playabilityStatus`` means, or ``None`` when it is playable;
    its hint is the way out ``where`` the server runs (the local runtime by default)."""
    where = where or Where()
    status = player.get("playabilityStatus")
    status = status if isinstance(status, dict) else {}
    code = str(status.get("status") or "OK")
    if code == "OK":
        return None
    screen = dig(status, "errorScreen", "playerErrorMessageRenderer")
    reason = str(status.get("reason") or text_of(dig(screen, "reason")) or "").strip()
    plain = reason.replace("\u2019", "'").lower()
    subreason = " ".join(text_of(dig(screen, "subreason")).split())
    said = f": {reason.rstrip('.')}." if reason else "."
    if code == "LOGIN_REQUIRED" and "not a bot" in plain:
        here = "Cloudflare's addresses" if where.edge else "this machine's address"
        return VidError(
            ErrorCode.BLOCKED,
            f"YouTube asks to sign in to confirm this is not a bot for video {video_id}: "
            f"it blocks requests from {here}.",
            hint=blocked(where, f"https://www.youtube.com/watch?v={video_id}"),
        )
    # An age check reads the same whatever the status says it with (LOGIN_REQUIRED, AGE_*, or an
    # UNPLAYABLE whose reason asks to confirm one's age).
    if code.startswith("AGE_") or (code in ("LOGIN_REQUIRED", "UNPLAYABLE") and _AGE.search(reason)):
        quoted = f" (YouTube: {reason.rstrip('.')}.)" if reason else ""
        return VidError(
            ErrorCode.UNAVAILABLE,
            f"Video {video_id} is age-restricted: YouTube shows it only to signed-in adult accounts, "
            f"so its captions and audio cannot be read without one{quoted}",
            hint=signed_in(where, "age"),
        )
    if code == "LOGIN_REQUIRED":
        if "private" in plain:
            why, what = "private", "is private"
        elif _MEMBERS.search(reason):
            why, what = "members", "is for the channel's members only"
        else:
            why, what = "account", "needs a signed-in account"
        return VidError(ErrorCode.UNAVAILABLE, f"Video {video_id} {what}{said}", hint=signed_in(where, why))
    if code == "ERROR":
        return VidError(
            ErrorCode.NOT_FOUND,
            f"Video {video_id} was not found{said if reason else ': YouTube says it is unavailable.'}",
            hint="Check the url for a typo; if it is right, tell the user the video was removed or made "
            "private, and do not retry.",
        )
    detail = f"{reason} ({subreason})" if reason and subreason else reason or subreason or code
    hint = (
        "Tell the user the live stream has not started, or has ended and is not yet a recording; do "
        "not retry before it is available as a recording."
        if code == "LIVE_STREAM_OFFLINE"
        else not_played(where)
    )
    return VidError(
        ErrorCode.UNAVAILABLE, f"Video {video_id} cannot be played: {detail.rstrip('.')}.", hint=hint
    )


# --- the provider --------------------------------------------------------------------------------


@dataclass
class _Video:
    """One video's watch page and the player response the provider reads (memoised per call)."""

    video_id: str
    page: WatchPage
    player: dict[str, Any]
    via: str
    """``innertube`` (the ANDROID ``player`` answer) or ``watch-page`` (the page's embedded one)."""

    @property
    def own_page(self) -> bool:
        return self.page.video_id in (None, self.video_id)

    @property
    def page_player(self) -> dict[str, Any]:
        return _embedded_player(self.page, self.video_id)


def _embedded_player(page: WatchPage, video_id: str) -> dict[str, Any]:
    """The watch page's own player response, when it is about ``video_id`` (else ``{}``)."""
    player = page.player or {}
    return player if dig(player, "videoDetails", "videoId") == video_id else {}


class YouTubeProvider:
    """``SourceProvider`` for YouTube videos, playlists and channels, over InnerTube."""

    id = "youtube"
    name = "YouTube"

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        origin: str = DEFAULT_ORIGIN,
        max_items: int = 500,
        where: Where | None = None,
    ) -> None:
        self._client = client
        self._origin = origin.rstrip("/")
        self._max_items = max_items
        self._where = where or Where()
        """Where the server runs: the way out of a refusal that its hints name."""

    def accepts(self, ref: VideoRef) -> bool:
        return ref.platform == "youtube"

    # -- the protocol --

    async def metadata(self, ref: VideoRef, ctx: Ctx) -> VideoMetadata:
        """Metadata whenever YouTube describes the video, even when it will not play it (an
        age-restricted or ended live video still has a title); otherwise the playability error."""
        video = await self._video(ref, ctx)
        details = video.player.get("videoDetails")
        if not isinstance(details, dict) or not details.get("title"):
            details = video.page_player.get("videoDetails")
        if not isinstance(details, dict) or not details.get("title"):
            raise playability_error(video.player, video.video_id, self._where) or _unreadable(
                _subject(video.video_id), "video details", self._where
            )
        micro = dig(video.player, "microformat", "playerMicroformatRenderer") or dig(
            video.page_player, "microformat", "playerMicroformatRenderer"
        )
        return self._metadata(video, details, micro if isinstance(micro, dict) else {})

    async def caption_tracks(self, ref: VideoRef, ctx: Ctx) -> list[CaptionTrack]:
        video = await self._video(ref, ctx)
        if error := playability_error(video.player, video.video_id, self._where):
            raise error
        return [track for track, _ in caption_track_urls(video.player)]

    async def caption_languages(
        self, ref: VideoRef, ctx: Ctx
    ) -> tuple[list[CaptionTrack], list[TranslationTarget]]:
        """The tracks and the languages YouTube translates them into, from one player answer."""
        video = await self._video(ref, ctx)
        if error := playability_error(video.player, video.video_id, self._where):
            raise error
        return [track for track, _ in caption_track_urls(video.player)], translation_targets(video.player)

    async def captions(self, ref: VideoRef, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        video = await self._video(ref, ctx)
        vid = video.video_id
        if error := playability_error(video.player, vid, self._where):
            raise error
        listed = caption_track_urls(video.player)
        renderer = dig(video.player, "captions", "playerCaptionsTracklistRenderer")
        translations = [
            code
            for item in (dig(renderer, "translationLanguages") or [])
            if isinstance(code := dig(item, "languageCode"), str)
        ]
        choice = choose_track(
            [track for track, _ in listed],
            lang=lang,
            video_language=video_language(video.player),
            translation_languages=translations,
        )
        if choice is None:
            raise VidError(
                ErrorCode.NO_TRANSCRIPT,
                f"Video {vid} has no captions (the uploader disabled them or YouTube made none).",
                hint=no_captions(self._where),
            )
        track, base_url = listed[choice.index]
        if needs_po_token(base_url):
            raise VidError(
                ErrorCode.BLOCKED,
                f"YouTube requires a PO token for the {track.language} captions of video {vid}.",
                hint=po_token(self._where),
            )
        ctx.progress("captions", None, f"downloading {track.language} captions")
        segments = await self._download(base_url, choice.translate_to, ctx, vid, track.language)
        note = choice.note if video.via == "innertube" else f"{choice.note}; tracks read from the watch page"
        origin = "captions-translated" if choice.translate_to else f"captions-{track.kind}"
        return Transcript(
            language=choice.translate_to or track.language,
            origin=origin,  # type: ignore[arg-type]
            timing="caption",
            producer=PRODUCER,
            segments=segments,
            note=note,
            requested_language=choice.missing,
            available_languages=list(choice.languages),
        )

    async def items(self, ref: VideoRef, ctx: Ctx, *, limit: int | None = None) -> list[VideoRef]:
        limit = self._max_items if limit is None else max(0, min(limit, self._max_items))
        if ref.kind == "video":
            return [_video_ref(_video_id(ref))]
        where = listing_path(ref.kind, ref.native_id)
        if where is None:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"{ref.native_id[:40]!r} is not a YouTube {ref.kind} id.",
                hint="Give a url of a playlist (with its list id) or of a channel (/channel/UC..., "
                "/@handle, /c/name or /user/name).",
            )
        path, subject = where
        page = await self._page(path, ctx, subject)
        data = extract_json_var(page, "ytInitialData")
        if data is None:
            raise _unreadable(subject, "page", self._where)
        listing = parse_listing(data)
        if not listing.video_ids and (alert := alert_text(data)):
            raise VidError(
                ErrorCode.NOT_FOUND,
                f"YouTube has no {subject}: {alert}",
                hint="Check the url for a typo; if it is right, tell the user the playlist or channel "
                "is private or deleted, and do not retry.",
            )
        ids = listing.video_ids[:limit]
        seen, tokens = set(ids), set()
        token, api_key = listing.continuation, innertube_api_key(page)
        client = {
            "clientName": "WEB",
            "clientVersion": innertube_client_version(page) or WEB_CLIENT_VERSION,
            "hl": "en",
        }
        while len(ids) < limit and token and api_key and token not in tokens:
            tokens.add(token)
            ctx.progress("items", len(ids) / limit, f"{len(ids)} videos so far")
            response = await self._send(
                "POST",
                f"{self._origin}/youtubei/v1/browse?key={quote(api_key)}",
                ctx,
                subject,
                json={"context": {"client": client}, "continuation": token},
            )
            more = continuation_items(_json(response, subject, "continuation", self._where))
            new = [video_id for video_id in more.video_ids if video_id not in seen]
            if not new:
                break
            seen.update(new)
            ids.extend(new[: limit - len(ids)])
            token = more.continuation
        return [_video_ref(video_id) for video_id in ids]

    async def comments(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[Comment]:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "The YouTube InnerTube provider does not read comments.",
            hint=(
                "Tell the user, and do not retry: this server cannot read YouTube comments; the local "
                "runtime (`vid2context mcp`, or `vid2context serve`) reads them with yt-dlp."
            )
            if self._where.edge
            else "Comments are read by the yt-dlp rung: tell the user to install yt-dlp (the `local` "
            "extra) if this server lacks it, and do not retry until then.",
        )

    # -- watch page and player, once per call --

    async def _video(self, ref: VideoRef, ctx: Ctx) -> _Video:
        vid = _video_id(ref)
        key = ("youtube.player", vid)
        lock = ctx.memo.setdefault(("youtube.lock", vid), asyncio.Lock())
        async with lock:
            cached = ctx.memo.get(key)
            if isinstance(cached, VidError):  # the same answer again, as a fresh exception
                raise VidError(cached.code, cached.message, hint=cached.hints, retry_after=cached.retry_after)
            if isinstance(cached, _Video):
                return cached
            try:
                video = await self._load(vid, ctx)
            except VidError as error:
                if error.code not in (ErrorCode.TIMEOUT, ErrorCode.CANCELED):
                    ctx.memo[key] = error
                raise
            ctx.memo[key] = video
            return video

    async def _load(self, vid: str, ctx: Ctx) -> _Video:
        subject = _subject(vid)
        html = await self._page(f"/watch?v={vid}", ctx, subject)
        page = parse_watch_page(html)
        embedded = _embedded_player(page, vid)
        if page.api_key is None:
            if embedded:
                return _Video(vid, page, embedded, "watch-page")
            raise _unreadable(subject, "watch page (no InnerTube key in it)", self._where)
        try:
            response = await self._send(
                "POST",
                f"{self._origin}/youtubei/v1/player?key={quote(page.api_key)}",
                ctx,
                subject,
                json={"context": {"client": ANDROID_CLIENT}, "videoId": vid},
            )
            player = _json(response, subject, "player answer", self._where)
        except VidError as error:
            if error.code is ErrorCode.UPSTREAM and embedded:
                return _Video(vid, page, embedded, "watch-page")
            raise
        return _Video(vid, page, player, "innertube")

    async def _page(self, path: str, ctx: Ctx, subject: str) -> str:
        """A YouTube HTML page, with the EU consent interstitial answered once."""
        url = f"{self._origin}{path}"
        html = (await self._send("GET", url, ctx, subject, found=True)).text
        if is_consent_page(html):
            value = consent_value(html)
            if value is not None:
                ctx.memo[_COOKIE_KEY] = f"CONSENT=YES+{value}"
                html = (await self._send("GET", url, ctx, subject)).text
            if value is None or is_consent_page(html):
                raise VidError(
                    ErrorCode.UPSTREAM,
                    f"YouTube showed its EU cookie-consent page and it could not be answered ({subject}).",
                    hint=consent(self._where),
                )
        if is_captcha_page(html):
            raise _rate_limited(subject, self._where)
        return html

    async def _send(
        self,
        method: str,
        url: str,
        ctx: Ctx,
        subject: str,
        *,
        json: Any = None,
        check: bool = True,
        found: bool = False,
    ) -> httpx.Response:
        """One request to YouTube; 429 is always an error, other statuses only when ``check``.

        ``found``: the request is for a page (a channel's, a playlist's), whose 404 means there is
        no such page, not a failing YouTube."""
        ctx.check()
        headers = {"Accept-Language": "en-US"}
        if cookie := ctx.memo.get(_COOKIE_KEY):
            headers["Cookie"] = cookie
        extra: dict[str, Any] = {}
        if (remaining := ctx.remaining) is not None:
            default = self._client.timeout.read
            extra["timeout"] = httpx.Timeout(remaining if default is None else min(default, remaining))
        try:
            response = await self._client.request(method, url, headers=headers, json=json, **extra)
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
            raise _transport_error(exc, subject, self._where) from exc
        if response.status_code == 429:
            raise _rate_limited(subject, self._where, _retry_after(response))
        if found and response.status_code == 404:
            raise VidError(
                ErrorCode.NOT_FOUND,
                f"YouTube has no such page (HTTP 404 for {subject}).",
                hint="Check the url for a typo; if it is right, tell the user it does not exist, and do not "
                "retry.",
            )
        if check and not response.is_success:
            raise _status_error(response, subject, self._where)
        return response

    # -- captions --

    def _caption_url(self, base_url: str, fmt: str, translate_to: str | None) -> str:
        """The track URL on our origin with ``fmt`` (and ``tlang``) set."""
        parts = urlsplit(base_url)
        query = [
            (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ("fmt", "tlang")
        ]
        if translate_to:
            query.append(("tlang", translate_to))
        query.append(("fmt", fmt))
        return f"{self._origin}{parts.path or '/api/timedtext'}?{urlencode(query, safe=',')}"

    async def _download(
        self, base_url: str, translate_to: str | None, ctx: Ctx, vid: str, language: str
    ) -> list[Segment]:
        subject = _subject(vid)
        source = f"video {vid} ({translate_to or language})"
        response = await self._send(
            "GET", self._caption_url(base_url, "json3", translate_to), ctx, subject, check=False
        )
        if response.is_success:
            try:
                if segments := parse_captions(response.text, source=source):
                    return segments
            except VidError:
                pass  # json3 unusable: srv3 below
        response = await self._send("GET", self._caption_url(base_url, "srv3", translate_to), ctx, subject)
        if not response.text.strip():
            raise VidError(
                ErrorCode.UPSTREAM,
                f"YouTube sent an empty caption file for {source} (it may want a PO token).",
                hint=po_token(self._where),
            )
        segments = parse_captions(response.text, source=source)
        if not segments:
            raise VidError(
                ErrorCode.NO_TRANSCRIPT,
                f"The caption track of {source} has no text.",
                hint=no_captions(self._where),
            )
        return segments

    # -- metadata --

    def _metadata(self, video: _Video, details: dict[str, Any], micro: dict[str, Any]) -> VideoMetadata:
        vid = video.video_id
        description = details.get("shortDescription") or text_of(micro.get("description")) or None
        duration = as_int(details.get("lengthSeconds")) or as_int(micro.get("lengthSeconds"))
        live = bool(details.get("isLive") or details.get("isLiveContent")) or bool(
            dig(micro, "liveBroadcastDetails", "isLiveNow")
        )
        chapters = (
            choose_chapters(
                creator_markers=video.page.creator_markers,
                description=description,
                auto_markers=video.page.auto_markers,
                duration_sec=duration or None,
            )
            if video.own_page
            else choose_chapters(description=description, duration_sec=duration or None)
        )
        keywords = details.get("keywords")
        view_count = as_int(details.get("viewCount"))
        return VideoMetadata(
            id=f"youtube:{vid}",
            platform="youtube",
            title=str(details.get("title") or text_of(micro.get("title"))),
            url=_watch_url(vid),
            channel=details.get("author") or micro.get("ownerChannelName") or None,
            channel_id=details.get("channelId") or micro.get("externalChannelId") or None,
            duration_sec=float(duration) if duration else None,
            published_at=iso_date(micro.get("publishDate") or micro.get("uploadDate")),
            description=description,
            thumbnails=thumbnails(details, micro),
            tags=[k for k in keywords if isinstance(k, str)] if isinstance(keywords, list) else [],
            view_count=view_count if view_count is not None else as_int(micro.get("viewCount")),
            language=video_language(video.player) or video_language(video.page_player),
            is_live=live,
            chapters=chapters,
        )


# --- helpers over player responses and refs -------------------------------------------------------


def _video_id(ref: VideoRef) -> str:
    if ref.kind != "video":
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{ref.id} is a {ref.kind}, not a video.",
            hint=steps("List its videos with {items}, then ask for each video."),
        )
    if not _VIDEO_ID.fullmatch(ref.native_id):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{ref.native_id[:40]!r} is not a YouTube video id.",
            hint="Give a url with an 11-character video id (letters, digits, - and _), or the "
            "video's full URL.",
        )
    return ref.native_id


def _json(response: httpx.Response, subject: str, what: str, where: Where) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError as exc:
        raise _unreadable(subject, what, where) from exc
    if not isinstance(data, dict):
        raise _unreadable(subject, what, where)
    return data
