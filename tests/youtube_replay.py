"""A local server that answers like YouTube, from the recorded responses in tests/fixtures.

Pointed at by ``VID2CONTEXT_YOUTUBE_ORIGIN``, it lets the real CLI and server run end to end in a
subprocess without the network. The player answer is chosen by the ``videoId`` in the request
body, so each recorded playability state has an id of its own (``REPLAY_IDS``).

Playlists and channels: the recorded pages in ``LIST_PAGES`` are served at their own paths, and
every video they list plays (``LISTED_PLAYER``, the recorded player answer of ``GJLlxj_dtq8``), so a
list can be ingested end to end. No ``browse`` continuation is recorded: the replay answers each
with the documented last-page shape (``browse_answer([])``), so a list ends after its first page;
a test that wants more pages answers ``browse`` itself with ``browse_answer(ids, token)``.

``ReplayServer(blocked=True)`` is YouTube as a cloud host's address meets it: every player
request gets the recorded bot check (``BOT_CHECK``), whatever the video (the edge of the push tests).
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from .standin_http import QuietHandler, StandinServer, reply

FIXTURES = Path(__file__).resolve().parent / "fixtures"
YTA = FIXTURES / "youtube" / "yta"

# 11-character ids the replay server knows, and the recorded player response each one gets.
REPLAY_IDS: dict[str, str] = {
    "GJLlxj_dtq8": "youtube.innertube.json.static",
    "F1xioXWb8CY": "youtube_ww1_nl_en.innertube.json.static",
    "dsMFmonKDD4": "youtube_transcripts_disabled.innertube.json.static",
    "Njp5uhTorCo": "youtube_age_restricted.innertube.json.static",
    "botCheck001": "youtube_request_blocked.innertube.json.static",
    "unplayable1": "youtube_unplayable.innertube.json.static",
    "unavailable": "youtube_video_unavailable.innertube.json.static",
    "poTokenReq1": "youtube_po_token_required.innertube.json.static",
}
TOO_MANY_REQUESTS_ID = "tooMany429x"
BOT_CHECK = REPLAY_IDS["botCheck001"]
"""The recorded "Sign in to confirm you're not a bot" player answer."""

PYTUBE = FIXTURES / "youtube" / "pytube"
# Recorded list pages, by the path the provider asks for, and how many videos each lists.
PLAYLIST_ID = "PLzMcBGfZo4-mP7qA9cagf68V06sko5otr"  # 12 videos, no continuation
SUBMENU_PLAYLIST_ID = "PLZHQObOWTQDMsr9K-rj53DwVRMYO3t5Yr"  # 12 videos
LONG_PLAYLIST_ID = "PLS1QulWo1RIaJECMeUT4LFwJ-ghgoSH6n"  # 100 videos and a continuation
CHANNEL_ID = "UCs6nmQViDpUw0nuIx9c_WvA"  # @ProgrammingKnowledge: 30 videos and a continuation
LIST_PAGES: dict[str, str] = {
    f"/playlist?list={PLAYLIST_ID}": "playlist.html.gz",
    f"/playlist?list={SUBMENU_PLAYLIST_ID}": "playlist_submenu.html.gz",
    f"/playlist?list={LONG_PLAYLIST_ID}": "playlist_long.html.gz",
    f"/channel/{CHANNEL_ID}/videos": "channel-videos.html.gz",
    "/@ProgrammingKnowledge/videos": "channel-videos.html.gz",
}
LISTED_PLAYER = "youtube.innertube.json.static"
"""The player answer for a video a recorded list names (none of their own is recorded)."""


@functools.cache
def list_page(name: str) -> bytes:
    return gzip.decompress((PYTUBE / name).read_bytes())


@functools.cache
def listed_ids() -> frozenset[str]:
    """Every video id the recorded list pages name."""
    found: set[str] = set()
    for name in set(LIST_PAGES.values()):
        found.update(re.findall(rb'"videoId":\s*"([A-Za-z0-9_-]{11})"', list_page(name)))
    return frozenset(v.decode() for v in found)


def browse_answer(video_ids: list[str], token: str | None = None) -> dict:
    """A ``browse`` continuation answer in the documented shape (none is recorded)."""
    items: list[dict] = [{"playlistVideoRenderer": {"videoId": v, "isPlayable": True}} for v in video_ids]
    if token:
        items.append(
            {"continuationItemRenderer": {"continuationEndpoint": {"continuationCommand": {"token": token}}}}
        )
    return {"onResponseReceivedActions": [{"appendContinuationItemsAction": {"continuationItems": items}}]}


def answer(
    method: str, target: str, body: bytes, *, blocked: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """What recorded YouTube answers to ``method target``: status, headers, body.

    One function serves both the HTTP replay server and pytest-httpx callbacks, so the in-process
    tests and the subprocess tests see the same YouTube.
    """
    parts = urlsplit(target)
    query = parse_qs(parts.query)
    html = {"Content-Type": "text/html; charset=utf-8"}
    if method == "GET" and parts.path == "/watch":
        if query.get("v", [""])[0] == TOO_MANY_REQUESTS_ID:
            headers = {**html, "Retry-After": "120"}
            return 429, headers, (YTA / "youtube_too_many_requests.html.static").read_bytes()
        return 200, html, (YTA / "youtube.html.static").read_bytes()
    if method == "GET" and parts.path == "/api/timedtext":
        return 200, {"Content-Type": "text/xml; charset=utf-8"}, (YTA / "transcript.xml.static").read_bytes()
    if method == "POST" and parts.path == "/youtubei/v1/player":
        video_id = json.loads(body or b"{}").get("videoId", "")
        name = (
            BOT_CHECK
            if blocked
            else REPLAY_IDS.get(video_id)
            or (
                LISTED_PLAYER
                if video_id in listed_ids()
                else "youtube_video_unavailable.innertube.json.static"
            )
        )
        return 200, {"Content-Type": "application/json"}, (YTA / name).read_bytes()
    if method == "GET" and (page := LIST_PAGES.get(target)):
        return 200, html, list_page(page)
    if method == "POST" and parts.path == "/youtubei/v1/browse":
        return 200, {"Content-Type": "application/json"}, json.dumps(browse_answer([])).encode()
    return 404, {"Content-Type": "text/plain"}, b"not recorded"


def httpx_callback(request: httpx.Request) -> httpx.Response:
    """``answer`` as a pytest-httpx callback (``httpx_mock.add_callback(httpx_callback)``)."""
    target = request.url.raw_path.decode("ascii")
    status, headers, content = answer(request.method, target, request.content)
    return httpx.Response(status, headers=headers, content=content)


class _Handler(QuietHandler):
    server: ReplayServer  # type: ignore[assignment]

    def _reply(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append((method, self.path))
        self.server.headers_seen.append(str(self.headers))
        status, headers, content = answer(method, self.path, body, blocked=self.server.blocked)
        reply(self, status, content, headers)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._reply("GET")

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        self._reply("POST")


class ReplayServer(StandinServer):
    def __init__(self, *, blocked: bool = False) -> None:
        super().__init__(_Handler)
        self.blocked = blocked
        self.requests: list[tuple[str, str]] = []
        self.headers_seen: list[str] = []
        """Each request's headers as received (what the app sent upstream)."""
