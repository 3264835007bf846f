"""The embedding ladder: which rungs exist, and in which order they are tried.

Every rung the settings know about is in the ladder, set up or not, so health and ``/models``
list what could run and which variable turns it on. The order is by tier, as for speech-to-text
(``providers.speech.TIERS``): the local model first (free, private, nothing sent anywhere), then
Workers AI (a free account key), then an OpenAI-compatible endpoint (keyless, or paid with a key).

Portable: the local model is added by ``build_local_runtime`` (``fastembed_local.py``), the
Worker's ``AI`` binding rung by the Worker's runtime builder, in place of the REST one.
"""

from __future__ import annotations

import httpx

from ...providers.speech import TIERS
from ...settings import Settings
from .base import Embedder
from .openai_compat import OpenAICompatibleEmbedder
from .workers_ai import WorkersAIEmbedder

__all__ = ["hosted_embedders", "ordered"]


def hosted_embedders(settings: Settings, http: httpx.AsyncClient) -> list[Embedder]:
    """The hosted rungs, in their order within a tier."""
    return [
        WorkersAIEmbedder(
            http,
            account_id=settings.cloudflare_account_id,
            api_token=settings.cloudflare_api_token,
            base_url=settings.cloudflare_base_url,
        ),
        OpenAICompatibleEmbedder(
            http,
            url=settings.embed_url,
            model=settings.embed_model_id,
            key=settings.embed_key,
            dim=settings.embed_dim,
            keyless_allowed=settings.keyless,
        ),
    ]


def ordered(rungs: list[Embedder]) -> list[Embedder]:
    """``rungs`` by tier (local, free, keyless, paid), keeping their order within a tier."""
    return sorted(rungs, key=lambda rung: TIERS.index(rung.tier))
