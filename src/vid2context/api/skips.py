"""``GET /api/v1/skips``: SponsorBlock's skip segments for a YouTube video.

A thin skin over ``integrations.skips.find_skips``; the answer carries ``X-Data-Attribution``, as
every answer built on SponsorBlock's data does (``skip=`` on ``/transcript`` too), because its
licence (CC BY-NC-SA 4.0) asks whoever passes it on to say where it came from.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, Response, get
from litestar.datastructures import ResponseHeader
from litestar.params import QueryParameter

from ..integrations.skips import DEFAULT_CATEGORIES, Skips, find_skips, parse_categories
from ..integrations.sponsorblock import ATTRIBUTION, CATEGORIES
from .middleware import request_ctx
from .params import UrlQuery, require_url, runtime_of

__all__ = ["ATTRIBUTION_HEADER", "SKIP_ROUTES", "attributed", "skips_route"]

ATTRIBUTION_HEADER = ResponseHeader(
    name="X-Data-Attribution",
    description="Where the skip segments came from and their licence (SponsorBlock, CC BY-NC-SA 4.0).",
    documentation_only=True,
    value="",  # documentation only: gives the header its string schema
)


def attributed(response: Response) -> Response:
    """``response`` with the SponsorBlock attribution header set."""
    response.headers["X-Data-Attribution"] = ATTRIBUTION
    return response


@get("/api/v1/skips", response_headers=[ATTRIBUTION_HEADER])
async def skips_route(
    request: Request,
    url: UrlQuery = None,
    categories: Annotated[
        str | None,
        QueryParameter(
            description=f"Comma-separated SponsorBlock categories, any of {', '.join(CATEGORIES)}; "
            f"default {','.join(DEFAULT_CATEGORIES)}."
        ),
    ] = None,
) -> Response[Skips]:
    """The SponsorBlock segments of those categories (each with ``startSec``, ``endSec``, ``m:ss``
    and a timestamp ``url``), the seconds the skip and mute ones cover together (``coveredSec``),
    and the attribution the data's licence asks for. SponsorBlock only learns the first four hex
    digits of the video id's SHA-256; answers are cached for an hour. No segments is an empty list."""
    source = require_url(url)
    chosen = parse_categories(categories)
    runtime = runtime_of(request)
    found = await find_skips(runtime, source, chosen, request_ctx(request, runtime))
    return attributed(Response(found))


SKIP_ROUTES = [skips_route]
