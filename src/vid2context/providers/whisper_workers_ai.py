"""Cloudflare Workers AI's ``@cf/openai/whisper-large-v3-turbo``, two ways in.

- ``WorkersAIWhisper``: the REST API through the ``cloudflare`` SDK, for the local runtime, when
  ``CLOUDFLARE_ACCOUNT_ID`` and ``CLOUDFLARE_API_TOKEN`` are set. ``CLOUDFLARE_BASE_URL`` (the SDK's
  own variable, read by our settings) points it elsewhere, e.g. the tests' fake server.
- ``WorkersAIBindingWhisper``: the Worker's ``AI`` binding, ``await env.AI.run(model, inputs)``.
  The Worker runtime constructs it with the binding (``storage/cloudflare.py``'s way of wrapping
  bindings applies: it hands in an object whose ``run`` takes a Python dict and returns the
  result, converting to and from JS); nothing here imports ``js``.

This model takes the audio as a base64 string (``{"audio": "<base64>", "language": "en"}``; the
older ``@cf/openai/whisper`` took a list of byte values) and answers
``{text, segments: [{start, end, text, ...}], transcription_info: {language, duration}, ...}``,
which the REST API wraps in ``{"result": ..., "success": true}``.
"""

from __future__ import annotations

import base64
from typing import Any, Protocol

import httpx
import msgspec

from ..cloudflare_api import run_path
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import Transcript
from .speech import (
    UPSTREAM_HINT,
    AudioInput,
    RungError,
    Tier,
    VerboseSegment,
    clean_segments,
    language_code,
    response_error,
    status_error,
    transport_error,
)
from .whisper_openai import request_timeout

__all__ = ["MAX_BYTES", "WORKERS_AI_MODEL", "AiBinding", "WorkersAIBindingWhisper", "WorkersAIWhisper"]

WORKERS_AI_MODEL = "@cf/openai/whisper-large-v3-turbo"
MAX_BYTES = 16 * 1024 * 1024
"""Our cap per request: base64 makes the JSON body a third larger than the audio."""
REQUIRES = ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN")


class _Info(msgspec.Struct):
    language: str | None = None
    duration: float | None = None


class _Result(msgspec.Struct):
    text: str = ""
    segments: list[VerboseSegment] | None = None
    transcription_info: _Info | None = None


class _Envelope(msgspec.Struct):
    result: _Result | None = None
    success: bool = True


def _transcript(
    result: _Result, *, producer: str, lang: str | None, duration_hint: float | None
) -> Transcript:
    info = result.transcription_info or _Info()
    if result.segments is not None:
        segments = clean_segments([(s.start, s.end, s.text) for s in result.segments])
    else:
        segments = clean_segments([(0.0, info.duration or duration_hint or 0.0, result.text)])
    return Transcript(
        language=language_code(info.language) or language_code(lang),
        origin="asr",
        timing="segment-approx",
        producer=producer,
        segments=segments,
    )


def _unreadable() -> RungError:
    return RungError(
        ErrorCode.UPSTREAM,
        "Workers AI answered something that is not a whisper transcription.",
        hint=UPSTREAM_HINT,
    )


def _inputs(audio: AudioInput, lang: str | None) -> dict[str, Any]:
    if audio.data is None:
        raise RungError(
            ErrorCode.BAD_REQUEST,
            f"Workers AI needs the audio in memory, and {audio.describe()} is a file path.",
            hint="Tell the user, and do not retry: files are read by the local runtime, which splits "
            "them first (`vid2context get FILE`).",
        )
    inputs: dict[str, Any] = {"audio": base64.b64encode(audio.data).decode("ascii")}
    if lang:
        inputs["language"] = lang
    return inputs


class WorkersAIWhisper:
    """``SpeechToText`` on Workers AI over its REST API, through ``cloudflare.AsyncCloudflare``."""

    service = "cloudflare"
    model = WORKERS_AI_MODEL
    id = f"stt/cloudflare/{WORKERS_AI_MODEL}"
    provider = "stt-workers-ai"
    name = "Cloudflare Workers AI speech-to-text"
    tier: Tier = "free"
    requires = REQUIRES

    def __init__(
        self,
        *,
        account_id: str | None,
        api_token: str | None,
        base_url: str | None = None,
        http: httpx.AsyncClient | None = None,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.enabled = bool(account_id and api_token)
        self.max_bytes: int | None = max_bytes
        self._account_id = account_id or ""
        self._api_token = api_token or ""
        self._base_url = base_url
        self._http = http
        self._sdk: Any = None

    def _client(self) -> Any:
        if self._sdk is None:
            import cloudflare  # the `local` extra; imported when first used

            self._sdk = cloudflare.AsyncCloudflare(
                api_token=self._api_token, base_url=self._base_url, max_retries=0, http_client=self._http
            )
        return self._sdk

    async def transcribe(self, audio: AudioInput, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        import cloudflare

        inputs = _inputs(audio, lang)
        if self.max_bytes is not None and audio.size is not None and audio.size > self.max_bytes:
            raise status_error("Workers AI", 413)
        ctx.check()
        # Not `ai.run()`: SDK 5.x percent-encodes the slashes of the model name in the path.
        path = run_path(self._account_id, self.model)
        try:
            response = await self._client().post(
                path, cast_to=httpx.Response, body=inputs, options={"timeout": request_timeout(ctx)}
            )
        except cloudflare.APIStatusError as exc:
            raise response_error("Workers AI", exc.response, requires=REQUIRES) from None
        except cloudflare.APITimeoutError as exc:
            raise transport_error("Workers AI", exc, timeout=True) from None
        except cloudflare.APIConnectionError as exc:
            raise transport_error("Workers AI", exc) from None
        try:
            envelope = msgspec.json.decode(response.content, type=_Envelope)
        except msgspec.DecodeError:
            raise _unreadable() from None
        if envelope.result is None or not envelope.success:
            raise _unreadable()
        return _transcript(envelope.result, producer=self.id, lang=lang, duration_hint=audio.duration_sec)


class AiBinding(Protocol):
    """The call shape of the Worker's ``env.AI`` binding, as handed to us."""

    async def run(self, model: str, inputs: dict[str, Any]) -> Any: ...


class WorkersAIBindingWhisper:
    """``SpeechToText`` on the Worker's ``AI`` binding: no key, billed to the Worker's account."""

    service = "cloudflare"
    model = WORKERS_AI_MODEL
    id = f"stt/cloudflare/{WORKERS_AI_MODEL}"
    provider = "stt-workers-ai"
    name = "Cloudflare Workers AI speech-to-text"
    tier: Tier = "free"
    requires = ("AI",)
    """The binding's name in wrangler.toml."""

    def __init__(self, ai: AiBinding | None, *, max_bytes: int = MAX_BYTES) -> None:
        self._ai = ai
        self.enabled = ai is not None
        self.max_bytes: int | None = max_bytes

    async def transcribe(self, audio: AudioInput, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        if self._ai is None:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                "The Worker has no AI binding.",
                hint="Tell the user to bind Workers AI as AI in wrangler.toml, or to set another speech-to-text "
                "rung's key; do not retry until then.",
            )
        inputs = _inputs(audio, lang)
        if self.max_bytes is not None and audio.size is not None and audio.size > self.max_bytes:
            raise status_error("Workers AI", 413)
        ctx.check()
        try:
            answer = await self._ai.run(self.model, inputs)
        except VidError:
            raise
        except Exception as exc:  # noqa: BLE001  the binding raises JS errors as plain exceptions
            raise RungError(
                ErrorCode.UPSTREAM,
                f"Workers AI failed: {type(exc).__name__}.",
                hint=UPSTREAM_HINT,
                retryable=True,
            ) from None
        if hasattr(answer, "to_py"):  # a JS object that was not converted
            answer = answer.to_py()
        try:
            result = msgspec.convert(answer, type=_Result)
        except (msgspec.ValidationError, TypeError):
            raise _unreadable() from None
        return _transcript(result, producer=self.id, lang=lang, duration_hint=audio.duration_sec)
