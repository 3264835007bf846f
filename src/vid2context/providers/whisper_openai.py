"""Any OpenAI-compatible ``/audio/transcriptions`` endpoint, over plain httpx.

OpenAI itself, and the many services and self-hosted servers that copy its API (faster-whisper
servers, whisper.cpp's server, OVH, DeepInfra, Groq's ``/openai/v1``). Settings:

- ``VID2CONTEXT_STT_URL``: the API base (``https://api.openai.com/v1``), to which
  ``/audio/transcriptions`` is added, or the full endpoint URL ending in ``/audio/transcriptions``,
  used as it is. Unset, with a key set, it is OpenAI's.
- ``VID2CONTEXT_STT_MODEL``: the model name sent (default ``whisper-1``, OpenAI's model with
  ``verbose_json`` segments).
- ``VID2CONTEXT_STT_KEY``: sent as ``Authorization: Bearer``. Without one the rung is ``keyless``
  (a self-hosted server, or a service's anonymous tier); with one it is ``paid``.

One multipart POST per audio piece, ``response_format=verbose_json`` with segment timestamps. Portable:
httpx only, no filesystem (the Worker can use it).
"""

from __future__ import annotations

from urllib.parse import urlsplit

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

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_URL",
    "MAX_BYTES",
    "OpenAICompatibleWhisper",
    "endpoint_url",
    "request_timeout",
    "service_name",
]

DEFAULT_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "whisper-1"
MAX_BYTES = 25 * 1024 * 1024
"""OpenAI's upload cap (25 MB); most compatible servers take at least as much."""

READ_TIMEOUT_S = 300.0
"""How long one piece may take to come back: ten minutes of audio on a slow server."""


def request_timeout(ctx: Ctx, read_s: float = READ_TIMEOUT_S) -> httpx.Timeout:
    """A generous read timeout for one request (``read_s``, a piece of audio by default), never
    past the call's deadline."""
    read = read_s if ctx.remaining is None else max(1.0, min(read_s, ctx.remaining))
    return httpx.Timeout(read, connect=min(10.0, read))


def endpoint_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if url.endswith("/audio/transcriptions"):
        return url
    return url + "/audio/transcriptions"


def service_name(url: str) -> str:
    """A short service name from the URL's host: ``openai`` for api.openai.com, ``ovh`` for
    ``*.ai.cloud.ovh.net``, ``self-hosted`` for addresses and single-label hosts."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    labels = [label for label in host.split(".") if label]
    if len(labels) < 2 or all(label.isdigit() for label in labels) or ":" in host:
        return "self-hosted"
    return labels[-2]


class OpenAICompatibleWhisper:
    """``SpeechToText`` for an OpenAI-compatible transcription endpoint."""

    provider = "stt-openai-compatible"
    name = "OpenAI-compatible speech-to-text"

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        url: str | None,
        model: str | None = None,
        key: str | None = None,
        keyless_allowed: bool = True,
        service: str | None = None,
        tier: Tier | None = None,
        requires: tuple[str, ...] | None = None,
        provider: str | None = None,
        name: str | None = None,
        max_bytes: int = MAX_BYTES,
        key_setting: str = "VID2CONTEXT_STT_KEY",
    ) -> None:
        configured = bool(url or key)
        self.key_setting = key_setting
        """The setting that holds the key: what a refused key's hint tells the user to check."""
        self._client = client
        self._url = endpoint_url(url or DEFAULT_URL)
        self._key = key
        self.model = model or DEFAULT_MODEL
        self.service = service or service_name(self._url)
        self.id = f"stt/{self.service}/{self.model}"
        self.tier: Tier = tier or ("paid" if key else "keyless")
        if requires is None:
            requires = ("VID2CONTEXT_STT_URL",) if url or not key else ("VID2CONTEXT_STT_KEY",)
        self.requires = requires
        self.enabled = configured and (self.tier != "keyless" or keyless_allowed)
        self.max_bytes: int | None = max_bytes
        if provider:
            self.provider = provider
        if name:
            self.name = name

    async def transcribe(self, audio: AudioInput, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        if audio.data is None:
            raise RungError(
                ErrorCode.BAD_REQUEST,
                f"{self.service} needs the audio in memory, and {audio.describe()} is a file path.",
                hint="Tell the user, and do not retry: files are read by the local runtime, which splits "
                "them first (`vid2context get FILE`).",
            )
        if self.max_bytes is not None and len(audio.data) > self.max_bytes:
            raise status_error(self.service, 413)
        form = {
            "model": self.model,
            "response_format": "verbose_json",
            "timestamp_granularities[]": "segment",
        }
        if lang:
            form["language"] = lang
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        ctx.check()
        try:
            response = await self._client.post(
                self._url,
                data=form,
                files={"file": (audio.filename, audio.data, audio.mime)},
                headers=headers,
                timeout=request_timeout(ctx),
            )
        except httpx.TimeoutException as exc:
            raise transport_error(self.service, exc, timeout=True) from None
        except httpx.HTTPError as exc:
            raise transport_error(self.service, exc) from None
        if response.status_code != 200:
            raise response_error(self.service, response, requires=(self.key_setting,))
        return verbose_json_transcript(
            response.content,
            producer=self.id,
            service=self.service,
            lang=lang,
            duration_hint=audio.duration_sec,
        )
