"""Groq's hosted Whisper (``whisper-large-v3-turbo``), through the ``groq`` SDK.

Enabled when ``GROQ_API_KEY`` is set; ``GROQ_BASE_URL`` (the SDK's own variable) points it
elsewhere, which is how the tests reach their local fake. Both are read once by ``settings`` and
handed to the SDK here, so the SDK never reads the environment behind our back. The SDK's own
retries are off: the chunk runner retries 429 and 5xx itself, honouring ``Retry-After``, with a
sleep the tests can replace.

The answer is read as ``verbose_json`` from the raw response (segments with times); the SDK's
typed ``Transcription`` keeps only ``text``. Groq's free tier takes 25 MB per request.

Where the SDK is not installed (the Worker), ``runtime`` builds the same rung from
``OpenAICompatibleWhisper`` against Groq's OpenAI-compatible path: one wire protocol, two clients.
"""

from __future__ import annotations

from typing import Any

import httpx

from ..ctx import Ctx
from ..errors import ErrorCode
from ..models import Transcript
from .speech import (
    AudioInput,
    RungError,
    Tier,
    response_error,
    status_error,
    transport_error,
    verbose_json_transcript,
)
from .whisper_openai import request_timeout

__all__ = ["DEFAULT_BASE_URL", "GROQ_MODEL", "MAX_BYTES", "GroqWhisper"]

GROQ_MODEL = "whisper-large-v3-turbo"
DEFAULT_BASE_URL = "https://api.groq.com"
MAX_BYTES = 25 * 1024 * 1024
REQUIRES = ("GROQ_API_KEY",)


class GroqWhisper:
    """``SpeechToText`` on Groq, through ``groq.AsyncGroq``."""

    service = "groq"
    provider = "stt-groq"
    name = "Groq speech-to-text"
    tier: Tier = "free"
    requires = REQUIRES

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        model: str = GROQ_MODEL,
        http: httpx.AsyncClient | None = None,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.model = model
        self.id = f"stt/groq/{model}"
        self.enabled = bool(api_key)
        self.max_bytes: int | None = max_bytes
        self._api_key = api_key
        self._base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._http = http
        self._sdk: Any = None

    def _client(self) -> Any:
        if self._sdk is None:
            import groq  # the `local` extra; imported when first used

            self._sdk = groq.AsyncGroq(
                api_key=self._api_key or "", base_url=self._base_url, max_retries=0, http_client=self._http
            )
        return self._sdk

    async def transcribe(self, audio: AudioInput, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        import groq

        if audio.data is None:
            raise RungError(
                ErrorCode.BAD_REQUEST,
                f"Groq needs the audio in memory, and {audio.describe()} is a file path.",
                hint="Tell the user, and do not retry: files are read by the local runtime, which splits "
                "them first (`vid2context get FILE`).",
            )
        if self.max_bytes is not None and len(audio.data) > self.max_bytes:
            raise status_error("Groq", 413)
        options: dict[str, Any] = {}
        if lang:
            options["language"] = lang
        ctx.check()
        try:
            raw = await self._client().audio.transcriptions.with_raw_response.create(
                file=(audio.filename, audio.data, audio.mime),
                model=self.model,
                response_format="verbose_json",
                timestamp_granularities=["segment"],
                timeout=request_timeout(ctx),
                **options,
            )
        except groq.APIStatusError as exc:
            raise response_error("Groq", exc.response, requires=REQUIRES) from None
        except groq.APITimeoutError as exc:
            raise transport_error("Groq", exc, timeout=True) from None
        except groq.APIConnectionError as exc:
            raise transport_error("Groq", exc) from None
        return verbose_json_transcript(
            raw.http_response.content,
            producer=self.id,
            service="Groq",
            lang=lang,
            duration_hint=audio.duration_sec,
        )
