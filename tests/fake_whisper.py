"""A small local fake of the hosted Whisper APIs, over real HTTP on 127.0.0.1.

It answers the three wire protocols the rungs speak:

- ``POST /v1/audio/transcriptions`` (OpenAI-compatible, multipart) and
  ``POST /openai/v1/audio/transcriptions`` (Groq's path, what the groq SDK calls), with
  ``verbose_json``;
- ``POST /client/v4/accounts/<account>/ai/run/@cf/openai/whisper-large-v3-turbo`` (Workers AI
  REST: JSON with base64 audio, answer wrapped in ``{"result": ..., "success": true}``).

Like the real services it refuses a file over ``max_bytes`` with 413, a wrong key with 401, and
audio it cannot decode with 400; ``fail_next`` scripts 429 (with ``Retry-After``) or 5xx answers,
``fail_audio`` a status for every request carrying given bytes.
``latency`` holds every answer until that many seconds after the request arrived (for the
benchmark); ``together=n`` holds the first requests until ``n`` are in flight at once (for tests
of concurrency, which must not depend on how fast the machine is: ``tests/together.py``).

What it "hears" (``engine``):

- ``tones``: the audio is decoded with ffmpeg and read as a sequence of sine tones, one per word:
  a tone of ``tone_hz(k)`` is the word ``w<k>`` (see ``tone_audio``), so a test knows exactly what
  every piece must say and when. Segments group up to three words, split at gaps, as Whisper's do.
- ``length``: no decoding; one segment per ``segment_sec`` of the piece's length, from its size at
  32 kbit/s (for the benchmark's hour of audio, where only timing matters).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import math
import struct
import subprocess
import threading
import time
import wave
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from .standin_http import HandledStandin, reply
from .together import TogetherThreads

RATE = 16_000
FRAME = 0.05  # seconds per analysis frame
BASE_HZ = 250.0
STEP_HZ = 40.0


def tone_hz(k: int) -> float:
    return BASE_HZ + STEP_HZ * k


@dataclass
class Word:
    k: int
    start: float
    end: float

    @property
    def text(self) -> str:
        return f"w{self.k}"


def tone_audio(
    path: Path, words: list[tuple[int, float, float]], *, total: float | None = None
) -> list[Word]:
    """Write a 16 kHz mono WAV where word ``k`` is a sine of ``tone_hz(k)`` from ``start`` to ``end``
    (silence elsewhere); return the words with their times."""
    length = total if total is not None else max(end for _, _, end in words) + 0.5
    samples = [0] * int(length * RATE)
    for k, start, end in words:
        frequency = tone_hz(k)
        for i in range(int(start * RATE), min(len(samples), int(end * RATE))):
            samples[i] = int(12000 * math.sin(2 * math.pi * frequency * i / RATE))
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(struct.pack(f"<{len(samples)}h", *samples))
    return [Word(k, start, end) for k, start, end in words]


def hear_tones(data: bytes) -> tuple[list[dict[str, Any]], float]:
    """(verbose_json segments, duration) for the tone words in ``data`` (any format ffmpeg reads)."""
    done = subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-loglevel",
            "error",
            "-i",
            "pipe:0",
            "-f",
            "s16le",
            "-ac",
            "1",
            "-ar",
            str(RATE),
            "pipe:1",
        ],
        input=data,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise ValueError("undecodable")
    pcm = done.stdout
    count = len(pcm) // 2
    samples = struct.unpack(f"<{count}h", pcm[: count * 2])
    step = int(FRAME * RATE)
    labels: list[int | None] = []
    for at in range(0, count - step + 1, step):
        frame = samples[at : at + step]
        energy = math.sqrt(sum(x * x for x in frame) / step)
        if energy < 1500:
            labels.append(None)
            continue
        crossings = sum(1 for a, b in itertools.pairwise(frame) if (a < 0) != (b < 0))
        hz = crossings / (2 * FRAME)
        labels.append(round((hz - BASE_HZ) / STEP_HZ))
    words: list[Word] = []
    for index, label in enumerate(labels):
        if label is None:
            continue
        if words and words[-1].k == label and abs(words[-1].end - index * FRAME) < 1e-6:
            words[-1].end = (index + 1) * FRAME
        else:
            words.append(Word(label, index * FRAME, (index + 1) * FRAME))
    # A word must last two frames: one odd frame at a tone change is not a word.
    words = [w for w in words if w.end - w.start >= 2 * FRAME - 1e-6]
    segments: list[dict[str, Any]] = []
    group: list[Word] = []
    for word in words:
        if group and (len(group) == 3 or word.start - group[-1].end > 0.3):
            segments.append(_segment(group))
            group = []
        group.append(word)
    if group:
        segments.append(_segment(group))
    return segments, count / RATE


def _segment(words: list[Word]) -> dict[str, Any]:
    return {
        "id": 0,
        "start": round(words[0].start, 3),
        "end": round(words[-1].end, 3),
        "text": " " + " ".join(w.text for w in words) + ".",
    }


@dataclass
class Request:
    path: str
    size: int
    started: float
    ended: float = 0.0
    status: int = 0
    fields: dict[str, str] = field(default_factory=dict)
    auth: str | None = None


class FakeWhisper(HandledStandin):
    """The server; use as a context manager (``with FakeWhisper() as fake: fake.url``)."""

    def __init__(
        self,
        *,
        max_bytes: int = 25 * 1024 * 1024,
        latency: float = 0.0,
        engine: str = "tones",
        key: str | None = None,
        segment_sec: float = 5.0,
        language: str = "english",
        together: int = 0,
    ) -> None:
        self.max_bytes = max_bytes
        self.latency = latency
        self.engine = engine
        self.key = key
        self.segment_sec = segment_sec
        self.language = language
        self.together = TogetherThreads(together) if together else None
        self.requests: list[Request] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._failures: list[tuple[int, int | None]] = []
        self._refused: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- scripting ----------------------------------------------------------------------------

    def fail_next(self, status: int, *, count: int = 1, retry_after: int | None = None) -> None:
        """The next ``count`` transcription requests get ``status`` (429 with ``Retry-After``)."""
        with self._lock:
            self._failures.extend([(status, retry_after)] * count)

    def fail_audio(self, audio: bytes, status: int) -> None:
        """Every request carrying exactly ``audio`` gets ``status``, for good (one piece the
        service keeps failing on)."""
        with self._lock:
            self._refused[hashlib.sha256(audio).hexdigest()] = status

    @property
    def answered(self) -> list[Request]:
        return [r for r in self.requests if r.status == 200]

    # -- answering ----------------------------------------------------------------------------

    def _stats(self, http: BaseHTTPRequestHandler) -> None:
        """``GET /stats`` (what was asked, peak concurrency) and ``GET /reset``, for a fake run in
        another process (the benchmark)."""
        if http.path == "/reset":
            with self._lock:
                self.requests.clear()
                self.peak_in_flight = 0
        answered = self.answered
        data = json.dumps(
            {
                "peak_in_flight": self.peak_in_flight,
                "answered": len(answered),
                "sizes": [r.size for r in answered],
            }
        ).encode()
        reply(http, 200, data, {"Content-Type": "application/json"})

    _get = _stats

    def _handle(self, http: BaseHTTPRequestHandler) -> None:
        started = time.monotonic()
        length = int(http.headers.get("Content-Length") or 0)
        body = http.rfile.read(length)
        record = Request(path=http.path, size=0, started=started, auth=http.headers.get("Authorization"))
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            with self.together.inside() if self.together else contextlib.nullcontext():
                status, payload, headers = self._answer(http, body, record)
            wait = started + self.latency - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        finally:
            with self._lock:
                self.in_flight -= 1
        record.status = status
        record.ended = time.monotonic()
        data = json.dumps(payload).encode()
        reply(http, status, data, {"Content-Type": "application/json", **headers})

    def _answer(
        self, http: BaseHTTPRequestHandler, body: bytes, record: Request
    ) -> tuple[int, Any, dict[str, str]]:
        workers_ai = "/ai/run/" in http.path
        if not (workers_ai or http.path.endswith("/audio/transcriptions")):
            return 404, {"error": {"message": "no such route"}}, {}
        if self.key is not None and http.headers.get("Authorization") != f"Bearer {self.key}":
            return 401, {"error": {"message": "Invalid API Key"}}, {}
        if workers_ai:
            try:
                inputs = json.loads(body)
                audio = base64.b64decode(inputs["audio"])
            except (ValueError, KeyError, TypeError):
                return 400, {"success": False, "errors": [{"message": "bad input"}]}, {}
            record.fields = {k: str(v) for k, v in inputs.items() if k != "audio"}
        else:
            message = BytesParser(policy=HTTP).parsebytes(
                b"Content-Type: " + http.headers["Content-Type"].encode() + b"\r\n\r\n" + body
            )
            audio = b""
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if name == "file":
                    audio = part.get_payload(decode=True) or b""
                else:
                    record.fields[str(name)] = part.get_content().strip()
        record.size = len(audio)
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
            refused = self._refused.get(hashlib.sha256(audio).hexdigest())
        if failure is None and refused is not None:
            failure = (refused, None)
        if failure is not None:
            status, retry_after = failure
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
            return status, {"error": {"message": f"scripted {status}"}}, headers
        if len(audio) > self.max_bytes:
            return 413, {"error": {"message": "Request Entity Too Large"}}, {}
        try:
            segments, duration = self._hear(audio)
        except ValueError:
            return 400, {"error": {"message": "could not process file - is it a valid media file?"}}, {}
        text = " ".join(s["text"].strip() for s in segments)
        if workers_ai:
            result = {
                "text": text,
                "segments": segments,
                "transcription_info": {"language": "en", "duration": duration},
                "word_count": len(text.split()),
            }
            return 200, {"result": result, "success": True, "errors": [], "messages": []}, {}
        answer = {"task": "transcribe", "language": self.language, "duration": duration, "text": text}
        if record.fields.get("response_format") == "verbose_json":
            answer["segments"] = segments
        return 200, answer, {}

    def _hear(self, audio: bytes) -> tuple[list[dict[str, Any]], float]:
        if not audio:
            raise ValueError("empty")
        if self.engine == "tones":
            return hear_tones(audio)
        duration = len(audio) / 4000
        segments = []
        at = 0.0
        while at < duration:
            end = min(duration, at + self.segment_sec)
            segments.append(
                {"id": len(segments), "start": round(at, 3), "end": round(end, 3), "text": " speech."}
            )
            at = end
        return segments, duration


def main() -> None:
    """``python -m tests.fake_whisper [latency] [engine]``: serve until stdin closes; prints the URL."""
    import sys

    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    engine = sys.argv[2] if len(sys.argv) > 2 else "tones"
    with FakeWhisper(latency=latency, engine=engine, segment_sec=30.0) as fake:
        print(fake.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
