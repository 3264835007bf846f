"""JSON Schemas a caller gives ``extract``: checked before any work, and answers checked against them.

The validator is ``jsonschema`` (already installed everywhere the core runs: the MCP SDK depends
on it, and it is in the Worker's locked set), Draft 2020-12 unless the schema names another draft
in ``$schema``, imported at the first check (the Worker builds its app on every cold start, and
most requests never extract). What is refused, as ``bad-request`` (``too-large`` for size) before anything is
read or asked:

- a schema that is not a JSON object (an array, a string, ``true``);
- one larger than ``MAX_SCHEMA_BYTES`` once encoded, or nested deeper than ``MAX_DEPTH``;
- any ``$ref`` that is not local (``#...``): remote and relative references are never fetched,
  and the validator is given no way to fetch them (``$id`` is ignored for resolving);
- ``$dynamicRef`` / ``$recursiveRef`` (rarely needed for extraction, easy to get wrong);
- a schema that is not valid under its draft's metaschema (the first problem is named);
- a top-level ``type`` other than ``object``: the answer's ``data`` is one object.

``problems(validator, data)`` lists at most ``MAX_PROBLEMS`` validation errors as
``"/json/pointer: message"`` lines, short and without the values, ready to send back to the model
in a re-ask or to the caller in an error. Portable: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import ErrorCode, VidError

if TYPE_CHECKING:
    import jsonschema
    from jsonschema.protocols import Validator

__all__ = ["MAX_DEPTH", "MAX_PROBLEMS", "MAX_SCHEMA_BYTES", "check_schema", "pointer", "problems"]

MAX_SCHEMA_BYTES = 32 * 1024
"""An extraction schema larger than this is not one a model can be asked to fill reliably."""
MAX_DEPTH = 16
MAX_PROBLEMS = 8
_HINT = "Give schema as a JSON Schema object with type object, local $refs only (#/$defs/...)."


def _bad(message: str, hint: str = _HINT) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _walk(node: Any, depth: int, path: str) -> Iterator[tuple[str, str, Any]]:
    """Every ``(path, key, value)`` of a schema's objects; ``ValueError`` past ``MAX_DEPTH``."""
    if depth > MAX_DEPTH:
        raise ValueError(path or "/")
    if isinstance(node, dict):
        for key, value in node.items():
            yield path, str(key), value
            yield from _walk(value, depth + 1, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, depth + 1, f"{path}/{index}")


def check_schema(schema: Any) -> Validator:
    """A validator for ``schema``, or the ``VidError`` that says what is wrong with it (docstring)."""
    if not isinstance(schema, dict):
        kind = "an array" if isinstance(schema, list) else type(schema).__name__
        raise _bad(f"schema must be a JSON object, not {kind}.")
    size = len(msgspec.json.encode(schema))
    if size > MAX_SCHEMA_BYTES:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"The schema is {size:,} bytes; at most {MAX_SCHEMA_BYTES:,} are accepted.",
            hint="Give a smaller schema: only the fields wanted, with short descriptions.",
        )
    try:
        for path, key, value in _walk(schema, 0, ""):
            if key == "$ref" and (not isinstance(value, str) or not value.startswith("#")):
                shown = str(value)[:80]
                raise _bad(
                    f"schema has a $ref that is not local ({shown!r} at {path or '/'}); references are never "
                    "fetched.",
                    "Put the referenced schema under $defs and point to it as #/$defs/<name>.",
                )
            if key in ("$dynamicRef", "$recursiveRef"):
                raise _bad(f"schema uses {key} (at {path or '/'}), which extract does not support.")
    except ValueError as deep:
        raise _bad(f"schema is nested deeper than {MAX_DEPTH} levels (at {str(deep)[:120]}).") from None
    if schema.get("type") != "object":
        raise _bad('schema must describe one object: give "type": "object" at the top, with its properties.')
    import jsonschema
    from jsonschema.exceptions import SchemaError

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        where = pointer(error.path) or "/"
        raise _bad(f"schema is not a valid JSON Schema: {error.message[:200]} (at {where}).") from None
    return cls(schema)


def pointer(path: Any) -> str:
    """A JSON pointer (``/items/0/name``) for a path of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def problems(validator: Validator, data: Any) -> list[str]:
    """Why ``data`` does not match, at most ``MAX_PROBLEMS`` lines; empty when it matches."""
    found = sorted(validator.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    lines = []
    for error in found[:MAX_PROBLEMS]:
        where = pointer(error.absolute_path) or "/"
        lines.append(f"{where}: {_reason(error)}")
    if len(found) > MAX_PROBLEMS:
        lines.append(f"... and {len(found) - MAX_PROBLEMS} more")
    return lines


def _reason(error: jsonschema.ValidationError) -> str:
    """The error without the offending value (it may be long, and it is the model's text)."""
    rule, expected = error.validator, error.validator_value
    if rule == "required":
        return error.message[:160]  # names the missing property, not a value
    if rule == "type":
        return f"must be of type {expected}"
    if rule == "enum":
        return "must be one of " + ", ".join(map(str, expected))[:160]
    if rule == "additionalProperties":
        return error.message[:160]  # names the unexpected keys
    if isinstance(expected, (str, int, float, bool)):
        return f"fails {rule} {expected}"
    return f"fails {rule}"
