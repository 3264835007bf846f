"""A small local stand-in for Supadata's REST API, over real HTTP on 127.0.0.1.

It answers as Supadata's documentation shows (see ``providers/supadata.py`` for the pages):

- every request needs ``x-api-key``; a missing or wrong one is 401 with the documented error body
  ``{error, message, details, documentationUrl}``;
- ``GET /v1/youtube/video?id=`` the video's metadata, 404 ``video-not-found`` for one it does not know;
- ``GET /v1/transcript?url=&lang=&text=&mode=``: 200 with ``{content: [{text, offset, duration,
  lang}], lang, availableLangs}`` (milliseconds); for a video marked ``long``, 202 ``{jobId}``,
  then ``GET /v1/transcript/{jobId}`` answers ``queued``, ``active``, then ``completed`` with the
  transcript (or ``failed`` for a video marked ``fails``); 206 ``transcript-unavailable`` for a
  video without captions; ``lang`` is a preference: a language it lacks gets the first one;
- ``fail_next`` scripts answers (429 with ``Retry-After``, 402, 5xx; 200 is an HTML page in place of
  the JSON) for the next requests.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .standin_http import QuietHandler, StandinServer, reply

KEY = "sd-test-key-0123456789"
DOCS = "https://supadata.ai/documentation/errors"


@dataclass
class Video:
    title: str
    tracks: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    """Language -> chunks of (text, offset ms, duration ms); the first language is the default."""
    long: bool = False
    """Answer 202 with a job, as Supadata does for long videos."""
    fails: bool = False
    """The job fails (a long video only)."""


VIDEOS: dict[str, Video] = {
    "botCheck001": Video(
        title="Kickstand teardown",
        tracks={
            "en": [
                ("the kickstand bends to one hundred sixty five degrees", 0, 4200),
                ("and the hinge is steel", 4200, 2300),
                ("rated for ten thousand cycles", 6500, 3000),
            ],
            "de": [("der Ständer", 0, 4200)],
        },
    ),
    "longVideo01": Video(
        title="A three hour lecture",
        tracks={"en": [("welcome to the lecture", 1000, 2000), ("today we cover hinges", 3000, 2500)]},
        long=True,
    ),
    "failedJob01": Video(title="Broken upload", tracks={"en": [("x", 0, 1)]}, long=True, fails=True),
    "noCaption01": Video(title="Silent film", tracks={}),
}


def _error(code: str, message: str) -> dict[str, str]:
    return {"error": code, "message": message, "details": message, "documentationUrl": f"{DOCS}#{code}"}


class _Handler(QuietHandler):
    server: FakeSupadata  # type: ignore[assignment]

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        good_key = self.headers.get("x-api-key") == self.server.key
        with self.server.lock:
            self.server.requests.append((parts.path, query, good_key))
            scripted = self.server.fail_next.pop(0) if self.server.fail_next else None
        if not good_key:
            return self._send(401, _error("invalid-request", "Invalid or missing API key"))
        if scripted is not None:
            status, headers = scripted
            if status == 200:  # a proxy's page in place of the documented JSON
                return self._send(200, None, {"Content-Type": "text/html"}, raw=b"<html>gateway</html>")
            code = {429: "limit-exceeded", 402: "upgrade-required"}.get(status, "internal-error")
            return self._send(status, _error(code, "scripted"), headers)
        self._send(*self._answer(parts.path, query))

    def _answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        if path == "/v1/youtube/video":
            video = VIDEOS.get(query.get("id", ""))
            if video is None:
                return 404, _error("video-not-found", "The video could not be found")
            return 200, {
                "id": query["id"],
                "title": video.title,
                "description": "A test video.",
                "duration": 600,
                "channel": {"id": "UCtest", "name": "Test Channel"},
                "tags": ["test"],
                "thumbnail": "https://i.ytimg.com/vi/x/hq.jpg",
                "uploadDate": "2024-05-01T00:00:00.000Z",
                "viewCount": 42,
                "likeCount": 1,
                "transcriptLanguages": list(video.tracks),
            }
        if path == "/v1/transcript":
            vid = parse_qs(urlsplit(query.get("url", "")).query).get("v", [""])[0]
            video = VIDEOS.get(vid)
            if video is None:
                return 404, _error("video-not-found", "The video could not be found")
            if not video.tracks:
                return 206, _error("transcript-unavailable", "No transcript is available for this video")
            if video.long:
                with self.server.lock:
                    job = f"job-{len(self.server.jobs) + 1}"
                    self.server.jobs[job] = [vid, query.get("lang"), 0]
                return 202, {"jobId": job}
            return 200, self._transcript(video, query.get("lang"))
        if path.startswith("/v1/transcript/"):
            with self.server.lock:
                job = self.server.jobs.get(path.rsplit("/", 1)[1])
                if job is not None:
                    job[2] += 1
            if job is None:
                return 404, _error("not-found", "No such job")
            vid, lang, polls = job
            video = VIDEOS[vid]
            if polls < 3:
                return 200, {"status": ("queued", "active")[polls - 1]}
            if video.fails:
                return 200, {"status": "failed", "error": _error("internal-error", "The job failed")}
            return 200, {"status": "completed", **self._transcript(video, lang)}
        return 404, _error("invalid-request", "Endpoint does not exist")

    def _transcript(self, video: Video, lang: str | None) -> dict[str, Any]:
        chosen = lang if lang in video.tracks else next(iter(video.tracks))
        return {
            "content": [
                {"text": text, "offset": offset, "duration": duration, "lang": chosen}
                for text, offset, duration in video.tracks[chosen]
            ],
            "lang": chosen,
            "availableLangs": list(video.tracks),
        }

    def _send(
        self, status: int, body: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None
    ) -> None:
        data = raw if raw is not None else json.dumps(body).encode()
        reply(self, status, data, {"Content-Type": "application/json", **(headers or {})})


class FakeSupadata(StandinServer):
    """``with FakeSupadata() as sd: ... SUPADATA_BASE_URL=sd.base_url, SUPADATA_API_KEY=KEY``."""

    def __init__(self, key: str = KEY) -> None:
        super().__init__(_Handler)
        self.key = key
        self.lock = threading.Lock()
        self.requests: list[tuple[str, dict[str, str], bool]] = []
        self.jobs: dict[str, list[Any]] = {}
        self.fail_next: list[tuple[int, dict[str, str]]] = []

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"
