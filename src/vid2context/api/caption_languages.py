"""``GET /api/v1/caption-languages``: a video's caption tracks and YouTube's translation targets.

A thin skin over ``caption_languages.caption_languages``, the core ``list_caption_languages``
calls too, so both answer the same tracks and refuse the same inputs.
"""

from __future__ import annotations

from litestar import Request, get

from ..caption_languages import CaptionLanguages, caption_languages
from .middleware import request_ctx
from .params import UrlQuery, require_url, runtime_of

__all__ = ["caption_languages_route"]


@get("/api/v1/caption-languages")
async def caption_languages_route(request: Request, url: UrlQuery = None) -> CaptionLanguages:
    """The caption tracks the platform offers (``language``, ``name``, ``kind``: manual or auto,
    ``translatable``) and the languages it translates them into (``translationTargets``: pass one
    as ``lang`` to ``/transcript``). No captions or audio are fetched."""
    source = require_url(url)
    runtime = runtime_of(request)
    return await caption_languages(runtime, source, request_ctx(request, runtime))
