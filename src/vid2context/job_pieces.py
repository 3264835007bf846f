"""One queue message per piece: a long upload's ``context`` job spread over the Worker's queue.

In one message, a long upload would be cut and every piece sent from the same isolate (memory:
the upload plus the pieces in flight; time: the whole transcription inside one invocation). On
the queue (``jobs_queued.py``) a ``context`` job of an upload that must be cut is planned
instead, and each piece is a unit of its own::

    plan    read the upload once, cut it (``chunking_portable.cutting``), write one unit per piece:
            {upload, piece, pieces, maxBytes, maxSec, place: frames, bytes, startSec, endSec,
            overlapSec, lang}; metadata and the read's attempts go in the plan
    piece   read the upload again from R2, cut it again with the same limits and check that the
            piece is where planning put it (the cut is deterministic: same bytes and limits, same
            cuts), transcribe it with the speech-to-text ladder, keep its segments
    finish  the pieces joined by ``chunking.merge`` (absolute times, seams de-duplicated) into
            the ``VideoContext``, the job's result

Anything else (a video URL, an upload that fits one request, ``mode=captions`` or ``video``, a
rung that takes audio whole) runs whole in the plan's message, as before.

Where a piece's segments live: in its unit's row in D1 (``job_units.result``), written by the
same conditional update that settles the unit, so a piece is either settled with its words or
still to do, never half; the finish reads every piece in one query, and the cron's prune drops
them with the job. A piece of ten minutes is a few tens of kB of JSON, far under D1's 2 MB row;
R2 would add a second write that could outlive a dying isolate, and a sweep.

Failures: a piece whose rungs fail transiently (``job_units.TRANSIENT``, or every rung failing
with those) is retried by the queue with its backoff (not inside the message: the piece's ladder
runs with no retries of its own), and after the queue's last retry the dead letter fails the job
with that last real error; any other error fails the job at once. No transcript with a piece
missing is ever the result. A piece with no speech in it is an empty piece (a pause in a long
talk), and only a whole upload with no speech is ``no-transcript``.

Events: no ``item`` event per piece (``item`` means a video to every other job, and a client
counting them would count pieces as videos); ``progress`` counts pieces (``3 of 7 pieces
transcribed``), and the job's one ``item`` (the video) is written with its end.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from . import pipeline
from .chunking import merge, require_words
from .chunking_portable import Cutting, Place, PortablePrep, cutting
from .ctx import Ctx
from .errors import ErrorCode, VidError
from .job_units import TRANSIENT, Planned, Split
from .models import Attempt, Segment, Transcript, VideoContext, VideoMetadata
from .providers.speech import AudioInput
from .providers.upload import UploadProvider
from .uploads import get_upload

if TYPE_CHECKING:
    from .batch import OnEvent
    from .runtime import Runtime

__all__ = ["CONTEXT_SPLIT", "piece_limits"]

_PLACE_FIELDS = ("first", "end", "byteStart", "byteEnd", "startSec", "endSec", "overlapSec")


def piece_limits(runtime: Runtime) -> tuple[int, float] | None:
    """``(max bytes, max seconds)`` of a piece every enabled rung takes, or ``None`` when the
    upload is not to be planned in pieces: no rung (the whole run says why), a rung that takes
    audio whole (the local model), or a prep that is not the portable one (ffmpeg decodes)."""
    ready = [rung for rung in runtime.stt if rung.enabled]
    caps = [rung.max_bytes for rung in ready]
    plan = runtime.stt_plan
    if not ready or None in caps or not isinstance(plan.prep, PortablePrep):
        return None
    return min([plan.chunk_bytes, *(cap for cap in caps if cap is not None)]), plan.chunk_sec


def _place(place: Place) -> dict[str, Any]:
    return {
        "first": place.first, "end": place.end, "byteStart": place.byte_start, "byteEnd": place.byte_end,
        "startSec": place.start_sec, "endSec": place.end_sec, "overlapSec": place.overlap_sec,
    }  # fmt: skip


async def _plan_context(
    runtime: Runtime, value: Any, options: dict[str, Any], ctx: Ctx, on_item: OnEvent
) -> Planned:
    del on_item  # no item event per piece (module docstring)
    whole = Planned(units=[], whole=True)
    ref = pipeline.resolve(runtime, value)
    limits = piece_limits(runtime)
    if ref.platform != "upload" or options.get("mode", "auto") not in ("auto", "stt") or limits is None:
        return whole
    max_bytes, max_sec = limits
    attempts: list[Attempt] = []
    provider = UploadProvider(runtime)
    metadata = await pipeline.run_rung(attempts, provider.id, "metadata", lambda: provider.metadata(ref, ctx))
    if options.get("mode", "auto") == "auto":
        attempts.append(
            Attempt(id=provider.id, stage="captions", outcome="skipped", reason="no-transcript",
                    detail="an upload has no captions")
        )  # fmt: skip
    audio = await pipeline.run_rung(attempts, provider.id, "audio", lambda: provider.audio(ref, ctx))
    assert audio.data is not None
    cut = cutting(audio, audio.data, max_bytes=max_bytes, max_sec=max_sec)
    if cut is None or len(cut.cuts) < 2:
        return whole
    common = {"upload": ref.native_id, "pieces": len(cut.cuts), "maxBytes": max_bytes, "maxSec": max_sec,
              "lang": options.get("lang")}  # fmt: skip
    units = [
        {**common, "id": ref.id, "piece": index, "place": _place(cut.place(index))}
        for index in range(len(cut.cuts))
    ]
    extra = {
        "id": ref.id,
        "metadata": msgspec.to_builtins(metadata),
        "attempts": msgspec.to_builtins(attempts),
        "filename": audio.filename,
    }
    return Planned(units=units, extra=extra)


async def _rebuilt(runtime: Runtime, payload: dict[str, Any]) -> tuple[Cutting, AudioInput]:
    """The upload read again and cut with the plan's limits; ``internal`` when the piece is not
    where planning put it (it cannot be, for the same bytes: they are named by their SHA-256)."""
    info, data = await get_upload(runtime, payload["upload"])
    audio = AudioInput.from_bytes(data, filename=info.filename, mime=info.mime_type)
    cut = cutting(audio, data, max_bytes=int(payload["maxBytes"]), max_sec=float(payload["maxSec"]))
    index = int(payload["piece"])
    if (
        cut is None
        or len(cut.cuts) != payload["pieces"]
        or _place(cut.place(index)) != {k: payload["place"][k] for k in _PLACE_FIELDS}
    ):
        raise VidError(
            ErrorCode.INTERNAL,
            f"Piece {index + 1} of the upload was not cut where it was planned.",
            hint="Submit the job again (POST /api/v1/jobs); if it fails again, tell the user it needs a look.",
        )
    return cut, audio


def _transient(error: VidError, attempts: list[Attempt]) -> bool:
    """Worth the queue's retry: a transient code, or every rung failing with transient codes."""
    if error.code in TRANSIENT:
        return True
    failed = [a.reason for a in attempts if a.stage == "stt" and a.outcome == "error"]
    transient = {code.value for code in TRANSIENT}
    return error.code is ErrorCode.ALL_RUNGS_FAILED and bool(failed) and set(failed) <= transient


async def _run_piece(runtime: Runtime, payload: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    """One piece transcribed: ``{segments, language, producer, attempts}``, or ``{retry: true,
    retryAfter, error}`` when it failed transiently; other failures raise (the job fails)."""
    cut, audio = await _rebuilt(runtime, payload)
    index, pieces = int(payload["piece"]), int(payload["pieces"])
    chunk = cut.chunk(audio, index)
    del audio  # the whole upload is not needed past the cut
    attempts: list[Attempt] = []
    once = dataclasses.replace(runtime.stt_plan, retries=0)  # the queue retries, with its backoff
    language, producer, segments = None, None, []
    try:
        transcript = await pipeline.transcribe(
            runtime, chunk.audio, lang=payload.get("lang"), ctx=ctx, attempts=attempts, plan=once
        )
        language, producer, segments = transcript.language, transcript.producer, transcript.segments
    except VidError as error:
        if error.code is not ErrorCode.NO_TRANSCRIPT:  # a piece without speech is an empty piece
            if not _transient(error, attempts):
                raise
            body = {"code": error.code.value, "message": error.message, "hint": error.hint}
            return {"retry": True, "retryAfter": int(error.retry_after or 0), "error": body}
    detail = f"piece {index + 1} of {pieces}"
    return {
        "segments": msgspec.to_builtins(segments),
        "language": language,
        "producer": producer,
        "attempts": [
            msgspec.to_builtins(msgspec.structs.replace(a, detail=a.detail or detail)) for a in attempts
        ],
    }


async def _finish_context(
    runtime: Runtime, value: Any, options: dict[str, Any], extra: dict[str, Any], units: list[dict[str, Any]]
) -> VideoContext:
    del runtime, value, options
    places = [_Placed(u["payload"]["place"]) for u in units]
    results = [u["result"] for u in units]
    producers = list(dict.fromkeys(r["producer"] for r in results if r.get("producer")))
    pieces = [
        Transcript(language=r.get("language"), origin="asr", timing="segment-approx",
                   producer=r.get("producer") or "", segments=msgspec.convert(r["segments"], list[Segment]))
        for r in results
    ]  # fmt: skip
    producer = "+".join(producers)
    transcript = require_words(
        merge(places, pieces, producer=producer),
        producer or "Speech-to-text",
        extra.get("filename") or "the upload",
    )
    # As one call lists them: the read, the rungs skipped (once, not once a piece), each piece's rung.
    ran: list[Attempt] = []
    skipped: dict[tuple[str, str | None], Attempt] = {}
    for result in results:
        for attempt in msgspec.convert(result.get("attempts", []), list[Attempt]):
            if attempt.outcome == "skipped":
                skipped.setdefault((attempt.id, attempt.reason), attempt)
            else:
                ran.append(attempt)
    attempts = [*msgspec.convert(extra.get("attempts", []), list[Attempt]), *skipped.values(), *ran]
    return VideoContext(
        id=extra["id"],
        metadata=msgspec.convert(extra["metadata"], VideoMetadata),
        transcript=transcript,
        attempts=attempts,
        fetched_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


class _Placed:
    """A planned piece's place as ``chunking.merge`` reads it."""

    def __init__(self, place: dict[str, Any]) -> None:
        self.start_sec = float(place["startSec"])
        self.overlap_sec = float(place["overlapSec"])


def _item(context: VideoContext) -> dict[str, Any]:
    return {"id": context.id, "outcome": "ok", "title": context.metadata.title}


CONTEXT_SPLIT = Split(
    _plan_context,
    _finish_context,
    run=_run_piece,
    todo="pieces to transcribe",
    done="pieces transcribed",
    whole_or_nothing=True,
    item=_item,
)
"""The ``context`` kind on the queue: one unit per piece of a long upload, else one message."""
