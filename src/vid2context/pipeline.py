"""From any input to a ``VideoContext``: cache, then metadata, then the transcript ladder.

Every rung runs through ``run_rung``, which times it, records an ``Attempt`` and turns any failure
into a ``VidError``; so every answer and every error says what ran, how long it took and why a rung
was skipped. Identical concurrent requests share one run (``SingleFlight``), and the shared run
has its own deadline so one caller going away does not fail the others.

The transcript ladder, cheapest and most faithful first::

    cache ─▶ captions (each source provider that accepts the input) ─▶ speech-to-text rungs

``mode=captions`` stops after captions, ``mode=stt`` skips them. Speech-to-text takes the audio
from the first source that can give it (``AudioSource``; attempt stage ``audio``) and walks
``runtime.stt`` in order (``transcribe``): disabled rungs are recorded as skipped with the
variable they miss, a failing rung hands over to the next. An upload has no captions by nature,
so ``auto`` records its captions as skipped and answers exactly what ``mode=stt`` would: a
``too-large`` upload is ``too-large``, not a captions failure folded into ``all-rungs-failed``.

``speakers=True`` puts the rungs that label speakers (``speech.diarizes``: Deepgram) first on the
speech-to-text ladder, and with ``mode=stt`` a saved transcript that no such rung made is
transcribed again when one is set up. It never skips captions by itself: ``speakers.py`` then
says in a line how to get labels.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

import msgspec

from .chunking import SttPlan, transcribe_audio
from .ctx import Ctx
from .errors import ErrorCode, Hint, VidError, per_surface, steps
from .inputs import is_list, parse_input
from .models import Attempt, Comment, Mode, Stage, Transcript, VideoContext, VideoMetadata, VideoRef
from .providers.base import AudioSource, SourceProvider
from .providers.captions import missing_note, same_language
from .providers.speech import AudioInput, SpeechToText, diarizes
from .runtime import Runtime
from .visual.layer import check_readable, read_visual

__all__ = [
    "combine_errors",
    "get_comments",
    "get_context",
    "get_metadata",
    "labelling_rungs",
    "list_items",
    "no_stt_rung",
    "resolve",
    "resolve_video",
    "run_rung",
    "transcribe",
]

log = logging.getLogger("vid2context.pipeline")

T = TypeVar("T")

MODES: tuple[Mode, ...] = ("auto", "captions", "stt", "video")


async def run_rung(
    attempts: list[Attempt], rung_id: str, stage: Stage, work: Callable[[], Awaitable[T]]
) -> T:
    """Run one rung, record its ``Attempt``, and let only ``VidError`` out.

    An unexpected exception is a bug: it is logged with its traceback and becomes ``internal``
    with no detail, so nothing about our internals reaches the caller.
    """
    started = time.perf_counter()
    try:
        result = await work()
    except VidError as error:
        attempts.append(_attempt(rung_id, stage, "error", started, error.code.value, error.message))
        error.attempts = list(attempts)
        raise
    except Exception:
        log.exception("rung %s failed at stage %s", rung_id, stage)
        attempts.append(_attempt(rung_id, stage, "error", started, ErrorCode.INTERNAL.value, None))
        raise VidError.internal(list(attempts)) from None
    attempts.append(_attempt(rung_id, stage, "ok", started, None, None))
    return result


def _attempt(
    rung_id: str, stage: Stage, outcome: str, started: float, reason: str | None, detail: str | None
):
    ms = int((time.perf_counter() - started) * 1000)
    return Attempt(id=rung_id, stage=stage, outcome=outcome, reason=reason, detail=detail, ms=ms)  # type: ignore[arg-type]


def resolve(runtime: Runtime, source: str | VideoRef) -> VideoRef:
    """Parse an input with the runtime's public-mode guard; refs pass through, checked again."""
    if isinstance(source, VideoRef):
        if runtime.settings.public and source.platform == "local":
            return parse_input(source.native_id, public=True)  # raises unsupported-input
        return source
    return parse_input(source, public=runtime.settings.public)


def resolve_video(runtime: Runtime, source: str, *, wanted: str) -> VideoRef:
    """``resolve``, refusing a playlist or channel: ``wanted`` is what a single video would have
    given (``tracks``), for the hint that says to ask for one video's."""
    ref = resolve(runtime, source)
    if is_list(ref):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{(ref.url or ref.id)[:120]} is a {ref.kind}, not a video.",
            hint=steps(f"List its videos with {{items}} and ask for one video's {wanted}."),
        )
    return ref


def _providers_for(runtime: Runtime, ref: VideoRef) -> list[SourceProvider]:
    providers = [p for p in runtime.sources if p.accepts(ref)]
    if not providers:
        message, hint = _no_provider_text(ref)
        raise VidError(ErrorCode.NO_PROVIDER, message, hint=hint)
    return providers


def _no_provider_text(ref: VideoRef) -> tuple[str, Hint]:
    if ref.platform == "web":
        return (
            f"No provider here can read {ref.url}.",
            "Tell the user, and do not retry: pages other than YouTube are read by yt-dlp, which this "
            "server lacks; the local runtime with the `local` extra reads them (`vid2context get URL`).",
        )
    if ref.platform == "local":
        return (
            f"No provider here can read the local file {ref.native_id}.",
            per_surface(
                rest="Upload the file (POST /api/v1/uploads) and read the upload:<sha256> it returns, "
                "or tell the user the local runtime reads files (`vid2context get FILE`).",
                mcp="Tell the user, and do not retry: this server cannot read files; the local runtime "
                "with ffmpeg can (`vid2context get FILE`, or `vid2context mcp`).",
            ),
        )
    if ref.platform == "upload":
        return (
            "Uploads are read by the API server.",
            per_surface(
                rest="Upload with POST /api/v1/uploads and use the returned input.",
                mcp="Give a public URL of the media instead.",
            ),
        )
    return (
        f"No provider is enabled for {ref.platform} inputs.",
        per_surface(
            rest="Check GET /api/v1/health for enabled providers.",
            mcp="Give an input this server reads: a YouTube video, or a video page URL.",
        ),
    )


async def _first_success(
    attempts: list[Attempt],
    providers: list[SourceProvider],
    stage: Stage,
    call: Callable[[SourceProvider], Awaitable[T]],
) -> T:
    """The first provider that succeeds; with every one failed, the most telling error."""
    errors: list[VidError] = []
    for provider in providers:
        try:
            return await run_rung(attempts, provider.id, stage, lambda p=provider: call(p))
        except VidError as error:
            errors.append(error)
    raise combine_errors(errors, attempts)


def combine_errors(errors: list[VidError], attempts: list[Attempt]) -> VidError:
    """One error for a ladder that failed everywhere.

    When every rung failed the same way, that code (and the first rung's message and hint) is the
    answer: a video without captions is ``no-transcript`` whoever noticed. Different failures are
    ``all-rungs-failed``, with each listed in ``attempts``.
    """
    if not errors:
        return VidError(ErrorCode.NO_PROVIDER, "No provider could run.", attempts=attempts)
    # A rung that cannot do this stage at all (no-provider: youtube-transcript-api has no metadata)
    # does not hide what the rungs that tried found; its attempt still shows.
    errors = [error for error in errors if error.code is not ErrorCode.NO_PROVIDER] or errors
    codes = {error.code for error in errors}
    if len(codes) == 1:
        first = errors[0]
        return VidError(
            first.code, first.message, hint=first.hints, attempts=attempts, retry_after=first.retry_after
        )
    summary = "; ".join(f"{a.id}: {a.reason}" for a in attempts if a.outcome == "error")
    hints = [e.hints for e in errors if e.hints]
    return VidError(
        ErrorCode.ALL_RUNGS_FAILED,
        f"Every provider failed ({summary}).",
        hint=hints[0]
        if hints
        else "Tell the user what attempts say each rung answered; do not retry the same call.",
        attempts=attempts,
    )


def labelling_rungs(runtime: Runtime) -> list[SpeechToText]:
    """The enabled speech-to-text rungs that label speakers, in ladder order."""
    return [rung for rung in runtime.stt if rung.enabled and diarizes(rung)]


def _cache_fits(
    runtime: Runtime,
    context: VideoContext,
    mode: Mode,
    lang: str | None,
    speakers: bool | None = None,
    on_screen: bool = False,
) -> bool:
    """Whether a saved context answers this request without a new fetch: a transcript in ``lang``,
    or the best track saved for the same missing ``lang`` before. ``mode=stt`` with
    ``speakers=True`` wants a transcript a labelling rung made, when one is set up to make it;
    ``on_screen`` (``include``) wants the picture read as well."""
    transcript = context.transcript
    if mode == "video":
        return context.visual is not None
    if on_screen and context.visual is None:
        return False
    if transcript is None:
        return False
    if mode == "stt" and transcript.origin != "asr":
        return False
    if mode == "stt" and speakers is True:
        labellers = {rung.id for rung in labelling_rungs(runtime)}
        if labellers and transcript.producer not in labellers:
            return False
    if mode == "captions" and transcript.origin == "asr":
        return False
    if lang and transcript.language and not same_language(lang, transcript.language, exact=False):
        asked = transcript.requested_language
        return asked is not None and same_language(lang, asked, exact=True)
    return True


def _as_asked(transcript: Transcript | None, lang: str | None) -> Transcript | None:
    """A saved transcript as the answer to this call: a language a call asked for before (and
    that had no track) is no longer said to be missing, unless this call asks for it again."""
    missing = transcript.requested_language if transcript is not None else None
    if transcript is None or missing is None or (lang and same_language(lang, missing, exact=True)):
        return transcript
    before, after = missing_note(missing, transcript.available_languages)
    note = (transcript.note or "").replace(before, "", 1).replace(after, "", 1) or None
    return msgspec.structs.replace(transcript, requested_language=None, note=note)


def _check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"Unknown mode {mode[:20]!r}.",
            hint="Give mode as one of: " + ", ".join(MODES) + ".",
        )
    return mode  # type: ignore[return-value]


async def get_context(
    runtime: Runtime,
    source: str | VideoRef,
    *,
    mode: str = "auto",
    lang: str | None = None,
    refresh: bool = False,
    ctx: Ctx | None = None,
    speakers: bool | None = None,
    on_screen: bool = False,
) -> VideoContext:
    """The video's metadata and transcript, from the library when it has them.

    ``speakers=True`` prefers the speech-to-text rungs that label speakers (module docstring);
    the labels in the answer are chosen afterwards, by ``speakers.with_speakers``.
    ``on_screen=True`` (``include=on_screen``) reads the picture beside the transcript ``mode``
    asks for, as ``mode=video`` does (``visual.layer``).

    Raises ``VidError``: ``unsupported-input``/``bad-request`` for the input, the provider's code
    when one rung was tried, ``all-rungs-failed`` when several failed differently.
    """
    ctx = ctx or Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
    checked_mode = _check_mode(mode)
    ref = resolve(runtime, source)
    if is_list(ref):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{ref.url or ref.id} is a {ref.kind}, not a video.",
            hint=steps("List its videos with {items} and ask for each, or build a pack."),
        )
    if not refresh:
        cached = await runtime.storage.get_context(ref.id)
        if cached is not None and _cache_fits(runtime, cached, checked_mode, lang, speakers, on_screen):
            hit = Attempt(id=runtime.storage.id, stage="cache", outcome="ok", ms=0)
            return VideoContext(
                id=cached.id,
                metadata=cached.metadata,
                transcript=_as_asked(cached.transcript, lang) if cached.transcript else None,
                comments=cached.comments,
                attempts=[hit],
                fetched_at=cached.fetched_at,
                generated_chapters=cached.generated_chapters,
                visual=cached.visual,
                visual_note=cached.visual_note,
            )
    picture = on_screen or checked_mode == "video"
    if picture:
        check_readable(runtime, ref)  # a saved reading is served anywhere; a new one needs a rung
    if ctx.meter is not None:
        await ctx.meter.video_read()  # hosted mode: a read from the platform counts; 429 when over
    labels = speakers is True
    key = (ref.id, checked_mode, (lang or "").lower(), refresh, labels, picture)
    # The shared run gets a context of its own: its own deadline and abort signal, so the first
    # caller's disconnect or shorter deadline does not fail the others waiting on it.
    shared = Ctx(
        timeout=runtime.settings.request_timeout_ms / 1000,
        request_id=ctx.request_id,
        progress=ctx.progress_callback,
    )
    shared.meter = ctx.meter
    try:
        return await runtime.flights.run(
            key,
            lambda: _build_context(runtime, ref, checked_mode, lang, shared, labels, picture),
            wait=ctx.remaining,
            hand_off=runtime.hand_off,  # on the Worker: the run goes on (and is saved) past a timeout
        )
    except TimeoutError:
        raise VidError(
            ErrorCode.TIMEOUT,
            f"{ref.id} took longer than this call's time limit.",
            hint="Repeat the call in a moment: the work goes on, and its result is saved to the library.",
        ) from None


async def _build_context(
    runtime: Runtime,
    ref: VideoRef,
    mode: Mode,
    lang: str | None,
    ctx: Ctx,
    labels: bool = False,
    picture: bool = False,
) -> VideoContext:
    attempts: list[Attempt] = []
    providers = _providers_for(runtime, ref)
    metadata: VideoMetadata = await _first_success(
        attempts, providers, "metadata", lambda p: p.metadata(ref, ctx)
    )
    visual, visual_note = None, None
    if mode == "video":
        visual, visual_note = await read_visual(runtime, ref, ctx, attempts)
        transcript = await _transcript_beside_picture(runtime, ref, providers, lang, ctx, attempts)
    elif picture:  # include=on_screen: the transcript this mode asks for, then the picture
        transcript = await _transcript(runtime, ref, providers, mode, lang, ctx, attempts, labels)
        visual, visual_note = await read_visual(runtime, ref, ctx, attempts)
    else:
        transcript = await _transcript(runtime, ref, providers, mode, lang, ctx, attempts, labels)
        kept = await runtime.storage.get_context(ref.id) if ref.platform != "upload" else None
        if kept is not None and kept.visual is not None:  # a transcript refresh keeps the picture read
            visual, visual_note = kept.visual, kept.visual_note
    context = VideoContext(
        id=ref.id,
        metadata=metadata,
        transcript=transcript,
        attempts=attempts,
        fetched_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        visual=visual,
        visual_note=visual_note,
    )
    if ref.platform != "upload":
        await run_rung(attempts, runtime.storage.id, "save", lambda: runtime.storage.put_context(context))
        from .search.indexing import index_saved  # it builds on this module (run_rung, the ladder)

        await index_saved(runtime, context, ctx, attempts)  # never fails the save
    return context


async def _transcript_beside_picture(
    runtime: Runtime,
    ref: VideoRef,
    providers: list[SourceProvider],
    lang: str | None,
    ctx: Ctx,
    attempts: list[Attempt],
) -> Transcript | None:
    """``mode=video``'s transcript: what ``auto`` finds, or none. A silent slide deck has no words
    to transcribe, and its picture is the answer; the attempts say why the transcript is missing."""
    try:
        return await _transcript(runtime, ref, providers, "auto", lang, ctx, attempts)
    except VidError as error:
        if error.code in (ErrorCode.CANCELED, ErrorCode.TIMEOUT):
            raise
        return None


async def _transcript(
    runtime: Runtime,
    ref: VideoRef,
    providers: list[SourceProvider],
    mode: Mode,
    lang: str | None,
    ctx: Ctx,
    attempts: list[Attempt],
    labels: bool = False,
) -> Transcript:
    errors: list[VidError] = []
    if mode == "auto" and ref.platform == "upload":
        # Nothing to find: asking would only add "no captions" to whatever speech-to-text answers,
        # and its hint (use mode=stt) to an answer that already is speech-to-text's.
        attempts.append(
            Attempt(
                id=providers[0].id,
                stage="captions",
                outcome="skipped",
                reason="no-transcript",
                detail="an upload has no captions",
            )
        )
    elif mode in ("auto", "captions"):
        for provider in providers:
            try:
                return await run_rung(
                    attempts, provider.id, "captions", lambda p=provider: p.captions(ref, ctx, lang=lang)
                )
            except VidError as error:
                errors.append(error)
        if mode == "captions":
            raise combine_errors(errors, attempts)
    return await _speech_to_text(runtime, ref, providers, mode, lang, ctx, attempts, errors, labels)


# --- speech-to-text ----------------------------------------------------------------------------------

# The audio itself is the problem, or the call is over: no other rung would do better.
_LADDER_STOPS = {ErrorCode.BAD_REQUEST, ErrorCode.CANCELED}


def _skipped(rung: SpeechToText) -> Attempt:
    if rung.tier == "keyless" and not rung.requires:
        return Attempt(
            id=rung.id, stage="stt", outcome="skipped", reason="disabled", detail="VID2CONTEXT_KEYLESS=0"
        )
    detail = "set " + " and ".join(rung.requires) if rung.requires else "not set up"
    return Attempt(id=rung.id, stage="stt", outcome="skipped", reason="missing-key", detail=detail)


def _no_stt_rung(attempts: list[Attempt]) -> VidError:
    return VidError(
        ErrorCode.NO_PROVIDER,
        "No speech-to-text rung is set up, so the audio cannot be transcribed.",
        hint=steps(
            "Tell the user to set GROQ_API_KEY (free tier), CLOUDFLARE_ACCOUNT_ID and "
            "CLOUDFLARE_API_TOKEN, or VID2CONTEXT_STT_URL, or to install the stt-local extra ({rungs} "
            "lists every rung); do not retry until one is set."
        ),
        attempts=attempts,
    )


no_stt_rung = _no_stt_rung
"""The error when no speech-to-text rung is enabled, for callers that check before they start
(``live.core``)."""


def _with_next_step(error: VidError, blocker: VidError) -> VidError:
    """The captions' error in auto mode when speech-to-text could not even start (no rung set up,
    or no way to get the audio here): a video without captions is still ``no-transcript``, but the
    next step is what unblocks speech-to-text (``blocker``'s hint), not ``mode=stt``, which would
    fail the same way. Other caption failures (blocked, private, ...) keep their own hint."""
    if error.code is not ErrorCode.NO_TRANSCRIPT:
        return error
    return VidError(
        error.code, error.message, hint=blocker.hints, attempts=error.attempts, retry_after=error.retry_after
    )


async def transcribe(
    runtime: Runtime,
    audio: AudioInput,
    *,
    lang: str | None = None,
    ctx: Ctx | None = None,
    attempts: list[Attempt] | None = None,
    speakers: bool = False,
    plan: SttPlan | None = None,
) -> Transcript:
    """``audio`` through the speech-to-text ladder: each enabled rung in order until one answers;
    with ``speakers``, the rungs that label speakers first (the others stay as fallbacks).
    ``plan`` replaces ``runtime.stt_plan`` (``job_pieces``: a piece retried by the queue, not here).

    Disabled rungs are recorded as skipped. Raises ``no-provider`` when no rung is enabled, the
    rung's own code when one rung was tried (or all failed the same way), ``all-rungs-failed``
    otherwise; a rung that finds the audio itself unusable (``bad-request``) ends the ladder.
    """
    ctx = ctx or Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
    attempts = [] if attempts is None else attempts
    ready = [rung for rung in runtime.stt if rung.enabled]
    if speakers:
        ready.sort(key=lambda rung: not diarizes(rung))  # stable: ladder order within each group
    attempts.extend(_skipped(rung) for rung in runtime.stt if not rung.enabled)
    if not ready:
        raise _no_stt_rung(attempts)
    if ctx.meter is not None:
        await ctx.meter.stt_allowed()  # hosted mode: 429 once the day's minutes are spent
    errors: list[VidError] = []
    for rung in ready:
        try:
            transcript = await run_rung(
                attempts,
                rung.id,
                "stt",
                lambda r=rung: transcribe_audio(r, audio, ctx, lang=lang, plan=plan or runtime.stt_plan),
            )
            if ctx.meter is not None:
                spoken = transcript.segments[-1].end_sec if transcript.segments else 0.0
                await ctx.meter.stt_used(audio.duration_sec or spoken)
            return transcript
        except VidError as error:
            errors.append(error)
            if error.code in _LADDER_STOPS or ctx.remaining == 0:
                break
    raise combine_errors(errors, attempts)


async def _speech_to_text(
    runtime: Runtime,
    ref: VideoRef,
    providers: list[SourceProvider],
    mode: Mode,
    lang: str | None,
    ctx: Ctx,
    attempts: list[Attempt],
    caption_errors: list[VidError],
    labels: bool = False,
) -> Transcript:
    """The source's audio through ``transcribe``; in ``auto`` mode a failure joins the captions'."""
    if not any(rung.enabled for rung in runtime.stt):
        attempts.extend(_skipped(rung) for rung in runtime.stt)
        if mode == "stt" or not caption_errors:
            raise _no_stt_rung(attempts)
        raise _with_next_step(combine_errors(caption_errors, attempts), _no_stt_rung(attempts))
    sources = [p for p in providers if isinstance(p, AudioSource)]
    if not sources:
        first = providers[0]
        attempts.append(
            Attempt(
                id=first.id,
                stage="audio",
                outcome="skipped",
                reason="no-provider",
                detail="cannot fetch audio",
            )
        )
        no_audio = VidError(
            ErrorCode.NO_PROVIDER,
            f"{first.name} cannot download audio here, so speech-to-text cannot run.",
            hint=per_surface(
                rest="This server cannot download the audio of these videos: upload the video or its "
                "audio (POST /api/v1/uploads) and read the upload:<sha256> it returns with mode=stt, or "
                "tell the user the local runtime transcribes them (`vid2context get URL --mode stt`).",
                mcp="Tell the user, and do not retry: this server cannot download the audio of these "
                "videos to transcribe them; the local runtime can (`vid2context get URL --mode stt`, "
                "or `vid2context mcp`).",
            ),
            attempts=attempts,
        )
        if mode == "auto" and caption_errors:
            raise _with_next_step(combine_errors(caption_errors, attempts), no_audio)
        raise no_audio
    # Speech-to-text's own error leads: auto mode has already tried it, so the captions' hint
    # ("use mode=stt") is no next step any more.
    errors = list(caption_errors) if mode == "auto" else []
    try:
        source, audio = await _first_audio(attempts, sources, ref, ctx)
    except VidError as error:
        raise combine_errors([error, *errors], attempts) from None
    try:
        return await transcribe(runtime, audio, lang=lang, ctx=ctx, attempts=attempts, speakers=labels)
    except VidError as error:
        raise combine_errors([error, *errors], attempts) from None
    finally:
        release = getattr(source, "release_audio", None)
        if release is not None:
            try:
                await release(audio)
            except Exception:
                log.warning("%s could not release its audio", source.id, exc_info=True)


async def _first_audio(
    attempts: list[Attempt], sources: list[AudioSource], ref: VideoRef, ctx: Ctx
) -> tuple[AudioSource, AudioInput]:
    errors: list[VidError] = []
    for source in sources:
        try:
            return source, await run_rung(attempts, source.id, "audio", lambda s=source: s.audio(ref, ctx))  # type: ignore[attr-defined]
        except VidError as error:
            errors.append(error)
    raise combine_errors(errors, attempts)


async def get_metadata(runtime: Runtime, source: str | VideoRef, *, ctx: Ctx | None = None) -> VideoMetadata:
    """Metadata only: no captions or audio are fetched. A saved context answers without a fetch."""
    ctx = ctx or Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
    ref = resolve(runtime, source)
    if not is_list(ref):
        cached = await runtime.storage.get_context(ref.id)
        if cached is not None:
            return cached.metadata
    attempts: list[Attempt] = []
    return await _first_success(
        attempts, _providers_for(runtime, ref), "metadata", lambda p: p.metadata(ref, ctx)
    )


async def list_items(
    runtime: Runtime, source: str | VideoRef, *, limit: int | None = None, ctx: Ctx | None = None
) -> list[VideoRef]:
    """A playlist or channel expanded to its videos; a single video is a list of itself."""
    ctx = ctx or Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
    cap = runtime.settings.max_playlist_items
    limit = cap if limit is None else limit
    if not 1 <= limit <= cap:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"limit must be 1 to {cap}, not {limit}.",
            hint=f"Give limit from 1 to {cap}.",
        )
    ref = resolve(runtime, source)
    if ref.kind == "video":
        if ref.list_id is None or ref.platform != "youtube":
            return [ref]
        # A watch URL inside a playlist (watch?v=X&list=Y): the caller asked for the list.
        ref = resolve(runtime, f"https://www.youtube.com/playlist?list={ref.list_id}")
    attempts: list[Attempt] = []
    items = await _first_success(
        attempts, _providers_for(runtime, ref), "items", lambda p: p.items(ref, ctx, limit=limit)
    )
    return items[:limit]


async def get_comments(runtime: Runtime, source: str | VideoRef, *, limit: int, ctx: Ctx) -> list[Comment]:
    """Up to ``limit`` comments: from a saved context that holds enough, else from the sources.

    Uploads have none. Each provider that accepts the input is tried in order, like every other
    stage, so the error carries the attempts.
    """
    ref = resolve(runtime, source)
    if is_list(ref):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{ref.url or ref.id} is a {ref.kind}, not a video.",
            hint=steps("List its videos with {items} and ask for each video's comments."),
        )
    if ref.platform == "upload":
        return []
    cached = await runtime.storage.get_context(ref.id)
    if cached is not None and cached.comments is not None and len(cached.comments) >= limit:
        return cached.comments[:limit]
    providers = [provider for provider in runtime.sources if provider.accepts(ref)]
    if not providers:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            f"No provider here can read comments for {ref.id[:80]}.",
            hint="Tell the user, and do not retry: comments are read by the yt-dlp rung of the local "
            "runtime (`vid2context mcp`, or `vid2context serve`).",
        )
    attempts: list[Attempt] = []
    found = await _first_success(attempts, providers, "comments", lambda p: p.comments(ref, ctx, limit=limit))
    return found[:limit]
