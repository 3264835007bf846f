"""The language-model rungs there are, and the order each policy tries them in.

Every rung the settings know about is built, set up or not, so health and ``/models`` list what
could run and which variable turns it on: Groq (``GROQ_API_KEY``), Workers AI (the REST API with
``CLOUDFLARE_ACCOUNT_ID`` and ``CLOUDFLARE_API_TOKEN`` locally, the ``AI`` binding on the Worker,
which ``build_worker_runtime`` puts in its place) and an OpenAI-compatible endpoint
(``VID2CONTEXT_LLM_URL``). The MCP client's own model (``sampling.py``) is not among them: it
exists only inside an MCP call, and ``ladder.plan_llm`` adds it from the call's ``Ctx``.

A policy (``VID2CONTEXT_POLICY``, or ``model.policy`` on a request) is an order of tiers; rungs of
a tier it leaves out are not tried at all, and within a tier the order below holds (Groq, Workers
AI, OpenAI-compatible):

    free        caller  local  free  keyless  paid
                Nothing billed first: the client's own model, then one on this machine, the free
                hosted tiers, keyless endpoints; a paid key last, as the way out.
    quality     paid  free  caller  keyless  local
                The strongest hosted models first: a paid key is a model someone chose to pay for,
                then the 70B models of the free tiers; the client's model (unknown to us) after
                those, small self-hosted ones last.
    local-only  local  caller
                Nothing leaves this machine except to the client that called: models on this
                machine or its network, and the client's own model through sampling (the text goes
                where the answer goes anyway, and no third party sees it).

Portable: the groq SDK is used where it is installed (locally); elsewhere (the Worker) Groq is
reached with the OpenAI-compatible rung at its ``/openai/v1`` path, under the same id.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

import httpx

from ...providers.whisper_groq import DEFAULT_BASE_URL as GROQ_BASE_URL
from ...settings import Settings
from .base import LanguageModel, LlmTier
from .groq import CONTEXT_TOKENS as GROQ_CONTEXT_TOKENS
from .groq import GROQ_LLM_MODEL, MAX_OUTPUT_TOKENS, GroqLlm
from .openai_compat import OpenAICompatibleLlm
from .workers_ai import WorkersAILlm

__all__ = ["DEFAULT_POLICY", "POLICIES", "groq_over_httpx", "hosted_llms", "listed", "ordered"]

POLICIES: dict[str, tuple[LlmTier, ...]] = {
    "free": ("caller", "local", "free", "keyless", "paid"),
    "quality": ("paid", "free", "caller", "keyless", "local"),
    "local-only": ("local", "caller"),
}
DEFAULT_POLICY = "free"


def groq_over_httpx(settings: Settings, http: httpx.AsyncClient) -> OpenAICompatibleLlm:
    """Groq over plain httpx: the same service, model and id as ``GroqLlm``, for where the groq
    SDK is not installed (the Worker vendors only the portable core)."""
    rung = OpenAICompatibleLlm(
        http,
        url=(settings.groq_base_url or GROQ_BASE_URL).rstrip("/") + "/openai/v1",
        model=GROQ_LLM_MODEL,
        key=settings.groq_api_key,
        context_tokens=GROQ_CONTEXT_TOKENS,
        max_output_tokens=MAX_OUTPUT_TOKENS,
        service="groq",
        tier="free",
        requires=("GROQ_API_KEY",),
        key_setting="GROQ_API_KEY",
        provider=GroqLlm.provider,
        name=GroqLlm.name,
    )
    rung.enabled = bool(settings.groq_api_key)
    return rung


def hosted_llms(
    settings: Settings, http: httpx.AsyncClient, *, groq_sdk: bool | None = None
) -> list[LanguageModel]:
    """The hosted rungs, in their order within a tier; ``groq_sdk`` says whether to use the groq
    SDK (``None``: when it is installed)."""
    if groq_sdk is None:
        groq_sdk = importlib.util.find_spec("groq") is not None
    groq: LanguageModel = (
        GroqLlm(api_key=settings.groq_api_key, base_url=settings.groq_base_url, http=http)
        if groq_sdk
        else groq_over_httpx(settings, http)
    )
    return [
        groq,
        WorkersAILlm(
            http,
            account_id=settings.cloudflare_account_id,
            api_token=settings.cloudflare_api_token,
            base_url=settings.cloudflare_base_url,
        ),
        OpenAICompatibleLlm(
            http,
            url=settings.llm_url,
            model=settings.llm_model,
            key=settings.llm_key,
            keyless_allowed=settings.keyless,
            context_tokens=settings.llm_context_tokens,
        ),
    ]


def ordered(rungs: Iterable[LanguageModel], policy: str) -> list[LanguageModel]:
    """The rungs ``policy`` tries, in its tier order, keeping their order within a tier."""
    tiers = POLICIES[policy]
    return sorted((rung for rung in rungs if rung.tier in tiers), key=lambda rung: tiers.index(rung.tier))


def listed(rungs: Iterable[LanguageModel], policy: str) -> list[LanguageModel]:
    """Every rung, for a list of what there is: ``ordered`` first, the rungs ``policy`` leaves out
    after them."""
    tiers = POLICIES[policy]
    return sorted(rungs, key=lambda rung: tiers.index(rung.tier) if rung.tier in tiers else len(tiers))
