"""Where the Cloudflare REST API runs a Workers AI model, for the rungs that call it from outside a
Worker (speech-to-text, embeddings, language models, the reranker): one place for the address and
its encoding, and ``RestRung``, what the REST rungs each hold (it was three copies of one constructor).

The model name keeps its slashes (``@cf/baai/bge-small-en-v1.5``): the API routes on them, and an
encoded slash is answered "No route for that URI" (cloudflare/cloudflare-python#2718).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from .ctx import Ctx
from .providers.speech import Wording, response_error, transport_error
from .providers.whisper_openai import request_timeout

__all__ = ["DEFAULT_BASE_URL", "RestRung", "run_path", "run_url"]

DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4"
"""``CLOUDFLARE_BASE_URL`` when unset (the cloudflare SDK's own default)."""
SERVICE = "Workers AI"
REQUIRES = ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN")


def run_path(account_id: str, model: str) -> str:
    """``/accounts/<id>/ai/run/<model>``, the account id encoded, the model's slashes kept."""
    return f"/accounts/{quote(account_id, safe='')}/ai/run/{model}"


def run_url(base_url: str | None, account_id: str | None, model: str) -> str:
    return (base_url or DEFAULT_BASE_URL).rstrip("/") + run_path(account_id or "", model)


class RestRung:
    """A rung that runs its class's ``model`` over the REST API: on when both an account id and
    an API token are set; it posts to the model's address with the token as a bearer."""

    model: str

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        account_id: str | None,
        api_token: str | None,
        base_url: str | None = None,
    ) -> None:
        self.enabled = bool(account_id and api_token)
        self._http = http
        self._token = api_token or ""
        self._url = run_url(base_url, account_id, self.model)

    @property
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    async def _run_model(
        self, inputs: dict[str, Any], ctx: Ctx, *, read_timeout_s: float, wording: Wording
    ) -> httpx.Response:
        """The model's 200 answer to ``inputs``; a failure to reach it, or another status, is the
        rung's failure (``RungError``) in ``wording``."""
        try:
            response = await self._http.post(
                self._url, json=inputs, headers=self._headers, timeout=request_timeout(ctx, read_timeout_s)
            )
        except httpx.TimeoutException as exc:
            raise transport_error(SERVICE, exc, timeout=True, wording=wording) from None
        except httpx.HTTPError as exc:
            raise transport_error(SERVICE, exc, wording=wording) from None
        if response.status_code != 200:
            raise response_error(SERVICE, response, requires=REQUIRES, wording=wording)
        return response
