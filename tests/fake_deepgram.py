"""A small local stand-in for Deepgram's pre-recorded API, over real HTTP on 127.0.0.1.

It answers ``POST /v1/listen`` as Deepgram documents it: the raw audio as the body,
``Authorization: Token <key>``, the features as query parameters, and a JSON answer with
``metadata``, ``results.channels[0].alternatives`` and, with ``utterances=true``,
``results.utterances`` (``start``, ``end``, ``transcript``, ``speaker`` from 0, ``channel``,
``confidence``, ``words``). With ``detect_language=true`` the channel carries
``detected_language``.

Like the service it refuses a wrong key with 401 (``INVALID_AUTH``), a body over ``max_bytes``
with 413, and a body that is not audio with 400; ``fail_next`` scripts 402 (no credit left), 429
(with ``Retry-After``) or 5xx answers.

What it "hears": the audio is measured with a real ``ffprobe`` (so a body that is not media is
refused, as the service refuses it), and ``lines`` (speaker number, words) are spread over that
length, one utterance each, in order. Every request numbers its speakers from 0, as every real
request does, so two requests for two pieces both start with speaker 0.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .standin_http import HandledStandin, StandinServer, reply

TALK_LINES: list[tuple[int, str]] = [
    (0, "Welcome to the show. Today we talk about python programming."),
    (1, "The weather today is sunny and warm."),
    (0, "Please remember to subscribe to the channel."),
    (1, "Machine learning models need a lot of data."),
]
"""``tests/fixtures/media/talk.txt``, its sentences given to two voices in turn."""


@dataclass
class Request:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    size: int
    status: int = 0


@dataclass
class FakeDeepgram(HandledStandin):
    key: str = "dg-test-key"
    max_bytes: int = 2 * 1024 * 1024 * 1024
    lines: list[tuple[int, str]] = field(default_factory=lambda: list(TALK_LINES))
    language: str = "en"
    requests: list[Request] = field(default_factory=list)
    _failures: list[tuple[int, int | None]] = field(default_factory=list)
    _body: bytes | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: StandinServer | None = None

    def fail_next(self, status: int, *, retry_after: int | None = None, count: int = 1) -> None:
        """The next ``count`` requests get ``status`` (429 with ``Retry-After``)."""
        with self._lock:
            self._failures.extend([(status, retry_after)] * count)

    def answer_next(self, body: bytes) -> None:
        """The next successful request gets ``body`` as it is (a malformed answer)."""
        self._body = body

    def env(self, **more: str) -> dict[str, str]:
        return {"DEEPGRAM_API_KEY": self.key, "VID2CONTEXT_DEEPGRAM_ORIGIN": self.url, **more}

    # -- answering ----------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        request = Request(
            path=parts.path,
            query={k: v[-1] for k, v in parse_qs(parts.query).items()},
            headers={k.lower(): v for k, v in handler.headers.items()},
            size=len(body),
        )
        self.requests.append(request)
        status, payload, extra = self._answer(request, body)
        request.status = status
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        reply(handler, status, data, {"Content-Type": "application/json", **extra})

    def _answer(self, request: Request, body: bytes) -> tuple[int, Any, dict[str, str]]:
        if request.path != "/v1/listen":
            return 404, {"err_code": "NOT_FOUND", "err_msg": "Not found."}, {}
        if request.headers.get("authorization") != f"Token {self.key}":
            return 401, {"err_code": "INVALID_AUTH", "err_msg": "Invalid credentials."}, {}
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            status, retry_after = failure
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
            return status, {"err_code": "SCRIPTED", "err_msg": f"scripted {status}"}, headers
        if len(body) > self.max_bytes:
            return 413, {"err_code": "PAYLOAD_TOO_LARGE", "err_msg": "Payload too large."}, {}
        duration = _probe(body)
        if duration is None:
            return (
                400,
                {
                    "err_code": "Bad Request",
                    "err_msg": "Bad Request: failed to process audio: corrupt or unsupported data",
                },
                {},
            )
        if self._body is not None:
            answer, self._body = self._body, None
            return 200, answer, {}
        return 200, self._result(request, duration), {}

    def _result(self, request: Request, duration: float) -> dict[str, Any]:
        step = duration / max(1, len(self.lines))
        utterances = []
        for index, (speaker, text) in enumerate(self.lines):
            start, end = round(index * step, 3), round((index + 0.9) * step, 3)
            words = text.split()
            utterances.append(
                {
                    "start": start,
                    "end": end,
                    "confidence": 0.98,
                    "channel": 0,
                    "transcript": text,
                    "speaker": speaker,
                    "id": f"utt-{index}",
                    "words": [
                        {
                            "word": word.strip(".,").lower(),
                            "punctuated_word": word,
                            "start": round(start + (end - start) * i / len(words), 3),
                            "end": round(start + (end - start) * (i + 1) / len(words), 3),
                            "confidence": 0.97,
                            "speaker": speaker,
                            "speaker_confidence": 0.8,
                        }
                        for i, word in enumerate(words)
                    ],
                }
            )
        channel: dict[str, Any] = {
            "alternatives": [{"transcript": " ".join(t for _, t in self.lines), "confidence": 0.98}]
        }
        if request.query.get("detect_language") == "true":
            channel |= {"detected_language": self.language, "language_confidence": 0.99}
        if request.query.get("utterances") != "true":
            return {"metadata": {"duration": duration, "channels": 1}, "results": {"channels": [channel]}}
        return {
            "metadata": {"request_id": "req-1", "duration": duration, "channels": 1},
            "results": {"channels": [channel], "utterances": utterances},
        }


def _probe(body: bytes) -> float | None:
    """The audio's length in seconds by ffprobe, or ``None`` when it is not media."""
    if not body:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "audio"
        path.write_bytes(body)
        done = subprocess.run(
            ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    try:
        return float(done.stdout.strip()) if done.returncode == 0 else None
    except ValueError:
        return None
