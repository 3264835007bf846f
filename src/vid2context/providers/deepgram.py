"""Deepgram's pre-recorded speech-to-text (``nova-3``), the rung that labels speakers.

The Whisper rungs give words and times only; Deepgram also says who spoke (``diarize=true``), so
this is the rung ``speakers=true`` asks for first (``pipeline.transcribe``). One request per audio,
as Deepgram documents it::

    POST {origin}/v1/listen?model=nova-3&diarize=true&utterances=true&smart_format=true
         &language=<hint> | &detect_language=true
    Authorization: Token <DEEPGRAM_API_KEY>
    Content-Type: <the audio's MIME type>
    <the audio bytes>

The answer's ``results.utterances`` (each a stretch of one speaker's speech, with ``start``,
``end``, ``transcript`` and ``speaker``, a number from 0) become the segments, ``Speaker 1``,
``Speaker 2``, ... in the order Deepgram numbered them. The language is the hint, else
``results.channels[0].detected_language``.

Speaker numbers mean something only within one request: the voices of two requests are numbered
each on its own. So the rung takes a whole audio in one request where it can: ``max_bytes`` is
Deepgram's 2 GB file limit and ``max_sec`` three hours (its diarizer's documented limit for one
file), and ``chunking.merge`` drops the labels, with a note, from audio that still had to be cut.

Errors, as Deepgram documents them, through ``speech.status_error``: 400 (audio it cannot decode,
or a language the model lacks) is ``upstream``, so the next rung may still try; 401/403 ``auth`` naming ``DEEPGRAM_API_KEY``; 402 (the account's balance is
spent) ``auth`` with a hint of its own; 413 ``too-large``; 429 ``rate-limited`` with its
``Retry-After``; 5xx ``upstream``, retryable. Portable: httpx only.
"""

from __future__ import annotations

import httpx
import msgspec

from ..ctx import Ctx
from ..errors import ErrorCode, steps
from ..models import Segment, Transcript
from .speech import AudioInput, RungError, Tier, language_code, response_error, status_error, transport_error
from .whisper_openai import request_timeout

__all__ = ["DEFAULT_ORIGIN", "DEEPGRAM_MODEL", "MAX_BYTES", "MAX_SEC", "DeepgramStt", "speaker_name"]

DEFAULT_ORIGIN = "https://api.deepgram.com"
DEEPGRAM_MODEL = "nova-3"
MAX_BYTES = 2 * 1024 * 1024 * 1024
"""Deepgram's limit for one pre-recorded file (2 GB)."""
MAX_SEC = 3 * 3600.0
"""The longest audio sent in one request: Deepgram documents diarization for files up to three
hours. Longer audio goes in pieces, whose speaker numbers do not match (``chunking.merge``)."""
READ_TIMEOUT_S = 600.0
"""How long one request may take: up to three hours of audio in one piece."""
REQUIRES = ("DEEPGRAM_API_KEY",)


def speaker_name(number: int) -> str:
    """``Speaker 1`` for Deepgram's speaker 0: people count from one."""
    return f"Speaker {number + 1}"


class _Utterance(msgspec.Struct, kw_only=True):
    start: float
    end: float
    transcript: str = ""
    speaker: int | None = None


class _Channel(msgspec.Struct, kw_only=True):
    detected_language: str | None = None


class _Results(msgspec.Struct, kw_only=True):
    channels: list[_Channel] = []
    utterances: list[_Utterance] | None = None


class _Answer(msgspec.Struct, kw_only=True):
    results: _Results


class DeepgramStt:
    """``SpeechToText`` on Deepgram's ``/v1/listen``, with speaker labels."""

    service = "deepgram"
    model = DEEPGRAM_MODEL
    id = f"stt/deepgram/{DEEPGRAM_MODEL}"
    provider = "stt-deepgram"
    name = "Deepgram speech-to-text (speaker labels)"
    tier: Tier = "paid"
    requires = REQUIRES
    diarizes = True
    max_sec = MAX_SEC

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        api_key: str | None,
        origin: str | None = None,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.enabled = bool(api_key)
        self.max_bytes: int | None = max_bytes
        self._client = client
        self._key = api_key
        self._url = (origin or DEFAULT_ORIGIN).rstrip("/") + "/v1/listen"

    async def transcribe(self, audio: AudioInput, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        if audio.data is None:
            raise RungError(
                ErrorCode.BAD_REQUEST,
                f"Deepgram needs the audio in memory, and {audio.describe()} is a file path.",
                hint="Tell the user, and do not retry: files are read by the local runtime, which reads "
                "them first (`vid2context get FILE`).",
            )
        if self.max_bytes is not None and len(audio.data) > self.max_bytes:
            raise status_error("Deepgram", 413)
        params = {
            "model": self.model,
            "diarize": "true",
            "utterances": "true",
            "smart_format": "true",
        }
        if lang:
            params["language"] = lang
        else:
            params["detect_language"] = "true"
        headers = {"Authorization": f"Token {self._key}", "Content-Type": audio.mime}
        ctx.check()
        try:
            response = await self._client.post(
                self._url,
                params=params,
                content=audio.data,
                headers=headers,
                timeout=request_timeout(ctx, READ_TIMEOUT_S),
            )
        except httpx.TimeoutException as exc:
            raise transport_error("Deepgram", exc, timeout=True) from None
        except httpx.HTTPError as exc:
            raise transport_error("Deepgram", exc) from None
        if response.status_code == 200:
            return self._transcript(response.content, lang)
        if response.status_code == 402:
            raise RungError(
                ErrorCode.AUTH,
                "Deepgram refused the request: the account's balance is spent (HTTP 402).",
                hint=steps(
                    "Tell the user the Deepgram account behind DEEPGRAM_API_KEY has no credit left: add "
                    "some, or set another speech-to-text rung ({rungs} lists them); do not retry until then."
                ),
            )
        raise response_error("Deepgram", response, requires=REQUIRES)

    def _transcript(self, body: bytes, lang: str | None) -> Transcript:
        try:
            answer = msgspec.json.decode(body, type=_Answer)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise RungError(
                ErrorCode.UPSTREAM,
                "Deepgram answered something that is not a pre-recorded transcription.",
                hint="Tell the user the answer was not Deepgram's (VID2CONTEXT_DEEPGRAM_ORIGIN must name "
                "Deepgram's API origin); do not retry.",
            ) from None
        utterances = answer.results.utterances
        if utterances is None:
            raise RungError(
                ErrorCode.UPSTREAM,
                "Deepgram answered without utterances.",
                hint="Tell the user the answer lacked the utterances the request asked for "
                "(VID2CONTEXT_DEEPGRAM_ORIGIN must name Deepgram's API origin); do not retry.",
            )
        segments: list[Segment] = []
        for said in sorted(utterances, key=lambda u: u.start):
            words = " ".join(said.transcript.split())
            if not words:
                continue
            start = round(max(0.0, said.start), 3)
            speaker = speaker_name(said.speaker) if said.speaker is not None and said.speaker >= 0 else None
            segments.append(
                Segment(start_sec=start, end_sec=round(max(start, said.end), 3), text=words, speaker=speaker)
            )
        detected = answer.results.channels[0].detected_language if answer.results.channels else None
        return Transcript(
            language=language_code(lang) or language_code(detected),
            origin="asr",
            timing="segment-approx",
            producer=self.id,
            segments=segments,
        )
