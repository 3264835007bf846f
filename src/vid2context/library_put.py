"""Putting a video into the library from outside: ``PUT /api/v1/library/{id}``.

The edge (a Worker) is refused by YouTube as a rule, so the user's own machine reads the video
and pushes the ``VideoContext`` it made (``vid2context push``, ``remote.py``). The body is the
same shape ``GET /api/v1/library/{id}`` answers, optionally with ``embeddings``: the vectors of
its transcript windows (``search.windows.make_windows``, in order), accepted when their space is
the one this server indexes into, so the edge need not embed what the laptop already did.

Everything is checked before anything is stored, so a refused body changes nothing:

- the id of the path is the body's ``id`` and its ``metadata.id``, and names a video (not an
  upload, which never enters the library);
- the text is valid UTF-8 (msgspec refuses anything else, lone surrogates included);
- segments have finite times, ``start <= end``, in order of start, inside the duration (a little
  slack for a last cue that outlasts the picture);
- sizes stay under the caps below (``too-large``); the body itself under ``VID2CONTEXT_MAX_PUSH_KB``
  (``api/middleware/limits.py``);
- pushed vectors have the window count of this transcript, the space's dimension, finite values.

``If-Match`` carries the ``ETag`` of the copy the client last saw (``etag_of``: the SHA-256 of
the stored body, as ``GET`` sends it); another copy saved since, or none at all, is
``precondition-failed`` (412), so a push never overwrites a newer copy it did not know of.
Without ``If-Match`` the put is unconditional. The check and the write are two steps, not one
transaction: it guards against a stale client, not two writers racing in the same millisecond.
"""

from __future__ import annotations

import hashlib
import math
from typing import Literal

import msgspec

from .answers.translate import delete_translations
from .collections_io import normalize_video_id
from .ctx import Ctx
from .errors import ErrorCode, VidError
from .inputs import parse_input
from .models import Attempt, Base, Embeddings, VideoContext
from .pipeline import run_rung
from .runtime import Runtime
from .search.indexing import choose_space, index_video
from .search.vectors import VectorRecord, check_space, check_vector
from .search.windows import make_windows

__all__ = [
    "DURATION_SLACK_S",
    "MAX_CHAPTERS",
    "MAX_COMMENTS",
    "MAX_SEGMENTS",
    "MAX_SEGMENT_CHARS",
    "MAX_TEXT_CHARS",
    "PushedContext",
    "PutResult",
    "etag_of",
    "if_match_ok",
    "put_video",
]

MAX_SEGMENTS = 100_000
"""Segments of one transcript: a day of speech at more than one caption a second."""
MAX_SEGMENT_CHARS = 10_000
MAX_TEXT_CHARS = 4_000_000
"""All of a transcript's text (a 24-hour recording is about 1.5 million characters)."""
MAX_CHAPTERS = 2_000
MAX_COMMENTS = 10_000
MAX_TITLE_CHARS = 2_000
MAX_DESCRIPTION_CHARS = 100_000
DURATION_SLACK_S = 5.0
"""How far past ``durationSec`` a segment may end: platforms' last cues often outlast the picture."""

_ENCODE = msgspec.json.Encoder().encode
_SHAPE_HINT = (
    "Send the body GET /api/v1/library/{id} answers (a VideoContext as JSON: id, metadata, "
    "transcript), optionally with embeddings."
)


class PushedContext(VideoContext, kw_only=True):
    """The body of ``PUT /library/{id}``: a ``VideoContext``, and optionally the vectors of its
    transcript windows in ``embeddings`` (``space``, one vector per window in order, ``producer``)."""

    embeddings: Embeddings | None = None


class PutResult(Base):
    """What a put did: ``created`` (new) or replaced, the new ``etag``, how vector search got the
    video (``pushed`` vectors kept, ``embedded`` here, ``skipped`` with ``vectorReason``, or
    ``failed``: still keyword-searchable), and the steps in ``attempts``."""

    id: str
    created: bool
    etag: str
    segments: int = 0
    vectors: Literal["pushed", "embedded", "skipped", "failed"] = "skipped"
    vector_reason: str | None = None
    attempts: list[Attempt] = []


def etag_of(context: VideoContext) -> str:
    """The strong ``ETag`` of a saved context: the SHA-256 of its JSON, quoted. The same content
    always gives the same tag, so a laptop can tell whether the edge holds its copy."""
    return f'"{hashlib.sha256(_ENCODE(context)).hexdigest()}"'


def if_match_ok(if_match: str | None, current: str | None) -> bool:
    """Whether ``If-Match`` lets the put go on (RFC 9110's strong comparison): no header; ``*``
    with a saved copy; or a tag list naming the saved copy's tag."""
    if if_match is None:
        return True
    if current is None:
        return False
    tags = [tag.strip() for tag in if_match.split(",")]
    return "*" in tags or current in tags


def _bad(message: str, hint: str = _SHAPE_HINT) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _too_large(what: str, count: int, cap: int) -> VidError:
    return VidError(
        ErrorCode.TOO_LARGE,
        f"The pushed context has {count:,} {what}; at most {cap:,} are taken.",
        hint=f"Send at most {cap:,} {what} (split a recording this long into parts, each its own video).",
    )


def decode_pushed(body: bytes) -> PushedContext:
    """The body as a ``PushedContext``, or ``bad-request`` / ``too-large`` saying why not.

    Strict, as every body is (``"1"`` is no number). Before decoding, the ``"startSec"`` keys
    are counted (segments and chapters carry one each, and text cannot hold one unescaped), so a
    transcript far over the cap is refused before its objects are built once more.
    """
    keys = body.count(b'"startSec"')
    if keys > MAX_SEGMENTS + MAX_CHAPTERS:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"The pushed context has more than {MAX_SEGMENTS:,} segments ({keys:,} timed entries, "
            "segments and chapters).",
            hint=f"Send at most {MAX_SEGMENTS:,} segments (split a recording this long into parts, "
            "each its own video).",
        )
    try:
        return msgspec.json.decode(body, type=PushedContext, strict=True)
    except msgspec.ValidationError as error:
        raise _bad(f"The body is not a VideoContext: {str(error)[:200]}.") from None
    except msgspec.DecodeError as error:
        why = "its text is not valid UTF-8" if "UTF-8" in str(error) else "it is not valid JSON"
        raise _bad(f"The body cannot be read: {why}.") from None


def _check_id(path_id: str, context: VideoContext) -> str:
    key = normalize_video_id(path_id)
    if context.id != key:
        raise _bad(
            f"The path names {key[:80]} but the body is {context.id[:80]}.",
            "PUT each context at its own id: /api/v1/library/<its id, URL-encoded once>.",
        )
    if context.metadata.id not in (context.id, context.id.partition(":")[2]):  # its id, or the native one
        raise _bad(f"metadata.id ({context.metadata.id[:80]}) is not the context's id ({context.id[:80]}).")
    try:
        ref = parse_input(key)
    except VidError:
        ref = None
    if ref is None or ref.kind != "video" or ref.platform == "upload" or ref.id != key:
        raise _bad(
            f"{key[:80]} is not a video id the library keeps.",
            "Give a video's id (youtube:jNQXAC9IVRw); uploads are never saved in the library.",
        )
    return key


def _check_sizes(context: VideoContext) -> None:
    meta = context.metadata
    if len(meta.title) > MAX_TITLE_CHARS:
        raise _too_large("characters of title", len(meta.title), MAX_TITLE_CHARS)
    if meta.description and len(meta.description) > MAX_DESCRIPTION_CHARS:
        raise _too_large("characters of description", len(meta.description), MAX_DESCRIPTION_CHARS)
    if len(meta.chapters) > MAX_CHAPTERS:
        raise _too_large("chapters", len(meta.chapters), MAX_CHAPTERS)
    generated = context.generated_chapters
    if generated is not None and len(generated.chapters) > MAX_CHAPTERS:
        raise _too_large("generated chapters", len(generated.chapters), MAX_CHAPTERS)
    if context.comments and len(context.comments) > MAX_COMMENTS:
        raise _too_large("comments", len(context.comments), MAX_COMMENTS)
    if context.transcript is None:
        return
    segments = context.transcript.segments
    if len(segments) > MAX_SEGMENTS:
        raise _too_large("segments", len(segments), MAX_SEGMENTS)
    total = 0
    for segment in segments:
        if len(segment.text) > MAX_SEGMENT_CHARS:
            raise _too_large("characters in one segment", len(segment.text), MAX_SEGMENT_CHARS)
        total += len(segment.text)
    if total > MAX_TEXT_CHARS:
        raise _too_large("characters of transcript text", total, MAX_TEXT_CHARS)


def _check_times(context: VideoContext) -> None:
    duration = context.metadata.duration_sec
    if duration is not None and not (math.isfinite(duration) and duration >= 0):
        raise _bad("metadata.durationSec must be a finite number of seconds, zero or more.")
    if context.transcript is None:
        return
    latest = 0.0
    for index, segment in enumerate(context.transcript.segments):
        start, end = segment.start_sec, segment.end_sec
        where = f"Segment {index} ({start!r}-{end!r} s)"
        if not (math.isfinite(start) and math.isfinite(end)) or start < 0:
            raise _bad(f"{where} has a time that is not a finite number of seconds, zero or more.")
        if end < start:
            raise _bad(f"{where} ends before it starts.")
        if start < latest:
            raise _bad(f"{where} starts before the segment ahead of it: segments go in order of start.")
        if duration is not None and duration > 0 and end > duration + DURATION_SLACK_S:
            raise _bad(f"{where} ends after the video does ({duration:g} s).")
        latest = start


def _pushed_records(context: VideoContext, embeddings: Embeddings) -> list[VectorRecord]:
    """The pushed vectors as records of this transcript's windows; ``bad-request`` when they
    cannot be (their count, dimension or values)."""
    space = check_space(embeddings.space)
    windows = make_windows(context)
    if len(embeddings.vectors) != len(windows):
        raise _bad(
            f"embeddings has {len(embeddings.vectors)} vectors; this transcript has {len(windows)} windows.",
            "Send one vector per window of search.windows.make_windows, in order, or leave embeddings "
            "out and the server embeds the transcript itself.",
        )
    return [VectorRecord(w, check_vector(space, v)) for w, v in zip(windows, embeddings.vectors, strict=True)]


async def put_video(
    runtime: Runtime, path_id: str, body: bytes, *, if_match: str | None = None, ctx: Ctx | None = None
) -> PutResult:
    """Check ``body`` (see the module docstring), then save it, index it for keyword search (the
    store does) and for vector search (its pushed vectors, else this server's embedder), and
    answer what was done. An indexing failure never fails the put: the video is saved and
    keyword-searchable, and the result says ``vectors: failed``."""
    pushed = decode_pushed(body)
    key = _check_id(path_id, pushed)
    _check_sizes(pushed)
    _check_times(pushed)
    records = _pushed_records(pushed, pushed.embeddings) if pushed.embeddings is not None else None
    context = VideoContext(**{name: getattr(pushed, name) for name in VideoContext.__struct_fields__})
    current = await runtime.storage.get_context(key)
    current_tag = etag_of(current) if current is not None else None
    if not if_match_ok(if_match, current_tag):
        raise VidError(
            ErrorCode.PRECONDITION_FAILED,
            f"{key[:80]} has changed since the copy If-Match names"
            + (" (it is not saved here at all)." if current is None else "."),
            hint="Read the saved copy (GET /api/v1/library/{id}) and its ETag; to put yours over it, "
            "send that ETag in If-Match (PUT /api/v1/library/{id}), or no If-Match at all.",
        )
    attempts: list[Attempt] = []
    await run_rung(attempts, runtime.storage.id, "save", lambda: runtime.storage.put_context(context))
    if current is not None:
        await delete_translations(runtime.blobs, key)  # translations of the old transcript
    result = PutResult(
        id=key,
        created=current is None,
        etag=etag_of(context),
        segments=len(context.transcript.segments) if context.transcript else 0,
        attempts=attempts,
    )
    await _index(runtime, context, pushed.embeddings, records, result, ctx)
    return result


async def _index(
    runtime: Runtime,
    context: VideoContext,
    embeddings: Embeddings | None,
    records: list[VectorRecord] | None,
    result: PutResult,
    ctx: Ctx | None,
) -> None:
    """Vector search for the saved video: the pushed vectors when their space is the one this
    server indexes into, else this server's own embedder (``index_video``)."""
    if runtime.vectors is None:
        result.vector_reason = "no vector index here"
        return
    choice = await choose_space(runtime)
    if embeddings is not None and records is not None and embeddings.space == choice.space:
        vectors = runtime.vectors
        try:
            await run_rung(
                result.attempts,
                f"vectors/{vectors.id}",
                "save",
                lambda: vectors.replace_video(embeddings.space, context.id, records),
            )
        except VidError as error:
            result.vectors, result.vector_reason = "failed", error.message
            return
        result.vectors = "pushed"
        return
    if embeddings is not None:
        result.attempts.append(
            Attempt(
                id=f"pushed/{embeddings.producer[:60]}",
                stage="embed",
                outcome="skipped",
                reason="other-model",
                detail=f"pushed vectors of {embeddings.space.model[:80]}; this server indexes "
                f"{choice.space.model[:80] if choice.space else 'with no model'}",
            )
        )
    if not runtime.settings.embed_on_save and embeddings is None:
        result.vector_reason = "VID2CONTEXT_EMBED_ON_SAVE=0"
        return
    indexed = await index_video(runtime, context, choice=choice, ctx=ctx, attempts=result.attempts)
    if indexed.outcome == "ok":
        result.vectors = "embedded"
    elif indexed.outcome == "error":
        result.vectors, result.vector_reason = "failed", indexed.error.message if indexed.error else None
    else:
        result.vector_reason = indexed.reason
