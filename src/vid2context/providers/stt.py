"""The speech-to-text ladder: which rungs exist, and in which order they are tried.

Every rung the settings know about is in the ladder, enabled or not, so health and ``/models``
can list what could run and which variable would turn it on; the pipeline skips the disabled
ones with an ``Attempt`` saying so. The order is by tier (``speech.TIERS``): the local model
first (free, private, no upload), then free tiers with keys (Groq, Workers AI), keyless
endpoints, then paid ones; within a tier, the order below. Deepgram, the one rung that labels
speakers, is paid and last; ``speakers=true`` moves it first (``pipeline.transcribe``).

Portable: the local model is added by ``build_local_runtime`` (``providers/whisper_local.py``),
the Worker's ``AI`` binding rung by the Worker's runtime builder.
"""

from __future__ import annotations

import importlib.util

import httpx

from ..chunking import DEFAULT_CHUNK_SEC, SttPlan
from ..settings import Settings
from .deepgram import DeepgramStt
from .speech import TIERS, SpeechToText
from .whisper_groq import DEFAULT_BASE_URL as GROQ_BASE_URL
from .whisper_groq import GROQ_MODEL, GroqWhisper
from .whisper_openai import OpenAICompatibleWhisper
from .whisper_workers_ai import WorkersAIWhisper

__all__ = ["groq_over_httpx", "hosted_rungs", "ordered", "stt_plan"]


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def groq_over_httpx(settings: Settings, http: httpx.AsyncClient) -> OpenAICompatibleWhisper:
    """Groq's Whisper over plain httpx: the same service and wire protocol as ``GroqWhisper``,
    for where the groq SDK is not installed (the Worker vendors only the portable core)."""
    rung = OpenAICompatibleWhisper(
        http,
        url=(settings.groq_base_url or GROQ_BASE_URL).rstrip("/") + "/openai/v1",
        model=GROQ_MODEL,
        key=settings.groq_api_key,
        service="groq",
        tier="free",
        requires=("GROQ_API_KEY",),
        key_setting="GROQ_API_KEY",
        provider=GroqWhisper.provider,
        name=GroqWhisper.name,
    )
    rung.enabled = bool(settings.groq_api_key)
    return rung


def hosted_rungs(settings: Settings, http: httpx.AsyncClient) -> list[SpeechToText]:
    """The hosted rungs (Whisper, then Deepgram), in their order within a tier."""
    rungs: list[SpeechToText] = []
    if _installed("groq"):
        rungs.append(GroqWhisper(api_key=settings.groq_api_key, base_url=settings.groq_base_url, http=http))
    else:
        rungs.append(groq_over_httpx(settings, http))
    if _installed("cloudflare"):
        rungs.append(
            WorkersAIWhisper(
                account_id=settings.cloudflare_account_id,
                api_token=settings.cloudflare_api_token,
                base_url=settings.cloudflare_base_url,
                http=http,
            )
        )
    rungs.append(
        OpenAICompatibleWhisper(
            http,
            url=settings.stt_url,
            model=settings.stt_model,
            key=settings.stt_key,
            keyless_allowed=settings.keyless,
        )
    )
    rungs.append(DeepgramStt(http, api_key=settings.deepgram_api_key, origin=settings.deepgram_origin))
    return rungs


def ordered(rungs: list[SpeechToText]) -> list[SpeechToText]:
    """``rungs`` by tier (local, free, keyless, paid), keeping their order within a tier."""
    return sorted(rungs, key=lambda rung: TIERS.index(rung.tier))


def stt_plan(settings: Settings, **overrides: object) -> SttPlan:
    """Piece size and concurrency from the settings (never below one)."""
    return SttPlan(
        concurrency=max(1, settings.stt_concurrency),
        chunk_bytes=max(1, settings.stt_chunk_mb) * 1024 * 1024,
        chunk_sec=float(settings.stt_chunk_sec or DEFAULT_CHUNK_SEC),
        **overrides,  # type: ignore[arg-type]
    )
