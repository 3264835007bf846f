"""The vision-model rung: an OpenAI-compatible chat endpoint describes frames OCR could not read.

Portable (httpx only). Set by ``VID2CONTEXT_VISION_URL`` (the API's base, ending in ``/v1``),
``VID2CONTEXT_VISION_KEY`` and ``VID2CONTEXT_VISION_MODEL``. A frame with no text Tesseract could
read (a photo, a diagram, handwriting) is sent as a PNG data URL in OpenAI's content parts, and the
answer becomes a ``scene`` stretch. It never fails the layer: the OCR stretches stand, and a
failure is said in the note and the attempts.
"""

from __future__ import annotations

import base64

import httpx

from ..ctx import Ctx
from ..errors import ErrorCode, VidError

__all__ = ["PROMPT", "OpenAIVision"]

PROMPT = (
    "Describe this video frame in one or two sentences for someone who cannot see it: what is shown, "
    "and any text, chart or code in it. Do not guess beyond what is visible."
)
MAX_WORDS = 80


class OpenAIVision:
    """Frames to one-paragraph descriptions through ``POST {url}/chat/completions``."""

    def __init__(self, client: httpx.AsyncClient, *, url: str | None, key: str | None, model: str) -> None:
        self._client = client
        self._url = (url or "").rstrip("/")
        self._key = key
        self.model = model
        self.id = f"visual/openai-compatible/{model}"

    @property
    def enabled(self) -> bool:
        return bool(self._url)

    async def describe(self, png: bytes, ctx: Ctx) -> str:
        """The model's description of one frame; ``VidError`` (``auth``, ``rate-limited``,
        ``upstream``) when the endpoint refuses or answers nothing usable."""
        ctx.check()
        image = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        body = {
            "model": self.model,
            "max_tokens": 200,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": PROMPT},
                        {"type": "image_url", "image_url": {"url": image}},
                    ],
                }
            ],
        }
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            response = await self._client.post(f"{self._url}/chat/completions", json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise VidError(
                ErrorCode.UPSTREAM,
                f"The vision endpoint could not be reached ({type(exc).__name__}).",
                hint="Tell the user to check VID2CONTEXT_VISION_URL; the on-screen text read by OCR stands.",
            ) from None
        if response.status_code in (401, 403):
            raise VidError(
                ErrorCode.AUTH,
                f"The vision endpoint refused the key (HTTP {response.status_code}).",
                hint="Tell the user to check VID2CONTEXT_VISION_KEY; do not retry until then.",
            )
        if response.status_code == 429:
            raise VidError(
                ErrorCode.RATE_LIMITED,
                "The vision endpoint is rate-limiting this server.",
                hint="Tell the user the vision model is limiting this server, so scenes are missing (the text "
                "OCR read stands); do not retry now.",
            )
        text = _content(response)
        if response.status_code != 200 or not text:
            raise VidError(
                ErrorCode.UPSTREAM,
                f"The vision endpoint answered HTTP {response.status_code} without a description.",
                hint="Tell the user to check VID2CONTEXT_VISION_URL and VID2CONTEXT_VISION_MODEL; do not retry "
                "until then.",
            )
        return " ".join(text.split()[:MAX_WORDS])


def _content(response: httpx.Response) -> str:
    try:
        data = response.json()
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return ""
    return content.strip() if isinstance(content, str) else ""
