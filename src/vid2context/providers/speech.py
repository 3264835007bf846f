"""What a speech-to-text rung must offer, and the audio it is given.

A ``SpeechToText`` rung turns one ``AudioInput`` into a ``Transcript`` with timed segments. The
runtime holds the rungs in ladder order (``runtime.stt``); the pipeline walks them, records an
``Attempt`` for each, skips the disabled ones (their key is missing) and falls through to the next
on failure. Hosted rungs take at most ``max_bytes`` per request: ``chunking.transcribe_audio``
splits longer audio into pieces under that cap, sends them concurrently and merges the results, so
a rung's ``transcribe`` only ever sees one piece. A rung with ``max_bytes = None`` (the local
model) takes the whole audio as it is.

Rungs, one module each::

    providers/whisper_local.py       faster-whisper on this machine (local only)   tier local
    providers/whisper_groq.py        Groq, through the ``groq`` SDK                 tier free
    providers/whisper_workers_ai.py  Cloudflare Workers AI (SDK locally, binding)   tier free
    providers/whisper_openai.py      any OpenAI-compatible endpoint, over httpx     tier paid/keyless
    providers/deepgram.py            Deepgram nova-3, with speaker labels           tier paid

Errors: every failure is a ``VidError``. ``RungError`` adds ``retryable`` so the chunk runner
knows what may be tried again (429, 5xx, transport errors) and what may not (401, 413, 400).
``status_error`` maps an HTTP status to one, in one place for every hosted rung::

    401 403 ........... auth (the key is wrong or lacks access)
    413 ............... too-large (a piece over the service's cap)
    429 ............... rate-limited, retryable, retry_after from Retry-After
    408 5xx ........... upstream, retryable
    other 4xx ......... upstream (the service refused the request)
    transport errors .. upstream, retryable (timeouts: timeout, retryable)

The same table serves the embedding rungs (``search/embedders``): a ``Wording`` names the
capability and the payload in the messages (``STT_WORDING`` unless told otherwise).

This module is portable: no filesystem, no subprocess. ``AudioInput`` of kind ``path`` only
names a file; only local-only modules open it.
"""

from __future__ import annotations

import email.utils
import math
import time
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

import msgspec

from ..ctx import Ctx
from ..errors import ErrorCode, VidError, steps
from ..models import Segment, Transcript

__all__ = [
    "MAX_RETRY_AFTER",
    "TIERS",
    "AudioInput",
    "STT_WORDING",
    "RungError",
    "UPSTREAM_HINT",
    "SpeechToText",
    "Tier",
    "VerboseJson",
    "VerboseSegment",
    "Wording",
    "clean_segments",
    "diarizes",
    "language_code",
    "one_request_sec",
    "parse_retry_after",
    "response_error",
    "status_error",
    "transport_error",
    "verbose_json_transcript",
]

Tier = Literal["local", "free", "keyless", "paid"]
"""``local`` runs on this machine; ``free`` needs a free account key; ``keyless`` needs none;
``paid`` bills the key's owner."""

TIERS: tuple[Tier, ...] = ("local", "free", "keyless", "paid")
"""The default ladder order: local model first, then free tiers with keys, keyless, then paid."""

MAX_RETRY_AFTER = 3600
"""A ``Retry-After`` longer than this is read as this (an hour): longer waits are not worth it."""


class AudioInput(msgspec.Struct, frozen=True, kw_only=True):
    """Audio to transcribe: bytes in memory, or the path of a local file.

    ``path`` is only ever produced and read by local-only modules (yt-dlp, local files, ffmpeg);
    the Worker deals in ``bytes`` (uploads). ``mime`` and ``filename`` go with the upload to a
    hosted service, which guesses the container from them.
    """

    kind: Literal["bytes", "path"]
    data: bytes | None = None
    path: str | None = None
    filename: str = "audio"
    mime: str = "application/octet-stream"
    duration_sec: float | None = None
    """Known length, when the provider already probed it; ``None`` when unknown."""

    @classmethod
    def from_bytes(
        cls, data: bytes, *, filename: str = "audio", mime: str = "application/octet-stream"
    ) -> AudioInput:
        return cls(
            kind="bytes", data=data, filename=filename or "audio", mime=mime or "application/octet-stream"
        )

    @classmethod
    def from_path(
        cls,
        path: str,
        *,
        filename: str | None = None,
        mime: str | None = None,
        duration_sec: float | None = None,
    ) -> AudioInput:
        name = filename or path.replace("\\", "/").rsplit("/", 1)[-1] or "audio"
        return cls(
            kind="path",
            path=path,
            filename=name,
            mime=mime or "application/octet-stream",
            duration_sec=duration_sec,
        )

    @property
    def size(self) -> int | None:
        """Bytes in memory; ``None`` for a path (its size needs the filesystem)."""
        return len(self.data) if self.data is not None else None

    def describe(self) -> str:
        """A short name for messages: the file name, never the bytes."""
        return self.filename


@runtime_checkable
class SpeechToText(Protocol):
    id: str
    """``stt/<service>/<model>``, e.g. ``stt/groq/whisper-large-v3-turbo``; also the transcript's
    ``producer`` and the attempt id."""
    service: str
    """Who runs the model: ``groq``, ``openai``, ``cloudflare``, ``faster-whisper``."""
    model: str
    tier: Tier
    requires: tuple[str, ...]
    """Environment variables this rung needs, by name (never their values)."""
    enabled: bool
    """Credentials present (and, for ``keyless`` rungs, keyless rungs allowed)."""
    provider: str
    """The health entry this rung is listed under (``stt-groq``, ``stt-openai-compatible``)."""
    name: str
    """Human name of that entry (``Groq speech-to-text``)."""
    max_bytes: int | None
    """Largest upload one request may carry; ``None`` when the rung takes any audio whole."""

    async def transcribe(self, audio: AudioInput, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        """The audio's words as timed segments, times relative to the start of ``audio``.

        ``lang`` is an ISO 639-1 hint (``None``: the model detects it). Raises ``VidError``:
        ``too-large`` over ``max_bytes``, ``auth`` for a rejected key, ``rate-limited`` and
        ``upstream`` (``RungError`` with ``retryable`` set) for the service's own troubles,
        ``bad-request`` for audio that cannot be decoded, ``no-transcript`` when nothing was said.
        """
        ...


def diarizes(rung: SpeechToText) -> bool:
    """Whether ``rung`` labels who speaks (``Segment.speaker``): a rung says so with a class
    attribute ``diarizes = True`` (``providers/deepgram.py``); the Whisper rungs have none."""
    return getattr(rung, "diarizes", False) is True


def one_request_sec(rung: SpeechToText) -> float | None:
    """The longest audio ``rung`` wants in one request, when it says (``max_sec``): a diarizing
    rung numbers voices per request, so it takes hours at once rather than ten-minute pieces."""
    value = getattr(rung, "max_sec", None)
    return float(value) if isinstance(value, int | float) and value > 0 else None


class RungError(VidError):
    """A ``VidError`` that says whether the same request may be tried again."""

    def __init__(self, *args: object, retryable: bool = False, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.retryable = retryable


def parse_retry_after(raw: str | None) -> int | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), capped at an hour."""
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        seconds = math.ceil(float(raw))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        seconds = math.ceil(when.timestamp() - time.time())
    return max(0, min(seconds, MAX_RETRY_AFTER))


UPSTREAM_HINT = (
    "Repeat the call once in a minute (the next speech-to-text rung, when one is set up, is tried "
    "first); if it fails again, tell the user the service failed, and do not retry."
)
"""A speech-to-text service's failure that may pass."""


def _excerpt(body: str) -> str:
    """A short, single-line piece of an upstream error body, for the message."""
    text = " ".join(body.split())
    return text[:160] + ("..." if len(text) > 160 else "")


class Wording(NamedTuple):
    """How a capability's errors name its work, so one status table serves every hosted rung
    (speech-to-text here, embeddings in ``search/embedders``)."""

    capability: str
    """``speech-to-text``: what a 429 says is being limited, and whose other rungs the hints name."""
    too_large: str
    """What a 413 refused: ``an audio piece``."""
    too_large_hint: str
    timeout_hint: str
    upstream_hint: str
    """A service's failure that may pass (5xx)."""


STT_WORDING = Wording(
    capability="speech-to-text",
    too_large="an audio piece",
    too_large_hint="Tell the user to lower VID2CONTEXT_STT_CHUNK_MB so pieces stay under the service's upload "
    "cap; do not retry until then.",
    timeout_hint="Repeat the call once (long audio is sent in pieces, each with its own time limit); if "
    "it runs out of time again, tell the user, and do not retry.",
    upstream_hint=UPSTREAM_HINT,
)


def status_error(
    service: str,
    status: int,
    *,
    body: str = "",
    retry_after: int | None = None,
    requires: tuple[str, ...] = (),
    wording: Wording = STT_WORDING,
) -> RungError:
    """The error an HTTP status from a hosted service means (table in the module docstring)."""
    said = f": {_excerpt(body)}" if body.strip() else ""
    if status in (401, 403):
        names = " and ".join(requires) or "the service's key"
        return RungError(
            ErrorCode.AUTH,
            f"{service} refused the credentials (HTTP {status}).",
            hint=steps(
                f"Tell the user {service} refused {names}: set a valid key, or another rung's "
                "({rungs} lists them); do not retry until then."
            ),
        )
    if status == 413:
        return RungError(
            ErrorCode.TOO_LARGE,
            f"{service} refused {wording.too_large} as too large (HTTP 413).",
            hint=wording.too_large_hint,
        )
    if status == 429:
        wait = f"; it asks to wait {retry_after} s" if retry_after is not None else ""
        return RungError(
            ErrorCode.RATE_LIMITED,
            f"{service} is rate-limiting {wording.capability} requests{wait}.",
            hint=steps(
                "Wait the Retry-After seconds, then repeat the call once; or tell the user to set the key "
                f"of another {wording.capability} rung ({{rungs}} lists them)."
            ),
            retry_after=retry_after,
            retryable=True,
        )
    retryable = status == 408 or status >= 500
    return RungError(
        ErrorCode.UPSTREAM,
        f"{service} answered HTTP {status}{said}.",
        hint=wording.upstream_hint,
        retryable=retryable,
    )


def response_error(
    service: str, response: Any, *, requires: tuple[str, ...] = (), wording: Wording = STT_WORDING
) -> RungError:
    """``status_error`` for an HTTP response (httpx's, or the one an SDK error carries): its
    status, a short body excerpt, and the ``Retry-After`` it sent."""
    return status_error(
        service,
        response.status_code,
        body=response.text if len(response.content) < 4096 else "",
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        requires=requires,
        wording=wording,
    )


def transport_error(
    service: str, exc: BaseException, *, timeout: bool = False, wording: Wording = STT_WORDING
) -> RungError:
    """A request that got no answer: retryable, naming the exception class only."""
    if timeout:
        return RungError(
            ErrorCode.TIMEOUT, f"{service} did not answer in time.", hint=wording.timeout_hint, retryable=True
        )
    return RungError(
        ErrorCode.UPSTREAM,
        f"Could not reach {service}: {type(exc).__name__}.",
        hint="Repeat the call once in a moment; if it fails again, tell the user to check the network "
        "and the service's URL, and do not retry.",
        retryable=True,
    )


# --- the verbose_json answer (OpenAI, Groq, most self-hosted servers) ---------------------------


class VerboseSegment(msgspec.Struct, kw_only=True):
    start: float
    end: float
    text: str


class VerboseJson(msgspec.Struct, kw_only=True):
    """OpenAI's ``verbose_json`` transcription, as far as we read it (other fields are ignored)."""

    text: str = ""
    language: str | None = None
    duration: float | None = None
    segments: list[VerboseSegment] | None = None


_LANGUAGE_NAMES = {
    "english": "en",
    "german": "de",
    "french": "fr",
    "spanish": "es",
    "italian": "it",
    "portuguese": "pt",
    "dutch": "nl",
    "russian": "ru",
    "chinese": "zh",
    "japanese": "ja",
    "korean": "ko",
    "arabic": "ar",
    "hindi": "hi",
    "turkish": "tr",
    "polish": "pl",
    "ukrainian": "uk",
    "swedish": "sv",
}


def language_code(value: str | None) -> str | None:
    """``en`` from ``en``, ``EN-us`` or ``english`` (OpenAI answers language names)."""
    if not value:
        return None
    value = value.strip().lower()
    if value in _LANGUAGE_NAMES:
        return _LANGUAGE_NAMES[value]
    return value.split("-")[0].split("_")[0][:8] or None


def clean_segments(raw: list[tuple[float, float, str]]) -> list[Segment]:
    """Segments with text, in time order, with ``end >= start`` and no negative times."""
    segments: list[Segment] = []
    for start, end, text in raw:
        words = " ".join(text.split())
        if not words:
            continue
        start = max(0.0, float(start))
        segments.append(
            Segment(start_sec=round(start, 3), end_sec=round(max(start, float(end)), 3), text=words)
        )
    segments.sort(key=lambda s: s.start_sec)
    return segments


def verbose_json_transcript(
    body: bytes, *, producer: str, service: str, lang: str | None, duration_hint: float | None = None
) -> Transcript:
    """A ``Transcript`` from a ``verbose_json`` body; ``upstream`` when the body is not one.

    A body with text but no segments (a server that ignored ``verbose_json``) becomes one segment
    over the whole piece, when its length is known.
    """
    try:
        answer = msgspec.json.decode(body, type=VerboseJson)
    except msgspec.DecodeError:
        raise RungError(
            ErrorCode.UPSTREAM,
            f"{service} answered something that is not a verbose_json transcription.",
            hint="Tell the user the answer was not OpenAI-compatible speech-to-text (VID2CONTEXT_STT_URL "
            "must name an OpenAI-compatible /audio/transcriptions); do not retry.",
        ) from None
    if answer.segments is not None:
        segments = clean_segments([(s.start, s.end, s.text) for s in answer.segments])
    else:
        length = answer.duration or duration_hint or 0.0
        segments = clean_segments([(0.0, length, answer.text)])
    return Transcript(
        language=language_code(answer.language) or language_code(lang),
        origin="asr",
        timing="segment-approx",
        producer=producer,
        segments=segments,
    )
