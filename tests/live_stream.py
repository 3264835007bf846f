"""A live HLS stream on loopback, written in real time by ffmpeg, for the live tests and bench.

``LiveHls(folder, wav)`` starts ``ffmpeg -re`` writing ``live.m3u8`` and one-second segments of
``wav`` into ``folder`` (the playlist grows as the audio plays, and gets ``#EXT-X-ENDLIST`` when
it ends), and a small HTTP server on 127.0.0.1 serving that folder. ``url`` is the playlist's
address; ``wait_started()`` returns once the playlist exists (a hang guard, not a deadline);
``started_at`` is the ``time.monotonic()`` at which ffmpeg began playing, so a word ``t`` seconds
into the audio was "spoken" at ``started_at + t``. ``readrate`` plays faster than real time
(ffmpeg's ``-readrate``): the playlist still grows segment by segment and gets its
``#EXT-X-ENDLIST`` only at the end, so it stays a live stream, in less wall time (a word is then
spoken at ``started_at + t / readrate``).

``tone_words`` is the audio the fake Whisper hears exactly (``fake_whisper.tone_audio``): sentences
of three tone words with pauses between, after ``lead`` seconds of silence (so a reader that joins
a few segments late still hears every word).
"""

from __future__ import annotations

import functools
import subprocess
import time
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Self

from .fake_whisper import Word, tone_audio
from .processes import command_lines
from .standin_http import QuietHandler, StandinServer

__all__ = ["HANG_GUARD_S", "LiveHls", "readers_of", "tone_words"]

HANG_GUARD_S = 60.0


def tone_words(path: Path, sentences: int, *, lead: float = 4.0) -> list[Word]:
    """``sentences`` of three 0.5 s words (0.15 s apart), 1.2 s of silence after each."""
    words, at = [], lead
    for sentence in range(sentences):
        for j in range(3):
            words.append((sentence * 3 + j, at, at + 0.5))
            at += 0.65
        at += 1.2 - 0.15
    return tone_audio(path, words, total=at + 0.5)


class _Quiet(QuietHandler, SimpleHTTPRequestHandler):
    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()


class LiveHls:
    def __init__(self, folder: Path, wav: Path, *, start: bool = True, readrate: float = 1.0) -> None:
        self.folder = folder
        self.wav = wav
        self.readrate = readrate
        self.writer: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        handler = functools.partial(_Quiet, directory=str(folder))
        self.server = StandinServer(handler)  # type: ignore[arg-type]  # a handler class with its folder
        self.server.daemon_threads = False  # closing waits for the requests being answered
        self._start = start

    @property
    def url(self) -> str:
        return f"{self.server.origin}/live.m3u8"

    def __enter__(self) -> Self:
        self.server.__enter__()
        if self._start:
            self.play()
        return self

    def play(self) -> None:
        self.started_at = time.monotonic()
        pace = ["-re"] if self.readrate == 1.0 else ["-readrate", str(self.readrate)]
        self.writer = subprocess.Popen(
            [
                "ffmpeg", "-nostdin", "-loglevel", "error", *pace, "-i", str(self.wav),
                "-c:a", "aac", "-b:a", "96k", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0",
                str(self.folder / "live.m3u8"),
            ],
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def wait_started(self) -> None:
        guard = time.monotonic() + HANG_GUARD_S
        while not (self.folder / "live.m3u8").exists() and time.monotonic() < guard:
            time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        if self.writer is not None:
            self.writer.terminate()
            self.writer.wait(HANG_GUARD_S)
        self.server.__exit__()


def readers_of(url: str) -> list[int]:
    """Pids of running processes whose command line names ``url``."""
    return sorted(command_lines(url))
