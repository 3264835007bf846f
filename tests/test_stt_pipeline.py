"""Long audio as a pipeline: pieces leave for the service while the decode pass is still running.

Nothing here is timed. The input reaches ffmpeg through a named pipe the test writes in two
parts, and the second part is written only once a piece has come out (or a request has reached
the stand-in): a two-phase design, which plans the pieces only after the whole file is decoded,
never gets that far, and the test fails (the waits have generous hang guards, not deadlines that
a slow machine could miss). The pieces are checked against ``plan_cuts`` on the finished decode,
so pipelining moves no cut, and a call cancelled half-way leaves no ffmpeg and no temporary files.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from vid2context.ctx import Ctx
from vid2context.pipeline import transcribe
from vid2context.providers.audio_local import (
    PCM_BYTES_PER_SEC,
    FfmpegPrep,
    _Marks,
    decode_pieces,
    plan_cuts,
)
from vid2context.providers.speech import AudioInput
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings

from .fake_whisper import FakeWhisper, Word
from .processes import command_lines
from .test_stt_ladder import expected, openai_env, sentences, words_of

__all__ = ["sentences"]  # the fixture, shared with test_stt_ladder

pytestmark = pytest.mark.anyio

HEADER = 44
"""The WAV header ``tone_audio`` writes."""
FIRST_PART_SEC = 20
"""What the pipe carries before the test waits: more than one 12 s piece and its settling."""
HANG_GUARD_S = 60.0


class Feed:
    """Writes ``data`` into a named pipe: the first part at once, the rest when ``ready()`` is
    true; ``waited`` says whether it was (rather than the hang guard running out)."""

    def __init__(self, folder: Path, data: bytes, ready: Callable[[], bool]) -> None:
        self.path = folder / "input.wav"
        os.mkfifo(self.path)
        self.data = data
        self.ready = ready
        self.waited: bool | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()

    def _write(self) -> None:
        split = HEADER + FIRST_PART_SEC * PCM_BYTES_PER_SEC
        try:
            with open(self.path, "wb") as out:
                out.write(self.data[:split])
                out.flush()
                guard = time.monotonic() + HANG_GUARD_S
                while not self.ready() and not self.stop.is_set() and time.monotonic() < guard:
                    time.sleep(0.01)
                self.waited = self.ready()
                if not self.stop.is_set():
                    out.write(self.data[split:])
        except BrokenPipeError:
            pass  # the reader was stopped (the cancellation test)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(HANG_GUARD_S)


class Through(FfmpegPrep):
    """``FfmpegPrep`` reading the named pipe instead of the caller's file (a regular file is all
    ``_source`` accepts, rightly); everything after the source is the real one."""

    def __init__(self, source: Path) -> None:
        super().__init__()
        self.source = str(source)

    async def _source(self, audio: AudioInput, folder: str, what: str) -> str:
        del audio, folder, what
        return self.source


@pytest.fixture
def fake() -> Iterator[FakeWhisper]:
    with FakeWhisper(key=None) as server:
        yield server


async def test_pieces_come_out_before_the_input_ends_and_match_the_finished_plan(
    tmp_path: Path, sentences: tuple[Path, list[Word]]
) -> None:
    path, _ = sentences
    handed: list[tuple[float, float, float]] = []
    feed = Feed(tmp_path, path.read_bytes(), ready=lambda: bool(handed))
    pcm = tmp_path / "audio.pcm"
    try:
        async with asyncio.timeout(HANG_GUARD_S):
            async for piece in decode_pieces(
                str(feed.path), str(pcm), Ctx(timeout=120), what="t", max_sec=12
            ):
                handed.append(piece)
    finally:
        feed.close()
    assert feed.waited is True  # the first piece came out while 22 s of input were still unwritten
    marks = _Marks(str(tmp_path / "silences.txt"))  # read afresh, after the decode pass
    duration = marks.look(str(pcm))
    silences = marks.silences(duration)
    assert len(handed) == 4
    assert handed == plan_cuts(duration, silences, 12)  # pipelining moved no cut


async def test_the_first_request_reaches_the_service_before_the_decode_pass_ends(
    tmp_path: Path, fake: FakeWhisper, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    feed = Feed(tmp_path, path.read_bytes(), ready=lambda: bool(fake.requests))
    runtime = build_runtime(load_settings(openai_env(fake)), http=httpx.AsyncClient())
    runtime.stt_plan.prep = Through(feed.path)
    runtime.stt_plan.chunk_sec = 12.0
    try:
        async with asyncio.timeout(HANG_GUARD_S):
            transcript = await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=120))
    finally:
        feed.close()
        await runtime.aclose()
    assert feed.waited is True
    assert words_of(transcript) == expected(words)  # every word once, at the right offsets
    assert len(fake.answered) == 4 and transcript.note == "transcribed in 4 pieces"


def ffmpeg_under(folder: Path) -> list[str]:
    """Command lines of running processes that name a file under ``folder``."""
    return [line for line in command_lines(str(folder)).values() if "ffmpeg" in line]


async def test_cancelling_mid_way_leaves_no_ffmpeg_and_no_temporary_files(
    tmp_path: Path, fake: FakeWhisper, sentences: tuple[Path, list[Word]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = sentences
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    feed = Feed(tmp_path, path.read_bytes(), ready=lambda: False)  # the rest never comes
    runtime = build_runtime(load_settings(openai_env(fake)), http=httpx.AsyncClient())
    runtime.stt_plan.prep = Through(feed.path)
    runtime.stt_plan.chunk_sec = 12.0
    call = asyncio.ensure_future(transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=120)))
    try:
        async with asyncio.timeout(HANG_GUARD_S):
            while not fake.answered:
                await asyncio.sleep(0.01)
        assert ffmpeg_under(temporary)  # the decode pass is still running, waiting for input
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    finally:
        feed.close()
        await runtime.aclose()
    assert ffmpeg_under(temporary) == []
    assert os.listdir(temporary) == []
