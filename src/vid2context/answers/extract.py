"""Structured data out of videos: a template's or the caller's JSON Schema, filled and checked.

``extract(runtime, scope, spec, ctx=...)`` is the core of ``POST /api/v1/extract`` (a job of kind
``extract``) and of MCP ``extract``. ``check_spec(template, schema)`` runs first, before anything
is queued: exactly one of the two, the template known (``templates.EXTRACT_TEMPLATES``), the
schema one ``json_schema.check_schema`` accepts.

The model gets the sources (``grounding.ground``: passages matching the question, or spread
through the videos without one, numbered and fenced) and answers one JSON object::

    {"data": <an object matching the schema>,
     "citations": [{"field": "/products/0/price", "sources": [2]}, ...]}

``data`` is checked against the schema and the envelope against its own; a mismatch is asked
again once with the problems, then reported as ``upstream`` (``structured.ask_json``): what is
returned always matches. Each citation's numbers are checked (``citations.check_citations``):
those that match no source go to ``unverified``, the others become ``Citation``s narrowed to the
segment that best supports the field's value. A citation of a field that is not in ``data`` is
dropped, and said in ``notes``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import ChatMessage, ExtractionResult, FieldCitations
from ..runtime import Runtime
from .citations import check_citations
from .grounding import Grounding
from .json_schema import Validator, check_schema, problems
from .llm.base import LlmOptions
from .scope import Scope, failed_inputs, fenced_sources, left_out_notes, prepare
from .structured import ask_json
from .templates import extract_template

__all__ = ["ANSWER_TOKENS", "Spec", "check_spec", "extract", "resolve_pointer"]

ANSWER_TOKENS = 3000
_ENVELOPE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "data": {"type": "object"},
        "citations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "sources": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["field", "sources"],
            },
        },
    },
    "required": ["data"],
}


@dataclass(frozen=True)
class Spec:
    """What to extract: a template's name (or ``None``) and the schema that the data must match."""

    template: str | None
    schema: dict[str, Any]
    asks: str
    validator: Validator

    def wire(self) -> dict[str, Any]:
        return {"template": self.template} if self.template else {"schema": self.schema}


def check_spec(template: Any, schema: Any) -> Spec:
    """The template or the schema, checked (module docstring)."""
    if template is not None and schema is not None:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "Both template and schema were given.",
            hint="Give template (a name) or schema (a JSON Schema object), not both.",
        )
    if template is not None:
        if not isinstance(template, str):
            raise VidError(
                ErrorCode.BAD_REQUEST, "template must be a name.", hint="Give template as a string."
            )
        found = extract_template(template)
        return Spec(
            template=found.name, schema=found.schema, asks=found.asks, validator=check_schema(found.schema)
        )
    if schema is None:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "Nothing to extract: give a template or a schema.",
            hint="Give template as one of: facts, people, products, steps, recipe, timeline, quotes; or give "
            "schema as a JSON Schema object.",
        )
    validator = check_schema(schema)
    described = schema.get("description") if isinstance(schema.get("description"), str) else None
    asks = (described or "The data the schema describes, from what the videos say.")[:500]
    return Spec(template=None, schema=schema, asks=asks, validator=validator)


def resolve_pointer(data: Any, pointer: str) -> tuple[bool, Any]:
    """Whether ``pointer`` (``/a/0/b``) names a value in ``data``, and that value."""
    if pointer in ("", "/"):
        return True, data
    if not pointer.startswith("/"):
        return False, None
    node = data
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _instructions(grounding: Grounding, spec: Spec) -> str:
    count = len(grounding.sources)
    schema = json.dumps(spec.schema, ensure_ascii=False, separators=(",", ":"))
    return (
        f"You extract structured data from {count} numbered sources, passages of videos' transcripts. "
        f"What to extract: {spec.asks}\n\n"
        'Answer with one JSON object and nothing else: {"data": ..., "citations": [{"field": "/json/pointer", '
        '"sources": [n]}]}. "data" must match this JSON Schema exactly:\n'
        f"{schema}\n\n"
        "Use only what the sources say; leave out what they do not say. For each value you filled, add a "
        'citation: "field" is its JSON pointer into data (like /items/0/name) and "sources" the numbers '
        f"of the sources that say it; the sources are numbered 1 to {count}, use no other numbers.\n\n"
        + fenced_sources(grounding)
    )


def _under_data(line: str) -> str:
    """A problem of ``data`` as one of the whole answer: ``/a: ...`` is ``/data/a: ...``."""
    if line.startswith("/:"):
        return "/data" + line[1:]
    return "/data" + line if line.startswith("/") else line


def _check(spec: Spec) -> Any:
    def check(value: Any) -> list[str]:
        found = problems(check_schema(_ENVELOPE), value)
        if found or not isinstance(value.get("data"), dict):
            return found
        return [_under_data(line) for line in problems(spec.validator, value["data"])]

    return check


def _cited(
    data: dict[str, Any], raw: list[dict[str, Any]], grounding: Grounding
) -> tuple[list[FieldCitations], list[int], list[str]]:
    out: list[FieldCitations] = []
    unverified: list[int] = []
    notes: list[str] = []
    for entry in raw:
        field, numbers = str(entry["field"]), [int(n) for n in entry["sources"]]
        found, value = resolve_pointer(data, field)
        if not found:
            notes.append(f"Dropped a citation of {field[:80]!r}, which is not a field of data.")
            continue
        # The field's name helps find the moment: "price: $499" is said as "the price was ...".
        key = field.rsplit("/", 1)[-1]
        said = (
            (key if not key.isdigit() else "")
            + ": "
            + (value if isinstance(value, str) else json.dumps(value))
        )
        checked = check_citations(said + " " + "".join(f"[{n}]" for n in numbers), grounding.sources)
        unverified.extend(n for n in checked.unverified if n not in unverified)
        if checked.citations:
            out.append(FieldCitations(field=field, citations=checked.citations))
    return out, unverified, notes


async def extract(
    runtime: Runtime, scope: Scope, spec: Spec, *, ctx: Ctx, on_progress: Any = None
) -> ExtractionResult:
    """The data ``spec`` asks for out of ``scope``'s videos (module docstring).

    Raises ``VidError`` as ``briefs.build_brief`` does; ``upstream`` when the answer never matched.
    """
    options = LlmOptions(max_tokens=ANSWER_TOKENS, temperature=0.0)
    schema_text = json.dumps(spec.schema, separators=(",", ":"))
    pick, grounding, attempts = await prepare(
        runtime,
        scope,
        options=options,
        prompt=spec.asks + " " + schema_text,
        ctx=ctx,
        on_progress=on_progress,
    )
    asked = f"Extract it, about this question: {scope.question}" if scope.question else "Extract it."
    messages = [
        ChatMessage(role="system", content=_instructions(grounding, spec)),
        ChatMessage(role="user", content=asked),
    ]
    answer_data, answer = await ask_json(
        runtime, pick, messages, _check(spec), ctx=ctx, options=options, attempts=attempts
    )
    data = answer_data["data"]
    citations, unverified, notes = _cited(data, answer_data.get("citations", []), grounding)
    notes.extend(left_out_notes(grounding))
    return ExtractionResult(
        template=spec.template,
        data=data,
        citations=citations,
        unverified=unverified,
        notes=notes,
        sources=[source.public() for source in grounding.sources],
        left_out=grounding.left_out,
        failed=failed_inputs(grounding.failed),
        rung=answer.rung,
        model=answer.model,
        usage=answer.usage,
        attempts=attempts,
    )
