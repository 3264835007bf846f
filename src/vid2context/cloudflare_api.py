"""Where the Cloudflare REST API runs a Workers AI model, for the rungs that call it from outside a
Worker (speech-to-text, embeddings, language models): one place for the address and its encoding.

The model name keeps its slashes (``@cf/baai/bge-small-en-v1.5``): the API routes on them, and an
encoded slash is answered "No route for that URI" (cloudflare/cloudflare-python#2718).
"""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["DEFAULT_BASE_URL", "run_path", "run_url"]

DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4"
"""``CLOUDFLARE_BASE_URL`` when unset (the cloudflare SDK's own default)."""


def run_path(account_id: str, model: str) -> str:
    """``/accounts/<id>/ai/run/<model>``, the account id encoded, the model's slashes kept."""
    return f"/accounts/{quote(account_id, safe='')}/ai/run/{model}"


def run_url(base_url: str | None, account_id: str | None, model: str) -> str:
    return (base_url or DEFAULT_BASE_URL).rstrip("/") + run_path(account_id or "", model)
