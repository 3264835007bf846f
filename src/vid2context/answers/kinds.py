"""The job kinds ``brief`` and ``extract``: ``POST /api/v1/briefs`` and ``/extract`` queue them.

Both check everything before a job exists (``job_kinds.py`` has the rule): the input's fields,
the videos (``scope.check_scope``), the template or schema, and that a language-model rung is set
up (``no-provider`` otherwise, since a job that can only fail is not worth queueing)::

    brief    input: {inputs?, collectionId?, question?, template?}          options: none
             result: Brief (answers/briefs.py)
    extract  input: {inputs?, collectionId?, template?, schema?, question?}  options: none
             result: ExtractionResult (answers/extract.py)

Progress: the videos read (``done`` of ``total``), then one step while the model answers. Over
REST there is no calling client's model, so the server's own rungs answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ErrorCode, VidError
from ..jobs import JobKind, JobRun
from ..models import Brief, ExtractionResult
from .briefs import build_brief
from .extract import check_spec, extract
from .llm.ladder import plan_llm
from .scope import Scope, check_scope
from .templates import brief_template

if TYPE_CHECKING:
    from ..runtime import Runtime

__all__ = ["ANSWER_KINDS", "BRIEF_FIELDS", "EXTRACT_FIELDS"]

BRIEF_FIELDS = ("inputs", "collectionId", "question", "template")
EXTRACT_FIELDS = ("inputs", "collectionId", "template", "schema", "question")


def _fields(kind: str, value: Any, allowed: tuple[str, ...], options: dict[str, Any]) -> dict[str, Any]:
    if options:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"Unknown option {str(next(iter(options)))[:40]!r} for a {kind} job.",
            hint=f"Leave options out: a {kind} job takes none.",
        )
    if not isinstance(value, dict):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"A {kind} job's input is an object with " + ", ".join(allowed) + ".",
            hint='Give "input": {"inputs": ["https://youtu.be/..."]} and the other fields you need.',
        )
    unknown = [str(name)[:40] for name in value if name not in allowed]
    if unknown:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"Unknown field {unknown[0]!r} in a {kind} job's input.",
            hint=f"Leave it out: a {kind} takes " + ", ".join(allowed) + ".",
        )
    return value


async def _scope(runtime: Runtime, value: dict[str, Any]) -> Scope:
    scope = await check_scope(runtime, value.get("inputs"), value.get("collectionId"), value.get("question"))
    plan_llm(runtime, None, None).require()  # no-provider now, not as a failed job
    return scope


def _scope_of(value: dict[str, Any]) -> Scope:
    return Scope(
        inputs=tuple(value.get("inputs", ())),
        collection_id=value.get("collectionId"),
        question=value.get("question"),
    )


async def _check_brief(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    fields = _fields("brief", value, BRIEF_FIELDS, options)
    template = fields.get("template")
    if template is not None and not isinstance(template, str):
        raise VidError(ErrorCode.BAD_REQUEST, "template must be a name.", hint="Give template as a string.")
    found = brief_template(template)
    scope = await _scope(runtime, fields)
    return {**scope.wire(), "template": found.name}, {}


async def _run_brief(run: JobRun) -> Brief:
    template = brief_template(run.input["template"])
    return await build_brief(
        run.runtime, _scope_of(run.input), template, ctx=run.ctx, on_progress=run.progress_event
    )


async def _check_extract(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    fields = _fields("extract", value, EXTRACT_FIELDS, options)
    spec = check_spec(fields.get("template"), fields.get("schema"))
    scope = await _scope(runtime, fields)
    return {**scope.wire(), **spec.wire()}, {}


async def _run_extract(run: JobRun) -> ExtractionResult:
    spec = check_spec(run.input.get("template"), run.input.get("schema"))
    return await extract(run.runtime, _scope_of(run.input), spec, ctx=run.ctx, on_progress=run.progress_event)


ANSWER_KINDS: dict[str, JobKind] = {
    "brief": JobKind(_check_brief, _run_brief, "a cited brief across videos (a language model writes it)"),
    "extract": JobKind(
        _check_extract, _run_extract, "data matching a template or JSON Schema, with citations"
    ),
}
