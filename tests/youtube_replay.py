"""A local server that answers like YouTube, from the recorded responses in shared/fixtures.

Pointed at by ``VID2CONTEXT_YOUTUBE_ORIGIN``, it lets the real CLI and server run end to end in a
subprocess without the network. The player answer is chosen by the ``videoId`` in the request
body, so each recorded playability state has an id of its own (``REPLAY_IDS``).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
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


def answer(method: str, target: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
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
        name = REPLAY_IDS.get(video_id, "youtube_video_unavailable.innertube.json.static")
        return 200, {"Content-Type": "application/json"}, (YTA / name).read_bytes()
    return 404, {"Content-Type": "text/plain"}, b"not recorded"


def httpx_callback(request: httpx.Request) -> httpx.Response:
    """``answer`` as a pytest-httpx callback (``httpx_mock.add_callback(httpx_callback)``)."""
    target = request.url.raw_path.decode("ascii")
    status, headers, content = answer(request.method, target, request.content)
    return httpx.Response(status, headers=headers, content=content)


class _Handler(BaseHTTPRequestHandler):
    server: ReplayServer  # type: ignore[assignment]

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        return

    def _reply(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append((method, self.path))
        status, headers, content = answer(method, self.path, body)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._reply("GET")

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        self._reply("POST")


class ReplayServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, str]] = []
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)
