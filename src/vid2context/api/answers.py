"""``POST /api/v1/briefs`` and ``POST /api/v1/extract``: long answers as jobs (``202 Job``).

Each route checks its body strictly and hands it to the job kind of the same name
(``answers/kinds.py``), which checks the rest (videos, template, schema, a language model) before
the job exists; follow it with ``GET /api/v1/jobs/{id}/events`` or poll ``GET /api/v1/jobs/{id}``.
The job's result is a ``Brief`` or an ``ExtractionResult``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.params import JSONBody

from ..jobs import Job
from ..models import Base
from .params import BODY_ERRORS, decode_body, runtime_of

__all__ = ["ANSWER_ROUTES", "BriefRequest", "ExtractRequest", "post_brief", "post_extract"]


class BriefRequest(Base, forbid_unknown_fields=True):
    collection_id: str | None = None
    """A collection's id (or name): its saved videos."""
    inputs: list[str] | None = None
    """Videos or lists, as URLs or ids (at most 20)."""
    question: str | None = None
    """What the brief answers; without one, a brief of the videos' subject."""
    template: str | None = None
    """research (the default) or buyer-guide."""


class ExtractRequest(Base, forbid_unknown_fields=True):
    inputs: list[str] | None = None
    """Videos or lists, as URLs or ids (at most 20)."""
    collection_id: str | None = None
    template: str | None = None
    """facts, people, products, steps, recipe, timeline or quotes; or give schema."""
    schema: Any = None
    """A JSON Schema object (type object) the result's data must match; local $refs only."""


def _input(data: Base) -> dict[str, Any]:
    return {name: value for name, value in msgspec.to_builtins(data).items() if value is not None}


async def _submit(request: Request, kind: str, data: Base) -> Response[Job]:
    runtime = runtime_of(request)
    job = await runtime.jobs.submit(runtime, kind, _input(data), None)
    return Response(job, status_code=202)


@post("/api/v1/briefs", status_code=202, exception_handlers=BODY_ERRORS)
async def post_brief(request: Request, data: JSONBody[BriefRequest]) -> Response[Job]:
    """Queue a cited brief (job kind ``brief``): claims with checked citations, consensus and
    disagreement across the videos, open questions."""
    return await _submit(request, "brief", await decode_body(request, BriefRequest))


@post("/api/v1/extract", status_code=202, exception_handlers=BODY_ERRORS)
async def post_extract(request: Request, data: JSONBody[ExtractRequest]) -> Response[Job]:
    """Queue an extraction (job kind ``extract``): data matching the template or JSON Schema, with
    citations per field."""
    return await _submit(request, "extract", await decode_body(request, ExtractRequest))


ANSWER_ROUTES = [post_brief, post_extract]
"""Every handler of this module, for ``create_app``."""
