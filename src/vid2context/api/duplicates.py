"""``POST /api/v1/duplicates``: reuploads and clips among videos.

A thin skin over ``integrations.duplicates``: the body is decoded strictly, the core checks the
inputs and the collection (the same refusals as the MCP ``find_duplicates`` tool) and answers.
"""

from __future__ import annotations

from litestar import Request, post
from litestar.params import JSONBody

from ..integrations.duplicates import DuplicatesResult, check_inputs, find_duplicates
from ..models import Base
from .middleware import request_ctx
from .params import BODY_ERRORS, decode_body, runtime_of

__all__ = ["DUPLICATE_ROUTES", "DuplicatesRequest", "duplicates_route"]


class DuplicatesRequest(Base, kw_only=True, forbid_unknown_fields=True):
    """``POST /duplicates``: videos or lists in ``inputs``, and/or a collection; at most 100 videos."""

    inputs: list[str] | None = None
    collection_id: str | None = None
    """A collection's id (or name): its saved videos, then its pending ones."""


@post("/api/v1/duplicates", status_code=200, exception_handlers=BODY_ERRORS)
async def duplicates_route(request: Request, data: JSONBody[DuplicatesRequest]) -> DuplicatesResult:
    """Groups of reuploads and clips among the videos, found by their transcripts' shingled
    fingerprints (MinHash and LSH over timed five-word shingles). Each group lists its reference
    first (offsetSec 0) and every other member's offsetSec (its moment t is said at t + offsetSec
    in the reference); the evidence gives each member's share of its transcript that overlaps and
    the matched passages with their times on both sides. A video that cannot be read is listed in
    failed; more than 100 videos is 413 too-large."""
    data = await decode_body(request, DuplicatesRequest)  # strict: Litestar's decode was lenient
    runtime = runtime_of(request)
    inputs = await check_inputs(runtime, data.inputs, data.collection_id)
    return await find_duplicates(runtime, inputs, ctx=request_ctx(request, runtime))


DUPLICATE_ROUTES = [duplicates_route]
"""Every handler of this module, for ``create_app``."""
