"""A small local stand-in for SponsorBlock's API, over real HTTP on 127.0.0.1.

It answers ``GET /api/skipSegments/<sha256 hash prefix>`` as the API docs
(https://wiki.sponsor.ajay.app/w/API_Docs) describe it:

- the prefix is 4 to 32 lowercase hex digits, else 400;
- ``categories`` and ``actionTypes`` are JSON arrays (defaults ``["sponsor"]`` and ``["skip",
  "mute"]``); one that is not a JSON array of known names is 400;
- 200: a JSON array with one ``{videoID, hash, segments: [{category, actionType, segment: [start,
  end], UUID, videoDuration, locked, votes, description}]}`` per video whose id's SHA-256 starts
  with the prefix and that has segments of those categories and action types; 404 when none has;
- more than ``limit`` requests (when set) are 429 with ``Retry-After``, and ``fail_next`` scripts
  answers for the next requests (a status and headers; 200 is an HTML page in place of the JSON).

``SEGMENTS`` holds the data: ``GJLlxj_dtq8`` (the recorded YouTube video, whose transcript is
0-1.54 s, 1.54-5.7 s and 5.7-8.94 s) has a sponsor read over its second line and other
categories around it; ``prefixai7hx`` shares its four-digit prefix, so an answer holds both.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .standin_http import QuietHandler, StandinServer, reply

CATEGORIES = (
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
ACTION_TYPES = ("skip", "mute", "full", "poi", "chapter")
_PREFIX = re.compile(r"[0-9a-f]{4,32}")


def _segment(category: str, start: float, end: float, uuid: str, action: str = "skip", **more: Any) -> dict:
    return {
        "category": category,
        "actionType": action,
        "segment": [start, end],
        "UUID": uuid,
        "videoDuration": 316.0,
        "locked": more.get("locked", 0),
        "votes": more.get("votes", 3),
        "description": more.get("description", ""),
    }


SEGMENTS: dict[str, list[dict[str, Any]]] = {
    "GJLlxj_dtq8": [
        _segment("sponsor", 1.5, 5.8, "a" * 64 + "1", votes=12, locked=1),
        _segment("interaction", 100.0, 104.5, "b" * 64 + "2"),
        _segment("selfpromo", 102.0, 110.0, "c" * 64 + "3"),
        _segment("outro", 300.0, 316.0, "d" * 64 + "4"),
        _segment("poi_highlight", 42.0, 42.0, "e" * 64 + "5", action="poi"),
        _segment("chapter", 0.0, 60.0, "f" * 64 + "6", action="chapter", description="Unboxing"),
    ],
    "prefixai7hx": [_segment("sponsor", 0.0, 30.0, "9" * 64 + "7")],
}


def _array(raw: str | None, default: tuple[str, ...], allowed: tuple[str, ...]) -> list[str] | None:
    """A JSON array of known names, the default when absent, ``None`` when malformed."""
    if raw is None:
        return list(default)
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v in allowed for v in value):
        return None
    return value


class _Handler(QuietHandler):
    server: FakeSponsorBlock  # type: ignore[assignment]

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        with self.server.lock:
            self.server.requests.append((parts.path, query))
            count = len(self.server.requests)
            scripted = self.server.fail_next.pop(0) if self.server.fail_next else None
        if self.server.limit is not None and count > self.server.limit:
            return self._send(429, "Rate Limit (Too many requests)", {"Retry-After": "17"})
        if scripted is not None:
            status, headers = scripted
            if status == 200:
                return self._send(200, None, {"Content-Type": "text/html"}, raw=b"<html>gateway</html>")
            return self._send(status, "scripted", headers)
        if not parts.path.startswith("/api/skipSegments/"):
            return self._send(404, "Not Found")
        prefix = parts.path.removeprefix("/api/skipSegments/")
        categories = _array(query.get("categories"), ("sponsor",), CATEGORIES)
        actions = _array(query.get("actionTypes"), ("skip", "mute"), ACTION_TYPES)
        if not _PREFIX.fullmatch(prefix) or categories is None or actions is None:
            return self._send(400, "Bad Request")
        found = []
        for video_id, segments in self.server.segments.items():
            digest = hashlib.sha256(video_id.encode()).hexdigest()
            if not digest.startswith(prefix):
                continue
            chosen = [s for s in segments if s["category"] in categories and s["actionType"] in actions]
            if chosen:
                found.append({"videoID": video_id, "hash": digest, "segments": chosen})
        if not found:
            return self._send(404, "Not Found")
        self._send(200, found)

    def _send(
        self, status: int, body: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None
    ) -> None:
        if raw is not None:
            data, kind = raw, "text/html"
        elif isinstance(body, str):
            data, kind = body.encode(), "text/plain; charset=utf-8"
        else:
            data, kind = json.dumps(body).encode(), "application/json; charset=utf-8"
        reply(self, status, data, {"Content-Type": kind, **(headers or {})})


class FakeSponsorBlock(StandinServer):
    """``with FakeSponsorBlock() as sb: ... VID2CONTEXT_SPONSORBLOCK_ORIGIN=sb.origin``."""

    def __init__(self, segments: dict[str, list[dict[str, Any]]] | None = None) -> None:
        super().__init__(_Handler)
        self.segments = SEGMENTS if segments is None else segments
        self.lock = threading.Lock()
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.fail_next: list[tuple[int, dict[str, str]]] = []
        self.limit: int | None = None
