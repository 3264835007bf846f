"""Long audio through a hosted rung: pieces under its cap, sent concurrently, merged back.

``transcribe_audio(rung, audio, ctx, lang=, plan=)`` is what the pipeline calls for each
speech-to-text rung:

1. ``plan.prep`` splits the audio into ``AudioChunk`` pieces under the rung's upload cap and
   ``plan.chunk_sec``, handing each one on as soon as it is planned (locally, while the decode
   pass is still running), so the first requests go out before the audio has been read to its
   end. Locally that is ffmpeg (``providers/audio_local.py``: mono 16 kHz speech
   audio, cuts inside silences); on the Worker, where there is no ffmpeg, ``chunking_portable``
   cuts WAV, MP3 and Ogg without decoding them and sends other audio whole when it fits
   (``PassthroughPrep``), refusing it when it does not.
2. The pieces are transcribed by at most ``plan.concurrency`` requests at a time, each encoded
   (``plan.prep.load``) just before a request slot frees up; no more than ``concurrency +
   lookahead`` pieces are taken from the plan and not yet answered, so memory stays flat. A piece that
   fails with a retryable error (429, 5xx, no answer) is retried with exponential backoff, or after
   the ``Retry-After`` the service asked for; the first piece that fails for good fails the rung
   and cancels the others. ``ctx.progress("stt", done / total, ...)`` is reported per piece.
3. ``merge`` shifts each piece's segments by the piece's start, so times are absolute.

Seams: a cut inside a silence has no overlap, and every moment of audio belongs to exactly one
piece, so no word can come back twice (no dedupe needed, by construction). Where no silence is
near the target, the cut is hard and the next piece starts ``overlap_sec`` early so the word cut in
two is heard whole; ``merge`` then finds the longest run of words both pieces heard in the
overlap, keeps the earlier piece up to the end of that run and the later piece after it. When the
two pieces heard nothing in common there, the overlap is split at its middle by segment midpoints.

A rung with ``max_bytes = None`` (the local model) takes the whole audio and none of this applies.

Speaker labels: a diarizing rung (``speech.diarizes``) numbers the voices of each request on its
own, so "Speaker 1" of one piece need not be "Speaker 1" of the next. Such a rung is sent pieces
of its own ``max_sec`` and ``max_bytes`` (hours, so one request holds most audio whole), not the
plan's; when the audio still had to be cut, ``merge`` drops the labels and its note says why,
rather than keep numbers that would name different people as one.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import msgspec

from .ctx import Ctx
from .errors import ErrorCode, VidError, per_surface
from .models import Segment, Transcript
from .providers.speech import AudioInput, RungError, SpeechToText, diarizes, one_request_sec

__all__ = [
    "AudioChunk",
    "AudioPrep",
    "PassthroughPrep",
    "Placed",
    "RetryPlan",
    "SttPlan",
    "all_or_first_error",
    "merge",
    "require_words",
    "retrying",
    "too_large",
    "transcribe_audio",
]

T = TypeVar("T")

DEFAULT_CHUNK_SEC = 600.0
"""Ten minutes a piece: small enough to spread over a few concurrent requests, large enough that
an hour is six requests, well inside free-tier request limits."""


class AudioChunk(msgspec.Struct, frozen=True, kw_only=True):
    """One piece of a longer audio: where it sits, and the audio itself (or where to get it)."""

    index: int
    start_sec: float
    """Where the piece starts in the whole audio; added to every segment time it returns."""
    end_sec: float | None
    overlap_sec: float = 0.0
    """How much of the previous piece this one repeats at its start (0 after a silence cut)."""
    audio: AudioInput


class AudioPrep(Protocol):
    """Turns an ``AudioInput`` into pieces a hosted rung accepts."""

    def chunks(
        self, audio: AudioInput, ctx: Ctx, *, max_bytes: int, max_sec: float
    ) -> AbstractAsyncContextManager[AsyncIterator[AudioChunk]]:
        """The pieces in order, each at most ``max_bytes`` and about ``max_sec`` long, yielded as
        they are planned and valid inside the ``async with``; leaving it stops whatever is still
        making them, and temporary files are removed.

        Raises ``bad-request`` for audio that cannot be decoded (empty, not media),
        ``no-transcript`` for media without an audio track or with zero length, ``too-large``
        when the audio cannot be cut to fit (the Worker).
        """
        ...

    async def load(self, chunk: AudioChunk, ctx: Ctx) -> AudioInput:
        """The piece's audio as bytes, made (encoded, read) only when it is about to be sent."""
        ...


class PassthroughPrep:
    """The portable ``AudioPrep``: audio in memory that fits is one piece; nothing can be cut."""

    @asynccontextmanager
    async def chunks(
        self, audio: AudioInput, ctx: Ctx, *, max_bytes: int, max_sec: float
    ) -> AsyncIterator[AsyncIterator[AudioChunk]]:
        del ctx, max_sec
        if audio.data is None:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                f"{audio.describe()} is a file, and this runtime cannot read files.",
                hint=per_surface(
                    rest="Upload the file (POST /api/v1/uploads) and read the upload:<sha256> it returns, "
                    "or tell the user the local runtime reads files (`vid2context get FILE`).",
                    mcp="Tell the user, and do not retry: this server cannot read files; the local "
                    "runtime can (`vid2context get FILE`, or `vid2context mcp`).",
                ),
            )
        if not audio.data:
            raise VidError(
                ErrorCode.BAD_REQUEST, f"{audio.describe()} is empty (0 bytes).", hint="Send audio or video."
            )
        if len(audio.data) > max_bytes:
            raise too_large(audio, max_bytes)
        yield _one(AudioChunk(index=0, start_sec=0.0, end_sec=audio.duration_sec, audio=audio))

    async def load(self, chunk: AudioChunk, ctx: Ctx) -> AudioInput:
        del ctx
        return chunk.audio


async def _one(chunk: AudioChunk) -> AsyncIterator[AudioChunk]:
    yield chunk


def too_large(audio: AudioInput, max_bytes: int, reason: str | None = None) -> VidError:
    """Audio over a request's cap that this runtime cannot cut: ``reason`` says why (by default,
    it cannot split audio at all; ``chunking_portable`` names the container it cannot cut)."""
    size, cap = _sizes(audio.size or 0, max_bytes)
    if reason is None:
        reason = "this runtime cannot split audio"
        hint = (
            "Compress it to mono speech audio first (about 30 MB an hour at 64 kbit/s), or tell the user "
            "the local runtime splits long audio with ffmpeg (`vid2context get FILE`)."
        )
    else:
        hint = (
            "Convert it to MP3, Ogg Opus or WAV, which this runtime cuts into pieces (mono speech MP3 is about 14 MB "
            "an hour at 32 kbit/s), or tell the user the local runtime splits long audio of any kind with "
            "ffmpeg (`vid2context get FILE`)."
        )
    return VidError(
        ErrorCode.TOO_LARGE,
        f"{audio.describe()} is {size}, over the {cap} a speech-to-text request may carry, and {reason}.",
        hint=hint,
    )


def _sizes(size: int, cap: int) -> tuple[str, str]:
    """``size`` and ``cap`` as text that shows them differ: in MB with as many decimals as that
    takes (up to three), in bytes when a few bytes over would still read as "1.000 MB, over the
    1.000 MB"."""
    for decimals in (1, 2, 3):
        shown = f"{size / 1_048_576:.{decimals}f}", f"{cap / 1_048_576:.{decimals}f}"
        if shown[0] != shown[1]:
            return f"{shown[0]} MB", f"{shown[1]} MB"
    return f"{size:,} bytes", f"{cap:,} bytes"


@dataclass
class SttPlan:
    """How hosted rungs are fed: piece size, concurrency, retries. Built from settings."""

    concurrency: int = 4
    """Pieces in flight at once, per rung (``VID2CONTEXT_STT_CONCURRENCY``)."""
    chunk_bytes: int = 24 * 1024 * 1024
    """Largest piece (``VID2CONTEXT_STT_CHUNK_MB``); a rung's own cap lowers it further."""
    chunk_sec: float = DEFAULT_CHUNK_SEC
    prep_concurrency: int = 2
    """Pieces being made (encoded) at once: CPU work, so about the number of cores."""
    lookahead: int = 2
    """Pieces made ahead of a free request slot."""
    retries: int = 4
    """Further tries of one piece after a retryable failure."""
    backoff_s: float = 1.0
    """First wait without a ``Retry-After``; doubled each time, with jitter."""
    backoff_cap_s: float = 30.0
    max_wait_s: float = 120.0
    """A ``Retry-After`` longer than this fails the rung (the next rung is tried) instead of waiting."""
    prep: AudioPrep = field(default_factory=lambda: _portable_prep())
    """``chunking_portable.PortablePrep`` (WAV, MP3 and Ogg cut in memory) unless the runtime has ffmpeg."""
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """Replaced in tests, which then see every wait without waiting."""


def _portable_prep() -> AudioPrep:
    from .chunking_portable import PortablePrep  # it builds on this module

    return PortablePrep()


class RetryPlan(Protocol):
    """What ``retrying`` reads of a plan: ``SttPlan`` here, ``EmbedPlan`` for embeddings."""

    retries: int
    backoff_s: float
    backoff_cap_s: float
    max_wait_s: float
    sleep: Callable[[float], Awaitable[None]]


def _retryable(error: VidError) -> bool:
    if isinstance(error, RungError):
        return error.retryable
    return error.code is ErrorCode.RATE_LIMITED


async def retrying(call: Callable[[], Awaitable[T]], ctx: Ctx, plan: RetryPlan) -> T:
    """``call()``, tried again after retryable failures, as the plan says."""
    for attempt in range(plan.retries + 1):
        try:
            return await call()
        except VidError as error:
            if attempt == plan.retries or not _retryable(error):
                raise
            if error.retry_after is not None:
                wait = float(error.retry_after)
            else:
                wait = min(plan.backoff_cap_s, plan.backoff_s * 2**attempt) * random.uniform(0.5, 1.0)
            remaining = ctx.remaining
            if wait > plan.max_wait_s or (remaining is not None and wait >= remaining):
                raise
            await plan.sleep(wait)
            ctx.check()
    raise AssertionError("unreachable")  # pragma: no cover


async def transcribe_audio(
    rung: SpeechToText, audio: AudioInput, ctx: Ctx, *, lang: str | None, plan: SttPlan
) -> Transcript:
    """``audio`` through ``rung``, split, sent concurrently and merged when the rung has a cap."""
    if rung.max_bytes is None:
        ctx.progress("stt", None, f"{rung.id}: transcribing")
        transcript = await rung.transcribe(audio, ctx, lang=lang)
        return require_words(transcript, rung.id, audio.describe())
    labels = diarizes(rung)
    # A diarizing rung gets its own, larger pieces: its speaker numbers hold within one request only.
    cap = rung.max_bytes if labels else min(rung.max_bytes, plan.chunk_bytes)
    max_sec = (one_request_sec(rung) or plan.chunk_sec) if labels else plan.chunk_sec
    chunks: list[AudioChunk] = []
    tasks: list[asyncio.Task[Transcript]] = []
    total: int | None = None
    done = 0
    requests = asyncio.Semaphore(max(1, plan.concurrency))
    making = asyncio.Semaphore(max(1, plan.prep_concurrency))
    # Pieces taken from the plan but not yet answered: the next ones are encoded while requests
    # are out, and memory holds at most this many pieces whatever the length of the audio.
    window = asyncio.Semaphore(max(1, plan.concurrency) + max(0, plan.lookahead))

    async def one(chunk: AudioChunk) -> Transcript:
        nonlocal done
        try:
            async with making:
                ctx.check()
                piece = await plan.prep.load(chunk, ctx)
            async with requests:
                ctx.check()
                result = await retrying(lambda: rung.transcribe(piece, ctx, lang=lang), ctx, plan)
        finally:
            window.release()
        done += 1
        if total is None:
            ctx.progress("stt", None, f"{rung.id}: piece {done} transcribed")
        else:
            ctx.progress("stt", done / total, f"{rung.id}: piece {done} of {total} transcribed")
        return result

    async with plan.prep.chunks(audio, ctx, max_bytes=cap, max_sec=max_sec) as planned:
        try:
            async with asyncio.TaskGroup() as group:
                async for chunk in planned:
                    await window.acquire()
                    chunks.append(chunk)
                    tasks.append(group.create_task(one(chunk)))
                total = len(chunks)
                ctx.progress(
                    "stt", done / total, f"{rung.id}: {total} piece{'s' if total != 1 else ''} planned"
                )
        except BaseExceptionGroup as failed:
            raise _first_error(failed) from None
    results = [task.result() for task in tasks]
    return require_words(merge(chunks, results, producer=rung.id), rung.id, audio.describe())


async def all_or_first_error(calls: list[Awaitable[T]]) -> list[T]:
    """Every result in order; on the first failure the others are cancelled and it is raised."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(call) for call in calls]  # type: ignore[arg-type]
    except BaseExceptionGroup as failed:
        raise _first_error(failed) from None
    return [task.result() for task in tasks]


def _first_error(failed: BaseExceptionGroup) -> BaseException:
    """What a failed task group raises: its first ``VidError``, else its first exception."""
    errors = [e for e in failed.exceptions if isinstance(e, VidError)]
    return errors[0] if errors else failed.exceptions[0]


def require_words(transcript: Transcript, heard_by: str, heard: str) -> Transcript:
    """``transcript`` when it holds words, else ``no-transcript``: the audio has no speech, which
    no retry and no other rung can change. Raised here and by the queued pieces' finish
    (``job_pieces``), whichever transcribed the audio."""
    if not transcript.segments:
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"{heard_by} heard no speech in {heard}.",
            hint="Tell the user the audio has no speech to transcribe (it may be silent or music only); do "
            "not retry.",
        )
    return transcript


# --- merging ---------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\w']+")


def _norm(word: str) -> str:
    return _WORD.sub("", word.lower())


def _shift(segments: list[Segment], offset: float) -> list[Segment]:
    return [
        Segment(
            start_sec=round(s.start_sec + offset, 3),
            end_sec=round(s.end_sec + offset, 3),
            text=s.text,
            speaker=s.speaker,
        )
        for s in segments
    ]


class Placed(Protocol):
    """Where a piece sits, all ``merge`` reads of it (an ``AudioChunk``, a ``chunking_portable.Place``)."""

    @property
    def start_sec(self) -> float: ...
    @property
    def overlap_sec(self) -> float: ...


def merge(chunks: Sequence[Placed], pieces: list[Transcript], *, producer: str) -> Transcript:
    """One transcript from the pieces' transcripts, in absolute time, seams deduplicated."""
    merged: list[Segment] = []
    for chunk, piece in zip(chunks, pieces, strict=True):
        segments = _shift(piece.segments, chunk.start_sec)
        if chunk.overlap_sec > 0 and merged:
            merged, segments = _seam(merged, segments, chunk.start_sec, chunk.start_sec + chunk.overlap_sec)
        merged.extend(segments)
    language = next((p.language for p in pieces if p.language), None)
    note = f"transcribed in {len(chunks)} pieces" if len(chunks) > 1 else None
    if len(chunks) > 1 and any(s.speaker for s in merged):
        # Each piece numbered its own voices: the same label in two pieces may be two people.
        merged = [msgspec.structs.replace(s, speaker=None) for s in merged]
        note = (
            f"{note}; speaker labels dropped: each piece numbered its voices on its own, so the same "
            "label in two pieces need not be the same person"
        )
    return Transcript(
        language=language,
        origin="asr",
        timing="segment-approx",
        producer=producer,
        segments=merged,
        note=note,
    )


def _words(segments: list[Segment], first: int) -> list[tuple[int, int, str]]:
    """(segment index, word index, normalised word) for ``segments[first:]``."""
    found = []
    for index in range(first, len(segments)):
        for position, word in enumerate(segments[index].text.split()):
            if norm := _norm(word):
                found.append((index, position, norm))
    return found


def _seam(
    before: list[Segment], after: list[Segment], start: float, end: float
) -> tuple[list[Segment], list[Segment]]:
    """Drop what both sides of an overlap ``[start, end]`` heard from one of them."""
    tail_from = next((i for i, s in enumerate(before) if s.end_sec > start), len(before))
    head_to = next((i for i, s in enumerate(after) if s.start_sec >= end), len(after))
    tail = _words(before, tail_from)
    head = _words(after[:head_to], 0)
    run = _longest_common_run([w[2] for w in tail], [w[2] for w in head])
    if run is None:
        middle = (start + end) / 2
        kept_before = [s for s in before if (s.start_sec + s.end_sec) / 2 < middle or s.end_sec <= start]
        kept_after = [s for s in after if (s.start_sec + s.end_sec) / 2 >= middle]
        return kept_before, kept_after
    # Both heard the run; each side's edge is where a word may be cut off, so the earlier piece
    # gives the run's first half and the later piece the rest.
    tail_end, head_end, length = run
    half = length // 2
    last_kept = tail_end - length + half  # in tail; -1 (or less) when none of it is kept
    if last_kept >= 0:
        seg_b, word_b, _ = tail[last_kept]
        kept_before = before[:seg_b] + _cut(before[seg_b], keep_until=word_b)
    else:
        seg_b, word_b, _ = tail[0]
        kept_before = before[:seg_b] + (_cut(before[seg_b], keep_until=word_b - 1) if word_b > 0 else [])
    seg_a, word_a, _ = head[head_end - length + 1 + half]
    kept_after = _cut(after[seg_a], keep_from=word_a) + after[seg_a + 1 :]
    return kept_before, kept_after


def _longest_common_run(tail: list[str], head: list[str]) -> tuple[int, int, int] | None:
    """(end in ``tail``, end in ``head``, length) of the longest run of equal words, the earliest
    in ``head`` on ties; ``None`` when the two share no word."""
    best = (0, -1, -1)
    previous = [0] * (len(head) + 1)
    for i in range(1, len(tail) + 1):
        current = [0] * (len(head) + 1)
        for j in range(1, len(head) + 1):
            if tail[i - 1] == head[j - 1]:
                current[j] = previous[j - 1] + 1
                length = current[j]
                if length > best[0] or (length == best[0] and j - 1 < best[2]):
                    best = (length, i - 1, j - 1)
        previous = current
    return None if best[0] == 0 else (best[1], best[2], best[0])


def _cut(segment: Segment, *, keep_until: int | None = None, keep_from: int | None = None) -> list[Segment]:
    """The words of a segment up to ``keep_until`` or from ``keep_from`` (word positions, both
    kept), its times moved in proportion to the characters dropped."""
    words = segment.text.split()
    kept = words[: keep_until + 1] if keep_until is not None else words[keep_from or 0 :]
    if not kept:
        return []
    text = " ".join(kept)
    span = segment.end_sec - segment.start_sec
    share = len(text) / max(1, len(segment.text))
    if keep_until is not None:
        return [
            Segment(
                start_sec=segment.start_sec, end_sec=round(segment.start_sec + span * share, 3), text=text
            )
        ]
    return [Segment(start_sec=round(segment.end_sec - span * share, 3), end_sec=segment.end_sec, text=text)]
