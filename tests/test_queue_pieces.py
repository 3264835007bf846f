"""A long upload's ``context`` job on the Worker's queue: one message per piece (``job_pieces``).

Real Queues, D1, KV and R2 from Miniflare; the Worker's entry in several isolates (fresh copies
of ``worker/entry.py``), each message of a batch handed to the next isolate at once, as a queue
with several concurrent consumers would; the Whisper stand-in as the only rung, hearing tone
words (``fake_whisper.tone_audio``) so every word and its time is known. Pieces are short
(``VID2CONTEXT_STT_CHUNK_SEC=12``) so a 50 s talk is several messages.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from vid2context.chunking_portable import cutting
from vid2context.ctx import Ctx
from vid2context.pipeline import get_context
from vid2context.providers.speech import AudioInput
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings
from vid2context.uploads import save_upload

from . import test_worker_long_audio as _long_audio
from .fake_whisper import FakeWhisper, Word
from .miniflare_harness import MiniflareHarness, apply_migrations
from .queue_bridge import Batch, Bridge
from .test_queue_jobs import WAIT_S, QueueEnv, _json, _until_final
from .test_worker_entry import Isolate, workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

talk, fake = _long_audio.talk, _long_audio.fake
"""The fixtures: the 50 s talk (WAV and MP3, its words), the Whisper stand-in."""

PIECE_SEC = 12


SETTINGS = {
    "VID2CONTEXT_RATE_LIMIT": "0",
    "VID2CONTEXT_PUBLIC": "0",
    "VID2CONTEXT_STT_CHUNK_SEC": str(PIECE_SEC),
    "VID2CONTEXT_JOB_RETRY_S": "0",  # retried at once: the queue's own delay is not under test
}


@pytest.fixture
async def env(miniflare: MiniflareHarness, fake: FakeWhisper) -> AsyncIterator[QueueEnv]:
    miniflare.reset()
    # A connection per binding call: a kept-alive one that Miniflare closes while idle can fail a
    # call under load, and the queue's retry of it would blur what the tests count.
    bindings = miniflare.new_env(queue=True, keepalive=False)
    await apply_migrations(bindings.DB)
    workers.pending.clear()
    yield QueueEnv(bindings, VID2CONTEXT_STT_URL=f"{fake.url}/v1", **SETTINGS)
    miniflare.set_consumer(None)
    await bindings.aclose()


class Spread(Bridge):
    """Consumers in several isolates: every message of a batch goes to the next isolate, as a
    batch of its own, all at the same time. ``drop`` names units whose first delivery is run but
    never answered (the isolate died after the work, before the ack: the queue delivers it again)."""

    def __init__(self, isolates: list[Isolate], drop: tuple[str, ...] = ()) -> None:
        self.entrypoints = [isolate.module.Default(ctx=object(), env=isolate.env) for isolate in isolates]
        super().__init__(self.entrypoints[0])
        self.turn = 0
        self.ran_on: dict[str, set[int]] = {}
        self.drop = set(drop)
        self.received = 0

    async def quiet(self) -> None:
        """Until every batch received has been answered and every dropped unit came again, so
        nothing of this test is left in the queue for the next one's consumer."""
        async with asyncio.timeout(WAIT_S):
            while self.written < self.received or any(
                not any(json.loads(m.body).get("unit") == unit and m.attempts > 1 and m.decision
                        for b in self.batches for m in b.messages)
                for unit in self.drop if unit in self.ran_on
            ):  # fmt: skip
                await asyncio.sleep(0.05)

    async def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path != "/queue":
            return await super()._answer(path, body)
        self.received += 1
        runs, mine = [], []
        for message in body["messages"]:
            index = self.turn % len(self.entrypoints)
            self.turn += 1
            batch = Batch(body["queue"], [message])
            self.batches.append(batch)
            mine.append(batch)
            unit = json.loads(batch.messages[0].body).get("unit", "")
            self.ran_on.setdefault(unit, set()).add(index)
            entry = self.entrypoints[index]
            runs.append(entry.queue(batch, entry.env, entry.ctx))
        await asyncio.gather(*runs)
        decisions = []
        for batch in mine:
            message = batch.messages[0]
            unit = json.loads(message.body).get("unit", "")
            if unit in self.drop and message.attempts == 1:
                continue  # no answer: Miniflare retries it
            decisions.append(message.decision)
        return 200, {"decisions": [d for d in decisions if d is not None]}


async def _upload(isolate: Isolate, data: bytes, filename: str, mime: str) -> str:
    request = httpx.Request("POST", "http://x/api/v1/uploads", files={"file": (filename, data, mime)})
    body = request.read()
    response = await isolate.fetch(
        "/api/v1/uploads", method="POST", headers={"content-type": request.headers["content-type"]}, body=body
    )
    assert response.status < 300, response.text()
    return json.loads(response.body)["input"]


async def _in_memory(fake: FakeWhisper, data: bytes, filename: str, mime: str) -> dict[str, Any]:
    """The same upload read in one call by the memory runtime (every piece from one process)."""
    runtime = build_runtime(load_settings({"VID2CONTEXT_STT_URL": f"{fake.url}/v1", **SETTINGS}))
    try:
        info = await save_upload(runtime, data, filename, mime)
        context = await get_context(runtime, info.input, mode="stt")
    finally:
        await runtime.aclose()
    assert context.transcript is not None
    return {"segments": [(s.start_sec, s.end_sec, s.text) for s in context.transcript.segments],
            "note": context.transcript.note}  # fmt: skip


def _pieces(data: bytes, filename: str, mime: str) -> list[bytes]:
    """The pieces as the plan cuts them (the Worker's caps: 24 MiB, ``PIECE_SEC``)."""
    audio = AudioInput.from_bytes(data, filename=filename, mime=mime)
    cut = cutting(audio, data, max_bytes=24 * 1024 * 1024, max_sec=PIECE_SEC)
    assert cut is not None
    return [cut.chunk(audio, i).audio.data or b"" for i in range(len(cut.cuts))]


def _media(talk: tuple[Path, Path, list[Word]], container: str) -> tuple[bytes, str, str]:
    wav, mp3, _ = talk
    if container == "wav":
        return wav.read_bytes(), "lecture.wav", "audio/wav"
    return mp3.read_bytes(), "lecture.mp3", "audio/mpeg"


async def _events(isolate: Isolate, job_id: str) -> list[tuple[str, Any]]:
    stream = (await isolate.fetch(f"/api/v1/jobs/{job_id}/events", headers={"last-event-id": "0"})).text()
    found, name = [], None
    for line in stream.splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and name:
            found.append((name, json.loads(line[6:])))
    return found


@pytest.mark.parametrize("container", ["wav", "mp3"])
async def test_a_long_upload_is_transcribed_one_message_per_piece_on_several_isolates(
    miniflare: MiniflareHarness, env: QueueEnv, fake: FakeWhisper, talk: tuple[Path, Path, list[Word]],
    container: str,
) -> None:  # fmt: skip
    data, filename, mime = _media(talk, container)
    expected = await _in_memory(fake, data, filename, mime)
    in_one_call = len(fake.answered)
    isolates = [Isolate(env) for _ in range(3)]
    spread = await Spread(isolates).start()
    miniflare.set_consumer(spread.url)
    upload = await _upload(isolates[0], data, filename, mime)
    job = await _json(
        isolates[0], "/api/v1/jobs", {"kind": "context", "input": upload, "options": {"mode": "stt"}}
    )
    done = await _until_final(isolates[1], job["id"])
    assert done["status"] == "succeeded", done
    pieces = len(_pieces(data, filename, mime))
    assert pieces >= 4 and in_one_call == pieces
    units = sorted(u for u in spread.ran_on if u.startswith("u:"))
    assert units == [f"u:{i:04d}" for i in range(pieces)]  # one message per piece
    assert len(set().union(*(spread.ran_on[u] for u in units))) >= 2  # consumed by different isolates
    assert len(fake.answered) == 2 * pieces  # each piece once here, as in the one call
    transcript = done["result"]["transcript"]
    got = [(s["startSec"], s["endSec"], s["text"]) for s in transcript["segments"]]
    assert got == expected["segments"]  # word for word, at the same absolute times
    assert transcript["note"] == expected["note"] == f"transcribed in {pieces} pieces"
    heard = [w.strip(".,") for _, _, text in got for w in text.split()]
    assert heard == [w.text for w in talk[2]]
    assert done["result"]["metadata"]["title"] == "lecture"
    ran = [a for a in done["result"]["attempts"] if a["stage"] == "stt" and a["outcome"] != "skipped"]
    assert [a["detail"] for a in ran] == [f"piece {i + 1} of {pieces}" for i in range(pieces)]
    events = await _events(isolates[2], job["id"])
    progress = [e for name, e in events if name == "progress"]
    assert progress[0] == {"done": 0, "total": pieces, "message": f"{pieces} pieces to transcribe"}
    assert progress[-1]["done"] == pieces and progress[-1]["message"].endswith("pieces transcribed")
    items = [e for name, e in events if name == "item"]
    assert items == [{"id": upload, "outcome": "ok", "title": "lecture"}]  # the video, not its pieces
    assert [name for name, _ in events][-1] == "done"
    for isolate in isolates:
        await isolate.aclose()
    await spread.quiet()
    await spread.kill()


def _messages_of(spread: Spread, job_id: str) -> list[Any]:
    """This job's messages: a consumer can also be handed a message a previous test left queued."""
    return [m for b in spread.batches for m in b.messages if json.loads(m.body).get("job") == job_id]


async def test_a_redelivered_piece_is_not_transcribed_twice(
    miniflare: MiniflareHarness, env: QueueEnv, fake: FakeWhisper, talk: tuple[Path, Path, list[Word]]
) -> None:
    data, filename, mime = _media(talk, "wav")
    pieces = len(_pieces(data, filename, mime))
    isolates = [Isolate(env) for _ in range(2)]
    # The second and the last piece are done, then their isolate dies before the ack.
    spread = await Spread(isolates, drop=("u:0001", f"u:{pieces - 1:04d}", "finish")).start()
    miniflare.set_consumer(spread.url)
    upload = await _upload(isolates[0], data, filename, mime)
    job = await _json(isolates[0], "/api/v1/jobs", {"kind": "context", "input": upload})
    done = await _until_final(isolates[1], job["id"])
    assert done["status"] == "succeeded", done
    again = [m for m in _messages_of(spread, job["id"]) if m.attempts > 1]
    assert {json.loads(m.body)["unit"] for m in again} >= {"u:0001", f"u:{pieces - 1:04d}"}
    assert len(fake.answered) == pieces  # the redeliveries were skipped, not transcribed again
    heard = [w.strip(".,") for s in done["result"]["transcript"]["segments"] for w in s["text"].split()]
    assert heard == [w.text for w in talk[2]]  # every word once
    await spread.quiet()  # the redeliveries, the finish's too, have been consumed
    names = [name for name, _ in await _events(isolates[0], job["id"])]
    assert names.count("done") == 1 and names.count("item") == 1  # finished once
    for isolate in isolates:
        await isolate.aclose()
    await spread.quiet()
    await spread.kill()


async def test_a_piece_that_fails_is_retried_by_the_queue_and_the_job_succeeds(
    miniflare: MiniflareHarness, env: QueueEnv, fake: FakeWhisper, talk: tuple[Path, Path, list[Word]]
) -> None:
    data, filename, mime = _media(talk, "mp3")
    pieces = len(_pieces(data, filename, mime))
    isolates = [Isolate(env) for _ in range(2)]
    spread = await Spread(isolates).start()
    miniflare.set_consumer(spread.url)
    upload = await _upload(isolates[0], data, filename, mime)
    fake.fail_next(500)  # the first piece to reach the service
    job = await _json(isolates[0], "/api/v1/jobs", {"kind": "context", "input": upload})
    done = await _until_final(isolates[1], job["id"])
    assert done["status"] == "succeeded", done
    assert [r.status for r in fake.requests].count(500) == 1 and len(fake.answered) == pieces
    retried = [json.loads(m.body)["unit"] for m in _messages_of(spread, job["id"]) if m.attempts == 2]
    assert retried == [u for u in retried if u.startswith("u:")] and len(retried) == 1, retried
    heard = [w.strip(".,") for s in done["result"]["transcript"]["segments"] for w in s["text"].split()]
    assert heard == [w.text for w in talk[2]]
    for isolate in isolates:
        await isolate.aclose()
    await spread.quiet()
    await spread.kill()


async def test_a_piece_that_fails_for_good_fails_the_job_with_its_real_error(
    miniflare: MiniflareHarness, env: QueueEnv, fake: FakeWhisper, talk: tuple[Path, Path, list[Word]]
) -> None:
    data, filename, mime = _media(talk, "wav")
    cut = _pieces(data, filename, mime)
    fake.fail_audio(cut[2], 503)  # the service keeps failing on the third piece
    isolates = [Isolate(env) for _ in range(2)]
    spread = await Spread(isolates).start()
    miniflare.set_consumer(spread.url)
    upload = await _upload(isolates[0], data, filename, mime)
    job = await _json(isolates[0], "/api/v1/jobs", {"kind": "context", "input": upload})
    done = await _until_final(isolates[1], job["id"])
    assert done["status"] == "failed" and done.get("result") is None, done
    assert done["error"]["code"] == "upstream", done["error"]  # the service's failure, not "internal"
    assert "503" in done["error"]["message"] or "scripted" in done["error"]["message"], done["error"]
    tries = [(b.queue, m.attempts) for b in spread.batches for m in b.messages
             if json.loads(m.body) == {"job": job["id"], "unit": "u:0002"}]  # fmt: skip
    assert tries == [("vid2context-jobs", n) for n in (1, 2, 3, 4)] + [("vid2context-jobs-dlq", 1)]
    names = [name for name, _ in await _events(isolates[0], job["id"])]
    assert "done" not in names and names.count("error") == 1 and "item" not in names
    for isolate in isolates:
        await isolate.aclose()
    await spread.quiet()
    await spread.kill()


async def test_an_upload_that_fits_one_request_is_one_message(
    miniflare: MiniflareHarness, env: QueueEnv, fake: FakeWhisper, talk: tuple[Path, Path, list[Word]]
) -> None:
    env.VID2CONTEXT_STT_CHUNK_SEC = "600"
    isolates = [Isolate(env)]
    spread = await Spread(isolates).start()
    miniflare.set_consumer(spread.url)
    data, filename, mime = _media(talk, "mp3")
    upload = await _upload(isolates[0], data, filename, mime)
    job = await _json(isolates[0], "/api/v1/jobs", {"kind": "context", "input": upload})
    done = await _until_final(isolates[0], job["id"])
    assert done["status"] == "succeeded", done
    assert sorted(spread.ran_on) == ["plan"] and len(fake.answered) == 1  # run whole in the plan's message
    assert done["result"]["transcript"]["note"] is None
    await isolates[0].aclose()
    await spread.quiet()
    await spread.kill()


@pytest.mark.parametrize("container", ["wav", "mp3"])
def test_the_cut_is_the_same_every_time_and_its_places_name_the_piece_bytes(
    talk: tuple[Path, Path, list[Word]], container: str
) -> None:
    data, filename, mime = _media(talk, container)
    audio = AudioInput.from_bytes(data, filename=filename, mime=mime)
    first = cutting(audio, data, max_bytes=60_000, max_sec=PIECE_SEC)
    again = cutting(AudioInput.from_bytes(bytes(data), filename="x", mime=mime), bytes(data), max_bytes=60_000,
                    max_sec=PIECE_SEC)  # fmt: skip
    assert first is not None and again is not None and len(first.cuts) >= 4
    places = [first.place(i) for i in range(len(first.cuts))]
    assert places == [again.place(i) for i in range(len(again.cuts))]
    assert places[0].start_sec == 0 and places[-1].end_sec == pytest.approx(first.duration_sec)
    for place in places:
        piece = first.chunk(audio, place.index).audio.data or b""
        frames = data[place.byte_start : place.byte_end]
        assert piece.endswith(frames) if container == "wav" else piece == frames
        assert place.index == 0 or 0 < place.overlap_sec <= PIECE_SEC / 4


async def test_a_piece_not_where_the_plan_put_it_is_refused(talk: tuple[Path, Path, list[Word]]) -> None:
    from vid2context.errors import ErrorCode, VidError
    from vid2context.job_pieces import CONTEXT_SPLIT, piece_limits

    data, filename, mime = _media(talk, "mp3")
    runtime = build_runtime(load_settings({"VID2CONTEXT_STT_URL": "http://127.0.0.1:9/v1", **SETTINGS}))
    try:
        info = await save_upload(runtime, data, filename, mime)
        assert piece_limits(runtime) == (24 * 1024 * 1024, PIECE_SEC)
        planned = await CONTEXT_SPLIT.plan(runtime, info.input, {}, Ctx(), _no_items)
        assert not planned.whole and len(planned.units) == len(_pieces(data, filename, mime))
        assert planned.extra["metadata"]["title"] == "lecture"
        moved = {**planned.units[1], "place": {**planned.units[1]["place"], "first": 0}}
        with pytest.raises(VidError) as refused:
            await CONTEXT_SPLIT.run(runtime, moved, Ctx())
        assert refused.value.code is ErrorCode.INTERNAL and "Piece 2" in refused.value.message
        for other in ({"mode": "captions"}, {"mode": "video"}):  # not cut: run whole, as before
            assert (await CONTEXT_SPLIT.plan(runtime, info.input, other, Ctx(), _no_items)).whole
    finally:
        await runtime.aclose()


async def test_pieces_that_heard_no_speech_finish_as_no_transcript() -> None:
    """The queued finish raises the one no-speech error the one-call path does (``chunking``)."""
    from vid2context.errors import ErrorCode, VidError
    from vid2context.job_pieces import CONTEXT_SPLIT

    place = {"startSec": 0, "overlapSec": 0}
    quiet = [
        {
            "payload": {"place": {**place, "startSec": 12 * i}},
            "result": {"segments": [], "producer": "stt/x/y"},
        }
        for i in range(3)
    ]
    with pytest.raises(VidError) as heard:
        await CONTEXT_SPLIT.finish(None, None, {}, {"filename": "quiet.wav"}, quiet)  # type: ignore[arg-type]
    assert heard.value.code is ErrorCode.NO_TRANSCRIPT
    assert heard.value.message == "stt/x/y heard no speech in quiet.wav."
    assert heard.value.hint is not None and "do not retry" in heard.value.hint


async def _no_items(event: Any) -> None:
    raise AssertionError(f"no item event while planning pieces: {event}")
