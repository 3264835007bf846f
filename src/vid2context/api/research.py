"""``POST /api/v1/research`` and ``GET /api/v1/key-moments``: the research routes.

Thin skins: the body or query is read, the core answers (``answers.research.research``,
``answers.key_moments.key_moments``) and its result is the body. Every check of the values
(how many urls, the query, the bounds) is the core's, so the MCP tools refuse the same requests
with the same codes.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.params import JSONBody, QueryParameter

from ..answers.key_moments import MAX_COUNT, KeyMoments, check_count, key_moments
from ..answers.research import ResearchRequest, ResearchResult, research
from ..models import Base
from ..pipeline import get_context
from .middleware import request_ctx
from .params import BODY_ERRORS, UrlQuery, decode_body, parse_int, require_url, runtime_of

__all__ = ["RESEARCH_ROUTES", "ResearchBody", "key_moments_route", "research_route"]


class ResearchBody(Base, kw_only=True, forbid_unknown_fields=True):
    """``POST /research``: 1 to 10 videos and the query to find in them."""

    urls: list[str]
    query: str
    context_sec: float | None = None
    """Seconds of speech around each excerpt, 0 to 300 (default 30)."""
    max_excerpts: int | None = None
    """Excerpts per video, 1 to 20 (default 5)."""


@post("/api/v1/research", status_code=200, exception_handlers=BODY_ERRORS)
async def research_route(request: Request, data: JSONBody[ResearchBody]) -> ResearchResult:
    """Ranked excerpts per video: each the segment that matched (``startSec``, ``endSec``,
    ``text``, a timestamp ``url``) and the words said ``contextSec`` around it (``context``).
    Keyword search over the transcripts read for the request, with the vector index's hits
    fused in where it holds the videos (``meta`` says which sides ran). No saved library needed;
    a video that cannot be read is listed in ``failed``."""
    data = await decode_body(request, ResearchBody)  # strict: Litestar's decode was lenient
    runtime = runtime_of(request)
    asked = ResearchRequest(
        urls=data.urls, query=data.query, context_sec=data.context_sec, max_excerpts=data.max_excerpts
    )
    return await research(runtime, asked, request_ctx(request, runtime))


@get("/api/v1/key-moments")
async def key_moments_route(
    request: Request,
    url: UrlQuery = None,
    count: Annotated[
        str | None, QueryParameter(description=f"How many moments, 1 to {MAX_COUNT} (default 5).")
    ] = None,
) -> KeyMoments:
    """Key moments chosen by the language-model ladder, each snapped to the start of a real
    segment; moments outside the video or unrelated to what is said there are left out and
    listed in ``dropped``. ``rung`` names the model's rung. Without any rung set up:
    ``503 no-provider`` naming the settings."""
    source = require_url(url)
    wanted = check_count(parse_int("count", count, low=1, high=MAX_COUNT, default=5))
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    context = await get_context(runtime, source, ctx=ctx)
    return await key_moments(runtime, context, wanted, ctx=ctx)


RESEARCH_ROUTES = [research_route, key_moments_route]
