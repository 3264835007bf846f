"""Reading YouTube's pages and InnerTube answers: pure functions over text and dicts, no I/O.

What a page holds and where:

- the watch page: ``INNERTUBE_API_KEY`` and the client version in its ``ytcfg``, the embedded
  ``ytInitialPlayerResponse`` (a WEB-client player response with ``microformat``) and
  ``ytInitialData`` (engagement panels with chapter markers, the player bar's ``markersMap``);
- the EU consent interstitial (a form posting to ``consent.youtube.com/s`` with a hidden ``v``);
- the "unusual traffic" page (a reCAPTCHA form, no InnerTube config);
- playlist and channel pages: ``ytInitialData`` with ``playlistVideoRenderer``,
  ``gridVideoRenderer``, ``richItemRenderer``/``videoRenderer`` or ``lockupViewModel`` items and a
  ``continuationItemRenderer`` whose token the ``browse`` endpoint continues from;
- ``browse`` continuation answers: ``onResponseReceivedActions[].appendContinuationItemsAction
  .continuationItems`` (or ``reloadContinuationItemsCommand``), or the older
  ``continuationContents``;
- ``player`` answers: ``captions.playerCaptionsTracklistRenderer`` (tracks, audio tracks,
  translation languages), ``videoDetails`` and ``microformat.playerMicroformatRenderer``.

The shapes change without notice, so every reader here tolerates missing keys and wrong types and
answers ``None`` or an empty list rather than raising.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from ..models import CaptionTrack, Thumbnail, TranslationTarget

__all__ = [
    "ListingPage",
    "WatchPage",
    "alert_text",
    "as_int",
    "caption_track_urls",
    "consent_value",
    "continuation_items",
    "dig",
    "extract_json_var",
    "innertube_api_key",
    "innertube_client_version",
    "is_captcha_page",
    "is_consent_page",
    "iso_date",
    "listing_path",
    "marker_lists",
    "needs_po_token",
    "parse_listing",
    "parse_watch_page",
    "text_of",
    "thumbnails",
    "translation_targets",
    "video_language",
]

_API_KEY = re.compile(r'"INNERTUBE_API_KEY"\s*:\s*"([A-Za-z0-9_-]+)"')
_CLIENT_VERSION = re.compile(
    r'"(?:INNERTUBE_CLIENT_VERSION|INNERTUBE_CONTEXT_CLIENT_VERSION)"\s*:\s*"([0-9.]+)"'
)
_CONSENT_FORM = 'action="https://consent.youtube.com/s"'
_CONSENT_VALUE = re.compile(r'name="v"\s+value="([^"]*)"')
_VIDEO_ID = re.compile(r"[A-Za-z0-9_-]{11}")
_LIST_ID = re.compile(r"[A-Za-z0-9_-]{2,128}")
_CHANNEL = re.compile(r"UC[A-Za-z0-9_-]{22}|@[\w.\-\u00b7]{1,100}|(?:c|user)/[\w.\-\u00b7]{1,100}")
_BARE_NAME = re.compile(r"[\w.\-]{1,100}")
_MAX_DEPTH = 64


def text_of(value: Any) -> str:
    """The text of a YouTube text object (``simpleText``, ``runs``, or a view model's ``content``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if isinstance(value.get("simpleText"), str):
            return value["simpleText"]
        runs = value.get("runs")
        if isinstance(runs, list):
            return "".join(str(run.get("text", "")) for run in runs if isinstance(run, Mapping))
        if isinstance(value.get("content"), str):
            return value["content"]
    return ""


def extract_json_var(page: str, name: str) -> dict[str, Any] | None:
    """The object assigned to ``var name =`` / ``window["name"] =`` / ``window.name =`` in a page."""
    pattern = re.compile(r"(?:\bvar\s+|window\[[\"']|window\.)" + re.escape(name) + r"(?:[\"']\])?\s*=\s*")
    decoder = json.JSONDecoder()
    for match in pattern.finditer(page):
        if page[match.end() : match.end() + 1] != "{":
            continue
        try:
            value, _ = decoder.raw_decode(page, match.end())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def innertube_api_key(page: str) -> str | None:
    match = _API_KEY.search(page)
    return match.group(1) if match else None


def innertube_client_version(page: str) -> str | None:
    match = _CLIENT_VERSION.search(page)
    return match.group(1) if match else None


def is_consent_page(page: str) -> bool:
    return _CONSENT_FORM in page


def consent_value(page: str) -> str | None:
    """The hidden ``v`` of the consent form, which the ``CONSENT`` cookie carries as ``YES+<v>``."""
    match = _CONSENT_VALUE.search(page)
    return match.group(1) if match and match.group(1) else None


def is_captcha_page(page: str) -> bool:
    """YouTube's "unusual traffic from your network" page: a reCAPTCHA and no InnerTube config."""
    return 'class="g-recaptcha"' in page and innertube_api_key(page) is None


@dataclass
class WatchPage:
    """What the provider keeps of a watch page (the page itself is ~1 MB; this is what it needs)."""

    video_id: str | None = None
    """The video the page is about (``currentVideoEndpoint`` or the embedded player's details)."""
    api_key: str | None = None
    client_version: str | None = None
    player: dict[str, Any] | None = None
    """The embedded ``ytInitialPlayerResponse``, when the page has one."""
    creator_markers: list[dict[str, Any]] = field(default_factory=list)
    auto_markers: list[dict[str, Any]] = field(default_factory=list)


def parse_watch_page(page: str) -> WatchPage:
    initial_data = extract_json_var(page, "ytInitialData") or {}
    creator, auto = marker_lists(initial_data)
    player = extract_json_var(page, "ytInitialPlayerResponse")
    video_id = dig(initial_data, "currentVideoEndpoint", "watchEndpoint", "videoId") or dig(
        player, "videoDetails", "videoId"
    )
    return WatchPage(
        video_id=video_id if isinstance(video_id, str) else None,
        api_key=innertube_api_key(page),
        client_version=innertube_client_version(page),
        player=player,
        creator_markers=creator,
        auto_markers=auto,
    )


def dig(value: Any, *keys: str | int) -> Any:
    """``value[k1][k2]...`` through dicts and lists, ``None`` as soon as a step is missing."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(value, list) or not -len(value) <= key < len(value):
                return None
            value = value[key]
        else:
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
    return value


def _walk(value: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    """Every dict inside ``value``, depth first in document order (bounded against hostile nesting)."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        yield value
        for child in value.values():
            yield from _walk(child, depth + 1)
    elif isinstance(value, list):
        for child in value:
            yield from _walk(child, depth + 1)


def marker_lists(initial_data: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Chapter markers in a watch page's ``ytInitialData``: (the uploader's, YouTube's automatic).

    Engagement panels ``engagement-panel-macro-markers-description-chapters`` and
    ``...-auto-chapters`` hold ``macroMarkersListItemRenderer`` items; the player bar's
    ``markersMap`` holds ``chapterRenderer`` items under ``DESCRIPTION_CHAPTERS`` / ``AUTO_CHAPTERS``.
    """
    creator: list[dict[str, Any]] = []
    auto: list[dict[str, Any]] = []
    panels = initial_data.get("engagementPanels")
    for panel in panels if isinstance(panels, list) else []:
        renderer = dig(panel, "engagementPanelSectionListRenderer")
        if not isinstance(renderer, Mapping):
            continue
        ident = str(renderer.get("panelIdentifier") or renderer.get("targetId") or "")
        items = dig(renderer, "content", "macroMarkersListRenderer", "contents")
        if "macro-markers" not in ident or not isinstance(items, list):
            continue
        found = [
            i["macroMarkersListItemRenderer"]
            for i in items
            if isinstance(dig(i, "macroMarkersListItemRenderer"), Mapping)
        ]
        (auto if "auto" in ident else creator).extend(found)
    for node in _walk(initial_data.get("playerOverlays")):
        markers = node.get("markersMap")
        if not isinstance(markers, list):
            continue
        for entry in markers:
            chapters = dig(entry, "value", "chapters")
            if not isinstance(chapters, list):
                continue
            found = [c["chapterRenderer"] for c in chapters if isinstance(dig(c, "chapterRenderer"), Mapping)]
            key = str(dig(entry, "key") or "")
            target = auto if "AUTO" in key.upper() else creator
            if not target:  # the engagement panel already gave these same chapters
                target.extend(found)
    return creator, auto


# --- playlists and channels ----------------------------------------------------------------------


def listing_path(kind: str, native_id: str) -> tuple[str, str] | None:
    """The page of a playlist or of a channel's videos tab, and a label for messages.

    ``None`` when ``native_id`` is not a playlist id, a ``UC...`` channel id, an ``@handle``,
    ``c/name`` or ``user/name`` (a bare name is taken as a handle): nothing else reaches a URL.
    """
    native = native_id.strip("/")
    if kind == "playlist":
        return (f"/playlist?list={native}", f"playlist {native}") if _LIST_ID.fullmatch(native) else None
    if kind != "channel":
        return None
    if not _CHANNEL.fullmatch(native):
        if not _BARE_NAME.fullmatch(native):
            return None
        native = f"@{native}"
    path = f"channel/{native}" if native.startswith("UC") else native
    return f"/{quote(path, safe='@/.-_')}/videos", f"channel {native}"


@dataclass
class ListingPage:
    """Videos on one page of a playlist or channel, in page order, and the token for the next page."""

    video_ids: list[str] = field(default_factory=list)
    continuation: str | None = None
    title: str | None = None


def _video_id_of(node: Mapping[str, Any]) -> str | None:
    for key in ("playlistVideoRenderer", "gridVideoRenderer", "videoRenderer", "playlistPanelVideoRenderer"):
        renderer = node.get(key)
        if isinstance(renderer, Mapping):
            if renderer.get("isPlayable") is False:  # deleted or private entries of a playlist
                return None
            video_id = renderer.get("videoId")
            return video_id if isinstance(video_id, str) and _VIDEO_ID.fullmatch(video_id) else None
    lockup = node.get("lockupViewModel")
    if isinstance(lockup, Mapping) and lockup.get("contentType") in (None, "LOCKUP_CONTENT_TYPE_VIDEO"):
        video_id = lockup.get("contentId")
        return video_id if isinstance(video_id, str) and _VIDEO_ID.fullmatch(video_id) else None
    return None


def _token_of(node: Mapping[str, Any]) -> str | None:
    renderer = node.get("continuationItemRenderer")
    if isinstance(renderer, Mapping):
        for inner in _walk(renderer):
            token = dig(inner, "continuationCommand", "token")
            if isinstance(token, str) and token:
                return token
    token = dig(node, "nextContinuationData", "continuation")
    return token if isinstance(token, str) and token else None


def _collect(root: Any) -> ListingPage:
    page = ListingPage()
    seen: set[str] = set()
    for node in _walk(root):
        video_id = _video_id_of(node)
        if video_id is not None and video_id not in seen:
            seen.add(video_id)
            page.video_ids.append(video_id)
        token = _token_of(node)
        if token is not None:
            page.continuation = token  # the last one on the page continues the list
    return page


def parse_listing(initial_data: Mapping[str, Any]) -> ListingPage:
    """The videos of a playlist page or a channel's videos tab (its ``ytInitialData``).

    Only the page's main ``contents`` are read, so sidebars and headers never add videos.
    """
    page = _collect(initial_data.get("contents"))
    title = dig(initial_data, "metadata", "playlistMetadataRenderer", "title") or dig(
        initial_data, "metadata", "channelMetadataRenderer", "title"
    )
    page.title = title if isinstance(title, str) else None
    return page


def continuation_items(response: Mapping[str, Any]) -> ListingPage:
    """The videos and next token in a ``browse`` continuation answer, in either known shape."""
    roots: list[Any] = []
    actions = response.get("onResponseReceivedActions") or response.get("onResponseReceivedEndpoints")
    for action in actions if isinstance(actions, list) else []:
        for key in ("appendContinuationItemsAction", "reloadContinuationItemsCommand"):
            items = dig(action, key, "continuationItems")
            if isinstance(items, list):
                roots.append(items)
    if not roots:
        roots.append(response.get("continuationContents"))
    return _collect(roots)


def alert_text(initial_data: Mapping[str, Any]) -> str | None:
    """The text of an ``ERROR`` alert on a page ("The playlist does not exist."), if any."""
    alerts = initial_data.get("alerts")
    for alert in alerts if isinstance(alerts, list) else []:
        for key in ("alertRenderer", "alertWithButtonRenderer"):
            renderer = dig(alert, key)
            if isinstance(renderer, Mapping) and renderer.get("type") == "ERROR":
                return text_of(renderer.get("text")) or "YouTube reported an error."
    return None


# --- player responses ----------------------------------------------------------------------------


def caption_track_urls(player: dict[str, Any]) -> list[tuple[CaptionTrack, str]]:
    """The caption tracks a player response lists, each with its ``baseUrl``."""
    raw = dig(player, "captions", "playerCaptionsTracklistRenderer", "captionTracks")
    found: list[tuple[CaptionTrack, str]] = []
    for item in raw if isinstance(raw, list) else []:
        code, url = dig(item, "languageCode"), dig(item, "baseUrl")
        if not isinstance(code, str) or not code or not isinstance(url, str) or not url:
            continue
        track = CaptionTrack(
            language=code,
            name=text_of(item.get("name")) or code,
            kind="auto" if item.get("kind") == "asr" else "manual",
            translatable=bool(item.get("isTranslatable")),
        )
        found.append((track, url))
    return found


def translation_targets(player: dict[str, Any]) -> list[TranslationTarget]:
    """The languages YouTube translates this video's translatable tracks into."""
    raw = dig(player, "captions", "playerCaptionsTracklistRenderer", "translationLanguages")
    found: list[TranslationTarget] = []
    for item in raw if isinstance(raw, list) else []:
        code = dig(item, "languageCode")
        if isinstance(code, str) and code:
            found.append(TranslationTarget(language=code, name=text_of(item.get("languageName")) or code))
    return found


def video_language(player: dict[str, Any]) -> str | None:
    """The spoken language: the automatic track's (YouTube transcribes the audio as spoken), else
    the default caption track of the default audio track, else the first manual track's."""
    tracks = caption_track_urls(player)
    for track, _ in tracks:
        if track.kind == "auto":
            return track.language
    renderer = dig(player, "captions", "playerCaptionsTracklistRenderer")
    audio_index = as_int(dig(renderer, "defaultAudioTrackIndex")) or 0
    caption_index = as_int(dig(renderer, "audioTracks", audio_index, "defaultCaptionTrackIndex"))
    if caption_index is not None:
        code = dig(renderer, "captionTracks", caption_index, "languageCode")
        if isinstance(code, str) and code:
            return code
    return tracks[0][0].language if tracks else None


def needs_po_token(url: str) -> bool:
    """YouTube marks caption URLs that only answer with a PO token with ``exp=xpe``."""
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if key == "exp" and "xpe" in value.split(","):
            return True
    return False


def as_int(value: Any) -> int | None:
    """An int from YouTube's numbers, which are often strings (``"316"``); ``None`` otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return None


def iso_date(value: Any) -> str | None:
    """YouTube's ``publishDate`` (``2019-12-05`` or ``2018-08-02T06:00:08-07:00``) as an ISO date.

    The date as YouTube shows it (its own time zone); one form for every video, so dates compare.
    """
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value.strip()[:10]).isoformat()
    except ValueError:
        return None


def thumbnails(details: dict[str, Any], micro: dict[str, Any]) -> list[Thumbnail]:
    found: list[Thumbnail] = []
    seen: set[str] = set()
    for source in (details, micro):
        for item in dig(source, "thumbnail", "thumbnails") or []:
            url = dig(item, "url")
            if not isinstance(url, str) or not url:
                continue
            url = f"https:{url}" if url.startswith("//") else url
            if url in seen or not url.startswith(("https://", "http://")):
                continue
            seen.add(url)
            found.append(
                Thumbnail(url=url, width=as_int(item.get("width")), height=as_int(item.get("height")))
            )
    return found
